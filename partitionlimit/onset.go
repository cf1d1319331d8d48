package partitionlimit

import (
	"math"
	"time"
)

const (
	// onsetHorizon is how long, in milliseconds, a counter that started from zero is in its
	// onset: Decide extrapolates its count (onsetCount) until then. After 8 halvings the
	// history the counter missed weighs at most 2·2^-8 of its count, under 1%.
	onsetHorizon = 8000

	// onsetMaxFactor bounds the extrapolation: a counter in its onset is judged as at most
	// this many times its count. It matters only for a counter a few milliseconds old (or one
	// that a stamp from a slower clock reaches before its birth), whose rate is unknowable.
	onsetMaxFactor = 64
)

// onsetCount returns the count a counter stored as count, born at birth stamp born (see slot),
// would hold at now had its partition been offered the same rate forever: count times
//
//	g = (1+u) / ((1+u) − (1+φ)·2^−k)
//
// where u is now's fraction of a second, φ the birth's, and k the number of second boundaries
// between them; bounded by onsetMaxFactor. The package documentation derives it ("The onset").
// Decide calls it only for a count above the limit.
func onsetCount(count, born uint32, now time.Time) uint32 {
	nowMs := now.UnixMilli()
	age := int64(int32(uint32(nowMs) - born))
	g := float64(onsetMaxFactor)
	if age > 0 {
		birth := nowMs - age
		k := floorDiv(nowMs, 1000) - floorDiv(birth, 1000)
		u := float64(nowMs-floorDiv(nowMs, 1000)*1000) / 1000
		phi := float64(birth-floorDiv(birth, 1000)*1000) / 1000
		if den := (1 + u) - (1+phi)*math.Ldexp(1, -int(k)); den > 0 {
			g = min((1+u)/den, onsetMaxFactor)
		}
	}
	x := float64(count) * g
	if x >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(x)
}

// floorDiv returns floor(a / b) for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
