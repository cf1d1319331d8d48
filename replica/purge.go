package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/schema"
)

// Tombstone purge. A tombstone may be forgotten only once every replica holds it: a replica
// that missed the delete and still holds the data would otherwise hand the data back to the
// others (by read repair or repair) and the deleted row would come back. Cassandra's rule is to
// keep tombstones gc_grace_seconds and to repair every range within that time; kvnode enforces
// the second half: a tombstone is purged only when this replica stored it more than its table's
// gc_grace_seconds ago AND before the start of the last repair, run on this node, that repaired
// every range of the table this node replicates (every replica of those ranges held it by the
// repair's end). "Stored" is the tombstone's local deletion time, kept with it (value.go), not
// its write timestamp, which a client may set in the past (USING TIMESTAMP): a delete that
// arrives after a repair waits for the next one whatever timestamp it carries. Data a tombstone shadows is dropped with it, and whenever a purge pass
// meets it: a read never returns it, so dropping it changes no answer and no repair hash.
//
// Expired data (a cell or row marker written with a TTL) is purged by the same rule, as the
// tombstone it turned into at its expiry: it is purgeable once both its expiry and the time
// this replica stored it (kept with it, value.go) are before the horizon, the earlier of now −
// gc_grace_seconds and the start of the last repair of every range of the table. Until then it
// stays, and beats any older value another replica may still hold.
//
// Purge is a pass over a table's partitions (Store.Purge): pebble has no compaction filter
// that sees across keys (a row tombstone and the cells it shadows are different keys), and a
// pass run after each repair and periodically purges as soon as the rule allows. Each
// partition is purged under its stripe's lock, which Apply takes (shared) to commit, so a
// write that lands while the pass decides is never deleted with the keys it supersedes.

// repairStatePrefix is the reserved key space (table id 0, see key.go) of the per-table repair
// times: the prefix, then the table id (8 bytes big-endian); the value is the repair's start
// in nanoseconds since the Unix epoch (8 bytes big-endian).
const repairStatePrefix = "\x00\x00\x00\x00\x00\x00\x00\x00R"

// stripeCount is the number of purge stripes: partitions hash to one by token.
const stripeCount = 64

// purgeStripes serialise a partition's purge with writes to it.
type purgeStripes [stripeCount]sync.RWMutex

func (p *purgeStripes) of(token int64) *sync.RWMutex { return &p[uint64(token)%stripeCount] }

func repairStateKey(id schema.TableID) []byte {
	return binary.BigEndian.AppendUint64([]byte(repairStatePrefix), uint64(id))
}

// SetRepairedAt records that a repair that started at at repaired every range of table id this
// node replicates. The record only moves forward (an older time is ignored) and is synced.
func (s *Store) SetRepairedAt(id schema.TableID, at time.Time) error {
	prev, ok, err := s.RepairedAt(id)
	if err != nil {
		return err
	}
	if ok && !at.After(prev) {
		return nil
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	if err := s.db.Set(repairStateKey(id), binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())), pebble.Sync); err != nil {
		return fmt.Errorf("replica: record the repair of table id %d: %w", id, err)
	}
	return nil
}

// RepairedAt returns the start of the last repair of every range of table id, if any.
func (s *Store) RepairedAt(id schema.TableID) (time.Time, bool, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return time.Time{}, false, errStoreClosed
	}
	v, closer, err := s.db.Get(repairStateKey(id))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("replica: read the repair time of table id %d: %w", id, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return time.Time{}, false, fmt.Errorf("replica: repair time of table id %d: %w (%d bytes)", id, errBadKey, len(v))
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), true, nil
}

// PurgeStats is what one purge pass did.
type PurgeStats struct {
	// Partitions scanned; Keys scanned; Tombstones purged; Shadowed: keys of data tombstones
	// shadowed, deleted; Expired: expired cells and row markers purged.
	Partitions, Keys, Tombstones, Shadowed, Expired int
	// Compacted reports that the pass compacted the table's keys to give the space back.
	Compacted bool
}

// purgeRule says which of a table's tombstones may be purged: those this replica stored
// before horizon, the earlier of now − gc_grace_seconds and the start of the last repair of all
// the table's ranges. A tombstone's stored time is its local deletion time (value.go), or, for
// tombstones stored before replicas kept one, its write timestamp.
type purgeRule struct {
	localBefore int64 // nanoseconds since the Unix epoch
	tsBefore    int64 // microseconds, for write timestamps
}

// newPurgeRule returns the rule for table t at now, given the last repair of all its ranges
// (repaired false means never: nothing is purged but shadowed data).
func newPurgeRule(t *schema.Table, now, repairedAt time.Time, repaired bool) purgeRule {
	if !repaired {
		return purgeRule{math.MinInt64, math.MinInt64}
	}
	horizon := now.Add(-time.Duration(t.GCGraceSeconds()) * time.Second)
	if repairedAt.Before(horizon) {
		horizon = repairedAt
	}
	return purgeRule{horizon.UnixNano(), horizon.UnixMicro()}
}

// expiredPurgeable reports whether the expiring cell c, stored as v, has expired and may be
// purged: its expiry and the time this replica stored it are before the horizon.
func (r purgeRule) expiredPurgeable(v []byte, c cell.Cell) bool {
	stored, ok := storedAt(v)
	if !ok || !c.Expiring() {
		return false
	}
	// Expiry in seconds, compared in nanoseconds without overflow.
	return stored < r.localBefore && c.Expires < r.localBefore/int64(time.Second)
}

// purgeable reports whether the tombstone stored as v, written at ts, may be purged.
func (r purgeRule) purgeable(v []byte, ts int64) bool {
	if local, ok := localTime(v); ok {
		return local < r.localBefore
	}
	return ts < r.tsBefore
}

// Purge deletes, from table t's partitions, the tombstones the purge rule lets go at now (see
// above) with the data they shadow, and data shadowed by tombstones that stay.
func (s *Store) Purge(ctx context.Context, t *schema.Table, now time.Time) (PurgeStats, error) {
	at, repaired, err := s.RepairedAt(t.ID)
	if err != nil {
		return PurgeStats{}, err
	}
	rule := newPurgeRule(t, now, at, repaired)
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return PurgeStats{}, errStoreClosed
	}
	start, end := tableSpan(t.ID)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: start, UpperBound: end})
	if err != nil {
		return PurgeStats{}, fmt.Errorf("replica: table %s: purge: %w", t.QualifiedName(), err)
	}
	defer it.Close()
	var st PurgeStats
	for valid := it.First(); valid; {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		key := it.Key()
		_, token, _, rest, err := decodePartitionPrefix(key)
		if err != nil {
			return st, corrupt(t, key, err)
		}
		prefix := bytes.Clone(key[:len(key)-len(rest)])
		if err := s.purgePartition(t, token, prefix, rule, &st); err != nil {
			return st, err
		}
		st.Partitions++
		valid = it.SeekGE(prefixEnd(prefix))
	}
	if err := it.Error(); err != nil {
		return st, err
	}
	// Pebble gives the space of deleted keys back when a compaction meets their deletes, which
	// on a table nobody writes to may be never: after a pass that deleted a good share of the
	// table's keys (expired data, typically), compact the table now.
	if deleted := st.Tombstones + st.Shadowed + st.Expired; deleted > 0 && deleted*purgeCompactShare >= st.Keys {
		// Twice: the first compaction can leave the purge's deletes one level above the data.
		for range 2 {
			if err := s.db.Compact(ctx, start, end, false); err != nil {
				return st, fmt.Errorf("replica: table %s: compact after purge: %w", t.QualifiedName(), err)
			}
		}
		st.Compacted = true
	}
	return st, nil
}

// purgeCompactShare is the inverse of the share of a table's keys a purge pass must delete for
// it to compact the table (pebble's own tombstone-dense threshold is a tenth too).
const purgeCompactShare = 10

// purgePartition purges one partition (keys starting with prefix) under its stripe's lock.
func (s *Store) purgePartition(t *schema.Table, token int64, prefix []byte, rule purgeRule, st *PurgeStats) error {
	mu := s.stripes.of(token)
	mu.Lock()
	defer mu.Unlock()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return fmt.Errorf("replica: table %s: purge: %w", t.QualifiedName(), err)
	}
	defer it.Close()
	b := s.db.NewBatch()
	defer b.Close()
	del := func(k []byte, tombstone bool) error {
		if tombstone {
			st.Tombstones++
		} else {
			st.Shadowed++
		}
		return b.Delete(k, nil)
	}
	rows := append(bytes.Clone(prefix), kindRow)
	shadows := t.HasShadows()
	partDel := cell.NoTimestamp
	var spans []rtSpan
	var cover []coverFragment // of spans, once the rows begin (range tombstones sort before them)
	coverDone := false
	var rowKey []byte
	rowDel := cell.NoTimestamp
	base := cell.NoTimestamp // the newest partition or range tombstone over the current row
	for valid := it.First(); valid; valid = it.Next() {
		st.Keys++
		k := it.Key()
		c, err := iterCell(it)
		if err != nil {
			return corrupt(t, k, err)
		}
		old := c.Tombstone && rule.purgeable(it.Value(), c.Timestamp)
		expired := !c.Tombstone && rule.expiredPurgeable(it.Value(), c)
		// Data at or before the table's TRUNCATE is gone whatever it is (schema.Table.Shadowed).
		gone := shadows && t.Shadowed("", c.Timestamp)
		switch kind := k[len(prefix)]; {
		case kind == kindPartitionDeletion:
			if gone {
				if err := del(k, false); err != nil {
					return err
				}
				continue
			}
			partDel = c.Timestamp
			if old {
				if err := del(k, true); err != nil {
					return err
				}
			}
			continue
		case kind == kindRangeTombstone:
			if gone {
				if err := del(k, false); err != nil {
					return err
				}
				continue
			}
			rt, err := decodeRangeTombstone(t, k[len(prefix)+1:], c.Timestamp)
			if err != nil {
				return corrupt(t, k, err)
			}
			lo, hi, err := rangeSpan(t, rows, rt)
			if err != nil {
				return corrupt(t, k, err)
			}
			spans = append(spans, rtSpan{lo: lo, hi: hi, ts: c.Timestamp})
			if c.Timestamp <= partDel || old {
				if err := del(k, c.Timestamp >= partDel); err != nil {
					return err
				}
			}
			continue
		case kind == kindStatic:
			// The static row (static.go): a row with no clustering key, under the partition
			// tombstone alone.
			if len(rowKey) == 0 || len(k) <= len(rowKey) || !bytes.HasPrefix(k, rowKey) {
				rowKey = append(rowKey[:0], k[:len(prefix)+1]...)
				rowDel, base = cell.NoTimestamp, partDel
			}
		case kind != kindRow:
			return corrupt(t, k, errBadKey)
		}
		// A row key: the clustering key, then the entry.
		if k[len(prefix)] == kindRow && (len(rowKey) == 0 || len(k) <= len(rowKey) || !bytes.HasPrefix(k, rowKey)) {
			rest := k[len(rows):]
			for _, col := range t.Clustering {
				if _, rest, err = decodeClustering(rest, col.Type, col.Descending); err != nil {
					return corrupt(t, k, err)
				}
			}
			if len(rest) == 0 {
				return corrupt(t, k, errBadKey)
			}
			rowKey = append(rowKey[:0], k[:len(k)-len(rest)]...)
			rowDel = cell.NoTimestamp
			if !coverDone {
				cover, coverDone = coverOf(spans), true
			}
			base = max(partDel, coverAt(cover, rowKey))
		}
		if gone || (shadows && droppedCell(t, k[len(rowKey):], c.Timestamp)) {
			// Truncated, or a cell of a column dropped after it was written.
			if err := del(k, false); err != nil {
				return err
			}
			continue
		}
		switch entry := k[len(rowKey)]; entry {
		case rowDeletion:
			rowDel = c.Timestamp
			if c.Timestamp <= base || old {
				if err := del(k, c.Timestamp > base); err != nil {
					return err
				}
			}
		case rowMarker, rowCell, rowCollectionDeletion, rowElement:
			shadowed := c.Timestamp <= max(base, rowDel)
			switch {
			case shadowed || old:
				if err := del(k, !shadowed); err != nil {
					return err
				}
			case expired:
				st.Expired++
				if err := b.Delete(k, nil); err != nil {
					return err
				}
			}
		default:
			return corrupt(t, k, errBadKey)
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("replica: table %s: purge: %w", t.QualifiedName(), err)
	}
	if b.Empty() {
		return nil
	}
	// Not synced: a purge a crash undoes is done again by the next pass.
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("replica: table %s: purge: %w", t.QualifiedName(), err)
	}
	return nil
}

// droppedCell reports whether row entry, written at ts, is a cell (or element, or collection
// tombstone) of a column dropped after ts.
func droppedCell(t *schema.Table, entry []byte, ts int64) bool {
	name, ok := entryColumn(entry)
	return ok && t.Shadowed(name, ts)
}
