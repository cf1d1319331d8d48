package cell

import (
	"bytes"
	"cmp"
	"fmt"
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
	// TTL is the time to live in seconds the cell was written with (USING
	// TTL or the table's default_time_to_live), 0 for a cell that does not
	// expire. It is kept to answer TTL(col) and to travel with the cell;
	// the rule reads only Expires.
	TTL int32
	// Expires is when an expiring cell expires, in seconds since the Unix
	// epoch (the coordinator's clock at the write plus TTL), 0 for a cell
	// that does not expire. It is 64-bit: expiry past 2038 is allowed. A
	// tombstone has neither TTL nor Expires.
	Expires int64
	// Counter marks a cell of a counter column: Value holds its shards
	// (AppendShards) and it reconciles by MergeCounters, not by Compare.
	// A tombstone may carry it or not: it wins over live counter shards
	// either way.
	Counter bool
}

// Expiring reports whether c is a value with an expiry.
func (c Cell) Expiring() bool { return !c.Tombstone && c.Expires != 0 }

// Expired reports whether c is an expiring cell whose expiry is at or
// before now (seconds since the Unix epoch): it holds no value any more and
// reconciles like a tombstone at its timestamp would against every older or
// newer version.
func (c Cell) Expired(now int64) bool { return c.Expiring() && c.Expires <= now }

// Compare orders two versions of a cell by precedence: it returns +1 when a
// wins over b, -1 when b wins over a, and 0 only when a and b are identical.
// The order is total, so the winner never depends on arrival order, and it
// does not depend on the current time either (Cassandra 4.1's
// Cells.reconcile, CASSANDRA-14592): the higher timestamp wins; at equal
// timestamps a tombstone or an expiring cell beats a live one, a tombstone
// beats an expiring cell, of two expiring cells the later expiry wins, then
// the greater value bytes, then the longer TTL.
func Compare(a, b Cell) int {
	if c := cmp.Compare(a.Timestamp, b.Timestamp); c != 0 {
		return c
	}
	if ad, bd := a.Tombstone || a.Expiring(), b.Tombstone || b.Expiring(); ad != bd {
		if ad {
			return 1
		}
		return -1
	}
	if a.Tombstone != b.Tombstone {
		if a.Tombstone {
			return 1
		}
		return -1
	}
	if !a.Tombstone {
		if c := cmp.Compare(a.Expires, b.Expires); c != 0 {
			return c
		}
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
	if !a.Tombstone {
		return cmp.Compare(a.TTL, b.TTL)
	}
	return 0
}

// Wins reports whether a takes precedence over b. It is false when a and b
// are identical. When either is a counter cell it reports whether a holds
// something b lacks (MergeCounters(a, b) differs from b).
func Wins(a, b Cell) bool {
	if a.Counter || b.Counter {
		return counterAdds(a, b)
	}
	return Compare(a, b) > 0
}

// Merge returns the winner of a and b. Merge is commutative and associative,
// so any number of versions reconcile to the same cell in any order. The
// result shares its Value with the winning argument. When either is a
// counter cell, Merge is MergeCounters.
func Merge(a, b Cell) Cell {
	if a.Counter || b.Counter {
		return MergeCounters(a, b)
	}
	if Compare(b, a) > 0 {
		return b
	}
	return a
}

// ShadowedBy reports whether a deletion at timestamp deletedAt (a row or
// partition tombstone) deletes c: deletions shadow writes at timestamps up to
// and including their own.
func (c Cell) ShadowedBy(deletedAt int64) bool { return c.Timestamp <= deletedAt }

// Live reports whether c holds a value at now (seconds since the Unix
// epoch) that no deletion at deletedAt shadows: it is no tombstone, has not
// expired and is newer than the deletion.
func (c Cell) Live(now, deletedAt int64) bool {
	return !c.Tombstone && c.Timestamp > deletedAt && !c.Expired(now)
}

// RemainingTTL is what TTL(col) answers at now: the seconds c has left to
// live (at least 1 while it is live), or false for a cell that does not
// expire.
func (c Cell) RemainingTTL(now int64) (int32, bool) {
	if !c.Expiring() {
		return 0, false
	}
	left := c.Expires - now
	if left < 1 {
		left = 1
	}
	return int32(min(left, int64(c.TTL), int64(1<<31-1))), true
}

// String formats c for messages and tests: "value"@ts, nil@ts or
// tombstone@ts.
func (c Cell) String() string {
	switch {
	case c.Tombstone:
		return "tombstone@" + strconv.FormatInt(c.Timestamp, 10)
	case c.Counter:
		shards, err := DecodeShards(c.Value)
		if err != nil {
			return "counter(malformed)@" + strconv.FormatInt(c.Timestamp, 10)
		}
		return "counter(" + strconv.FormatInt(SumShards(shards), 10) + ")@" + strconv.FormatInt(c.Timestamp, 10)
	case c.Value == nil:
		return "nil@" + strconv.FormatInt(c.Timestamp, 10) + c.expiry()
	default:
		return strconv.Quote(string(c.Value)) + "@" + strconv.FormatInt(c.Timestamp, 10) + c.expiry()
	}
}

func (c Cell) expiry() string {
	if c.Expires == 0 && c.TTL == 0 {
		return ""
	}
	return " ttl " + strconv.Itoa(int(c.TTL)) + " expires " + strconv.FormatInt(c.Expires, 10)
}

// MaxTTL is the longest time to live a write may carry: 20 years in
// seconds, Cassandra's limit.
const MaxTTL = 20 * 365 * 24 * 60 * 60

// CheckExpiry checks c's TTL and expiry: both zero, or a TTL in
// [1, MaxTTL] with an expiry, and never on a tombstone.
func CheckExpiry(c Cell) error {
	switch {
	case c.TTL == 0 && c.Expires == 0:
		return nil
	case c.Tombstone:
		return fmt.Errorf("a tombstone carries ttl %d, expires %d", c.TTL, c.Expires)
	case c.TTL < 0 || c.TTL > MaxTTL:
		return fmt.Errorf("ttl %d is outside [1, %d] seconds", c.TTL, MaxTTL)
	case c.TTL == 0 || c.Expires == 0:
		return fmt.Errorf("ttl %d and expires %d must be set together", c.TTL, c.Expires)
	}
	return nil
}
