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
	// this many times its count. It matters only for a counter a few milliseconds old, whose
	// rate is unknowable.
	onsetMaxFactor = 64
)

// onsetCount returns the count Decide judges a counter in its onset on: the counter holds
// count and started from zero age milliseconds before now (unix milliseconds in the clock of
// the operation's stamp, which sets the counter's second boundaries), and would hold count
// times
//
//	g = (1+u) / ((1+u) − (1+φ)·2^−k)
//
// had its partition been offered the same rate forever, where u is now's fraction of a
// second, φ the birth's (now − age), and k the number of second boundaries between them,
// doubled in the first second after the birth; g is at most onsetMaxFactor. A count at or
// below the guard is returned as it is: 2·limit in the second the counter was born (k = 0: a
// burst up to 2L is admitted, as the rule alone admits it), limit after. The package
// documentation derives it ("The onset").
func onsetCount(count uint32, age int64, limit uint32, now int64) uint32 {
	if age <= 0 {
		// The birth's own millisecond (or a clock stepped back behind it): the rate is
		// unknowable, and the guard is the birth second's.
		if uint64(count) <= 2*uint64(limit) {
			return count
		}
		return saturatingMul(count, onsetMaxFactor)
	}
	birth := now - age
	k := floorDiv(now, 1000) - floorDiv(birth, 1000)
	guard := uint64(limit)
	if k == 0 {
		guard *= 2
	}
	if uint64(count) <= guard {
		return count
	}
	u := float64(now-floorDiv(now, 1000)*1000) / 1000
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

// onsetAge returns how many milliseconds before local a counter with birth stamp born (see
// slot) started from zero: the signed 32-bit difference of the stamps' low bits, exact within
// 24 days, negative for a local clock stepped back behind the birth.
func onsetAge(born uint32, local time.Time) int64 {
	return int64(int32(uint32(local.UnixMilli()) - born&^1))
}
