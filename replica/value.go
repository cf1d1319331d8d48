package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kvnode/kvnode/cell"
)

// Stored values: a flags byte, the write timestamp as 8 bytes big-endian,
// and for a live cell the value's canonical bytes. Row markers, row
// tombstones and partition tombstones use the same format (a marker is a
// value-less live cell, a tombstone has flagTombstone), so one merge operator
// reconciles every key with cell.Merge. A tombstone with flagLocalTime is
// followed by the time this replica stored it (its local deletion time, in
// nanoseconds since the Unix epoch, 8 bytes big-endian), which only the
// purge reads (purge.go); tombstones written before it have none.
//
// An expiring cell or row marker (written with a TTL, data format version 2,
// see version.go) has flagExpiring, and after the timestamp its TTL in
// seconds (4 bytes big-endian), its expiry in seconds since the Unix epoch
// (8 bytes big-endian, signed) and the time this replica stored it (8 bytes,
// nanoseconds, like a tombstone's local deletion time), then the value. The
// values of format 1 are values of format 2 without the flag, so old data
// decodes unchanged.
//
// A counter cell (data format 10, see version.go) has flagCounter, and its value holds its
// shards (cell.AppendShards); the merge operator merges two counter versions shard by shard
// (cell.MergeCounters) instead of picking one.
const (
	valueHeaderLen      = 9
	expiringLen         = 4 + 8 + 8
	flagTombstone  byte = 1 << 0
	flagLocalTime  byte = 1 << 1
	flagExpiring   byte = 1 << 2
	flagCounter    byte = 1 << 3
)

// errBadValue reports a stored value that does not decode.
var errBadValue = errors.New("replica: malformed stored value")

// appendValue appends the stored form of c, a live cell or marker, stored on
// this replica at local (nanoseconds since the Unix epoch; kept only for an
// expiring cell).
func appendValue(dst []byte, c cell.Cell, local int64) []byte {
	var flags byte
	if c.Tombstone {
		flags |= flagTombstone
	}
	expiring := c.Expiring()
	if expiring {
		flags |= flagExpiring
	}
	if c.Counter {
		flags |= flagCounter
	}
	dst = append(dst, flags)
	dst = binary.BigEndian.AppendUint64(dst, uint64(c.Timestamp))
	if expiring {
		dst = binary.BigEndian.AppendUint32(dst, uint32(c.TTL))
		dst = binary.BigEndian.AppendUint64(dst, uint64(c.Expires))
		dst = binary.BigEndian.AppendUint64(dst, uint64(local))
	}
	if !c.Tombstone {
		dst = append(dst, c.Value...)
	}
	return dst
}

// appendTombstone appends the stored form of a tombstone written at ts and
// stored on this replica at local (nanoseconds since the Unix epoch).
func appendTombstone(dst []byte, ts, local int64) []byte {
	dst = append(dst, flagTombstone|flagLocalTime)
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	return binary.BigEndian.AppendUint64(dst, uint64(local))
}

// localTime returns the local deletion time of a stored tombstone, if it has
// one.
func localTime(v []byte) (int64, bool) {
	if len(v) != valueHeaderLen+8 || v[0] != flagTombstone|flagLocalTime {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(v[valueHeaderLen:])), true
}

// storedAt returns the time an expiring value was stored on this replica.
func storedAt(v []byte) (int64, bool) {
	if len(v) < valueHeaderLen+expiringLen || v[0] != flagExpiring {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(v[valueHeaderLen+12:])), true
}

// decodeValue decodes a stored value. The cell's Value aliases v and is
// non-nil for a live cell.
func decodeValue(v []byte) (cell.Cell, error) {
	if len(v) < valueHeaderLen || v[0]&^(flagTombstone|flagLocalTime|flagExpiring|flagCounter) != 0 {
		return cell.Cell{}, errBadValue
	}
	if v[0]&flagLocalTime != 0 && (v[0]&flagTombstone == 0 || len(v) != valueHeaderLen+8) {
		return cell.Cell{}, errBadValue
	}
	c := cell.Cell{
		Timestamp: int64(binary.BigEndian.Uint64(v[1:])),
		Tombstone: v[0]&flagTombstone != 0,
		Counter:   v[0]&flagCounter != 0,
	}
	if c.Counter && v[0]&(flagExpiring|flagLocalTime) != 0 {
		return cell.Cell{}, errBadValue
	}
	rest := v[valueHeaderLen:]
	if v[0]&flagExpiring != 0 {
		if c.Tombstone || len(rest) < expiringLen {
			return cell.Cell{}, errBadValue
		}
		c.TTL = int32(binary.BigEndian.Uint32(rest))
		c.Expires = int64(binary.BigEndian.Uint64(rest[4:]))
		if c.TTL <= 0 || c.Expires == 0 {
			return cell.Cell{}, errBadValue
		}
		rest = rest[expiringLen:]
	}
	if !c.Tombstone {
		c.Value = rest
	}
	return c, nil
}

// mergerName is persisted by pebble: a database written with one merge
// operator refuses to open with another, so change it only with a format
// migration.
const mergerName = "kvnode.lww.v1"

// newLWWMerger returns the pebble merge operator: every write is a Merge,
// and the operands of a key reconcile with cell.Merge, so a write never needs
// to read the current value and out-of-order writes converge. Last-write-wins
// is commutative and associative, as pebble requires.
func newLWWMerger() *pebble.Merger {
	return &pebble.Merger{
		Name: mergerName,
		Merge: func(_, value []byte) (pebble.ValueMerger, error) {
			if _, err := decodeValue(value); err != nil {
				return nil, err
			}
			return &lwwValueMerger{best: append([]byte(nil), value...)}, nil
		},
	}
}

// lwwValueMerger keeps a copy of the winning operand, or for live counter cells the shards
// merged so far (counter).
type lwwValueMerger struct {
	best    []byte
	counter *counterMerge
}

// counterMerge is the live counter a merge has folded so far: the newest timestamp and the
// newest version of each shard.
type counterMerge struct {
	ts     int64
	shards []cell.Shard
}

func (m *lwwValueMerger) add(value []byte) error {
	c, err := decodeValue(value)
	if err != nil {
		return err
	}
	if m.counter != nil {
		return m.addCounter(c, value)
	}
	best, err := decodeValue(m.best)
	if err != nil {
		return err
	}
	if c.Counter || best.Counter {
		if !best.Tombstone && best.Counter {
			if m.startCounter(best) == nil {
				return m.addCounter(c, value)
			}
		}
		return m.addCounterTo(c, best, value)
	}
	// Between equal cells (a tombstone or an expiring cell stored twice,
	// with different local times), the larger stored bytes win, so the
	// result is the same in any merge order; that is the later local time.
	if cell.Wins(c, best) || !cell.Wins(best, c) && bytes.Compare(value, m.best) > 0 {
		m.best = append(m.best[:0], value...)
	}
	return nil
}

// MergeNewer implements pebble.ValueMerger.
func (m *lwwValueMerger) MergeNewer(value []byte) error { return m.add(value) }

// MergeOlder implements pebble.ValueMerger.
func (m *lwwValueMerger) MergeOlder(value []byte) error { return m.add(value) }

// Finish implements pebble.ValueMerger.
func (m *lwwValueMerger) Finish(bool) ([]byte, io.Closer, error) {
	if m.counter != nil {
		v := cell.Cell{Timestamp: m.counter.ts, Counter: true, Value: cell.AppendShards(nil, m.counter.shards)}
		return appendValue(nil, v, 0), nil, nil
	}
	return m.best, nil, nil
}

// startCounter starts folding shards from best, a live counter cell whose value holds them.
func (m *lwwValueMerger) startCounter(best cell.Cell) error {
	shards, err := cell.FoldShards(nil, best.Value)
	if err != nil {
		return err
	}
	m.counter = &counterMerge{ts: best.Timestamp, shards: shards}
	return nil
}

// addCounter merges value (decoded c) into the live counter folded so far: a tombstone wins
// over it (cell.MergeCounters); a live counter's shards fold in; a malformed one loses.
func (m *lwwValueMerger) addCounter(c cell.Cell, value []byte) error {
	switch {
	case c.Tombstone:
		m.counter = nil
		m.best = append(m.best[:0], value...)
	case c.Counter:
		if shards, err := cell.FoldShards(m.counter.shards, c.Value); err == nil {
			m.counter.shards = shards
			m.counter.ts = max(m.counter.ts, c.Timestamp)
		}
	}
	return nil
}

// addCounterTo merges value (decoded c) into best, the winner so far, when one of them is a
// counter cell and best is no well-formed live counter: a tombstone wins over live counters;
// between tombstones the rule of lwwValueMerger.add picks the bytes; a live counter replaces a
// malformed one.
func (m *lwwValueMerger) addCounterTo(c, best cell.Cell, value []byte) error {
	switch {
	case best.Tombstone:
		if c.Tombstone && (cell.Compare(c, best) > 0 || cell.Compare(best, c) == 0 && bytes.Compare(value, m.best) > 0) {
			m.best = append(m.best[:0], value...)
		}
	case c.Tombstone:
		m.best = append(m.best[:0], value...)
	case c.Counter:
		if m.startCounter(c) != nil && cell.Compare(c, best) > 0 {
			m.best = append(m.best[:0], value...) // both malformed: the cell rule picks
		}
	}
	return nil
}
