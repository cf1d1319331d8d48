package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kvnode/kvnode/schema"
)

// errStoreClosed reports a drop or scan on a closed store.
var errStoreClosed = errors.New("replica: store is closed")

// tableSpan returns the key span [start, end) holding every key of table id: keys begin with
// the 8-byte big-endian id (see key.go). The last id has no finite end; end is nil then.
func tableSpan(id schema.TableID) (start, end []byte) {
	start = binary.BigEndian.AppendUint64(nil, uint64(id))
	if uint64(id) == math.MaxUint64 {
		return start, nil
	}
	return start, binary.BigEndian.AppendUint64(nil, uint64(id)+1)
}

// DropTable deletes every key of table id from the store, durably (synced whatever
// Options.NoSync says, so a schema persisted after it never names a dropped table whose data
// survived a crash). It writes one range tombstone; pebble reclaims the space in the
// background, preferring compactions that only delete (its range deletion hints). Dropping a
// table with no data, or twice, is harmless. A drop is accepted while free space is under the
// reserve (Options.MinFreeSpace), which refuses other writes: it is how space is freed.
func (s *Store) DropTable(id schema.TableID) error {
	if err := s.usable(); err != nil {
		return err
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	start, end := tableSpan(id)
	if end != nil {
		b := s.db.NewBatch()
		defer b.Close()
		err := b.DeleteRange(start, end, nil)
		if err == nil {
			err = dropTableIndexes(b, id) // index.go
		}
		if err == nil {
			err = b.Commit(pebble.Sync)
		}
		if err != nil {
			return fmt.Errorf("replica: drop table id %d: %w", id, err)
		}
		return nil
	}
	// The last id: no key bounds its span from above, so delete its keys one by one.
	b := s.db.NewBatch()
	defer b.Close()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: start})
	if err != nil {
		return fmt.Errorf("replica: drop table id %d: %w", id, err)
	}
	for it.First(); it.Valid(); it.Next() {
		if err := b.Delete(it.Key(), nil); err != nil {
			it.Close()
			return fmt.Errorf("replica: drop table id %d: %w", id, err)
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("replica: drop table id %d: %w", id, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("replica: drop table id %d: %w", id, err)
	}
	return nil
}

// TableKeys counts the keys the store holds for table id (live data and tombstones alike): 0
// after DropTable. It reads the whole table; it is meant for checks and tests, not requests.
func (s *Store) TableKeys(id schema.TableID) (int, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return 0, errStoreClosed
	}
	start, end := tableSpan(id)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: start, UpperBound: end})
	if err != nil {
		return 0, fmt.Errorf("replica: scan table id %d: %w", id, err)
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("replica: scan table id %d: %w", id, err)
	}
	return n, nil
}

// TableIDs returns the ids of the tables the store holds keys of, in order (never 0, the
// batchlog's reserved key space). It seeks from
// one table's span to the next, so it costs one seek per table, not a scan of the data.
func (s *Store) TableIDs() ([]schema.TableID, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return nil, errStoreClosed
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		return nil, fmt.Errorf("replica: list tables: %w", err)
	}
	var ids []schema.TableID
	// Table id 0 is no table: it is the reserved key space of the batchlog (batchlog.go).
	first, _ := tableSpan(1)
	for valid := it.SeekGE(first); valid; {
		k := it.Key()
		if len(k) < 8 {
			it.Close()
			return nil, fmt.Errorf("replica: list tables: %w: %x", errBadKey, k)
		}
		id := schema.TableID(binary.BigEndian.Uint64(k))
		ids = append(ids, id)
		_, end := tableSpan(id)
		if end == nil {
			break
		}
		valid = it.SeekGE(end)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("replica: list tables: %w", err)
	}
	return ids, nil
}

// DropTable frees what the service keeps for a dropped table (its limiter labels, metric series
// and hot partitions) and deletes its data from the store. Requests for the table still in
// flight count into state that is no longer exported, and the table's labels are never handed
// out again. The node calls it on every node the drop reaches, whenever it learns of it.
func (s *Service) DropTable(id schema.TableID) error {
	s.ops.forget(id)
	return s.store.DropTable(id)
}

// Store returns the service's store.
func (s *Service) Store() *Store { return s.store }
