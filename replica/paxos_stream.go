package replica

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// The handover of Paxos state when ranges move: a topology change streams, with a range's rows,
// the Paxos states of its partitions (promised, accepted and committed ballots), and the new
// owner merges them with its own before the range is its. Without them a proposal accepted by
// a quorum of the old replicas but not yet committed (chosen, and maybe already acknowledged to a
// reader) could miss every replica of the new owner's quorum and be lost, or a promise be
// forgotten. The sources stream their Paxos states before the range's rows, so that a
// commit landing in between leaves its proposal accepted in the streamed state (the next round
// completes it again, harmlessly) rather than recorded as committed without its rows.

// paxosStateKey returns the table id and token of a Paxos state key, or an error when k is not
// one.
func paxosStateKey(k []byte) (schema.TableID, int64, error) {
	if len(k) < len(paxosPrefix)+16 || string(k[:len(paxosPrefix)]) != paxosPrefix {
		return 0, 0, fmt.Errorf("%w: %d bytes, not a Paxos state key", errBadKey, len(k))
	}
	b := k[len(paxosPrefix):]
	return schema.TableID(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:])), nil
}

// paxosSpans returns the key bounds [lower, upper) of the Paxos states of table id's partitions
// whose tokens are in [from, to]: one span, or two when the interval holds negative and
// non-negative tokens (the state key holds the token as unsigned, so negative ones sort last).
func paxosSpans(id schema.TableID, from, to int64) [][2][]byte {
	span := func(lo, hi uint64) [2][]byte {
		k := func(t uint64) []byte {
			b := binary.BigEndian.AppendUint64([]byte(paxosPrefix), uint64(id))
			return binary.BigEndian.AppendUint64(b, t)
		}
		if hi != math.MaxUint64 {
			return [2][]byte{k(lo), k(hi + 1)}
		}
		if uint64(id) == math.MaxUint64 {
			return [2][]byte{k(lo), []byte(paxosUpper)}
		}
		upper := binary.BigEndian.AppendUint64([]byte(paxosPrefix), uint64(id)+1)
		return [2][]byte{k(lo), upper}
	}
	switch {
	case from > to:
		return nil
	case from < 0 && to >= 0:
		return [][2][]byte{span(0, uint64(to)), span(uint64(from), math.MaxUint64)}
	}
	return [][2][]byte{span(uint64(from), uint64(to))}
}

// ScanPaxosTokens calls fn with the stored Paxos state of every partition of table id whose
// token t has from ≤ t ≤ to, stopping at fn's first error: what a topology change streams with
// the range's rows (see ApplyStreamedPaxos). The slices fn gets are valid only during the call.
func (s *Store) ScanPaxosTokens(id schema.TableID, from, to int64, fn func(key, value []byte) error) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	for _, sp := range paxosSpans(id, from, to) {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: sp[0], UpperBound: sp[1]})
		if err != nil {
			return fmt.Errorf("replica: scan paxos state of table id %d tokens [%d, %d]: %w", id, from, to, err)
		}
		for valid := it.First(); valid; valid = it.Next() {
			v, err := it.ValueAndErr()
			if err == nil {
				err = fn(it.Key(), v)
			}
			if err != nil {
				it.Close()
				return err
			}
		}
		if err := it.Close(); err != nil {
			return fmt.Errorf("replica: scan paxos state of table id %d tokens [%d, %d]: %w", id, from, to, err)
		}
	}
	return nil
}

// mergePaxos merges the Paxos state in into cur, as if cur's acceptor had also answered what
// in's did: the higher promise, the newer accepted proposal and the newer commit win. It
// reports whether cur changed.
func mergePaxos(cur, in *replicapb.PaxosState) bool {
	changed := false
	if ballotCmp(in.Promised, cur.Promised) > 0 {
		cur.Promised, changed = in.Promised, true
	}
	if ballotCmp(in.Accepted.GetBallot(), cur.Accepted.GetBallot()) > 0 {
		cur.Accepted, changed = in.Accepted, true
	}
	if ballotCmp(in.Committed, cur.Committed) > 0 {
		cur.Committed, cur.CommittedOrigin, changed = in.Committed, in.CommittedOrigin, true
	}
	return changed
}

// ApplyStreamedPaxos merges streamed Paxos states (see ScanPaxosTokens) into the replica's own,
// durably (unless Options.NoSync), as one batch, after checking every one: its key must be a
// Paxos state key naming a table and token that accept allows, and its value must decode. A bad
// entry applies nothing and the error names it by position. The partitions' acceptor locks are
// held from load to save, so that a merge and a concurrent round never lose each other's state.
func (s *Service) ApplyStreamedPaxos(entries []*replicapb.Entry, accept func(id schema.TableID, token int64) error) error {
	if len(entries) == 0 {
		return nil
	}
	in := make([]*replicapb.PaxosState, len(entries))
	var stripes []uint32
	for i, e := range entries {
		id, tok, err := paxosStateKey(e.GetKey())
		if err == nil {
			err = accept(id, tok)
		}
		if err == nil {
			in[i] = &replicapb.PaxosState{}
			err = proto.Unmarshal(e.GetValue(), in[i])
		}
		if err != nil {
			return fmt.Errorf("replica: streamed paxos state %d (key %x): %w", i, e.GetKey()[:min(len(e.GetKey()), 32)], err)
		}
		stripes = append(stripes, paxosStripe(e.GetKey()))
	}
	if err := s.store.usable(); err != nil {
		return err
	}
	slices.Sort(stripes)
	for _, i := range slices.Compact(stripes) { // in order: no deadlock with another merge
		s.paxos[i].Lock()
		defer s.paxos[i].Unlock()
	}
	merged := map[string]*replicapb.PaxosState{}
	for i, e := range entries {
		k := e.GetKey()
		cur, ok := merged[string(k)]
		if !ok {
			st, err := s.store.loadPaxos(k)
			if err != nil {
				return err
			}
			cur = proto.Clone(st).(*replicapb.PaxosState) // the cached one changes only once saved
		}
		if mergePaxos(cur, in[i]) || ok {
			merged[string(k)] = cur
		}
	}
	if len(merged) == 0 {
		return nil
	}
	return s.store.savePaxosStates(merged, s.now())
}

// savePaxosStates stores the states by key in one batch and caches them once stored.
func (s *Store) savePaxosStates(states map[string]*replicapb.PaxosState, now time.Time) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	b := s.db.NewBatch()
	defer b.Close()
	for k, st := range states {
		v, err := encodePaxos(st, now)
		if err == nil {
			err = b.Set([]byte(k), v, nil)
		}
		if err != nil {
			return fmt.Errorf("replica: apply streamed paxos state: %w", err)
		}
	}
	err := b.Commit(s.writeOpts)
	for k, st := range states {
		s.cachePaxos([]byte(k), st, err)
	}
	if err != nil {
		return fmt.Errorf("replica: apply streamed paxos state: %w", err)
	}
	return nil
}
