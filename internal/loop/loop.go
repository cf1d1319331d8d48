// Package loop runs a node's background work: one goroutine that does a round of work, waits for
// a period, a wake-up or the end, and does the next, until it is stopped.
//
// Every background loop of a node (hint replay, batchlog replay, tombstone purge, schema
// tombstone collection, TLS reloads, the authentication setup) is a Loop, so that each is started,
// woken and stopped the same way, and Stop always waits for the round in progress to end.
//
// It imports nothing of kvnode.
package loop

import (
	"context"
	"time"
)

// Done, returned by a round, ends the loop.
const Done time.Duration = -1

// Options says when a Loop runs its rounds. The zero value runs one round at once and then only
// when woken.
type Options struct {
	// Every is the longest wait between the end of one round and the start of the next, unless the
	// round asks for a shorter one. Zero means no period: the next round waits for a wake-up, or
	// for the wait the round returned.
	Every time.Duration
	// Delay, when true, waits one period (Every) before the first round instead of running it
	// at once.
	Delay bool
	// Wake returns channels that start the next round early when they fire or are closed. Each
	// function is called again just before every round, so it may return the channel of the
	// next event (as cluster.Cluster.Changed does): an event during the round then wakes the
	// next one. At most MaxWake.
	Wake []func() <-chan struct{}
}

// MaxWake is how many Wake functions a Loop takes.
const MaxWake = 3

// Round is one pass of the work. ctx ends when the loop is stopped: a round in progress should
// return soon after. It returns how long to wait before the next round at most: 0 leaves it to
// Options.Every, a positive wait shorter than Every overrides it, and Done ends the loop.
type Round func(ctx context.Context) time.Duration

// Loop is a running background loop. Its owner stops it with Stop.
type Loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Start starts a loop running round as opts say. It panics when opts has more than MaxWake Wake
// functions or a negative Every: both are programming errors.
func Start(opts Options, round Round) *Loop {
	if len(opts.Wake) > MaxWake {
		panic("loop: more than MaxWake wake functions")
	}
	if opts.Every < 0 {
		panic("loop: negative Every")
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{cancel: cancel, done: make(chan struct{})}
	go l.run(ctx, opts, round)
	return l
}

func (l *Loop) run(ctx context.Context, opts Options, round Round) {
	defer close(l.done)
	var wake [MaxWake]<-chan struct{}
	arm := func() {
		for i, f := range opts.Wake {
			wake[i] = f()
		}
	}
	arm()
	next := time.Duration(0)
	if !opts.Delay {
		if next = round(ctx); next == Done {
			return
		}
	}
	for ctx.Err() == nil {
		wait := opts.Every
		if next > 0 && (wait == 0 || next < wait) {
			wait = next
		}
		var timer *time.Timer
		var fired <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			fired = timer.C
		}
		select {
		case <-ctx.Done():
		case <-fired:
		case <-wake[0]:
		case <-wake[1]:
		case <-wake[2]:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		arm()
		if next = round(ctx); next == Done {
			return
		}
	}
}

// Stop ends the loop: it cancels the round in progress, if any, and waits for it to return. It
// may be called more than once, and on a nil Loop.
func (l *Loop) Stop() {
	if l == nil {
		return
	}
	l.cancel()
	<-l.done
}

// Sleep waits d, or until ctx ends, whichever comes first; it returns ctx's error when ctx
// ended the wait. It is the one timed wait of a request or a round that must end with its
// context (a backoff, a pacing delay, a grace period).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
