package cell

import (
	"bytes"
	"cmp"
	"math"
	"strconv"
)

// NoTimestamp is the timestamp of a row marker or deletion that does not
// exist. It is older than every write, and writes may not use it.
const NoTimestamp int64 = math.MinInt64

// Cell is one version of one column of one row.
type Cell struct {
	// Timestamp is the write time in microseconds since the Unix epoch.
	Timestamp int64
	// Value is the column's canonical encoding (see schema). It is ignored
	// for a tombstone, which should leave it nil.
	Value []byte
	// Tombstone reports that the cell was deleted (or set to null) at
	// Timestamp.
	Tombstone bool
}

// Compare orders two versions of a cell by precedence: it returns +1 when a
// wins over b, -1 when b wins over a, and 0 only when a and b are identical.
// The order is total, so the winner never depends on arrival order.
func Compare(a, b Cell) int {
	if c := cmp.Compare(a.Timestamp, b.Timestamp); c != 0 {
		return c
	}
	if a.Tombstone != b.Tombstone {
		if a.Tombstone {
			return 1
		}
		return -1
	}
	if c := bytes.Compare(a.Value, b.Value); c != 0 {
		return c
	}
	// Equal bytes; a nil and an empty value only differ in representation,
	// but order them anyway so that Merge is exactly commutative.
	if (a.Value == nil) != (b.Value == nil) {
		if a.Value != nil {
			return 1
		}
		return -1
	}
	return 0
}

// Wins reports whether a takes precedence over b. It is false when a and b
// are identical.
func Wins(a, b Cell) bool { return Compare(a, b) > 0 }

// Merge returns the winner of a and b. Merge is commutative and associative,
// so any number of versions reconcile to the same cell in any order. The
// result shares its Value with the winning argument.
func Merge(a, b Cell) Cell {
	if Compare(b, a) > 0 {
		return b
	}
	return a
}

// ShadowedBy reports whether a deletion at timestamp deletedAt (a row or
// partition tombstone) deletes c: deletions shadow writes at timestamps up to
// and including their own.
func (c Cell) ShadowedBy(deletedAt int64) bool { return c.Timestamp <= deletedAt }

// Live reports whether c holds a value that no deletion at deletedAt shadows.
func (c Cell) Live(deletedAt int64) bool { return !c.Tombstone && c.Timestamp > deletedAt }

// String formats c for messages and tests: "value"@ts, nil@ts or
// tombstone@ts.
func (c Cell) String() string {
	switch {
	case c.Tombstone:
		return "tombstone@" + strconv.FormatInt(c.Timestamp, 10)
	case c.Value == nil:
		return "nil@" + strconv.FormatInt(c.Timestamp, 10)
	default:
		return strconv.Quote(string(c.Value)) + "@" + strconv.FormatInt(c.Timestamp, 10)
	}
}
