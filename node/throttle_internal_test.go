package node

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"
)

// TestStreamThrottle: the node's streams and repair's writes take their bytes from one budget of
// stream_throughput bytes per second, in full even when a chunk is larger than the limiter's
// burst, so that together they send no faster than that. On synctest's clock, 2,500 bytes at
// 1,000 bytes per second with a burst of 1,000 take 1.5 s after the first burst; a repair's
// writes and a stream at once take as long as their sum.
func TestStreamThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := &topology{limiter: rate.NewLimiter(1000, 1000)}
		ctx := context.Background()
		start := time.Now()
		if err := tp.throttle(ctx, 2500); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got < 1500*time.Millisecond || got > 1600*time.Millisecond {
			t.Errorf("2,500 bytes at 1,000 bytes/s (burst 1,000) were let through after %v, want 1.5 s", got)
		}

		// Two senders at once (a stream and a repair) share the budget.
		start = time.Now()
		done := make(chan error, 2)
		for range 2 {
			go func() { done <- tp.throttle(ctx, 1000) }()
		}
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if got := time.Since(start); got < 2*time.Second {
			t.Errorf("two senders of 1,000 bytes each at 1,000 bytes/s, the budget spent, finished after %v, want 2 s", got)
		}

		// A canceled sender stops waiting.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := tp.throttle(cctx, 5000); err == nil {
			t.Error("throttle with a canceled context returned nil, want its error")
		}
	})
}
