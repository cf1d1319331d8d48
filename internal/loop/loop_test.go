package loop_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvnode/kvnode/internal/loop"
)

func TestRoundsFollowThePeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		l := loop.Start(loop.Options{Every: time.Second}, func(context.Context) time.Duration {
			at = append(at, time.Since(start))
			return 0
		})
		time.Sleep(3500 * time.Millisecond)
		l.Stop()
		want := []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second}
		if len(at) != len(want) {
			t.Fatalf("rounds ran at %v, want %v", at, want)
		}
		for i := range want {
			if at[i] != want[i] {
				t.Fatalf("rounds ran at %v, want %v", at, want)
			}
		}
	})
}

func TestDelayWaitsAPeriodFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rounds atomic.Int32
		l := loop.Start(loop.Options{Every: time.Second, Delay: true}, func(context.Context) time.Duration {
			rounds.Add(1)
			return 0
		})
		time.Sleep(999 * time.Millisecond)
		if n := rounds.Load(); n != 0 {
			t.Fatalf("%d rounds before the first period ended, want 0", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := rounds.Load(); n != 1 {
			t.Fatalf("%d rounds after one period, want 1", n)
		}
		l.Stop()
	})
}

func TestAShorterWaitFromTheRoundWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		l := loop.Start(loop.Options{Every: time.Hour}, func(context.Context) time.Duration {
			at = append(at, time.Since(start))
			return 10 * time.Second
		})
		time.Sleep(25 * time.Second)
		l.Stop()
		if len(at) != 3 || at[1] != 10*time.Second || at[2] != 20*time.Second {
			t.Fatalf("rounds ran at %v, want [0s 10s 20s]", at)
		}
	})
}

func TestWithoutAPeriodOnlyAWakeRunsARound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wake := make(chan struct{}, 1)
		var rounds atomic.Int32
		l := loop.Start(loop.Options{Wake: []func() <-chan struct{}{func() <-chan struct{} { return wake }}},
			func(context.Context) time.Duration {
				rounds.Add(1)
				return 0
			})
		time.Sleep(time.Hour)
		if n := rounds.Load(); n != 1 {
			t.Fatalf("%d rounds after an hour without a wake, want 1 (the first)", n)
		}
		wake <- struct{}{}
		synctest.Wait()
		if n := rounds.Load(); n != 2 {
			t.Fatalf("%d rounds after one wake, want 2", n)
		}
		l.Stop()
	})
}

func TestDoneEndsTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rounds atomic.Int32
		l := loop.Start(loop.Options{Every: time.Second}, func(context.Context) time.Duration {
			if rounds.Add(1) == 3 {
				return loop.Done
			}
			return 0
		})
		time.Sleep(time.Minute)
		if n := rounds.Load(); n != 3 {
			t.Fatalf("%d rounds, want 3 (the third returned Done)", n)
		}
		l.Stop()
		l.Stop() // a second Stop returns at once
	})
}

func TestStopCancelsTheRoundInProgressAndWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ended atomic.Bool
		l := loop.Start(loop.Options{Every: time.Second}, func(ctx context.Context) time.Duration {
			<-ctx.Done()
			ended.Store(true)
			return 0
		})
		l.Stop()
		if !ended.Load() {
			t.Fatal("Stop returned before the round in progress ended")
		}
	})
}

func TestStopOnNilDoesNothing(t *testing.T) {
	var l *loop.Loop
	l.Stop()
}

func TestAWakeDuringARoundRunsTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wake := make(chan struct{})
		var rounds atomic.Int32
		current := func() <-chan struct{} { return wake }
		l := loop.Start(loop.Options{Wake: []func() <-chan struct{}{current}}, func(context.Context) time.Duration {
			if rounds.Add(1) == 1 {
				// The event the round does not see: it closes the channel taken before the
				// round, and a fresh one stands for the next event.
				close(wake)
				wake = make(chan struct{})
			}
			return 0
		})
		synctest.Wait()
		if n := rounds.Load(); n != 2 {
			t.Fatalf("%d rounds after an event during the first, want 2", n)
		}
		l.Stop()
	})
}
