package replica

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kvnode/kvnode/schema"
)

// Streaming copies a token range's storage entries from one replica to another (a node that
// joins, leaves or replaces a dead one) as they are stored: key and value, the value carrying
// the write timestamp and the tombstone flag. The receiver merges them with the same
// last-write-wins merge operator as writes, so a streamed entry never overwrites a newer write the
// receiver already has (a write sent to it as a pending replica), tombstones travel with the data
// they shadow, and streaming a range twice is harmless. This is the path of a peer of an older
// release; sststream.go streams the same entries as sstables.

// StreamEntry is one storage entry: its key (see key.go) and stored value (see value.go).
type StreamEntry struct {
	Key, Value []byte
}

// tokenKey appends table id's key prefix for token t.
func tokenKey(dst []byte, id schema.TableID, t int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(id))
	return binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
}

// EntryToken returns the table id and partition token of a storage key, or an error when the key
// is too short to hold them.
func EntryToken(key []byte) (schema.TableID, int64, error) {
	if len(key) < 16 {
		return 0, 0, fmt.Errorf("%w: %d bytes, shorter than a table id and a token", errBadKey, len(key))
	}
	return schema.TableID(binary.BigEndian.Uint64(key)), int64(binary.BigEndian.Uint64(key[8:]) ^ (1 << 63)), nil
}

// ScanTokens calls fn with every storage entry of table id whose partition token t has
// from ≤ t ≤ to, in key order, stopping at fn's first error. The slices fn gets are valid only
// during the call.
func (s *Store) ScanTokens(id schema.TableID, from, to int64, fn func(key, value []byte) error) error {
	if id == 0 {
		return fmt.Errorf("replica: table id 0 is the batchlog's key space, not a table")
	}
	if from > to {
		return nil
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	lower, upper := tokenSpan(id, from, to)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("replica: scan table id %d tokens [%d, %d]: %w", id, from, to, err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fmt.Errorf("replica: scan table id %d tokens [%d, %d]: %w", id, from, to, err)
		}
		if err := fn(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("replica: scan table id %d tokens [%d, %d]: %w", id, from, to, err)
	}
	return nil
}

// ApplyStreamed merges streamed entries into the store as one batch, durably (unless
// Options.NoSync), after checking every one: its key must be a storage key (checkStreamedKey)
// naming a table and token that accept allows (the receiver's schema and the ranges it asked
// for) and its value must decode. A bad entry
// applies nothing and the error names it by position.
//
// With tables set, a streamed live cell of an indexed column also writes its index entry in the
// batch (index.go), as a write of it would.
func (s *Store) ApplyStreamed(entries []StreamEntry, accept func(id schema.TableID, token int64) error, tables TableSource) error {
	var partition []byte // the last partition prefix checked
	for i, e := range entries {
		id, tok, err := EntryToken(e.Key)
		if err == nil {
			err = accept(id, tok)
		}
		if err == nil && id == 0 {
			err = fmt.Errorf("table id 0 is the batchlog's key space")
		}
		if err == nil {
			var t *schema.Table
			if tables != nil {
				t, _ = tables.TableByID(id)
			}
			partition, err = checkStreamedKey(e.Key, partition, t)
		}
		if err == nil {
			_, err = decodeValue(e.Value)
		}
		if err != nil {
			return fmt.Errorf("replica: streamed entry %d (key %x): %w", i, e.Key[:min(len(e.Key), 24)], err)
		}
	}
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.SpaceError(); err != nil {
		return err
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, e := range entries {
		if err := b.Merge(e.Key, e.Value, nil); err != nil {
			return fmt.Errorf("replica: apply streamed entries: %w", err)
		}
		if tables == nil {
			continue
		}
		id, _, _ := EntryToken(e.Key)
		if t, ok := tables.TableByID(id); ok {
			if err := indexStreamed(b, t, e.Key, e.Value); err != nil {
				return fmt.Errorf("replica: apply streamed entries: index: %w", err)
			}
		}
	}
	if err := b.Commit(s.writeOpts); err != nil {
		return fmt.Errorf("replica: apply streamed entries: %w", err)
	}
	return nil
}

// LoadBytes returns the bytes the store uses on disk (sstables, write-ahead log and the rest).
func (s *Store) LoadBytes() int64 {
	m, ok := s.metrics()
	if !ok {
		return 0
	}
	return int64(m.DiskSpaceUsage())
}

// DeleteTokens deletes every storage entry of table id whose partition token t has
// from ≤ t ≤ to for one of the inclusive token intervals, durably (synced whatever
// Options.NoSync says: a node that deleted a range it no longer replicates must not find it again
// after a crash). An interval that holds no entry costs one seek and writes nothing; one that
// does is deleted with one range tombstone. It returns how many intervals held entries. Table id
// 0 (the batchlog, the repair state) is refused.
func (s *Store) DeleteTokens(id schema.TableID, intervals [][2]int64) (int, error) {
	if id == 0 {
		return 0, fmt.Errorf("replica: table id 0 is the batchlog's key space, not a table")
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return 0, errStoreClosed
	}
	b := s.db.NewBatch()
	defer b.Close()
	deleted := 0
	for _, iv := range intervals {
		from, to := iv[0], iv[1]
		if from > to {
			continue
		}
		lower, upper := tokenSpan(id, from, to)
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return 0, fmt.Errorf("replica: delete table id %d tokens [%d, %d]: %w", id, from, to, err)
		}
		found := it.First()
		for ; upper == nil && it.Valid(); it.Next() { // the last table id: no key bounds it
			if err := b.Delete(it.Key(), nil); err != nil {
				it.Close()
				return 0, fmt.Errorf("replica: delete table id %d tokens [%d, %d]: %w", id, from, to, err)
			}
		}
		if err := it.Close(); err != nil {
			return 0, fmt.Errorf("replica: delete table id %d tokens [%d, %d]: %w", id, from, to, err)
		}
		if !found {
			continue
		}
		deleted++
		if upper != nil {
			if err := b.DeleteRange(lower, upper, nil); err != nil {
				return 0, fmt.Errorf("replica: delete table id %d tokens [%d, %d]: %w", id, from, to, err)
			}
		}
	}
	if b.Empty() {
		return 0, nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, fmt.Errorf("replica: delete table id %d token ranges: %w", id, err)
	}
	return deleted, nil
}

// tokenSpan returns the key bounds [lower, upper) of table id's partitions whose tokens are in
// [from, to].
func tokenSpan(id schema.TableID, from, to int64) (lower, upper []byte) {
	lower = tokenKey(nil, id, from)
	if to == math.MaxInt64 {
		_, upper = tableSpan(id)
		return lower, upper
	}
	return lower, tokenKey(nil, id, to+1)
}
