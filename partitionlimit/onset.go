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

	// onsetSlack is how many standard deviations of Poisson noise the birth second's rate test
	// allows (see onsetCount): a partition offered the limit fails it at a given moment with a
	// probability of about 10^-3, one offered 0.8·L needs 3 + √λ/4 standard deviations above
	// its mean count λ, and a faster partition fails it as soon as its count exceeds what the
	// limit could explain by more than that.
	onsetSlack = 3
)

// onsetCount returns the count Decide judges a counter in its onset on: the counter holds
// count (above limit: lower counts are judged as they are), started from zero age
// milliseconds before now (unix milliseconds in the clock of the operation's stamp) and has
// passed k second boundaries since (halved k times). It is count times
//
//	g = (1+u) / ((1+u) − (1+φ)·2^−k)
//
// the count a counter that had always seen the same rate would hold over the one it holds,
// where u is now's fraction of the counter's second and φ the birth's (see phases); g is
// doubled in the first second after the birth and at most onsetMaxFactor. In the birth's own
// second (k = 0), a count up to 2·limit that a rate of at most limit explains, count −
// onsetSlack·√count ≤ limit·age, is judged as it is, and so is one up to 2·limit in the
// birth's own millisecond, where no rate can be measured. The package documentation derives
// the bound this puts on a partition's first second ("The onset").
func onsetCount(count uint32, age int64, limit uint32, now, k int64) uint32 {
	if uint64(count) <= uint64(limit) {
		return count
	}
	if age <= 0 {
		// The birth's own millisecond (or a clock stepped back behind it): no rate can be
		// measured, and the rule's own allowance stands, up to 2L at once; more is no rate
		// a counter could hold.
		if uint64(count) <= 2*uint64(limit) {
			return count
		}
		return saturatingMul(count, onsetMaxFactor)
	}
	c := float64(count)
	if k == 0 && uint64(count) <= 2*uint64(limit) && explained(c, limit, float64(age)/1000) {
		return count
	}
	u, _ := phases(age, now, k)
	g := float64(onsetMaxFactor)
	if den := steadySpan(age, now, k); den > 0 {
		g = (1 + u) / den
		if age < 1000 {
			// The first second since the birth may already have admitted up to 2L under
			// the guards: judge it on twice the estimate, which admits at most L/2 more.
			g *= 2
		}
		g = min(g, onsetMaxFactor)
	}
	x := c * g
	if x >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(x)
}

// steadySpan returns how many operations a steady rate of one per second since a counter's
// birth age milliseconds before now (unix milliseconds on the clock of the operation's stamp)
// leaves in the counter at now, when the counter has passed k second boundaries since:
// (1+u) − (1+φ)·2^−k, with u now's fraction of the counter's second and φ the birth's (see
// phases), which is the age itself when k = 0. A counter offered V since its birth holds
// V·steadySpan; onsetCount's factor is (1+u) over it.
func steadySpan(age, now, k int64) float64 {
	if k == 0 {
		return float64(age) / 1000
	}
	u, phi := phases(age, now, k)
	return (1 + u) - (1+phi)*math.Ldexp(1, -int(k))
}

// phases returns the fractions of a second, u of now and φ of the birth age milliseconds
// before it, on the seconds of a counter that passed k boundaries in between. They are the
// stamp's own (now's on its clock, and now − age's) when that clock also puts k boundaries
// between the two, as it does whenever the stamps that halved the counter came from clocks
// that agree with it. A counter born on a stamp from a clock ahead (or behind) passes its
// boundaries earlier (or later) than the stamp's clock: then u is moved the least that puts
// k boundaries in the age, u − φ = age − k seconds with both in [0, 1), so that the counter's
// own boundaries, not the stamp clock's, decide how much of its count a steady rate left.
// (An age more than a second off k, from clocks over a second apart, takes the nearest end.)
func phases(age, now, k int64) (u, phi float64) {
	um := now - floorDiv(now, 1000)*1000
	d := age - 1000*k // u − φ in milliseconds
	switch {
	case d >= 1000:
		um, d = 999, 999
	case d <= -1000:
		um, d = 0, -999
	default:
		um = min(max(um, d, 0), 999+min(d, 0))
	}
	return float64(um) / 1000, float64(um-d) / 1000
}

// boundaries returns how many second boundaries a counter passed in the age milliseconds
// since its birth, given that number modulo 4 (passed, from the slot's birth second): the one
// of the four values from ⌊age/1000⌋ − 1 to ⌊age/1000⌋ + 2 that has that remainder. On one
// clock the count is ⌊age/1000⌋ or one more; stamps from clocks less than a second apart move
// it by at most one more either way.
func boundaries(passed uint32, age int64) int64 {
	base := floorDiv(age, 1000) - 1
	return base + int64((passed-uint32(base))&3)
}

// explained reports whether a count c accumulated over seconds since a counter's birth is
// explained by a rate of at most limit: c − onsetSlack·√c ≤ limit·seconds.
func explained(c float64, limit uint32, seconds float64) bool {
	return c-onsetSlack*math.Sqrt(c) <= float64(limit)*seconds
}

// Outpaces reports whether a counter in its onset's first second, born age ago and now at count,
// has counted faster than limit per second by more than Poisson noise (the rate test of
// onsetCount, failed): from then on the onset bound no longer judges it on its count as it is,
// and a coordinator sends the young partition's account-only deltas at once
// (coordinator.Step.Urgent), since until they arrive each replica judges the partition on its
// own share of the operations. It is false for a counter past its first second or not in an
// onset (age ≥ 1 s or age < 0), and for a count of 9 or less, which Poisson noise explains at
// any rate.
func Outpaces(count, limit uint32, age time.Duration) bool {
	if age < 0 || age >= time.Second {
		return false
	}
	return !explained(float64(count), limit, age.Seconds())
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
// slot) began its onset: the difference of the stamps' low 16 bits (the birth's lowest bit
// cleared, so never negative within the birth's millisecond, and at most a millisecond long),
// exact for the 40 seconds at most that a counter keeps its birth.
func onsetAge(born uint16, local time.Time) int64 {
	return int64(uint16(local.UnixMilli()) - born&^1)
}
