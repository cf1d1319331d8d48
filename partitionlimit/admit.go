package partitionlimit

import (
	"math"
	"math/bits"
	"time"
)

// Admit reports whether an operation is admitted, given the partition's counter after the
// operation was accounted (count), the limit in operations per second (limit), and the
// operation's random draw in [0, 1) (draw). It admits when count ≤ 2·limit, and otherwise
// exactly when draw·count·ln2 < limit, that is with probability limit / (count · ln 2).
// The package documentation derives why this holds a partition to about limit per second.
//
// Admit is a pure function: replicas given the same count, limit and draw decide alike.
// A limit of 0 admits nothing (callers whose table has no limit do not call Admit). A limit
// of 2^31 or more admits everything, since 2·limit exceeds every count. A draw outside [0, 1)
// has no meaning: below 0 it admits, NaN rejects.
func Admit(count, limit uint32, draw float64) bool {
	if uint64(count) <= 2*uint64(limit) {
		return true
	}
	return draw*float64(count)*math.Ln2 < float64(limit)
}

// noiseSlack is how many standard deviations of Poisson noise steadyExplained allows a count
// above what a steady rate of the limit leaves at a phase of the second: a partition offered
// the limit exceeds it with a probability of about 10^-3 at a given moment, one offered 0.9·L
// needs more than 5 standard deviations of its own count.
const noiseSlack = 3

// noiseMinLimit is the smallest limit steadyExplained applies to. Its bound must stay clear of
// a partition offered 2·limit: at a phase u that one holds 2L·(1+u) with a standard deviation
// of √(2L·(1/3+u)), L·(1+u) − 3·√(L·(1/3+u)) above the bound, which is three of those standard
// deviations at u = 0 from L ≈ 18 on. Under it the noise of a count is too large against the
// limit to tell a partition under it from one at twice it, and the rule alone decides.
const noiseMinLimit = 20

// steadyExplained reports whether a count x above 2·limit, judged at now, is explained by a
// steady rate of at most limit plus Poisson noise: x ≤ L·(1+u) + noiseSlack·√(L·(1/3+u)), u
// now's fraction of a second. A counter offered a steady rate V holds V·(1+u) on average at
// phase u (it starts each second at V and gains V over it), with a variance of V·(1/3+u)
// (V·u from this second's arrivals, V/3 from a quarter of the stationary variance 4V/3 it
// carried over). Above 2L the rule rejects some operations; a count there that a rate of at
// most L explains is the noise of a partition under its limit, near the end of a second, and
// is admitted as the rule admits a count at or below 2L. At V ≥ 2·limit the count is V·(1+u),
// (V−L)·(1+u) ≥ L above the bound's centre, and the bound admits nothing the rule would not.
func steadyExplained(x, limit uint32, now time.Time) bool {
	if uint64(x) <= 2*uint64(limit) {
		return true
	}
	if limit < noiseMinLimit || uint64(x) > 4*uint64(limit) {
		// (The bound is at most 2L + 3·√(4L/3) < 4L: a hot partition's count, far above it,
		// is told apart with one comparison.)
		return false
	}
	l := float64(limit)
	u := float64(now.Nanosecond()) / 1e9
	return float64(x) <= l*(1+u)+noiseSlack*math.Sqrt(l*(1.0/3+u))
}

// RetryAfter returns how long after now a counter at count (at now) takes to decay back to
// 2·limit or below if no further operation arrives: zero when count ≤ 2·limit already, else
// the time to the k-th next second boundary, where k is the smallest number of halvings with
// count >> k ≤ 2·limit. That is about log2(count / 2·limit) seconds, rounded up to a second
// boundary. The partition then admits every operation until its counter climbs above
// 2·limit again.
func RetryAfter(count, limit uint32, now time.Time) time.Duration {
	// count >> k ≤ 2L  ⇔  count < (2L+1)·2^k  ⇔  count/(2L+1) < 2^k (integer division),
	// whose smallest solution is the bit length of count/(2L+1).
	m := 2*uint64(limit) + 1
	if uint64(count) < m {
		return 0
	}
	k := bits.Len64(uint64(count) / m)
	return time.Duration(k)*time.Second - time.Duration(now.Nanosecond())
}

// Decision is the outcome of Table.Decide for one operation.
type Decision struct {
	// Admitted reports whether the operation may proceed.
	Admitted bool
	// Count is the partition's counter after the operation was accounted.
	Count uint32
	// Limit is the limit the decision applied, in operations per second.
	Limit uint32
	// RetryAfter is RetryAfter(Count, Limit, now) for a rejected operation and zero for an
	// admitted one: how long until the counter, if nothing else arrives, is back at 2·Limit
	// or below, where every operation is admitted.
	RetryAfter time.Duration
	// Born is when the counter's onset began (to the millisecond) while it is in its onset,
	// and the zero time once it is older or when the table has no onset bound. A coordinator
	// that is not a replica of the partition learns the counter from a replica's rejection,
	// Count, Born and Residual together (Table.Learn), so that its own Decide applies the
	// replica's rule, onset bound included.
	Born time.Time
	// Residual is the part of Count the counter held when its onset began (decayed with it):
	// 0 for a counter that started from zero, the leftover of an earlier burst for a
	// partition that turned hot again. The onset bound judges Count − Residual.
	Residual uint32
	// WouldReject is set, with Admitted, by a caller whose table runs its limit in shadow mode
	// (schema.Shadow: replica.Service) when Decide rejected the operation: the operation was
	// counted and decided exactly as it would be, and admitted anyway. Decide never sets it.
	WouldReject bool
}

// Decide accounts one operation on (token, label) at now and applies Admit with limit and
// draw to the resulting count, or, while the counter is in its onset (its first
// onsetHorizon), to the count a counter that had always seen the same rate would hold (see
// "The onset" in the package documentation). The operation is counted whether or not it is
// admitted: the counter measures offered load. Decision.Count is the counter itself; a
// rejection in the onset with a counter still at or below 2·limit has the next second
// boundary as its RetryAfter. Decide is DecideAt with now as the node's own clock.
func (t *Table) Decide(token int64, label uint32, limit uint32, draw float64, now time.Time) Decision {
	return t.DecideAt(token, label, limit, draw, now, now)
}

// DecideAt is Decide for a node that accounts at a coordinator's stamp (now, bounded by Stamp)
// rather than at its own clock, local: the stamp decides the counter's second boundaries and
// the onset bound's phase, local the counter's age (see AccountNAt). Decision.Born is the
// birth on the clock of now.
func (t *Table) DecideAt(token int64, label uint32, limit uint32, draw float64, now, local time.Time) Decision {
	label &= MaxLabel
	h := hash(token, label)
	s := &t.shards[h>>t.shift]
	sec, nowMs, ms := second(now), now.UnixMilli(), t.milli(local)
	s.mu.Lock()
	c, born, resid, passed, behind := s.account(h, token, label, 1, sec, nowMs, ms, t.rebirth(limit))
	s.mu.Unlock()
	d := Decision{Count: c, Limit: limit}
	x := c
	if born != 0 {
		age := onsetAge(born, local)
		// The residual never exceeds the count (both halve alike); min keeps a broken
		// invariant from wrapping fresh around to a count of billions.
		if fresh := c - min(resid, c); fresh > limit {
			x = max(c, onsetCount(fresh, age, limit, nowMs, boundaries(passed, age)))
		}
		d.Born, d.Residual = time.UnixMilli(nowMs-age), resid
	}
	// A stamp behind the counter's second (from a clock behind the one that halved it) has no
	// phase of the counter's second: the rule alone decides.
	d.Admitted = Admit(x, limit, draw) || t.noise && !behind && steadyExplained(x, limit, now)
	if !d.Admitted {
		d.RetryAfter = RetryAfter(max(c, 2*limit+1), limit, now)
	}
	return d
}
