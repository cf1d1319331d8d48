package poll

import (
	"context"
	"fmt"
	"time"
)

// Interval is how often a condition is checked.
const Interval = 10 * time.Millisecond

// Until checks cond every Interval until it returns nil, and then returns nil. cond's error says
// why the condition does not hold yet. If timeout passes first, Until returns an error naming
// what and cond's last error; if ctx ends first, ctx's error (wrapped, naming what).
func Until(ctx context.Context, timeout time.Duration, what string, cond func() error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		last := cond()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %v)", what, ctx.Err(), last)
		case <-deadline.C:
			return fmt.Errorf("%s: not reached within %v (last: %v)", what, timeout, last)
		case <-tick.C:
		}
	}
}

// errNotYet is what Bool's conditions report while they do not hold.
var errNotYet = fmt.Errorf("condition false")

// Bool adapts a condition that has no more to say than whether it holds.
func Bool(cond func() bool) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}
}

// T is the part of testing.TB that Must uses.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Must is Until for tests: it fails t (Fatalf, so call it from the test's goroutine) when the
// condition is not reached within timeout.
func Must(t T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := Until(context.Background(), timeout, what, cond); err != nil {
		t.Fatalf("%v", err)
	}
}
