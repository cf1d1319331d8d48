package partitionlimit

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestApply checks each mode of the replica's admission decision: what is counted, what is
// admitted, and what is refused as a bad instruction.
func TestApply(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	const token, label = 42, 7
	t.Run("none counts nothing", func(t *testing.T) {
		tb := newTable(t, Options{})
		d, err := tb.Apply(ModeNone, token, label, 1, 0.99, now)
		if err != nil || d != (Decision{Admitted: true}) {
			t.Fatalf("Apply(ModeNone) = %+v, %v; want an admission without a count", d, err)
		}
		if c := tb.Peek(token, label, now); c != 0 {
			t.Errorf("ModeNone counted: the counter reads %d", c)
		}
	})
	t.Run("account-only counts and admits", func(t *testing.T) {
		tb := newTable(t, Options{})
		for i := uint32(1); i <= 5; i++ {
			d, err := tb.Apply(ModeAccountOnly, token, label, 1, 0.99, now)
			if err != nil || d != (Decision{Admitted: true, Count: i, Limit: 1}) {
				t.Fatalf("Apply(ModeAccountOnly) #%d = %+v, %v; want admitted with count %d", i, d, err, i)
			}
		}
	})
	t.Run("account-and-enforce decides", func(t *testing.T) {
		tb := newTable(t, Options{})
		ref := newTable(t, Options{})
		for i := 0; i < 10; i++ {
			d, err := tb.Apply(ModeAccountAndEnforce, token, label, 1, 0.9, now)
			want := ref.Decide(token, label, 1, 0.9, now)
			if err != nil || d != want {
				t.Fatalf("Apply(ModeAccountAndEnforce) #%d = %+v, %v; want Decide's %+v", i, d, err, want)
			}
		}
		if d, _ := tb.Apply(ModeAccountAndEnforce, token, label, 1, 0.9, now); d.Admitted || d.RetryAfter == 0 {
			t.Errorf("the 11th operation at limit 1 with draw 0.9 = %+v, want a rejection with a retry hint", d)
		}
	})
	t.Run("no limit counts nothing", func(t *testing.T) {
		tb := newTable(t, Options{})
		for _, m := range []Mode{ModeAccountOnly, ModeAccountAndEnforce} {
			d, err := tb.Apply(m, token, label, 0, 0.5, now)
			if err != nil || d != (Decision{Admitted: true}) {
				t.Errorf("Apply(%v) with limit 0 = %+v, %v; want an admission without a count", m, d, err)
			}
		}
		if c := tb.Peek(token, label, now); c != 0 {
			t.Errorf("an unlimited operation was counted: the counter reads %d", c)
		}
	})
	t.Run("bad instructions", func(t *testing.T) {
		tb := newTable(t, Options{})
		for _, c := range []struct {
			mode  Mode
			limit uint32
			draw  float64
			want  string
		}{
			{ModeAccountAndEnforce, 1, 1, "limiter draw 1 is outside [0, 1)"},
			{ModeAccountAndEnforce, 0, -0.5, "limiter draw -0.5 is outside [0, 1)"}, // even without a limit
			{ModeAccountAndEnforce, 1, math.NaN(), "limiter draw NaN is outside [0, 1)"},
			{Mode(7), 1, 0.5, "unknown limiter mode 7"},
		} {
			_, err := tb.Apply(c.mode, token, label, c.limit, c.draw, now)
			var ie *InstructionError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Apply(%v, limit %d, draw %v) = %v, want an *InstructionError saying %q", c.mode, c.limit, c.draw, err, c.want)
			}
		}
		if n := tb.Peek(token, label, now); n != 0 {
			t.Errorf("a bad instruction was counted: the counter reads %d", n)
		}
	})
}

func TestModeString(t *testing.T) {
	for m, want := range map[Mode]string{ModeNone: "none", ModeAccountOnly: "account-only", ModeAccountAndEnforce: "account-and-enforce", Mode(9): "Mode(9)"} {
		if got := m.String(); got != want {
			t.Errorf("Mode(%d).String() = %q, want %q", uint8(m), got, want)
		}
	}
}
