// Package loginguardtest holds the test helpers of package loginguard: a manual clock, whose
// time moves only when a test advances it, so that tests of delayed logins never sleep.
package loginguardtest

import (
	"context"
	"sync"
	"time"
)

// Clock is a loginguard.Clock whose time moves only by Advance. Sleep blocks until the clock
// has been advanced past its end (or its context ends); Sleepers tells a test how many wait.
type Clock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers map[*sleeper]struct{}
	slept    []time.Duration
}

type sleeper struct {
	until time.Time
	wake  chan struct{}
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, sleepers: map[*sleeper]struct{}{}}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep returns once the clock has been advanced by d, or with ctx's error when ctx ends first.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.slept = append(c.slept, d)
	if d <= 0 {
		c.mu.Unlock()
		return nil
	}
	s := &sleeper{until: c.now.Add(d), wake: make(chan struct{})}
	c.sleepers[s] = struct{}{}
	c.mu.Unlock()
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.sleepers, s)
		c.mu.Unlock()
		return ctx.Err()
	}
}

// Advance moves the clock d forward, waking the sleepers whose time has come.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for s := range c.sleepers {
		if !c.now.Before(s.until) {
			delete(c.sleepers, s)
			close(s.wake)
		}
	}
}

// Sleepers returns how many Sleep calls are waiting.
func (c *Clock) Sleepers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleepers)
}

// Slept returns the durations Sleep was called with, in order.
func (c *Clock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}
