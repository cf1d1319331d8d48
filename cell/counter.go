package cell

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Shard is one replica's part of a counter cell (Cassandra's counter
// context): the counter id of the replica that leads its updates, the
// logical clock of its latest update and that replica's running total. Only
// the leader of an update ever writes its own shard, so two versions of one
// shard are ordered by Clock, and a counter's value is the sum of the
// newest version of each shard.
type Shard struct {
	// ID names the replica that owns the shard (its node id).
	ID string
	// Clock grows by one with every update the owner applies.
	Clock int64
	// Value is the owner's total of the increments it applied.
	Value int64
}

// maxShardID bounds a shard id: node ids are at most 64 bytes.
const maxShardID = 255

// ErrBadShards reports a counter value whose shards do not decode.
var ErrBadShards = errors.New("cell: malformed counter shards")

// AppendShards appends the encoding of shards, sorted by ID with one
// version per ID (as MergeShards returns them), to dst: per shard the ID's
// length as one byte, the ID, then Clock and Value as 8 bytes big-endian.
func AppendShards(dst []byte, shards []Shard) []byte {
	for _, s := range shards {
		dst = append(dst, byte(len(s.ID)))
		dst = append(dst, s.ID...)
		dst = binary.BigEndian.AppendUint64(dst, uint64(s.Clock))
		dst = binary.BigEndian.AppendUint64(dst, uint64(s.Value))
	}
	return dst
}

// DecodeShards decodes the shards of a counter cell's Value. It refuses
// shards out of ID order or repeated, so a decoded value is canonical.
func DecodeShards(v []byte) ([]Shard, error) {
	var out []Shard
	for len(v) > 0 {
		n := int(v[0])
		if n == 0 || len(v) < 1+n+16 {
			return nil, ErrBadShards
		}
		s := Shard{
			ID:    string(v[1 : 1+n]),
			Clock: int64(binary.BigEndian.Uint64(v[1+n:])),
			Value: int64(binary.BigEndian.Uint64(v[1+n+8:])),
		}
		if len(out) > 0 && out[len(out)-1].ID >= s.ID {
			return nil, ErrBadShards
		}
		out = append(out, s)
		v = v[1+n+16:]
	}
	return out, nil
}

// CheckShard reports why s cannot be stored, or nil.
func CheckShard(s Shard) error {
	switch {
	case s.ID == "" || len(s.ID) > maxShardID:
		return fmt.Errorf("counter shard id of %d bytes; want 1..%d", len(s.ID), maxShardID)
	case s.Clock < 1:
		return fmt.Errorf("counter shard %s has clock %d; want at least 1", s.ID, s.Clock)
	}
	return nil
}

// newerShard reports whether a supersedes b, two versions of one shard: the
// higher clock, and at equal clocks (which one leader never writes twice)
// the greater value, so the choice never depends on merge order.
func newerShard(a, b Shard) bool {
	if a.Clock != b.Clock {
		return a.Clock > b.Clock
	}
	return a.Value > b.Value
}

// MergeShards merges two sorted shard lists, keeping the newer version of
// each shard. It is commutative, associative and idempotent.
func MergeShards(a, b []Shard) []Shard {
	out := make([]Shard, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := strings.Compare(a[i].ID, b[j].ID); {
		case c < 0:
			out = append(out, a[i])
			i++
		case c > 0:
			out = append(out, b[j])
			j++
		default:
			if newerShard(b[j], a[i]) {
				out = append(out, b[j])
			} else {
				out = append(out, a[i])
			}
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// SumShards returns the value of a counter: the sum of its shards (which
// wraps around on overflow, as Cassandra's bigint counters do).
func SumShards(shards []Shard) int64 {
	var sum int64
	for _, s := range shards {
		sum += s.Value
	}
	return sum
}

// CounterValue returns the value of c, a live counter cell.
func CounterValue(c Cell) (int64, error) {
	shards, err := DecodeShards(c.Value)
	if err != nil {
		return 0, err
	}
	return SumShards(shards), nil
}

// ShardOf returns the version of shard id that c, a counter cell, holds;
// false if it has none (a replica that never led an update starts at clock
// 0, value 0).
func ShardOf(c Cell, id string) (Shard, bool, error) {
	if c.Tombstone {
		return Shard{}, false, nil
	}
	shards, err := DecodeShards(c.Value)
	if err != nil {
		return Shard{}, false, err
	}
	i, ok := slices.BinarySearchFunc(shards, id, func(s Shard, id string) int { return strings.Compare(s.ID, id) })
	if !ok {
		return Shard{}, false, nil
	}
	return shards[i], true, nil
}

// CounterCell returns a live counter cell holding shards (sorted, one per
// ID) at timestamp ts.
func CounterCell(ts int64, shards ...Shard) Cell {
	return Cell{Timestamp: ts, Counter: true, Value: AppendShards(nil, shards)}
}

// MergeCounters reconciles two versions of a counter cell (Cassandra 4.1's
// Cells.reconcileCounter): a deletion wins over every live counter whatever
// the timestamps (so a deleted counter stays deleted: it must not be used
// again), two deletions reconcile as cells do, and two live counters merge
// shard by shard with the newer timestamp. A counter value that does not
// decode loses to one that does, and between two that do not the cell rule
// picks, so the merge never fails and stays commutative.
func MergeCounters(a, b Cell) Cell {
	switch {
	case a.Tombstone || b.Tombstone:
		if a.Tombstone && b.Tombstone {
			m := Merge(plain(a), plain(b))
			m.Counter = a.Counter || b.Counter
			return m
		}
		if a.Tombstone {
			return a
		}
		return b
	}
	as, aerr := DecodeShards(a.Value)
	bs, berr := DecodeShards(b.Value)
	switch {
	case aerr != nil && berr != nil:
		m := Merge(plain(a), plain(b))
		m.Counter = a.Counter || b.Counter
		return m
	case aerr != nil:
		return b
	case berr != nil:
		return a
	}
	return Cell{Timestamp: max(a.Timestamp, b.Timestamp), Counter: true, Value: AppendShards(nil, MergeShards(as, bs))}
}

// plain returns c without its counter flag, for the cell rule.
func plain(c Cell) Cell {
	c.Counter = false
	return c
}

// counterAdds reports whether merging a into b changes b: a is a counter
// version that b lacks part of.
func counterAdds(a, b Cell) bool {
	m := MergeCounters(a, b)
	return m.Tombstone != b.Tombstone || m.Timestamp != b.Timestamp || !bytes.Equal(m.Value, b.Value)
}

// FoldShards merges the encoded shards enc (AppendShards' form) into dst, sorted by ID with one
// version per ID, keeping the newer version of each shard, and returns the result. It
// allocates only for a shard ID dst does not hold yet, so folding many versions of a few shards
// (a merge operator's operands) costs no allocation per version. On a malformed enc it returns
// dst unchanged and ErrBadShards.
func FoldShards(dst []Shard, enc []byte) ([]Shard, error) {
	if err := checkEncoded(enc); err != nil {
		return dst, err
	}
	for v := enc; len(v) > 0; {
		n := int(v[0])
		id := v[1 : 1+n]
		s := Shard{Clock: int64(binary.BigEndian.Uint64(v[1+n:])), Value: int64(binary.BigEndian.Uint64(v[1+n+8:]))}
		v = v[1+n+16:]
		i, found := slices.BinarySearchFunc(dst, id, compareID)
		if found {
			s.ID = dst[i].ID
			if newerShard(s, dst[i]) {
				dst[i] = s
			}
			continue
		}
		s.ID = string(id)
		dst = slices.Insert(dst, i, s)
	}
	return dst, nil
}

// checkEncoded reports whether enc is a well-formed encoding of shards, without decoding it.
func checkEncoded(enc []byte) error {
	var last []byte
	for v := enc; len(v) > 0; {
		n := int(v[0])
		if n == 0 || len(v) < 1+n+16 {
			return ErrBadShards
		}
		id := v[1 : 1+n]
		if last != nil && bytes.Compare(last, id) >= 0 {
			return ErrBadShards
		}
		last = id
		v = v[1+n+16:]
	}
	return nil
}

// compareID compares a shard's ID with id bytes, as strings.Compare would, without converting.
func compareID(s Shard, id []byte) int {
	for i := 0; i < len(s.ID) && i < len(id); i++ {
		if s.ID[i] != id[i] {
			if s.ID[i] < id[i] {
				return -1
			}
			return 1
		}
	}
	return len(s.ID) - len(id)
}
