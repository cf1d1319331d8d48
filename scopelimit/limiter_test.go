package scopelimit

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var epoch = time.Unix(1_800_000_000, 0)

func newLimiter(t testing.TB) *Limiter {
	t.Helper()
	l, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestNewRejectsNegativeCapacity(t *testing.T) {
	if _, err := New(Options{Capacity: -1}); err == nil {
		t.Fatal("New(Capacity: -1) succeeded")
	}
	if _, err := New(Options{Capacity: 3}); err == nil {
		t.Fatal("New(Capacity: 3), below partitionlimit's window, succeeded")
	}
}

// TestDrawsAreUniformAndIndependent: each scope's draw is uniform, and two scopes' draws for
// the same seed are independent, so a request passes scopes with probabilities P1 and P2 with
// probability P1·P2 (a shared draw would give min(P1, P2)).
func TestDrawsAreUniformAndIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200_000
	for _, p := range [][2]float64{{0.5, 0.25}, {0.9, 0.1}, {0.3, 0.3}} {
		both, first, second := 0, 0, 0
		for range n {
			s := rng.Uint64()
			a, b := Draw(s, 0) < p[0], Draw(s, 1) < p[1]
			if a {
				first++
			}
			if b {
				second++
			}
			if a && b {
				both++
			}
		}
		tol := 4 * math.Sqrt(0.25/n)
		if got := float64(first) / n; math.Abs(got-p[0]) > tol {
			t.Errorf("P(draw0 < %v) = %v", p[0], got)
		}
		if got := float64(second) / n; math.Abs(got-p[1]) > tol {
			t.Errorf("P(draw1 < %v) = %v", p[1], got)
		}
		if got := float64(both) / n; math.Abs(got-p[0]*p[1]) > tol {
			t.Errorf("P(both) = %v, want P1·P2 = %v (a shared draw gives %v)", got, p[0]*p[1], min(p[0], p[1]))
		}
	}
	for _, s := range []uint64{0, 1, math.MaxUint64} {
		for i := range 4 {
			if d := Draw(s, i); d < 0 || d >= 1 {
				t.Errorf("Draw(%d, %d) = %v, outside [0, 1)", s, i, d)
			}
		}
	}
}

// TestRejectedRequestConsumesNothingFurther: a request rejected by its client's level is counted
// there and by no scope after it; an admitted one is counted by every scope with a limit.
func TestRejectedRequestConsumesNothingFurther(t *testing.T) {
	l := newLimiter(t)
	client := Scope{ID: 1, Label: 1, Limit: 10}
	org := Scope{ID: 2, Label: 1, Limit: 1000}
	unlimited := Scope{ID: 3, Label: 1}
	chain := []Scope{client, unlimited, org}
	rng := rand.New(rand.NewPCG(3, 4))
	rejected := 0
	for i := range 2000 {
		now := epoch.Add(time.Duration(i) * time.Millisecond)
		before := l.Peek(org.ID, org.Label, now)
		v := l.Decide(chain, rng.Uint64(), now)
		after := l.Peek(org.ID, org.Label, now)
		switch {
		case v.Admitted:
			if v.Rejected != -1 || after != before+1 {
				t.Fatalf("admitted request: Rejected %d, org count %d → %d", v.Rejected, before, after)
			}
		default:
			rejected++
			if v.Rejected != 0 || after != before || v.Decision.Limit != client.Limit || v.Decision.RetryAfter <= 0 {
				t.Fatalf("rejected request: %+v, org count %d → %d", v, before, after)
			}
		}
	}
	if rejected < 1500 {
		t.Fatalf("2000 requests in 2 s at a client limit of 10/s: only %d rejected", rejected)
	}
	if n := l.Peek(unlimited.ID, unlimited.Label, epoch.Add(2*time.Second)); n != 0 {
		t.Fatalf("a scope with no limit counted %d", n)
	}
}

// cluster runs n coordinators' limiters for secs seconds on one scope of limit lim, offered v
// requests per second split by share (a coordinator's fraction), arriving evenly, with deltas
// drained every 20 ms and learned 1 ms later by every peer; clocks are offset by skew[i]. It
// returns the requests admitted in each second.
func cluster(t *testing.T, share []float64, skew []time.Duration, lim uint32, v float64, secs int) []int {
	t.Helper()
	n := len(share)
	ls := make([]*Limiter, n)
	for i := range ls {
		ls[i] = newLimiter(t)
	}
	sc := []Scope{{ID: 7, Label: 2, Limit: lim}}
	rng := rand.New(rand.NewPCG(5, 6))
	per := make([]int, secs)
	step := time.Duration(float64(time.Second) / v)
	var buf []Delta
	nextDrain := 20 * time.Millisecond
	for now := time.Duration(0); now < time.Duration(secs)*time.Second; now += step {
		for now >= nextDrain {
			for i, l := range ls {
				buf = l.Drain(buf[:0])
				for j, p := range ls {
					if j != i {
						for _, d := range buf {
							p.Learn(d, lim, epoch.Add(nextDrain+time.Millisecond+skew[j]))
						}
					}
				}
			}
			nextDrain += 20 * time.Millisecond
		}
		u, c := rng.Float64(), 0
		for c < n-1 && u >= share[c] {
			u -= share[c]
			c++
		}
		if ls[c].Decide(sc, rng.Uint64(), epoch.Add(now+skew[c])).Admitted {
			per[now/time.Second]++
		}
	}
	return per
}

// TestClusterHoldsTheLimit: the scope's budget is held cluster-wide whatever the split of the
// load over coordinators and their clocks' skew, from the second second on.
func TestClusterHoldsTheLimit(t *testing.T) {
	const lim = 200
	for _, tc := range []struct {
		name  string
		share []float64
		skew  []time.Duration
		v     float64
	}{
		{"3 even 5x", []float64{1. / 3, 1. / 3, 1. / 3}, make([]time.Duration, 3), 5},
		{"3 90/10 20x", []float64{0.9, 0.05, 0.05}, make([]time.Duration, 3), 20},
		{"9 even 2x skew", []float64{1. / 9, 1. / 9, 1. / 9, 1. / 9, 1. / 9, 1. / 9, 1. / 9, 1. / 9, 1. / 9},
			[]time.Duration{-500e6, 0, 250e6, 500e6, -250e6, -500e6, 0, 250e6, 500e6}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			per := cluster(t, tc.share, tc.skew, lim, tc.v*lim, 12)
			if float64(per[0]) > 2.0*lim {
				t.Errorf("first second admitted %d, want ≤ 2·L = %d", per[0], 2*lim)
			}
			sum := 0
			for _, a := range per[2:] {
				sum += a
			}
			r := float64(sum) / float64(len(per)-2) / lim
			t.Logf("first second %.2f·L, then %.3f·L", float64(per[0])/lim, r)
			if r < 0.95 || r > 1.05 {
				t.Errorf("admitted %.3f·L per second from the third second (%v), want 0.95–1.05", r, per)
			}
		})
	}
	t.Run("under the limit", func(t *testing.T) {
		per := cluster(t, []float64{0.9, 0.05, 0.05}, make([]time.Duration, 3), lim, 0.8*lim, 10)
		for s, a := range per[:9] {
			if want := int(0.8*lim) - 1; a < want {
				t.Errorf("second %d admitted %d of %d offered", s, a, want+1)
			}
		}
	})
}

func TestDecideDoesNotAllocate(t *testing.T) {
	l := newLimiter(t)
	chain := []Scope{{ID: 1, Label: 1, Limit: 100}, {ID: 2, Label: 1, Limit: 50}}
	l.Decide(chain, 1, epoch)
	var seed uint64
	if a := testing.AllocsPerRun(1000, func() {
		seed++
		l.Decide(chain, seed, epoch)
	}); a != 0 {
		t.Fatalf("Decide allocates %v per call", a)
	}
}

// TestJoiningCoordinatorSyncsFirst: a coordinator that joins a scope at 5·L and takes 90 % of
// its load at once admits about L in its first second when it first learns the count from a
// peer (Sync of Peek); judged on an empty counter (under the onset bound, and learning its
// peer's deltas from its first 20 ms) it admits more.
func TestJoiningCoordinatorSyncsFirst(t *testing.T) {
	const lim, v = 100, 500
	sc := []Scope{{ID: 9, Label: 1, Limit: lim}}
	var withSync int
	for _, sync := range []bool{true, false} {
		old, joined := newLimiter(t), newLimiter(t)
		rng := rand.New(rand.NewPCG(7, 8))
		step := time.Second / v
		joinAt := 10 * time.Second
		admitted := 0
		var buf []Delta
		for now := time.Duration(0); now < joinAt+time.Second; now += step {
			at := epoch.Add(now)
			if now == joinAt && sync {
				joined.Sync(9, 1, old.Peek(9, 1, at), at)
			}
			if now%(20*time.Millisecond) == 0 {
				// Before the join, the old coordinator's deltas go to peers not modelled here.
				buf = old.Drain(buf[:0])
				if now >= joinAt {
					for _, d := range buf {
						joined.Learn(d, lim, at)
					}
					buf = joined.Drain(buf[:0])
					for _, d := range buf {
						old.Learn(d, lim, at)
					}
				}
			}
			l := old
			if now >= joinAt && rng.Float64() < 0.9 {
				l = joined
			}
			if l.Decide(sc, rng.Uint64(), at).Admitted && now >= joinAt {
				admitted++
			}
		}
		t.Logf("sync %v: %d admitted in the second after the join", sync, admitted)
		if sync {
			withSync = admitted
			if admitted < 85 || admitted > 115 {
				t.Errorf("with Sync the second after the join admitted %d, want about L = %d", admitted, lim)
			}
		} else if admitted <= withSync || admitted > 2*lim {
			t.Errorf("without Sync the second after the join admitted %d (with it %d), want more, and at most 2·L", admitted, withSync)
		}
	}
}

// TestDrainHandsOutEveryCountOnce: under concurrent Decide and Drain, the deltas drained add up
// to exactly the countings Decide made (each scope up to the one that rejected), none lost or
// sent twice.
func TestDrainHandsOutEveryCountOnce(t *testing.T) {
	l := newLimiter(t)
	chain := []Scope{{ID: 1, Label: 1, Limit: 50}, {ID: 2, Label: 1, Limit: 1 << 20}}
	const workers, per = 4, 5000
	counted := make(chan int, workers)
	for w := range workers {
		go func() {
			n := 0
			for i := range per {
				v := l.Decide(chain, uint64(w*per+i), epoch.Add(time.Duration(i)*time.Millisecond))
				if v.Admitted {
					n += 2
				} else {
					n++
				}
			}
			counted <- n
		}()
	}
	drained, want, done := 0, 0, 0
	var buf []Delta
	for done < workers {
		select {
		case n := <-counted:
			want += n
			done++
		default:
		}
		buf = l.Drain(buf[:0])
		for _, d := range buf {
			drained += int(d.N)
		}
	}
	for _, d := range l.Drain(nil) {
		drained += int(d.N)
	}
	if drained != want {
		t.Fatalf("drained %d countings, Decide made %d", drained, want)
	}
}
