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

// onsetCount returns the count Decide judges a counter in its onset on: the count stored as
// count, born at birth stamp born (see slot), would hold at now had its partition been offered
// the same rate forever, that is count times
//
//	g = (1+u) / ((1+u) − (1+φ)·2^−k)
//
// where u is now's fraction of a second, φ the birth's, and k the number of second boundaries
// between them, doubled in the first second after the birth; g is at most onsetMaxFactor. A count at or below the guard is returned as it
// is: 2·limit in the second the counter was born (k = 0: a burst up to 2L is admitted, as the
// rule alone admits it), limit after. The package documentation derives it ("The onset").
func onsetCount(count, born, limit uint32, now time.Time) uint32 {
	nowMs := now.UnixMilli()
	age := int64(int32(uint32(nowMs) - born))
	if age <= 0 {
		// A stamp from a clock behind the birth's, or the birth's own millisecond: the rate
		// is unknowable, and the guard is the birth second's.
		if uint64(count) <= 2*uint64(limit) {
			return count
		}
		return saturatingMul(count, onsetMaxFactor)
	}
	birth := nowMs - age
	k := floorDiv(nowMs, 1000) - floorDiv(birth, 1000)
	guard := uint64(limit)
	if k == 0 {
		guard *= 2
	}
	if uint64(count) <= guard {
		return count
	}
	u := float64(nowMs-floorDiv(nowMs, 1000)*1000) / 1000
	phi := float64(birth-floorDiv(birth, 1000)*1000) / 1000
	g := float64(onsetMaxFactor)
	if den := (1 + u) - (1+phi)*math.Ldexp(1, -int(k)); den > 0 {
		g = (1 + u) / den
		if age < 1000 {
			// The first second since the birth may already have admitted 2L under the
			// guard: judge it on twice the estimate, which admits at most L/2 more.
			g *= 2
		}
		g = min(g, onsetMaxFactor)
	}
	x := float64(count) * g
	if x >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(x)
}

// saturatingMul returns a·b, or math.MaxUint32 if that overflows.
func saturatingMul(a, b uint32) uint32 {
	if p := uint64(a) * uint64(b); p <= math.MaxUint32 {
		return uint32(p)
	}
	return math.MaxUint32
}

// floorDiv returns floor(a / b) for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// bornTime returns the time a birth stamp (see slot) stands for, seen at now: the millisecond
// within 2^31 ms (24 days) before or after now whose low 32 bits it holds, the lowest bit (the
// stamp's marker) cleared. Learn encodes it back to the same stamp.
func bornTime(born uint32, now time.Time) time.Time {
	nowMs := now.UnixMilli()
	return time.UnixMilli(nowMs - int64(int32(uint32(nowMs)-born&^1)))
}
