package partitionlimit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// onsetRun offers one idle partition v operations per second (Poisson arrivals) from the
// instant phase (a fraction of a second after a second boundary) for the given seconds, deciding
// each with Table.Decide as a replica does, and returns the operations admitted in each second
// counted from the onset.
func onsetRun(t *testing.T, opts Options, limit uint32, v, phase float64, seed uint64, seconds int) []int {
	t.Helper()
	tb := newTable(t, opts)
	rng := rand.New(rand.NewPCG(seed, uint64(v*1000)))
	const token, label = int64(777), uint32(2)
	per := make([]int, seconds)
	start := time.Duration(phase * float64(time.Second))
	for sec := 0.0; ; sec += rng.ExpFloat64() / v {
		if int(sec) >= seconds {
			return per
		}
		now := at(time.Second + start + time.Duration(sec*float64(time.Second)))
		if tb.Decide(token, label, limit, rng.Float64(), now).Admitted {
			per[int(sec)]++
		}
	}
}

// TestOnsetBound checks the onset bound on one counter, as a replica decides: a partition that
// goes from idle to V ≥ 2L admits at most 2.5·L in its first second at any V and any phase of
// the second boundary (the package documentation derives 2.5·L; issue 19 asks for 3·L), and
// 0.9–1.1·L per second over the next seconds (averaged over seeds); one that goes to V ≤ 0.8·L
// is never rejected. Without the bound (the old rule, kept as Options.NoOnsetBound) the first
// second admits 2L + (L/ln2)·ln(V/2L), 3.3·L at V = 5·L.
func TestOnsetBound(t *testing.T) {
	const limit, seconds = 100, 4
	seeds, rates := 16, []float64{2, 3, 5, 10, 100, 1000}
	if raceEnabled {
		seeds, rates = 8, []float64{2, 10, 100} // a twentieth of the decisions under the race detector
	}
	for _, v := range rates {
		for _, phase := range []float64{0, 0.3, 0.7, 0.95} {
			var later float64
			for seed := range uint64(seeds) {
				per := onsetRun(t, Options{Capacity: 64}, limit, v*limit, phase, seed, seconds)
				if got := float64(per[0]) / limit; got > 2.5 {
					t.Errorf("V=%gL from phase %g (seed %d): first second admitted %.2f·L, want at most 2.5·L", v, phase, seed, got)
				}
				for i := 1; i < seconds; i++ {
					later += float64(per[i]) / limit / float64(seeds) / (seconds - 1)
				}
			}
			if later < 0.9 || later > 1.1 {
				t.Errorf("V=%gL from phase %g: seconds 2–%d admitted %.3f·L per second (mean of %d seeds), want 0.9–1.1·L", v, phase, seconds, later, seeds)
			}
		}
	}
	for _, v := range []float64{0.5, 0.8} {
		for _, phase := range []float64{0, 0.5, 0.95} {
			for seed := range uint64(seeds) {
				per := onsetRun(t, Options{Capacity: 64}, limit, v*limit, phase, seed, 10)
				offered := onsetRun(t, Options{Capacity: 64}, 1<<31, v*limit, phase, seed, 10)
				for i := range per {
					if per[i] != offered[i] {
						t.Errorf("V=%gL from phase %g (seed %d): second %d admitted %d of %d, want every one", v, phase, seed, i+1, per[i], offered[i])
					}
				}
			}
		}
	}
}

// TestOnsetBurstWithoutBound measures the burst the onset bound removes, so that
// TestOnsetBound is known to test something: the rule alone admits more than 3·L in the first
// second from V = 5·L on.
func TestOnsetBurstWithoutBound(t *testing.T) {
	const limit = 100
	for _, v := range []float64{5, 10, 100} {
		per := onsetRun(t, Options{Capacity: 64, NoOnsetBound: true}, limit, v*limit, 0.5, 1, 2)
		if got := float64(per[0]) / limit; got <= 3 {
			t.Errorf("without the onset bound, V=%gL admitted %.2f·L in its first second, want more than 3·L (2L + (L/ln2)·ln(V/2L) = %.2f·L)",
				v, got, 2+math.Log(v/2)/math.Ln2)
		}
	}
}

func TestOnsetCount(t *testing.T) {
	const limit = 100
	base := time.Unix(t0Unix, 0).UnixMilli() // a second boundary
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	tests := []struct {
		count uint32
		born  time.Duration // after base
		now   time.Duration
		k     int64 // boundaries the counter passed since the birth; 0 for the stamp clock's, −1 for none
		want  uint32
	}{
		// Born at a boundary, half a second old: steady would hold 1.5V, it holds 0.5V; and
		// the first second is judged on twice that.
		{count: 500, born: 0, now: 500 * time.Millisecond, want: 3000},
		// Up to the limit, the count itself, in any second.
		{count: 100, born: 0, now: 10 * time.Millisecond, want: 100},
		{count: 100, born: 0, now: 1500 * time.Millisecond, want: 100},
		// In the birth's second, up to 2L while a rate of L explains it with three standard
		// deviations of slack: 120 − 3·√120 = 87 ≤ L·0.95 s, as it is; but not in 0.5 s
		// (87 > 50): 120·2·1.5/0.5; nor 150 in 0.5 s (113 > 50).
		{count: 120, born: 0, now: 950 * time.Millisecond, want: 120},
		{count: 120, born: 0, now: 500 * time.Millisecond, want: 720},
		{count: 150, born: 0, now: 500 * time.Millisecond, want: 900},
		// Never past 2L: 201 is judged on 201·2·1.999/0.999 however slowly it came.
		{count: 201, born: 0, now: 999 * time.Millisecond, want: 804},
		// One boundary later (k = 1, φ = 0, u = 0.5): (1.5) / (1.5 − 0.5) = 1.5, and the
		// slack is only the birth second's.
		{count: 1000, born: 0, now: 1500 * time.Millisecond, want: 1500},
		{count: 101, born: 0, now: 1500 * time.Millisecond, want: 151},
		// In the birth's millisecond (or with the clock behind the birth) no rate can be
		// measured: up to 2L as it is, as the rule alone admits it, and more 64 times.
		{count: 200, born: 0, now: 0, want: 200},
		{count: 201, born: 0, now: 0, want: 201 * onsetMaxFactor},
		{count: 201, born: time.Second, now: 900 * time.Millisecond, want: 201 * onsetMaxFactor},
		// A millisecond later, more than L is measured as a rate: 150 − 3·√150 > L·1 ms.
		{count: 150, born: 0, now: time.Millisecond, want: onsetMaxFactor * 150},
		// Saturation.
		{count: math.MaxUint32 / 2, born: 0, now: 10 * time.Millisecond, want: math.MaxUint32},
		// Born 800 ms ago at phase 0.7 of the stamp's clock: on that clock one boundary has
		// passed, and 101 would be judged on 2·1.5/(1.5 − 1.7/2) = 4.6 times itself. A counter
		// born on a stamp from a clock 500 ms ahead has passed none (k = 0, the birth's own
		// second): a rate of L explains 101 in 0.8 s (101 − 3·√101 = 71 ≤ 80), as it is.
		{count: 101, born: 700 * time.Millisecond, now: 1500 * time.Millisecond, want: 466},
		{count: 101, born: 700 * time.Millisecond, now: 1500 * time.Millisecond, k: -1, want: 101},
		// Unexplained there, the factor is the counter's: k = 0 holds V·age (0.8), against
		// 1 + u with u moved to 0.8 at least (φ ≥ 0): 150·2·1.8/0.8.
		{count: 150, born: 700 * time.Millisecond, now: 1500 * time.Millisecond, k: -1, want: 675},
		// A counter born 500 ms ago that passed a boundary the stamp's clock has not (its
		// birth stamped late in a second by a clock ahead): u moves the least that puts a
		// boundary in the age, from 0.6 to 0.499 (φ = 0.999), for a steady span of
		// 1.499 − 1.999/2 = 0.4995 (k = 0 would read 0.5 and pass the birth second's test):
		// 101·2·1.499/0.4995.
		{count: 101, born: 100 * time.Millisecond, now: 600 * time.Millisecond, k: 1, want: 606},
	}
	for _, tt := range tests {
		now := base + ms(tt.now)
		age := ms(tt.now) - ms(tt.born)
		k := floorDiv(now, 1000) - floorDiv(now-age, 1000)
		switch {
		case tt.k < 0:
			k = 0
		case tt.k > 0:
			k = tt.k
		}
		got := onsetCount(tt.count, age, limit, now, k)
		if d := float64(got)/float64(tt.want) - 1; d < -0.01 || d > 0.01 {
			t.Errorf("onsetCount(%d, born %v, now %v, k %d) = %d, want %d", tt.count, tt.born, tt.now, k, got, tt.want)
		}
	}
}

// TestOnsetAgeIsOnTheReplicasClock: two replicas whose clocks are 400 ms apart receive the same
// operations, stamped by two coordinators whose clocks are 750 ms apart, in different orders,
// and agree on every decision of the counter's onset: the stamps set its second boundaries,
// the same on both, and each replica measures the counter's age on its own clock, the same
// interval on both. A table that took the age from the stamps would see the counter as old as
// the spread of the coordinators' clocks at its birth, and extrapolate its count far too little
// on the operations of the coordinator ahead.
func TestOnsetAgeIsOnTheReplicasClock(t *testing.T) {
	a, b := newTable(t, Options{Capacity: 64}), newTable(t, Options{Capacity: 64})
	const token, label, limit = int64(5), uint32(1), 10
	offA, offB := -200*time.Millisecond, 200*time.Millisecond    // the replicas' clocks
	ahead, behind := 500*time.Millisecond, -250*time.Millisecond // the coordinators'
	start := 400 * time.Millisecond                              // true time of the onset: stamps 150 and 900 ms
	decide := func(tb *Table, off, coord, true_ time.Duration, draw float64) Decision {
		return tb.DecideAt(token, label, limit, draw, at(true_+coord), at(true_+off))
	}
	// The first two operations reach the replicas in opposite orders, within a millisecond.
	decide(a, offA, ahead, start, 0.5)
	decide(a, offA, behind, start, 0.5)
	decide(b, offB, behind, start, 0.5)
	decide(b, offB, ahead, start, 0.5)
	var rejected int
	for i := range 400 {
		now := start + time.Millisecond + time.Duration(i)*5*time.Millisecond
		coord := ahead
		if i%2 == 1 {
			coord = behind
		}
		draw := float64(i%100) / 100
		da, db := decide(a, offA, coord, now, draw), decide(b, offB, coord, now, draw)
		if da != db {
			t.Fatalf("operation %d at %v: replicas decided %+v and %+v, want the same decision", i+3, now, da, db)
		}
		if !da.Admitted {
			rejected++
		}
		// The birth, on the clock of the operation's stamp, is the onset on that clock.
		if want := at(start + coord); da.Born.Sub(want).Abs() > time.Millisecond {
			t.Fatalf("operation %d stamped by the coordinator %v off: Born %v, want %v (the onset on its clock)", i+3, coord, da.Born, want)
		}
	}
	if rejected == 0 {
		t.Fatal("200 operations per second against a limit of 10 were never rejected: the test decides nothing")
	}
}

// phase is one stretch of a partition's load: rate operations per second (Poisson arrivals;
// 0 is a pause) for the given seconds.
type phase struct {
	rate    float64
	seconds float64
}

// phasedOp is one operation of phasedRun: when it came, in seconds from the run's start, and
// whether it was admitted.
type phasedOp struct {
	sec      float64
	admitted bool
}

// phasedOps is a run's operations in order.
type phasedOps []phasedOp

// phasedRun offers one partition the phases in turn from the instant start after a second
// boundary, deciding each operation with Table.Decide as a replica does, and returns its
// operations. The arrivals and draws depend only on seed and the phases, so two tables given
// the same seed see the same operations.
func phasedRun(t *testing.T, opts Options, limit uint32, phases []phase, start time.Duration, seed uint64) phasedOps {
	t.Helper()
	tb := newTable(t, opts)
	rng := rand.New(rand.NewPCG(seed, uint64(len(phases))))
	const token, label = int64(4242), uint32(5)
	var ops phasedOps
	from := 0.0
	for _, p := range phases {
		if p.rate > 0 {
			for sec := from + rng.ExpFloat64()/p.rate; sec < from+p.seconds; sec += rng.ExpFloat64() / p.rate {
				now := at(time.Second + start + time.Duration(sec*float64(time.Second)))
				ops = append(ops, phasedOp{sec, tb.Decide(token, label, limit, rng.Float64(), now).Admitted})
			}
		}
		from += p.seconds
	}
	return ops
}

// admittedFrom returns the operations admitted in each of n seconds from the run's second from.
func (ops phasedOps) admittedFrom(from float64, n int) []int {
	per := make([]int, n)
	for _, op := range ops {
		if i := int(math.Floor(op.sec - from)); i >= 0 && i < n && op.admitted {
			per[i]++
		}
	}
	return per
}

// TestTurningHotAgainIsBounded: a partition hot for a while, then quiet, then hot again keeps
// a leftover count, and judged by the rule alone its second burst would admit
// 2L + (L/ln2)·ln(V/2L) less what the leftover takes (5.7·L measured on a real node at V = 20·L
// after 6 s idle). The onset bound starts a new onset when it turns hot again and judges what
// came since, so the second burst's first second admits at most 3·L too, and the seconds after
// it 0.9–1.1·L. The same holds for a partition that goes from a trickle of operations straight
// to V, which never pauses a whole second.
func TestTurningHotAgainIsBounded(t *testing.T) {
	const limit = 100
	seeds := 12
	if raceEnabled {
		seeds = 3
	}
	type scenario struct {
		name   string
		before []phase // the load before the burst measured
		v      float64 // the burst, in multiples of the limit
	}
	var scenarios []scenario
	for _, v := range []float64{3, 20, 100} {
		for _, pause := range []float64{1.2, 2, 6} {
			scenarios = append(scenarios, scenario{fmt.Sprintf("V=%gL for 4 s, %g s quiet, V again", v, pause),
				[]phase{{v * limit, 4}, {0, pause}}, v})
		}
		for _, trickle := range []float64{0.02, 0.2} {
			scenarios = append(scenarios, scenario{fmt.Sprintf("a trickle of %gL for 20 s, then V=%gL", trickle, v),
				[]phase{{trickle * limit, 20}}, v})
		}
	}
	for _, sc := range scenarios {
		var before float64
		for _, p := range sc.before {
			before += p.seconds
		}
		phases := append(append([]phase(nil), sc.before...), phase{sc.v * limit, 5})
		var later, worst float64
		for seed := range uint64(seeds) {
			// The burst's phase against the counters' second boundaries varies with the seed.
			start := time.Duration(seed) * 77 * time.Millisecond
			per := phasedRun(t, Options{Capacity: 64}, limit, phases, start, seed).admittedFrom(before, 5)
			got := float64(per[0]) / limit
			if got > 3 {
				t.Errorf("%s (seed %d): the burst's first second admitted %.2f·L, want at most 3·L", sc.name, seed, got)
			}
			worst = max(worst, got)
			for _, n := range per[1:] {
				later += float64(n) / limit / float64(seeds) / 4
			}
		}
		if later < 0.9 || later > 1.1 {
			t.Errorf("%s: the burst's seconds 2–5 admitted %.3f·L per second (mean of %d seeds), want 0.9–1.1·L", sc.name, later, seeds)
		}
		t.Logf("%s: first second at most %.2f·L, seconds 2–5 %.3f·L (%d seeds)", sc.name, worst, later, seeds)
	}
}

// TestTurningHotAgainWithoutTheBound shows what TestTurningHotAgainIsBounded removes: judged by
// the rule alone (Options.NoOnsetBound), a partition hot again after 6 s of quiet admits more
// than 3·L in the second burst's first second.
func TestTurningHotAgainWithoutTheBound(t *testing.T) {
	const limit = 100
	phases := []phase{{20 * limit, 4}, {0, 6}, {20 * limit, 2}}
	per := phasedRun(t, Options{Capacity: 64, NoOnsetBound: true}, limit, phases, 0, 1).admittedFrom(10, 1)
	if got := float64(per[0]) / limit; got <= 3 {
		t.Errorf("without the onset bound the second burst's first second admitted %.2f·L, want more than 3·L", got)
	}
}

// TestQuietLoadIsNeverRejected: a partition offered at most 0.8·L is never rejected, however
// its load comes: steady for a minute (a counter whose count dips to half the limit starts a
// new onset each second), in bursts with pauses of a second or more (each burst a new onset
// with the last one's leftover), or slowly after a hot spell.
func TestQuietLoadIsNeverRejected(t *testing.T) {
	const limit = 100
	seeds := 8
	if raceEnabled {
		seeds = 2
	}
	loads := map[string][]phase{
		"0.3·L for 60 s":                         {{0.3 * limit, 60}},
		"0.5·L for 60 s":                         {{0.5 * limit, 60}},
		"0.8·L for 60 s":                         {{0.8 * limit, 60}},
		"0.8·L for 2 s, 1.5 s quiet, 12 times":   slices.Repeat([]phase{{0.8 * limit, 2}, {0, 1.5}}, 12),
		"0.8·L for 0.5 s, 1.1 s quiet, 30 times": slices.Repeat([]phase{{0.8 * limit, 0.5}, {0, 1.1}}, 30),
	}
	for name, phases := range loads {
		for seed := range uint64(seeds) {
			for i, op := range phasedRun(t, Options{Capacity: 64}, limit, phases, 0, seed) {
				if !op.admitted {
					t.Errorf("%s (seed %d): operation %d (at %.3f s) was rejected, want every one admitted", name, seed, i+1, op.sec)
					break
				}
			}
		}
	}
}

// TestSlowReturnIsJudgedAsTheRuleJudgesIt: a partition that comes back slowly after a hot spell
// (5·L for 3 s, 1.2 s quiet, then 0.2·L) starts a new onset with its leftover count as the
// residual; what arrives since is far below the limit, so every operation is decided exactly
// as the rule alone decides it on the whole count, leftover included (it is offered load, and
// here still above 2·L, so the rule rejects some). A new onset that judged the leftover as part
// of a new burst rejected 13 of the first 16 of such a return.
func TestSlowReturnIsJudgedAsTheRuleJudgesIt(t *testing.T) {
	const limit = 100
	phases := []phase{{5 * limit, 3}, {0, 1.2}, {0.2 * limit, 6}}
	var rejected int
	for seed := range uint64(8) {
		with := phasedRun(t, Options{Capacity: 64}, limit, phases, 0, seed)
		without := phasedRun(t, Options{Capacity: 64, NoOnsetBound: true}, limit, phases, 0, seed)
		var returned int
		for i, op := range with {
			if op.sec < 4.2 {
				continue
			}
			returned++
			if op.admitted != without[i].admitted {
				t.Fatalf("seed %d: operation %d of the slow return was admitted=%v, the rule alone says %v", seed, returned, op.admitted, without[i].admitted)
			}
			if !op.admitted {
				rejected++
			}
		}
	}
	if rejected == 0 {
		t.Fatal("the rule rejected none of the slow returns' operations: the leftover count is too small for the test to compare anything but admissions")
	}
}

// TestLearnedCopiesStartNoOnset: a table of learned copies keeps the onset Learn gave a counter
// (here none: a replica's counter past its onset) however its own operations come, where a
// replica's table starts a new onset after a whole second without an operation.
func TestLearnedCopiesStartNoOnset(t *testing.T) {
	for _, copies := range []bool{false, true} {
		tb := newTable(t, Options{Capacity: 64, LearnedCopies: copies})
		tb.Learn(1, 1, 1000, time.Time{}, 0, at(100*time.Millisecond))
		d := tb.Decide(1, 1, 100, 0.5, at(2100*time.Millisecond))
		if got := !d.Born.IsZero(); got == copies {
			t.Errorf("LearnedCopies=%v: after a whole second without an operation, Decide's Born is %v; want a new onset %v", copies, d.Born, !copies)
		}
		if !copies && d.Residual != 250 {
			t.Errorf("the new onset's residual is %d, want the count 1000 halved twice (250)", d.Residual)
		}
	}
}

// TestOutpaces: the rate test a coordinator uses to send a young partition's deltas at once is
// the onset bound's own (count − 3·√count > limit·age), only in the onset's first second.
func TestOutpaces(t *testing.T) {
	for _, tc := range []struct {
		count uint32
		age   time.Duration
		want  bool
	}{
		{60, 10 * time.Millisecond, true},    // 60 − 23 > 1
		{60, 500 * time.Millisecond, false},  // 37 ≤ 50
		{9, 0, false},                        // 9 − 9 ≤ 0: noise
		{10, 0, true},                        // 0.5 > 0
		{120, 900 * time.Millisecond, false}, // 87 ≤ 90
		{200, 999 * time.Millisecond, true},  // 158 > 99.9
		{5000, time.Second, false},           // past the first second
		{5000, -time.Millisecond, false},     // a clock stepped back
	} {
		if got := Outpaces(tc.count, 100, tc.age); got != tc.want {
			t.Errorf("Outpaces(%d, 100, %v) = %v, want %v", tc.count, tc.age, got, tc.want)
		}
	}
}

// TestNoiseUnderTheLimitIsAdmitted: a partition offered 0.9·L as Poisson arrivals ends about
// one second in thirty above 2·L by noise alone (its count at the end of a second is 1.8·L with
// a standard deviation of √(1.2·L)), where the rule rejects some of each excursion; a count that
// a rate of the limit explains at its phase of the second (steadyExplained) is admitted. The
// test fails without it: the rule alone
// (NoNoiseBound) rejects 31 of the same 86,471 operations, 0.04 %.
func TestNoiseUnderTheLimitIsAdmitted(t *testing.T) {
	const limit = 100
	seeds := 8
	if raceEnabled {
		seeds = 2
	}
	var offered, rejected, above, ruleRejected int
	for seed := range uint64(seeds) {
		ops := phasedRun(t, Options{Capacity: 64}, limit, []phase{{0.9 * limit, 120}}, 0, seed)
		offered += len(ops)
		for _, op := range ops {
			if !op.admitted {
				rejected++
			}
		}
		// The same operations' counts: those above 2L, where the rule alone rejects some.
		tb := newTable(t, Options{Capacity: 64})
		for _, op := range ops {
			now := at(time.Second + time.Duration(op.sec*float64(time.Second)))
			if tb.Decide(4242, 5, limit, 0, now).Count > 2*limit {
				above++
			}
		}
		for _, op := range phasedRun(t, Options{Capacity: 64, NoNoiseBound: true}, limit, []phase{{0.9 * limit, 120}}, 0, seed) {
			if !op.admitted {
				ruleRejected++
			}
		}
	}
	t.Logf("0.9·L: %d of %d operations rejected (%.4f %%), by the rule alone %d", rejected, offered, 100*float64(rejected)/float64(offered), ruleRejected)
	if float64(rejected) > 1e-4*float64(offered) {
		t.Errorf("0.9·L: %d of %d operations rejected, want at most 0.01 %%", rejected, offered)
	}
	if ruleRejected == 0 {
		t.Error("the rule alone (NoNoiseBound) rejected nothing at 0.9·L: the test exercises nothing")
	}
	if above == 0 {
		t.Error("no count at 0.9·L went above 2·L: the test exercises nothing but the rule's own allowance")
	}
}

// TestNoNewOnsetInTheFirstSecond: a partition born half a second before a boundary at 2·L has
// counted L when the boundary halves it to L/2, which a rate of the limit explains over the
// half second since the birth. Without counting the halving (sinceBirth), that started a new
// onset there, whose guards let the first second take its limit a second time: 1.98·L at
// V = 2·L from phase 0.5 over 16 seeds, against at most 1.68·L with the birth kept.
func TestNoNewOnsetInTheFirstSecond(t *testing.T) {
	const limit = 100
	var most float64
	for seed := range uint64(16) {
		most = max(most, float64(onsetRun(t, Options{Capacity: 64}, limit, 2*limit, 0.5, seed, 2)[0])/limit)
	}
	if most > 1.8 {
		t.Errorf("V=2L from phase 0.5: the first second admitted up to %.2f·L over 16 seeds, want at most 1.8·L", most)
	}
}

// TestNoNewOnsetAfterTheFirstSecond: a partition that turns hot from idle at 0.8·L, born at
// phase 0.6, counts 32 by the first boundary, which halves it to 16, holds 96 at the second and
// 48 just after it: under half the limit, and 48 over the 1.4 s since the birth looked like a
// rate of 34/s, although two boundaries had halved what came before them. Taking the count
// since the birth once after the first second started a new onset there (Decision.Residual 48)
// for a partition under its limit, which at ±500 ms, where stamps and the counter disagree on
// the boundaries, made 7 of the 16 rejections of reads at ONE at 0.9·L in the simulator (seed
// 20240603). A steady rate V since the birth leaves V·steadySpan in the counter (two halvings
// here: 1 − 1.6/4 = 0.6 s of it), and the test for turning hot again now holds the count to
// that: the birth is kept all through the onset.
func TestNoNewOnsetAfterTheFirstSecond(t *testing.T) {
	const limit, v = 100, 0.8 * 100
	tb := newTable(t, Options{Capacity: 64})
	var born time.Time
	for i := range int(8 * v) {
		now := at(1600*time.Millisecond + time.Duration(float64(i)*float64(time.Second)/v))
		d := tb.Decide(1, 1, limit, 0.999, now)
		if !d.Admitted {
			t.Fatalf("operation %d at %v: rejected (count %d), want a partition at 0.8·L admitted", i+1, now.Sub(at(0)), d.Count)
		}
		if i == 0 {
			born = d.Born
		}
		if !d.Born.IsZero() && (!d.Born.Equal(born) || d.Residual != 0) {
			t.Fatalf("operation %d at %v (count %d): a new onset born %v with residual %d, want the birth at %v kept",
				i+1, now.Sub(at(0)), d.Count, d.Born.Sub(at(0)), d.Residual, born.Sub(at(0)))
		}
	}
}

// TestOnsetCountsTheCountersBoundaries: a counter born on a stamp from a coordinator whose clock
// is 500 ms ahead of the replica's (at 0.7 s on the replica, 1.2 s on the stamp) is in its
// second 1 from its birth, and stamps from a coordinator on the replica's clock between 1.0 and
// 1.5 s pass no boundary of it. The birth, read on their clock as now − age (0.7 s), lies in the
// second before theirs: counting that boundary judged the counter's 101 operations since its
// birth (a rate of L explains them over 0.8 s with three standard deviations) on the first
// second's doubled factor, as 466, and rejected them. The counter's second at its birth, kept
// in the slot, says no boundary has passed: they are judged as they are, as on one clock.
func TestOnsetCountsTheCountersBoundaries(t *testing.T) {
	const token, label, limit = int64(9), uint32(MaxLabel), 100
	tb := newTable(t, Options{Capacity: 64})
	ahead := 500 * time.Millisecond
	birth := 700 * time.Millisecond
	if d := tb.DecideAt(token, label, limit, 0.999, at(birth+ahead), at(birth)); !d.Admitted || !d.Born.Equal(at(birth+ahead)) {
		t.Fatalf("first operation: %+v, want admitted and born at %v", d, at(birth+ahead))
	}
	const n = 100
	for i := range n {
		local := birth + time.Millisecond + time.Duration(i)*790*time.Millisecond/n
		d := tb.DecideAt(token, label, limit, 0.999, at(local), at(local))
		if !d.Admitted {
			t.Fatalf("operation %d at %v (stamp on the replica's clock): rejected with count %d, want a count since the birth that a rate of L explains admitted",
				i+2, local, d.Count)
		}
		if i == n-1 && d.Count <= limit {
			t.Fatalf("the last operation's count is %d, want above L (the test judges nothing)", d.Count)
		}
	}
	// A count the limit does not explain is still judged on the onset's factor: 120 more in
	// the next 100 ms, stamped on the replica's clock, reach 221 in 0.9 s of the counter's
	// second 1 (221 − 3·√221 > 90): judged on 2·1.9/0.9 times, their rejections are the
	// first second's as on one clock.
	var rejected int
	for i := range 120 {
		local := 1490*time.Millisecond + time.Duration(i)*100*time.Millisecond/120
		if d := tb.DecideAt(token, label, limit, 0.999, at(local), at(local)); !d.Admitted {
			rejected++
		}
	}
	if rejected == 0 {
		t.Error("a burst of 1,200/s in the onset's first second was never rejected, want the onset bound to reject it")
	}
}

// TestLabelsAboveMaxLabelShareCounters: a label is kept in the slot's low 30 bits, beside the
// birth's second, and every method takes it modulo 2^30; Apply refuses one above MaxLabel.
func TestLabelsAboveMaxLabelShareCounters(t *testing.T) {
	tb := newTable(t, Options{Capacity: 64})
	now := at(300 * time.Millisecond)
	tb.Account(1, MaxLabel, now)
	if c := tb.Account(1, MaxLabel+1+MaxLabel, now); c != 2 {
		t.Errorf("label MaxLabel + 2^30 counted %d, want 2 (the counter of MaxLabel)", c)
	}
	if c := tb.Peek(1, 0, now); c != 0 {
		t.Errorf("label 0 holds %d, want 0 (MaxLabel's birth second is not part of its label)", c)
	}
	_, err := tb.Apply(ModeAccountAndEnforce, 1, MaxLabel+1, 10, 0.5, now)
	if err == nil || !strings.Contains(err.Error(), "label") {
		t.Errorf("Apply with label MaxLabel+1: error %v, want one naming the label", err)
	}
	if _, err := tb.Apply(ModeAccountOnly, 1, MaxLabel, 10, 0.5, now); err != nil {
		t.Errorf("Apply with label MaxLabel: %v, want no error", err)
	}
}
