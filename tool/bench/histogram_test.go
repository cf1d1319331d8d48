package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsTileTheRange(t *testing.T) {
	var prevHi int64 = -1
	for i := range numBuckets {
		lo, hi := bucketBounds(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, want %d (right after bucket %d)", i, lo, prevHi+1, i-1)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d spans [%d, %d] but bucketOf gives %d and %d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if width := hi - lo + 1; lo < 2*subBuckets && width != 1 {
			t.Fatalf("bucket %d [%d, %d] below %d ns holds more than one value", i, lo, hi, 2*subBuckets)
		} else if lo >= 2*subBuckets && float64(width)/float64(lo) > 1.0/subBuckets {
			t.Fatalf("bucket %d [%d, %d] is %.4f of its lower bound wide, want at most 1/%d", i, lo, hi, float64(width)/float64(lo), subBuckets)
		}
		prevHi = hi
	}
	if prevHi != math.MaxInt64 {
		t.Errorf("the last bucket ends at %d, want MaxInt64", prevHi)
	}
	if bucketOf(-5) != 0 {
		t.Errorf("bucketOf(-5) = %d, want 0", bucketOf(-5))
	}
}

func TestQuantilesWithinRelativeError(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h histogram
	samples := make([]time.Duration, 20000)
	for i := range samples {
		// log-normal around 2 ms, spanning µs to seconds
		samples[i] = time.Duration(math.Exp(r.NormFloat64()*1.5) * 2e6)
		h.record(samples[i])
	}
	slices.Sort(samples)
	counts := make([]int64, numBuckets)
	h.addTo(counts)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := samples[int(math.Ceil(q*float64(len(samples))))-1]
		got := quantile(counts, q)
		if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 1.0/(2*subBuckets) {
			t.Errorf("quantile(%v) = %v, exact %v: relative error %.4f, want at most %.4f", q, got, exact, rel, 1.0/(2*subBuckets))
		}
	}
}

func TestQuantileOfEmptyIsZero(t *testing.T) {
	if got := quantile(make([]int64, numBuckets), 0.99); got != 0 {
		t.Errorf("quantile of no values = %v, want 0", got)
	}
}
