package poll

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		calls := 0
		err := Until(context.Background(), time.Minute, "third call", func() error {
			calls++
			if calls < 3 {
				return fmt.Errorf("call %d", calls)
			}
			return nil
		})
		if err != nil || calls != 3 {
			t.Fatalf("Until = %v after %d calls, want nil after 3", err, calls)
		}
		if took := time.Since(start); took != 2*Interval {
			t.Errorf("Until took %v, want two intervals (%v)", took, 2*Interval)
		}
	})
}

func TestUntilTimesOutNamingWhatAndTheLastState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := 0
		err := Until(context.Background(), time.Second, "the answer", func() error { n++; return fmt.Errorf("saw %d", n) })
		if err == nil || !strings.Contains(err.Error(), "the answer: not reached within 1s") || !strings.Contains(err.Error(), fmt.Sprintf("saw %d", n)) {
			t.Fatalf("Until = %v, want the timeout naming what and the last state (saw %d)", err, n)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("Until gave up after %v, want 1s", took)
		}
	})
}

func TestUntilStopsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := Until(ctx, time.Hour, "never", Bool(func() bool { return false }))
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "never") {
			t.Fatalf("Until = %v, want the context's error naming what was awaited", err)
		}
	})
}

type fakeT struct {
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestMustFailsTheTestOnlyWhenNotReached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ok fakeT
		Must(&ok, time.Second, "true at once", Bool(func() bool { return true }))
		if ok.failed != "" {
			t.Errorf("Must failed a condition that held: %s", ok.failed)
		}
		var bad fakeT
		Must(&bad, time.Second, "never true", Bool(func() bool { return false }))
		if !strings.Contains(bad.failed, "never true: not reached within 1s") {
			t.Errorf("Must reported %q, want the timeout naming what was awaited", bad.failed)
		}
	})
}
