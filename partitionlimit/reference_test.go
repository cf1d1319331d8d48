package partitionlimit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// refKey and refEntry make up reference, a deliberately naive model of Table: an unbounded map
// whose entries decay by the same rule, written with 64-bit seconds and no slots, hashing or
// eviction. While a Table is below capacity (no evictions), the two must agree exactly on
// every operation whose time does not go backwards.
type refKey struct {
	token int64
	label uint32
}

type refEntry struct {
	count uint32
	sec   int64
}

type reference map[refKey]refEntry

func (r reference) accountN(token int64, label uint32, n uint32, now time.Time) uint32 {
	k := refKey{token, label}
	e := r[k]
	sec := now.Unix()
	switch elapsed := sec - e.sec; {
	case e.count == 0:
		e.sec = sec
	case elapsed >= 64:
		e.count, e.sec = 0, sec
	case elapsed > 0:
		e.count, e.sec = e.count>>elapsed, sec
	case elapsed < -backStepTolerance:
		e.sec = sec
	}
	if n == 0 {
		return e.count // a peek changes nothing
	}
	if uint64(e.count)+uint64(n) > math.MaxUint32 {
		e.count = math.MaxUint32
	} else {
		e.count += n
	}
	r[k] = e
	return e.count
}

// refOp is one operation of a generated sequence.
type refOp struct {
	key     int // index into refKeys
	advance time.Duration
	n       uint32
}

// refKeys returns the keys sequences draw from: few enough that a 4096-slot table never evicts,
// varied enough to tell labels, token halves and signs apart.
func refKeys() []refKey {
	var keys []refKey
	for _, token := range []int64{0, 1, -1, 1 << 32, 1<<32 | 1, math.MinInt64, math.MaxInt64, 0x0123456789abcdef} {
		for _, label := range []uint32{0, 1, 2, math.MaxUint32} {
			keys = append(keys, refKey{token, label})
		}
	}
	return keys
}

// runAgainstReference applies ops to a fresh Table and to the reference and fails at the first
// disagreement.
func runAgainstReference(t *testing.T, ops []refOp) {
	t.Helper()
	tb := newTable(t, Options{Capacity: 4096})
	ref := reference{}
	keys := refKeys()
	now := at(0)
	for i, op := range ops {
		now = now.Add(op.advance)
		k := keys[op.key%len(keys)]
		got, want := tb.AccountN(k.token, k.label, op.n, now), ref.accountN(k.token, k.label, op.n, now)
		if got != want {
			t.Fatalf("op %d: AccountN(token=%d, label=%d, n=%d, t0+%v) = %d, the reference says %d",
				i, k.token, k.label, op.n, now.Sub(at(0)), got, want)
		}
	}
	if st := tb.Stats(now); st.Evictions != 0 {
		t.Fatalf("the table evicted %d entries; the comparison assumes it stays below capacity", st.Evictions)
	}
}

// TestMatchesReference runs seeded random sequences mixing increments, batched increments, peeks
// and saturating deltas with time advancing by nothing, fractions of a second, a few seconds
// and more than 64 seconds.
func TestMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 7))
	nkeys := len(refKeys())
	advances := []time.Duration{0, 0, 0, time.Millisecond, 100 * time.Millisecond, 999 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 31 * time.Second, 33 * time.Second, 70 * time.Second}
	for seq := range 200 {
		ops := make([]refOp, 2000)
		for i := range ops {
			ops[i] = refOp{key: rng.IntN(nkeys), advance: advances[rng.IntN(len(advances))]}
			switch p := rng.IntN(100); {
			case p < 10:
				ops[i].n = 0
			case p < 80:
				ops[i].n = 1
			case p < 99:
				ops[i].n = uint32(rng.IntN(1000))
			default:
				ops[i].n = math.MaxUint32 - uint32(rng.IntN(10))
			}
		}
		t.Run(fmt.Sprintf("sequence %d", seq), func(t *testing.T) {
			runAgainstReference(t, ops)
		})
	}
}

// FuzzMatchesReference decodes its input as operations of three bytes each: key, time advance
// (below 128: that many tens of milliseconds; else that many seconds less 128) and increment
// (0 peeks, 255 adds 2^32-2), and compares Table with the reference.
func FuzzMatchesReference(f *testing.F) {
	f.Add([]byte{0, 0, 16, 0, 100, 1, 0, 200, 1, 0, 255, 1})
	f.Add([]byte{1, 0, 255, 1, 0, 255, 1, 129, 0, 2, 0, 1, 3, 1, 1})
	f.Add([]byte{5, 0, 3, 6, 99, 3, 5, 1, 0, 7, 250, 9, 5, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var ops []refOp
		for ; len(data) >= 3; data = data[3:] {
			op := refOp{key: int(data[0]), n: uint32(data[2])}
			if data[1] < 128 {
				op.advance = time.Duration(data[1]) * 10 * time.Millisecond
			} else {
				op.advance = time.Duration(data[1]-128) * time.Second
			}
			if data[2] == 255 {
				op.n = math.MaxUint32 - 1
			}
			ops = append(ops, op)
		}
		runAgainstReference(t, ops)
	})
}
