package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// The acceptor of lightweight transactions: a replica's Paxos state per partition (the ballot it
// promised, the proposal it accepted last, the ballot it committed last), in the reserved key
// space of table id 0 (see the batchlog) under kindPaxos, then the table id and the partition's
// key:
//
//	00 00 00 00 00 00 00 00  'P'  table id (8 bytes)  token (8 bytes)  partition key
//
// A value is a replicapb.PaxosState. State untouched for the purge grace is removed by
// PurgePaxos (its gc): a partition whose last proposal was committed needs nothing of it, and an
// unfinished proposal older than the grace is one whose client long had its timeout.
const (
	paxosPrefix = "\x00\x00\x00\x00\x00\x00\x00\x00P"
	paxosUpper  = "\x00\x00\x00\x00\x00\x00\x00\x00Q"
	// paxosStripes is how many locks serialise the acceptor's read-modify-writes, by partition.
	paxosStripes = 64
)

// paxosKey returns the state key of the partition (table, token, key).
func paxosKey(table schema.TableID, token int64, key [][]byte) []byte {
	b := make([]byte, 0, len(paxosPrefix)+16+32)
	b = append(b, paxosPrefix...)
	b = binary.BigEndian.AppendUint64(b, uint64(table))
	b = binary.BigEndian.AppendUint64(b, uint64(token))
	return partitioner.AppendKey(b, key)
}

// ballotCmp orders ballots by counter, then node; nil is below every ballot.
func ballotCmp(a, b *replicapb.SchemaBallot) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	case a.Counter != b.Counter:
		if a.Counter < b.Counter {
			return -1
		}
		return 1
	case a.Node < b.Node:
		return -1
	case a.Node > b.Node:
		return 1
	}
	return 0
}

func checkPaxosBallot(b *replicapb.SchemaBallot) error {
	if b == nil || b.Counter <= 0 || b.Node == "" {
		return fmt.Errorf("%w: paxos ballot %v is missing its counter or node", ErrBadRequest, b)
	}
	return nil
}

// paxosLock returns the lock of the partition with state key k.
func (s *Service) paxosLock(k []byte) func() {
	mu := &s.paxos[paxosStripe(k)]
	mu.Lock()
	return mu.Unlock
}

// paxosStripe returns the index of the lock of the partition with state key k.
func paxosStripe(k []byte) uint32 {
	h := fnv.New32a()
	h.Write(k)
	return h.Sum32() % paxosStripes
}

// paxosCacheSize bounds the Paxos state cache: partitions whose state was written last.
const paxosCacheSize = 4096

// paxosCache is a write-through cache of the Paxos states the store wrote last, by state key,
// so that the propose and the commit that follow a partition's prepare (and the next round on
// a hot partition) find its state without a storage read. Its states are the store's: a
// caller holds the partition's lock (Service.paxosLock) from load to save, and a save that
// fails drops the entry. When full it starts over empty. The zero value is ready.
type paxosCache struct {
	mu sync.Mutex
	m  map[string]*replicapb.PaxosState
}

func (c *paxosCache) get(k []byte) (*replicapb.PaxosState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[string(k)]
	return st, ok
}

func (c *paxosCache) put(k []byte, st *replicapb.PaxosState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= paxosCacheSize {
		c.m = make(map[string]*replicapb.PaxosState, min(paxosCacheSize, 64))
	}
	c.m[string(k)] = st
}

func (c *paxosCache) drop(k []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, string(k))
}

func (c *paxosCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}

// loadPaxos returns the state under k (the cached one when the cache has it); an empty state
// when there is none. The caller holds the partition's lock and saves what it changes
// (savePaxos, or applyWith and cachePaxos), or drops it (dropPaxos).
func (s *Store) loadPaxos(k []byte) (*replicapb.PaxosState, error) {
	if st, ok := s.paxosStates.get(k); ok {
		return st, nil
	}
	return s.loadStoredPaxos(k)
}

// loadStoredPaxos reads the state under k from storage; an empty state when there is none.
func (s *Store) loadStoredPaxos(k []byte) (*replicapb.PaxosState, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return nil, errStoreClosed
	}
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return &replicapb.PaxosState{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replica: load paxos state: %w", err)
	}
	defer closer.Close()
	st := &replicapb.PaxosState{}
	if err := proto.Unmarshal(v, st); err != nil {
		return nil, fmt.Errorf("replica: paxos state %x is malformed: %w", k, err)
	}
	return st, nil
}

// encodePaxos stamps st with now and encodes it.
func encodePaxos(st *replicapb.PaxosState, now time.Time) ([]byte, error) {
	st.UpdatedUnixNanos = now.UnixNano()
	v, err := proto.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("replica: encode paxos state: %w", err)
	}
	return v, nil
}

// savePaxos stores st under k, durable as the store's writes are: synced unless Options.NoSync
// (as Cassandra writes Paxos state through its commit log like any write), so that with the
// default an acceptance or commit survives a crash. A promise is stored unsynced under the
// fence instead (paxosFence): the floor a restart finds stands in for the promises it lost.
func (s *Store) savePaxos(k []byte, st *replicapb.PaxosState, now time.Time) error {
	return s.savePaxosWith(k, st, now, s.writeOpts)
}

// savePaxosWith is savePaxos with the write options wo: pebble.NoSync for a promise under the
// fence (fencePromise).
func (s *Store) savePaxosWith(k []byte, st *replicapb.PaxosState, now time.Time, wo *pebble.WriteOptions) (err error) {
	defer func() { s.cachePaxos(k, st, err) }()
	if err := s.usable(); err != nil {
		return err
	}
	v, err := encodePaxos(st, now)
	if err != nil {
		return err
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	if err := s.db.Set(k, v, wo); err != nil {
		return fmt.Errorf("replica: store paxos state: %w", err)
	}
	return nil
}

// cachePaxos records st as the state under k once it is stored (err nil); after a failed save
// the cache forgets k, whose stored state the next load reads.
func (s *Store) cachePaxos(k []byte, st *replicapb.PaxosState, err error) {
	if err != nil {
		s.paxosStates.drop(k)
		return
	}
	s.paxosStates.put(k, st)
}

// promiseWindow is how far, in ballot microseconds, the promise fence runs ahead of the ballot
// that moved it: at most one synced fence write per second of ballot time on a store.
const promiseWindow = int64(time.Second / time.Microsecond)

// paxosFenceKey holds the promise fence: a PaxosState whose Promised counter is the fence. It
// sorts before every partition's state key and in no table's span, so neither a handover scan
// nor a partition's load meets it; PurgePaxos leaves it.
const paxosFenceKey = paxosPrefix

// paxosFence makes a prepare's promise cheap to store: the promise is written without a sync,
// its ballot below the fence, a counter kept durable (synced) ahead of every promise the store
// made. A crash may lose promises that no later sync of the log covered, but not the fence; the
// store reopened treats the fence it finds as a ballot promised to every partition (floor), so
// that it refuses every ballot a lost promise could have shut out. A promise at or above the
// fence first moves it promiseWindow ahead, synced, before the promise is answered. The zero
// value loads the fence from the store at first use.
type paxosFence struct {
	mu     sync.Mutex // held while loading or moving the fence
	loaded atomic.Bool
	floor  *replicapb.SchemaBallot // set once, before loaded
	fence  atomic.Int64            // every unsynced promise's counter is below it, durably
}

// paxosFloor returns the ballot the store treats as promised to every partition: the fence as
// the store found it at first use (nil when there was none). The caller does not change it.
func (s *Store) paxosFloor() (*replicapb.SchemaBallot, error) {
	f := &s.paxosFence
	if f.loaded.Load() {
		return f.floor, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.loaded.Load() {
		st, err := s.loadStoredPaxos([]byte(paxosFenceKey))
		if err != nil {
			return nil, err
		}
		if c := st.GetPromised().GetCounter(); c > 0 {
			// Node "" sorts below every proposer's node: a ballot of counter c from any
			// proposer is above it, and no lost promise had a counter at or above the fence.
			f.floor = &replicapb.SchemaBallot{Counter: c}
			f.fence.Store(c)
		}
		f.loaded.Store(true)
	}
	return f.floor, nil
}

// fencePromise makes sure the fence is above counter, moving it (synced) when it is not: after
// it returns nil a promise of that counter may be stored unsynced. paxosFloor was called first.
func (s *Store) fencePromise(counter int64) error {
	f := &s.paxosFence
	if counter < f.fence.Load() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if counter < f.fence.Load() {
		return nil
	}
	next := counter + promiseWindow
	st := &replicapb.PaxosState{Promised: &replicapb.SchemaBallot{Counter: next}}
	v, err := encodePaxos(st, s.now())
	if err != nil {
		return err
	}
	if err := s.usable(); err != nil {
		return err
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	if err := s.db.Set([]byte(paxosFenceKey), v, s.writeOpts); err != nil {
		return fmt.Errorf("replica: store paxos promise fence: %w", err)
	}
	f.fence.Store(next)
	return nil
}

// PurgePaxos removes the Paxos state of every partition last changed before before, and returns
// how many it removed: the gc of lightweight transactions' state.
func (s *Store) PurgePaxos(before time.Time) (int, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return 0, errStoreClosed
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(paxosPrefix), UpperBound: []byte(paxosUpper)})
	if err != nil {
		return 0, fmt.Errorf("replica: purge paxos state: %w", err)
	}
	b := s.db.NewBatch()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			b.Close()
			return 0, fmt.Errorf("replica: purge paxos state: %w", err)
		}
		if string(it.Key()) == paxosFenceKey {
			continue
		}
		var st replicapb.PaxosState
		if proto.Unmarshal(v, &st) == nil && st.UpdatedUnixNanos >= before.UnixNano() {
			continue
		}
		if err := b.Delete(it.Key(), nil); err != nil {
			it.Close()
			b.Close()
			return 0, fmt.Errorf("replica: purge paxos state: %w", err)
		}
		n++
	}
	if err := it.Close(); err != nil {
		b.Close()
		return 0, fmt.Errorf("replica: purge paxos state: %w", err)
	}
	err = b.Commit(pebble.NoSync)
	s.paxosStates.reset()
	if err != nil {
		return 0, fmt.Errorf("replica: purge paxos state: %w", err)
	}
	return n, nil
}

// PaxosPrepare promises req's ballot for the partition req.read names unless the replica
// promised a higher one, and returns the partition's rows and Paxos state. The limiter decides
// first, once, from req.read.limiter (a write, or a read for a SERIAL SELECT): a rejection
// promises nothing and stores nothing.
func (s *Service) PaxosPrepare(ctx context.Context, req *replicapb.PaxosPrepareRequest) (*replicapb.PaxosPrepareResponse, error) {
	rd := req.GetRead()
	if err := checkPaxosBallot(req.GetBallot()); err != nil || rd == nil {
		if err == nil {
			err = fmt.Errorf("%w: paxos prepare carries no read", ErrBadRequest)
		}
		return &replicapb.PaxosPrepareResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_BAD_REQUEST, Message: err.Error()}}, nil
	}
	t, ok := s.schema.TableByID(schema.TableID(rd.GetTableId()))
	if !ok {
		return &replicapb.PaxosPrepareResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_UNKNOWN_TABLE, Message: unknownTable(rd.GetTableId()).Error()}}, nil
	}
	op := schema.OpWrite
	if req.SerialRead {
		op = schema.OpRead
	}
	d, err := s.admit(t, rd.Token, op, rd.Limiter, rd.PartitionKey)
	if err != nil {
		return &replicapb.PaxosPrepareResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_BAD_REQUEST, Message: err.Error()}}, nil
	}
	if !d.Admitted {
		rl := readRateLimited(d)
		s.paxosRejected.Add(1)
		return &replicapb.PaxosPrepareResponse{Status: replicapb.Status_STATUS_RATE_LIMITED, RateLimited: rl.RateLimited}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	k := paxosKey(t.ID, rd.Token, rd.PartitionKey)
	unlock := s.paxosLock(k)
	defer unlock()
	floor, err := s.store.paxosFloor()
	if err != nil {
		return &replicapb.PaxosPrepareResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: s.classify(err, "paxos prepare", t), Message: err.Error()}}, nil
	}
	st, err := s.store.loadPaxos(k)
	if err != nil {
		return &replicapb.PaxosPrepareResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: s.classify(err, "paxos prepare", t), Message: err.Error()}}, nil
	}
	highest := st.Promised
	if ballotCmp(st.Accepted.GetBallot(), highest) > 0 {
		highest = st.Accepted.GetBallot()
	}
	if ballotCmp(floor, highest) > 0 {
		highest = floor
	}
	if ballotCmp(req.Ballot, highest) <= 0 {
		return &replicapb.PaxosPrepareResponse{Status: replicapb.Status_STATUS_OK, Highest: highest}, nil
	}
	// The promise is stored unsynced under the fence (paxosFence): the propose's and commit's
	// syncs are the round's only ones on this replica.
	if err := s.store.fencePromise(req.Ballot.Counter); err != nil {
		return &replicapb.PaxosPrepareResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: s.classify(err, "paxos prepare", t), Message: err.Error()}}, nil
	}
	st.Promised = req.Ballot
	s.paxosPrepares.Add(1)
	if err := s.store.savePaxosWith(k, st, s.now(), pebble.NoSync); err != nil {
		return &replicapb.PaxosPrepareResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: s.classify(err, "paxos prepare", t), Message: err.Error()}}, nil
	}
	var rows *replicapb.ReadResponse
	err = s.store.guarded(func() (err error) {
		rows, err = s.store.ReadPartition(t, rd) // the store reads; the limiter decided above
		return err
	})
	if err != nil {
		return &replicapb.PaxosPrepareResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: s.classify(err, "paxos prepare", t), Message: err.Error()}}, nil
	}
	rows.Status = replicapb.Status_STATUS_OK
	return &replicapb.PaxosPrepareResponse{Status: replicapb.Status_STATUS_OK, Promised: true, Accepted: st.Accepted, Committed: st.Committed, CommittedOrigin: st.CommittedOrigin, Read: rows}, nil
}

// PaxosPropose accepts req's proposal unless the replica promised a higher ballot.
func (s *Service) PaxosPropose(_ context.Context, req *replicapb.PaxosProposeRequest) (*replicapb.PaxosProposeResponse, error) {
	p := req.GetProposal()
	m := p.GetMutation()
	if err := checkPaxosBallot(p.GetBallot()); err != nil || m == nil {
		if err == nil {
			err = fmt.Errorf("%w: paxos proposal carries no mutation", ErrBadRequest)
		}
		return &replicapb.PaxosProposeResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_BAD_REQUEST, Message: err.Error()}}, nil
	}
	k := paxosKey(schema.TableID(m.TableId), m.Token, m.PartitionKey)
	unlock := s.paxosLock(k)
	defer unlock()
	floor, err := s.store.paxosFloor()
	if err != nil {
		return &replicapb.PaxosProposeResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_INTERNAL, Message: err.Error()}}, nil
	}
	st, err := s.store.loadPaxos(k)
	if err != nil {
		return &replicapb.PaxosProposeResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_INTERNAL, Message: err.Error()}}, nil
	}
	if ballotCmp(p.Ballot, floor) <= 0 {
		return &replicapb.PaxosProposeResponse{Status: replicapb.Status_STATUS_OK, Highest: floor}, nil
	}
	if ballotCmp(p.Ballot, st.Promised) < 0 || ballotCmp(p.Ballot, st.Accepted.GetBallot()) < 0 {
		return &replicapb.PaxosProposeResponse{Status: replicapb.Status_STATUS_OK, Highest: st.Promised}, nil
	}
	st.Promised, st.Accepted = p.Ballot, p
	if err := s.store.savePaxos(k, st, s.now()); err != nil {
		return &replicapb.PaxosProposeResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_INTERNAL, Message: err.Error()}}, nil
	}
	return &replicapb.PaxosProposeResponse{Status: replicapb.Status_STATUS_OK, Accepted: true}, nil
}

// PaxosCommit applies a chosen proposal's mutation and records its ballot as the partition's
// last committed one, both in one write. A commit older than the one recorded is applied
// (last-write-wins makes it harmless) but does not move the record back.
//
// A commit by reference (req.partition set, the proposal without its mutation) applies the
// proposal the replica accepted at the proposal's ballot; when it holds none at that ballot it
// answers ProposalMissing (a repeat of the commit it recorded last is answered as done).
func (s *Service) PaxosCommit(_ context.Context, req *replicapb.PaxosCommitRequest) (*replicapb.PaxosCommitResponse, error) {
	p := req.GetProposal()
	m := p.GetMutation()
	byRef := req.GetPartition() != nil
	if byRef {
		m = req.GetPartition()
	}
	if err := checkPaxosBallot(p.GetBallot()); err != nil || m == nil || (byRef && p.GetMutation() != nil) {
		if err == nil && m == nil {
			err = fmt.Errorf("%w: paxos commit carries no mutation", ErrBadRequest)
		} else if err == nil {
			err = fmt.Errorf("%w: paxos commit by reference carries a mutation", ErrBadRequest)
		}
		return &replicapb.PaxosCommitResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_BAD_REQUEST, Message: err.Error()}}, nil
	}
	t, ok := s.schema.TableByID(schema.TableID(m.TableId))
	if !ok {
		return &replicapb.PaxosCommitResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_UNKNOWN_TABLE, Message: unknownTable(m.TableId).Error()}}, nil
	}
	k := paxosKey(t.ID, m.Token, m.PartitionKey)
	unlock := s.paxosLock(k)
	defer unlock()
	st, err := s.store.loadPaxos(k)
	if err != nil {
		return &replicapb.PaxosCommitResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_INTERNAL, Message: err.Error()}}, nil
	}
	if byRef {
		switch acc := st.Accepted; {
		case acc != nil && ballotCmp(acc.Ballot, p.Ballot) == 0 && acc.Mutation != nil:
			p = &replicapb.PaxosProposal{Ballot: p.Ballot, Mutation: acc.Mutation, Origin: cmpOr(p.Origin, acc.Origin)}
			m = acc.Mutation
		case ballotCmp(st.Committed, p.Ballot) == 0:
			return &replicapb.PaxosCommitResponse{Status: replicapb.Status_STATUS_OK}, nil // applied already
		default:
			return &replicapb.PaxosCommitResponse{Status: replicapb.Status_STATUS_OK, ProposalMissing: true}, nil
		}
	}
	var state []byte // the new state, nil when the record does not move
	if ballotCmp(p.Ballot, st.Committed) > 0 {
		st.Committed, st.CommittedOrigin = p.Ballot, p.Origin
		if st.CommittedOrigin == nil {
			st.CommittedOrigin = p.Ballot
		}
		if ballotCmp(st.Accepted.GetBallot(), p.Ballot) <= 0 {
			st.Accepted = nil // completed: no later proposer needs it
		}
		if state, err = encodePaxos(st, s.now()); err != nil {
			s.store.paxosStates.drop(k) // st changed, unsaved
			return &replicapb.PaxosCommitResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_INTERNAL, Message: err.Error()}}, nil
		}
	}
	switch {
	case len(m.Rows) > 0 || m.PartitionDeletion != nil || len(m.RangeTombstones) > 0 || m.StaticRow != nil:
		// The mutation and the record in one batch: one write (one sync) per commit, and a
		// crash keeps both or neither (neither: the proposal stays accepted, in progress, and
		// the next round completes it).
		var stateKey []byte
		if state != nil {
			stateKey = k
		}
		err := s.store.guarded(func() error { return s.store.applyWith(t, m, stateKey, state) })
		if state != nil {
			s.store.cachePaxos(k, st, err)
		}
		if err != nil {
			return &replicapb.PaxosCommitResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: s.classify(err, "paxos commit", t), Message: err.Error()}}, nil
		}
	case state != nil:
		if err := s.store.savePaxos(k, st, s.now()); err != nil {
			return &replicapb.PaxosCommitResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_INTERNAL, Message: err.Error()}}, nil
		}
	}
	return &replicapb.PaxosCommitResponse{Status: replicapb.Status_STATUS_OK}, nil
}

// cmpOr returns a, or b when a is nil.
func cmpOr(a, b *replicapb.SchemaBallot) *replicapb.SchemaBallot {
	if a != nil {
		return a
	}
	return b
}

// PaxosStats are a replica's counts of lightweight transactions' prepares.
type PaxosStats struct {
	// Promised counts the prepares this replica promised: Paxos rounds it took part in.
	Promised uint64
	// RateLimited counts the prepares the limiter rejected, which promised nothing.
	RateLimited uint64
}

// PaxosStats returns the replica's counts of prepares since it started.
func (s *Service) PaxosStats() PaxosStats {
	return PaxosStats{Promised: s.paxosPrepares.Load(), RateLimited: s.paxosRejected.Load()}
}

// PaxosCollector returns the Prometheus metric of the replica's Paxos prepares:
// kvnode_replica_paxos_prepares_total by result, promised (a round this replica took part in)
// or rate_limited (a prepare the limiter rejected, which promised and stored nothing).
func (s *Service) PaxosCollector() prometheus.Collector {
	return paxosCollector{s: s, desc: prometheus.NewDesc("kvnode_replica_paxos_prepares_total",
		"Paxos prepares of lightweight transactions this replica answered, by result: promised, or rate_limited (rejected by the limiter before any promise).",
		[]string{"result"}, nil)}
}

type paxosCollector struct {
	s    *Service
	desc *prometheus.Desc
}

func (c paxosCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c paxosCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.PaxosStats()
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(st.Promised), "promised")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(st.RateLimited), "rate_limited")
}

// PaxosGrace is how long the Paxos state of a partition is kept after it last changed, and
// paxosGCEvery how often StartPaxosGC's loop looks. A proposal still unfinished after the grace
// belongs to a statement whose client long had its timeout; nobody observed its value (a SERIAL
// read or a later transaction would have completed it), so dropping it is as if it never
// happened.
const (
	PaxosGrace   = time.Hour
	paxosGCEvery = 10 * time.Minute
)

// StartPaxosGC starts the loop that purges Paxos state older than PaxosGrace (PurgePaxos) every
// ten minutes, logging failures to log; the caller stops it.
func (s *Store) StartPaxosGC(log *slog.Logger) *loop.Loop {
	return loop.Start(loop.Options{Every: paxosGCEvery, Delay: true}, func(context.Context) time.Duration {
		if removed, err := s.PurgePaxos(time.Now().Add(-PaxosGrace)); err != nil {
			log.Warn("paxos state gc failed", "err", err)
		} else if removed > 0 {
			log.Debug("paxos state gc", "removed", removed)
		}
		return 0
	})
}
