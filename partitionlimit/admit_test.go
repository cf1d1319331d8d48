package partitionlimit

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestAdmit(t *testing.T) {
	tests := []struct {
		count, limit uint32
		draw         float64
		want         bool
	}{
		// At or under 2L every operation is admitted, whatever the draw.
		{count: 1, limit: 100, draw: 0.999, want: true},
		{count: 200, limit: 100, draw: 0.999, want: true},
		// Above 2L: admitted iff draw < L/(count·ln2).
		{count: 201, limit: 100, draw: 0, want: true},
		{count: 201, limit: 100, draw: 0.71, want: true},  // P(201) = 0.7178
		{count: 201, limit: 100, draw: 0.72, want: false}, //
		{count: 1000, limit: 100, draw: 0.1442, want: true},
		{count: 1000, limit: 100, draw: 0.1443, want: false}, // P(1000) = 0.14427
		{count: 1000, limit: 100, draw: 0.9999, want: false},
		// Limit 0 admits nothing that was counted.
		{count: 1, limit: 0, draw: 0, want: false},
		{count: math.MaxUint32, limit: 0, draw: 0, want: false},
		// Limits of 2^31 and more admit everything: 2L exceeds every count.
		{count: math.MaxUint32, limit: 1 << 31, draw: 0.999, want: true},
		{count: math.MaxUint32, limit: math.MaxUint32, draw: 0.999, want: true},
		{count: math.MaxUint32, limit: 1<<31 - 1, draw: 0.999, want: false},
		{count: math.MaxUint32, limit: 1<<31 - 1, draw: 0.7, want: true},
		// Draws outside [0, 1).
		{count: 1000, limit: 100, draw: -0.5, want: true},
		{count: 1000, limit: 100, draw: math.NaN(), want: false},
	}
	for _, tt := range tests {
		if got := Admit(tt.count, tt.limit, tt.draw); got != tt.want {
			t.Errorf("Admit(count=%d, limit=%d, draw=%v) = %v, want %v", tt.count, tt.limit, tt.draw, got, tt.want)
		}
	}
}

// TestAdmitProbability checks that the share of evenly spaced draws Admit accepts is
// L/(count·ln2) above 2L: the probability the package documentation integrates.
func TestAdmitProbability(t *testing.T) {
	const draws = 100_000
	for _, tt := range []struct{ count, limit uint32 }{{201, 100}, {300, 100}, {1000, 100}, {50_000, 1000}, {math.MaxUint32, 7}} {
		admitted := 0
		for i := range draws {
			if Admit(tt.count, tt.limit, (float64(i)+0.5)/draws) {
				admitted++
			}
		}
		want := float64(tt.limit) / (float64(tt.count) * math.Ln2)
		if got := float64(admitted) / draws; math.Abs(got-want) > 1.0/draws {
			t.Errorf("Admit(count=%d, limit=%d) accepts %.5f of draws, want L/(count·ln2) = %.5f", tt.count, tt.limit, got, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	quarter := 250 * time.Millisecond
	tests := []struct {
		count, limit uint32
		now          time.Time
		want         time.Duration
	}{
		// Already at or under 2L: no wait.
		{count: 0, limit: 100, now: at(0), want: 0},
		{count: 200, limit: 100, now: at(quarter), want: 0},
		// One halving suffices: wait for the next boundary.
		{count: 201, limit: 100, now: at(0), want: time.Second}, // 201>>1 = 100
		{count: 201, limit: 100, now: at(quarter), want: 750 * time.Millisecond},
		{count: 401, limit: 100, now: at(quarter), want: 750 * time.Millisecond},  // 401>>1 = 200
		{count: 402, limit: 100, now: at(quarter), want: 1750 * time.Millisecond}, // 402>>1 = 201, >>2 = 100
		// log2(1000/200) = 2.32, so three boundaries: 1000>>2 = 250 > 200, 1000>>3 = 125.
		{count: 1000, limit: 100, now: at(0), want: 3 * time.Second},
		{count: 1000, limit: 100, now: at(999_999_999), want: 2*time.Second + 1},
		{count: 16_000, limit: 1000, now: at(quarter), want: 2750 * time.Millisecond}, // 16000>>3 = 2000
		{count: 16_001, limit: 1000, now: at(quarter), want: 2750 * time.Millisecond},
		{count: 16_008, limit: 1000, now: at(quarter), want: 3750 * time.Millisecond}, // 16008>>3 = 2001
		// Extremes: a saturated counter with limit 1 needs 31 halvings (2^32-1 >> 31 = 1).
		{count: math.MaxUint32, limit: 1, now: at(time.Second / 2), want: 30*time.Second + time.Second/2},
		{count: math.MaxUint32, limit: 1 << 31, now: at(quarter), want: 0},
		// Limit 0 waits until the counter is 0.
		{count: 1, limit: 0, now: at(0), want: time.Second},
		{count: 5, limit: 0, now: at(100 * time.Millisecond), want: 2900 * time.Millisecond},
		// Before 1970 the next boundary is still the next whole unix second.
		{count: 201, limit: 100, now: time.Unix(-1, int64(quarter)), want: 750 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.count, tt.limit, tt.now); got != tt.want {
			t.Errorf("RetryAfter(count=%d, limit=%d, %v) = %v, want %v",
				tt.count, tt.limit, tt.now.Sub(at(0)), got, tt.want)
		}
	}
}

// TestRetryAfterAgreesWithTable checks RetryAfter against the table's own decay: after the hint
// has elapsed the counter is at most 2L, and a nanosecond earlier it is still above.
func TestRetryAfterAgreesWithTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for i := range 2000 {
		limit := uint32(rng.IntN(2000))
		count := uint32(rng.Int64N(1 << 32))
		if i%2 == 0 {
			count = 2*limit + uint32(rng.IntN(20*int(limit)+2))
		}
		now := at(time.Duration(rng.Int64N(int64(time.Hour))))
		tb := newTable(t, Options{Capacity: Window})
		tb.AccountN(1, 1, count, now)
		wait := RetryAfter(count, limit, now)
		if got := tb.Peek(1, 1, now.Add(wait)); uint64(got) > 2*uint64(limit) {
			t.Fatalf("RetryAfter(count=%d, limit=%d) = %v, but the counter is then %d, above 2L", count, limit, wait, got)
		}
		if wait == 0 {
			continue
		}
		if got := tb.Peek(1, 1, now.Add(wait-1)); uint64(got) <= 2*uint64(limit) {
			t.Fatalf("RetryAfter(count=%d, limit=%d) = %v, but 1ns earlier the counter is already %d, at most 2L",
				count, limit, wait, got)
		}
	}
}

// TestDecide checks Decide on a counter past its onset (the rule as the package documentation
// states it, early in a second, where no count above 2L is explained by a rate of L);
// TestOnsetBound covers a counter's first seconds, TestNoiseUnderTheLimitIsAdmitted the end of
// a second.
func TestDecide(t *testing.T) {
	tb := newTable(t, Options{Capacity: 1024, NoOnsetBound: true})
	now := at(100 * time.Millisecond)
	const limit = 10
	for i := 1; i <= 2*limit; i++ {
		d := tb.Decide(1, 1, limit, 0.999, now)
		if want := (Decision{Admitted: true, Count: uint32(i), Limit: limit}); d != want {
			t.Fatalf("Decide call %d = %+v, want %+v: operations up to 2L are admitted", i, d, want)
		}
	}
	d := tb.Decide(1, 1, limit, 0.999, now)
	if want := (Decision{Admitted: false, Count: 2*limit + 1, Limit: limit, RetryAfter: 900 * time.Millisecond}); d != want {
		t.Fatalf("Decide with count 2L+1 and draw 0.999 = %+v, want %+v", d, want)
	}
	d = tb.Decide(1, 1, limit, 0, now)
	if want := (Decision{Admitted: true, Count: 2*limit + 2, Limit: limit}); d != want {
		t.Fatalf("Decide with count 2L+2 and draw 0 = %+v, want %+v: rejected operations are still counted", d, want)
	}
}

// TestDecideInOnset checks that a counter in its onset is judged on its extrapolated count:
// 2L operations at the very instant a partition turns hot are admitted (as the rule alone
// would), and the next, a rate no counter could hold, is judged as onsetMaxFactor times its
// count and rejected even with a draw of 0.05, where the rule alone admits.
func TestDecideInOnset(t *testing.T) {
	tb := newTable(t, Options{Capacity: 1024})
	now := at(400 * time.Millisecond)
	const limit = 10
	for i := 1; i <= 2*limit; i++ {
		if d := tb.Decide(1, 1, limit, 0.999, now); !d.Admitted || d.Count != uint32(i) {
			t.Fatalf("Decide call %d = %+v, want admitted with count %d: up to 2L in the birth's second", i, d, i)
		}
	}
	if Admit(2*limit+1, limit, 0.05) != true {
		t.Fatal("the rule alone rejects count 2L+1 with draw 0.05; the test needs it to admit")
	}
	d := tb.Decide(1, 1, limit, 0.05, now)
	if want := (Decision{Admitted: false, Count: 2*limit + 1, Limit: limit, RetryAfter: 600 * time.Millisecond, Born: now}); d != want {
		t.Fatalf("Decide call %d in the counter's first millisecond = %+v, want %+v", 2*limit+1, d, want)
	}
}
