package partitionlimit

import "time"

// DefaultMaxStampSkew is how far a coordinator's stamp may be from a replica's own clock before
// the replica clamps it (see Stamp): twice the ±500 ms that NTP-less clusters are seen to drift,
// and well inside the 10 seconds that decay tells an out-of-order caller from a stepped clock.
const DefaultMaxStampSkew = 2 * time.Second

// Stamp returns the time a replica accounts a coordinator's operation at: the coordinator's
// stamp, bounded to [local − maxSkew, local + maxSkew], where local is the replica's own clock.
// clamped reports that the stamp was outside that window (the coordinator's clock, or the
// replica's, is off by more than maxSkew): the replica then accounts at the window's edge, so
// one node with a wild clock can move a counter's halving by at most maxSkew, never freeze a
// counter (a stamp far in the past) or empty it (a stamp far in the future).
//
// A zero stamp means the operation carries none (an older coordinator, or the ScyllaDB-style
// baseline that decides on replica clocks): Stamp returns local, not clamped.
//
// Why replicas then agree: every replica that counts an operation accounts it at the same
// stamp, so two replicas that saw the same operations with the same stamps hold the same
// counters whatever their own clocks say, as long as those clocks are within maxSkew of the
// coordinators'. See "Deciding on the coordinator's clock" in the package documentation.
func Stamp(stamp, local time.Time, maxSkew time.Duration) (at time.Time, clamped bool) {
	if stamp.IsZero() {
		return local, false
	}
	if lo := local.Add(-maxSkew); stamp.Before(lo) {
		return lo, true
	}
	if hi := local.Add(maxSkew); stamp.After(hi) {
		return hi, true
	}
	return stamp, false
}
