package model

import (
	"fmt"
	"time"
)

// Counters are checked by bounds, not by a reference value: an increment whose outcome is
// unknown (a timeout, a failure) may or may not have been applied, and a counter has no
// timestamps to order versions by. With non-negative increments, writes and reads at levels
// with R + W > RF, a read of a counter lies between the sum of the increments acknowledged
// before it started and the sum of all increments started before it ended.

// CounterInc is one increment of a counter: when it started and ended, by how much, and
// whether it was acknowledged.
type CounterInc struct {
	Start, End time.Time
	By         int64
	Acked      bool
}

// CounterRead is one read of a counter: when it started and ended, and what it returned.
type CounterRead struct {
	Start, End time.Time
	Value      int64
}

// CheckCounterRead reports why r cannot be a read of a counter incremented by incs (all of
// them, in any order), or nil: its value must be at least the sum of the increments
// acknowledged before r started and at most the sum of those started before r ended.
func CheckCounterRead(incs []CounterInc, r CounterRead) error {
	var lo, hi int64
	for _, inc := range incs {
		if inc.By < 0 {
			return fmt.Errorf("increment by %d: the bounds need non-negative increments", inc.By)
		}
		if inc.Acked && inc.End.Before(r.Start) {
			lo += inc.By
		}
		if inc.Start.Before(r.End) {
			hi += inc.By
		}
	}
	if r.Value < lo || r.Value > hi {
		return fmt.Errorf("counter read %d, outside [%d, %d]: the increments acknowledged before the read started sum to %d, those started before it ended to %d", r.Value, lo, hi, lo, hi)
	}
	return nil
}
