package bench

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Latencies are counted in a bounded log-linear histogram (HdrHistogram's bucket layout) rather
// than kept sample by sample, so a long run at a high rate uses the same memory as a short one.
// Values are nanoseconds. Below 2·subBuckets ns every value has its own bucket; above, each
// power of two [2^k, 2^(k+1)) is split into subBuckets equal buckets. A bucket therefore spans
// at most 1/subBuckets of its lower bound, and reporting its midpoint is off by at most
// 1/(2·subBuckets): with 64 sub-buckets, 0.8%. The whole int64 range takes numBuckets buckets
// (about 29 KiB of counters).
const (
	subBits    = 6
	subBuckets = 1 << subBits
	numBuckets = (62-subBits)*subBuckets + 2*subBuckets // the top bucket ends at MaxInt64
)

// bucketOf returns the bucket index of v nanoseconds (negative values count as 0).
func bucketOf(v int64) int {
	if v < 2*subBuckets {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - (subBits + 1)
	return e*subBuckets + int(v>>e)
}

// bucketBounds returns the smallest and largest value of bucket i.
func bucketBounds(i int) (lo, hi int64) {
	if i < 2*subBuckets {
		return int64(i), int64(i)
	}
	e := i/subBuckets - 1
	m := int64(i - e*subBuckets)
	return m << e, (m+1)<<e - 1
}

// histogram is safe for concurrent recording: each bucket is an atomic counter.
type histogram struct {
	counts [numBuckets]atomic.Int64
}

func (h *histogram) record(d time.Duration) { h.counts[bucketOf(int64(d))].Add(1) }

// addTo adds h's counts to dst, which has numBuckets entries.
func (h *histogram) addTo(dst []int64) {
	for i := range h.counts {
		dst[i] += h.counts[i].Load()
	}
}

// quantile returns the value at quantile q (0 < q ≤ 1) of the counts (numBuckets entries): the
// midpoint of the bucket holding the ceil(q·n)-th smallest value, or 0 with no values.
func quantile(counts []int64, q float64) time.Duration {
	var n int64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(q*float64(n))), 1)
	var seen int64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketBounds(i)
			return time.Duration(lo + (hi-lo)/2)
		}
	}
	lo, hi := bucketBounds(numBuckets - 1)
	return time.Duration(lo + (hi-lo)/2)
}
