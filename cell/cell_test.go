package cell

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"testing/quick"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name string
		a, b Cell
		want Cell
	}{
		{"the newer value wins", Cell{Timestamp: 2, Value: []byte("x")}, Cell{Timestamp: 1, Value: []byte("y")}, Cell{Timestamp: 2, Value: []byte("x")}},
		{"a newer value beats an older tombstone", Cell{Timestamp: 1, Tombstone: true}, Cell{Timestamp: 2, Value: []byte("y")}, Cell{Timestamp: 2, Value: []byte("y")}},
		{"a newer tombstone beats an older value", Cell{Timestamp: 3, Tombstone: true}, Cell{Timestamp: 2, Value: []byte("y")}, Cell{Timestamp: 3, Tombstone: true}},
		{"on a tie the tombstone wins", Cell{Timestamp: 5, Value: []byte("zzz")}, Cell{Timestamp: 5, Tombstone: true}, Cell{Timestamp: 5, Tombstone: true}},
		{"on a tie the greater value wins", Cell{Timestamp: 5, Value: []byte("ab")}, Cell{Timestamp: 5, Value: []byte("b")}, Cell{Timestamp: 5, Value: []byte("b")}},
		{"on a tie a longer value with the same prefix wins", Cell{Timestamp: 5, Value: []byte("ab")}, Cell{Timestamp: 5, Value: []byte("a")}, Cell{Timestamp: 5, Value: []byte("ab")}},
		{"negative timestamps order numerically", Cell{Timestamp: -1, Value: []byte("a")}, Cell{Timestamp: -2, Value: []byte("b")}, Cell{Timestamp: -1, Value: []byte("a")}},
		{"an empty value beats a nil value on a tie", Cell{Timestamp: 1}, Cell{Timestamp: 1, Value: []byte{}}, Cell{Timestamp: 1, Value: []byte{}}},
	}
	for _, tt := range tests {
		for _, args := range [][2]Cell{{tt.a, tt.b}, {tt.b, tt.a}} {
			if got := Merge(args[0], args[1]); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s: Merge(%v, %v) = %v, want %v", tt.name, args[0], args[1], got, tt.want)
			}
		}
		if !Wins(tt.want, other(tt)) {
			t.Errorf("%s: Wins(%v, %v) = false, want true", tt.name, tt.want, other(tt))
		}
	}
}

func other(tt struct {
	name string
	a, b Cell
	want Cell
}) Cell {
	if reflect.DeepEqual(tt.a, tt.want) {
		return tt.b
	}
	return tt.a
}

func TestWinsIsStrict(t *testing.T) {
	c := Cell{Timestamp: 7, Value: []byte("v")}
	if Wins(c, c) {
		t.Errorf("Wins(%v, %v) = true, want false for identical cells", c, c)
	}
}

// smallCell draws cells from a tiny domain so that ties on timestamp and
// value, and tombstones, are common.
func smallCell(r *rand.Rand) Cell {
	c := Cell{Timestamp: int64(r.IntN(3) - 1)}
	switch r.IntN(7) {
	case 0:
		c.Tombstone = true
	case 5, 6:
		c.Value = []byte{byte('a' + r.IntN(2))}
		c.TTL = int32(1 + r.IntN(2))
		c.Expires = int64(100 + r.IntN(2))
	case 1:
		c.Value = nil
	case 2:
		c.Value = []byte{}
	default:
		c.Value = []byte{byte('a' + r.IntN(2))}
	}
	return c
}

func TestMergeIsCommutativeAssociativeAndIdempotent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		a, b, c := smallCell(r), smallCell(r), smallCell(r)
		if ab, ba := Merge(a, b), Merge(b, a); !reflect.DeepEqual(ab, ba) {
			t.Fatalf("Merge(%v, %v) = %v but Merge(%v, %v) = %v, want equal (commutative)", a, b, ab, b, a, ba)
		}
		if l, r := Merge(Merge(a, b), c), Merge(a, Merge(b, c)); !reflect.DeepEqual(l, r) {
			t.Fatalf("Merge(Merge(%v, %v), %v) = %v but Merge(%v, Merge(%v, %v)) = %v, want equal (associative)", a, b, c, l, a, b, c, r)
		}
		if aa := Merge(a, a); !reflect.DeepEqual(aa, a) {
			t.Fatalf("Merge(%v, %v) = %v, want %v (idempotent)", a, a, aa, a)
		}
		if m := Merge(a, b); !reflect.DeepEqual(m, a) && !reflect.DeepEqual(m, b) {
			t.Fatalf("Merge(%v, %v) = %v, want one of its arguments", a, b, m)
		}
	}
}

func TestCompareIsAntisymmetric(t *testing.T) {
	f := func(a, b Cell) bool { return Compare(a, b) == -Compare(b, a) }
	if err := quick.Check(f, nil); err != nil {
		t.Errorf("Compare(a, b) != -Compare(b, a) for some cells: %v", err)
	}
}

func TestShadowedBy(t *testing.T) {
	tests := []struct {
		cell      Cell
		deletedAt int64
		shadowed  bool
		live      bool
	}{
		{Cell{Timestamp: 10, Value: []byte("v")}, 9, false, true},
		{Cell{Timestamp: 10, Value: []byte("v")}, 10, true, false},
		{Cell{Timestamp: 10, Value: []byte("v")}, 11, true, false},
		{Cell{Timestamp: 10, Value: []byte("v")}, NoTimestamp, false, true},
		{Cell{Timestamp: 10, Tombstone: true}, NoTimestamp, false, false},
	}
	for _, tt := range tests {
		if got := tt.cell.ShadowedBy(tt.deletedAt); got != tt.shadowed {
			t.Errorf("%v.ShadowedBy(%d) = %t, want %t", tt.cell, tt.deletedAt, got, tt.shadowed)
		}
		if got := tt.cell.Live(0, tt.deletedAt); got != tt.live {
			t.Errorf("%v.Live(0, %d) = %t, want %t", tt.cell, tt.deletedAt, got, tt.live)
		}
	}
}

func exp(ts int64, s string, ttl int32, expires int64) Cell {
	return Cell{Timestamp: ts, Value: []byte(s), TTL: ttl, Expires: expires}
}

// TestMergeExpiring holds Cassandra 4.1's rule for expiring cells
// (Cells.resolveRegular): it never reads the current time.
func TestMergeExpiring(t *testing.T) {
	tests := []struct {
		name   string
		winner Cell
		loser  Cell
	}{
		{"a newer live cell beats an older expiring one", Cell{Timestamp: 6, Value: []byte("a")}, exp(5, "z", 10, 100)},
		{"a newer expiring cell beats an older live one", exp(6, "a", 10, 100), Cell{Timestamp: 5, Value: []byte("z")}},
		{"at equal timestamps an expiring cell beats a live one with greater bytes", exp(5, "a", 10, 100), Cell{Timestamp: 5, Value: []byte("z")}},
		{"at equal timestamps a tombstone beats an expiring cell", Cell{Timestamp: 5, Tombstone: true}, exp(5, "z", 10, 100)},
		{"of two expiring cells the later expiry wins over greater bytes", exp(5, "a", 10, 101), exp(5, "z", 10, 100)},
		{"of two expiring cells with one expiry the greater bytes win", exp(5, "z", 10, 100), exp(5, "a", 10, 100)},
		{"then the longer TTL", exp(5, "a", 20, 100), exp(5, "a", 10, 100)},
	}
	for _, tt := range tests {
		if Compare(tt.winner, tt.loser) != 1 || Compare(tt.loser, tt.winner) != -1 {
			t.Errorf("%s: Compare(%v, %v) = %d, want 1", tt.name, tt.winner, tt.loser, Compare(tt.winner, tt.loser))
		}
	}
}

func TestExpiredAndLive(t *testing.T) {
	c := exp(5, "v", 10, 100)
	for _, tt := range []struct {
		now, deletedAt int64
		expired, live  bool
	}{
		{99, NoTimestamp, false, true},
		{100, NoTimestamp, true, false},
		{1 << 40, NoTimestamp, true, false},
		{99, 5, false, false},
	} {
		if got := c.Expired(tt.now); got != tt.expired {
			t.Errorf("%v.Expired(%d) = %t, want %t", c, tt.now, got, tt.expired)
		}
		if got := c.Live(tt.now, tt.deletedAt); got != tt.live {
			t.Errorf("%v.Live(%d, %d) = %t, want %t", c, tt.now, tt.deletedAt, got, tt.live)
		}
	}
	if (Cell{Timestamp: 1, Value: []byte("v")}).Expired(1 << 62) {
		t.Errorf("a cell without TTL reports expired")
	}
	// Expiry past 2038 (2^31 seconds) is kept exactly.
	far := exp(1, "v", 20*365*86400, 1<<32)
	if far.Expired(1<<31) || !far.Expired(1<<32) {
		t.Errorf("%v: expiry past 2038 is not honoured", far)
	}
	if left, ok := c.RemainingTTL(95); !ok || left != 5 {
		t.Errorf("%v.RemainingTTL(95) = %d, %t, want 5, true", c, left, ok)
	}
	if _, ok := (Cell{Timestamp: 1, Value: []byte("v")}).RemainingTTL(0); ok {
		t.Errorf("RemainingTTL of a cell without TTL reports one")
	}
}

// TestExpiredMergesLikeTombstone checks that an expired cell, once every
// replica's clock passed its expiry, reconciles against any other version
// to a winner that is dead exactly when a tombstone at its timestamp would
// give a dead winner: an older live value elsewhere never comes back.
func TestExpiredMergesLikeTombstone(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const now = 1000
	for range 20000 {
		e := smallCell(r)
		if !e.Expiring() {
			continue
		}
		o := smallCell(r)
		tomb := Cell{Timestamp: e.Timestamp, Tombstone: true}
		gotLive := Merge(e, o).Live(now, NoTimestamp)
		wantLive := Merge(tomb, o).Live(now, NoTimestamp)
		if gotLive != wantLive {
			t.Fatalf("Merge(%v, %v) live = %t at %d, but with a tombstone in its place %t", e, o, gotLive, now, wantLive)
		}
	}
}
