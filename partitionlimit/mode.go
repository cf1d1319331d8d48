package partitionlimit

import (
	"fmt"
	"time"
)

// Mode is a coordinator's instruction to a replica about its counter for one operation.
type Mode uint8

// The modes.
const (
	// ModeNone: neither count nor reject. Exempt and unlimited operations, and the coordinator's
	// own apply after its local check already counted the operation.
	ModeNone Mode = iota
	// ModeAccountOnly: count the operation, never reject it. The coordinator, itself a replica,
	// has already decided to admit.
	ModeAccountOnly
	// ModeAccountAndEnforce: count the operation, then admit or reject it on the replica's own
	// counter with the coordinator's draw.
	ModeAccountAndEnforce
)

// String returns "none", "account-only" or "account-and-enforce".
func (m Mode) String() string {
	switch m {
	case ModeNone:
		return "none"
	case ModeAccountOnly:
		return "account-only"
	case ModeAccountAndEnforce:
		return "account-and-enforce"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// InstructionError is Apply's error: an instruction that makes no sense, an unknown mode or
// a draw outside [0, 1) for ModeAccountAndEnforce.
type InstructionError struct {
	Mode Mode
	Draw float64
}

// Error reads "unknown limiter mode 7" or "limiter draw 1 is outside [0, 1)".
func (e *InstructionError) Error() string {
	if e.Mode == ModeAccountAndEnforce {
		return fmt.Sprintf("limiter draw %v is outside [0, 1)", e.Draw)
	}
	return fmt.Sprintf("unknown limiter mode %d", uint8(e.Mode))
}

// Apply carries out one operation's limiter instruction on the table: the replica's whole
// admission decision. ModeNone, and any mode when limit is 0 (the table has no limit for the
// op), admit without counting. ModeAccountOnly counts and admits, reporting the count.
// ModeAccountAndEnforce is Decide with limit and draw; a draw outside [0, 1) (or NaN) is an
// *InstructionError, whatever the limit, as is an unknown mode.
//
// label is only read when the operation is counted, so a caller whose table has no limit for
// the op may pass 0 rather than assign the pair a label; a counted operation's label above
// MaxLabel is an error. Apply is ApplyAt with now as the
// node's own clock.
func (t *Table) Apply(mode Mode, token int64, label uint32, limit uint32, draw float64, now time.Time) (Decision, error) {
	return t.ApplyAt(mode, token, label, limit, draw, now, now)
}

// ApplyAt is Apply for a replica that accounts at a coordinator's stamp (now, bounded by
// Stamp) rather than at its own clock, local (see DecideAt): replica.Service's decision.
func (t *Table) ApplyAt(mode Mode, token int64, label uint32, limit uint32, draw float64, now, local time.Time) (Decision, error) {
	switch mode {
	case ModeNone:
		return Decision{Admitted: true}, nil
	case ModeAccountOnly:
		if limit == 0 {
			return Decision{Admitted: true}, nil
		}
		if label > MaxLabel {
			return Decision{}, labelError(label)
		}
		return Decision{Admitted: true, Count: t.AccountNAt(token, label, 1, limit, now, local), Limit: limit}, nil
	case ModeAccountAndEnforce:
		if !(draw >= 0 && draw < 1) { // also rejects NaN
			return Decision{}, &InstructionError{Mode: mode, Draw: draw}
		}
		if limit == 0 {
			return Decision{Admitted: true}, nil
		}
		if label > MaxLabel {
			return Decision{}, labelError(label)
		}
		return t.DecideAt(token, label, limit, draw, now, local), nil
	}
	return Decision{}, &InstructionError{Mode: mode}
}

// labelError is Apply's error for a label above MaxLabel.
func labelError(label uint32) error {
	return fmt.Errorf("partitionlimit: label %d is above MaxLabel (%d)", label, MaxLabel)
}
