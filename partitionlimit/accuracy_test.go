package partitionlimit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// accuracySeconds is the length of every accuracy run, in simulated seconds.
const accuracySeconds = 120

// raceSeconds is the length of the runs with L = 1000 under the race detector, which would
// otherwise take most of a minute (30 million operations). The bounds still hold with a
// 1% margin at that length; run without -race for the full 120 seconds.
const raceSeconds = 12

// simulate offers one partition v operations per second for the given simulated seconds under limit, with
// evenly spaced (smooth) or Poisson arrivals, and returns how many were offered and admitted.
// Each operation is accounted in a Table, then decided by Admit with a draw from a seeded RNG,
// exactly as a replica would.
//
// The counter starts in its steady state for smooth arrivals (v at the first second
// boundary, from 2v accounted the second before), so the run measures the long-run rate
// rather than the first seconds' transient, in which a counter climbing from zero admits
// everything up to 2L.
func simulate(t *testing.T, limit uint32, v float64, poisson bool, seed uint64, seconds int) (offered, admitted int) {
	t.Helper()
	tb := newTable(t, Options{Capacity: 64})
	rng := rand.New(rand.NewPCG(seed, uint64(limit)))
	const token, label = int64(12345), uint32(1)
	tb.AccountN(token, label, uint32(2*v), at(-time.Second))
	account := func(sec float64) {
		c := tb.Account(token, label, at(time.Duration(sec*float64(time.Second))))
		offered++
		if Admit(c, limit, rng.Float64()) {
			admitted++
		}
	}
	if poisson {
		for sec := rng.ExpFloat64() / v; sec < float64(seconds); sec += rng.ExpFloat64() / v {
			account(sec)
		}
		return offered, admitted
	}
	perSecond := int(math.Round(v))
	for s := range seconds {
		for i := range perSecond {
			account(float64(s) + (float64(i)+0.5)/float64(perSecond))
		}
	}
	return offered, admitted
}

// expectedRate is the admitted rate, as a fraction of the limit, that the package
// documentation derives for a smooth offered load of ratio = V/L.
func expectedRate(ratio float64) float64 {
	switch {
	case ratio <= 1:
		return ratio
	case ratio < 2:
		return 2 - ratio + math.Log2(ratio)
	default:
		return 1
	}
}

// TestAccuracy measures admitted/L against offered V/L for L ∈ {100, 1000} with smooth and
// Poisson arrivals over 120 simulated seconds, checks the bounds the admission rule promises,
// and logs the measured curve (run `go test -run TestAccuracy -v ./partitionlimit/` to print
// it; docs/performance.md records it).
func TestAccuracy(t *testing.T) {
	ratios := []float64{0.5, 0.8, 1, 1.2, 1.44, 1.7, 2, 5, 10, 100}
	limits := []uint32{100, 1000}
	type result struct{ smooth, poisson, poissonShare float64 } // admitted/L, admitted/offered
	curve := make([][]result, len(ratios))                      // [ratio][limit]
	for i := range curve {
		curve[i] = make([]result, len(limits))
	}
	for i, ratio := range ratios {
		for j, limit := range limits {
			for _, poisson := range []bool{false, true} {
				arrivals := map[bool]string{false: "smooth", true: "Poisson"}[poisson]
				name := fmt.Sprintf("V=%gL/L=%d/%s", ratio, limit, arrivals)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					v := ratio * float64(limit)
					seconds := accuracySeconds
					if raceEnabled && limit > 100 {
						seconds = raceSeconds
					}
					offered, admitted := simulate(t, limit, v, poisson, uint64(1000*ratio), seconds)
					rate := float64(admitted) / float64(seconds) / float64(limit)
					if poisson {
						curve[i][j].poisson = rate
						curve[i][j].poissonShare = float64(admitted) / float64(offered)
					} else {
						curve[i][j].smooth = rate
					}
					describe := fmt.Sprintf("offered %d in %d s (%gL/s) with %s arrivals under limit %d: admitted %d = %.4f·L per second",
						offered, seconds, ratio, arrivals, limit, admitted, rate)
					switch {
					case ratio <= 0.8 && !poisson && admitted != offered:
						t.Errorf("%s, want every operation admitted", describe)
					case ratio <= 0.8 && poisson && float64(admitted) < 0.995*float64(offered):
						t.Errorf("%s, want at least 99.5%% of them admitted", describe)
					case ratio == 1 && !poisson && admitted != offered:
						t.Errorf("%s, want every operation admitted", describe)
					case ratio >= 1 && ratio < 2 && rate > 1.10:
						t.Errorf("%s, want at most 1.10·L", describe)
					case ratio >= 2 && math.Abs(rate-1) > 0.05:
						t.Errorf("%s, want within ±5%% of L", describe)
					}
				})
			}
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		var b strings.Builder
		b.WriteString("\n| V/L | expected (smooth) |")
		for _, l := range limits {
			fmt.Fprintf(&b, " smooth L=%d | Poisson L=%d |", l, l)
		}
		b.WriteString("\n|---:|---:|")
		b.WriteString(strings.Repeat("---:|---:|", len(limits)))
		for i, ratio := range ratios {
			fmt.Fprintf(&b, "\n| %g | %.3f |", ratio, expectedRate(ratio))
			for j := range limits {
				r := curve[i][j]
				fmt.Fprintf(&b, " %.3f | %.3f (%.2f%%) |", r.smooth, r.poisson, 100*r.poissonShare)
			}
		}
		t.Log("admitted/L (Poisson: and admitted/offered) per simulated second:" + b.String())
	})
}
