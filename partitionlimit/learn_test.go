package partitionlimit

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestLearnRaisesNeverLowers: Learn sets a counter to the larger of its decayed count and the
// learned one, halving afterwards as any counter does, and a learned zero changes nothing.
func TestLearnRaisesNeverLowers(t *testing.T) {
	tb := newTable(t, Options{Capacity: 64})
	const token, label = int64(42), uint32(3)
	tb.Learn(token, label, 1000, time.Time{}, 0, at(100*time.Millisecond))
	if got := tb.Peek(token, label, at(200*time.Millisecond)); got != 1000 {
		t.Fatalf("after Learn(1000): Peek = %d, want 1000", got)
	}
	tb.Learn(token, label, 10, time.Time{}, 0, at(300*time.Millisecond))
	if got := tb.Peek(token, label, at(300*time.Millisecond)); got != 1000 {
		t.Errorf("after Learn(10) over 1000: Peek = %d, want 1000 (Learn never lowers)", got)
	}
	if got := tb.Peek(token, label, at(1100*time.Millisecond)); got != 500 {
		t.Errorf("one boundary later: Peek = %d, want 500", got)
	}
	tb.Learn(token, label, 0, time.Time{}, 0, at(1200*time.Millisecond))
	tb.Learn(7, label, 0, time.Time{}, 0, at(1200*time.Millisecond))
	if got := tb.Peek(7, label, at(1200*time.Millisecond)); got != 0 {
		t.Errorf("Learn(0) of an untracked key: Peek = %d, want 0", got)
	}
	if got := tb.Account(token, label, at(1300*time.Millisecond)); got != 501 {
		t.Errorf("Account after Learn: %d, want 501", got)
	}
}

// TestLearnedDecisionsAreTheReplicas: a coordinator that learns a replica's counter, onset
// and residual from the replica's rejections, and counts its own operations on its copy,
// rejects only operations the replica rejects with the same draw, and rejects most of them:
// its copy never exceeds the replica's counter, which also counts every other coordinator's
// operations. The birth makes the copy apply the same onset bound (without it the copy would
// judge a young partition on its raw count, more leniently than the replica), and the
// residual the same bound when the partition turns hot again after a pause (without it the
// copy would judge the leftover as part of the new burst, more harshly than the replica).
func TestLearnedDecisionsAreTheReplicas(t *testing.T) {
	const limit = 100
	for _, v := range []float64{3, 10, 100} {
		replica := newTable(t, Options{Capacity: 64})
		coord := newTable(t, Options{Capacity: 64})
		rng := rand.New(rand.NewPCG(1, uint64(v)))
		const token, label = int64(99), uint32(1)
		var mine, localRejects, wrong int
		for sec := 0.0; sec < 10; sec += rng.ExpFloat64() / (v * limit) {
			if sec >= 4 && sec < 6.5 {
				continue // a pause: the partition turns hot again with a leftover count
			}
			now := at(time.Second + 300*time.Millisecond + time.Duration(sec*float64(time.Second)))
			r := rng.Float64()
			if rng.IntN(2) == 0 {
				// Another coordinator's operation: only the replica sees it.
				replica.Decide(token, label, limit, r, now)
				continue
			}
			mine++
			if coord.Peek(token, label, now) > 0 {
				d := coord.Decide(token, label, limit, r, now)
				if !d.Admitted {
					localRejects++
					// Rejected locally: the replica counts it through propagation.
					if replica.Decide(token, label, limit, r, now).Admitted {
						wrong++
					}
					continue
				}
			}
			d := replica.Decide(token, label, limit, r, now)
			if !d.Admitted {
				coord.Learn(token, label, d.Count, d.Born, d.Residual, now)
			}
		}
		if wrong > 0 {
			t.Errorf("V=%gL: the coordinator rejected %d operations the replica would have admitted", v, wrong)
		}
		if want := 0.5 * float64(mine) * (1 - 1.0/v); float64(localRejects) < want*0.8 {
			t.Errorf("V=%gL: the coordinator rejected %d of its %d operations itself, want at least %.0f", v, localRejects, mine, want*0.8)
		}
	}
}
