// Package gopool runs short functions on goroutines that outlive them, so that a stack grown
// by one request serves the next.
//
// A goroutine starts with a small stack (8 KiB, or the runtime's running average) and copies it
// to one twice the size each time a call needs more. A request's call chain through gRPC's
// transport, the coordinator and pebble's iterators needs tens of KiB, so a goroutine per
// request grows and copies its stack on every request: 9% of a node's CPU under a mixed QUORUM
// load (docs/performance.md). A worker of a Pool grows its stack once and then runs request
// after request on it, until it has waited IdleTimeout for work.
//
// A Pool holds no work: Go hands the function to a worker that is waiting for one, or starts a
// new goroutine for it, so it never delays or refuses a function, and it runs at most as many
// goroutines as the functions running at once (plus the idle ones, until their idle timeout).
// A function that panics ends the process, as it would on a goroutine of its own. Each owner
// (a coordinator's executor, a native-protocol server) has a pool of its own and closes it
// when it closes.
package gopool

import (
	"sync"
	"sync/atomic"
	"time"
)

// IdleTimeout is how long a worker waits for a function before it ends, when the pool's owner
// has no reason to choose otherwise.
const IdleTimeout = 10 * time.Second

// Pool runs functions on reused goroutines. The zero value is not usable; call New.
type Pool struct {
	work    chan func()
	quit    chan struct{}
	close   sync.Once
	idle    time.Duration
	workers atomic.Int64 // running a function or waiting for one
}

// New returns a pool whose workers end after waiting idle for work, or when it is closed.
func New(idle time.Duration) *Pool {
	return &Pool{work: make(chan func()), quit: make(chan struct{}), idle: idle}
}

// Go runs f on a waiting worker, or on a new goroutine that becomes one when f returns (that
// returns at once once the pool is closed).
func (p *Pool) Go(f func()) {
	if spawn.Load() {
		go f()
		return
	}
	select {
	case p.work <- f:
	default:
		p.workers.Add(1)
		go p.worker(f)
	}
}

// Close ends the workers that wait for work, and each other worker once its function returns.
// It does not wait for them. Go still runs functions after Close, each on a goroutine of its
// own. A pool's owner closes it when it closes: a worker must not outlive what made it, which
// may be a test's synctest bubble.
func (p *Pool) Close() { p.close.Do(func() { close(p.quit) }) }

// Workers returns the pool's goroutines: those running a function and those waiting for one.
func (p *Pool) Workers() int { return int(p.workers.Load()) }

// worker runs f, then the functions Go hands it, until it waits p.idle for one or the pool is
// closed.
func (p *Pool) worker(f func()) {
	defer p.workers.Add(-1)
	f()
	idle := time.NewTimer(p.idle)
	defer idle.Stop()
	for {
		select {
		case f := <-p.work:
			f()
			idle.Reset(p.idle)
		case <-idle.C:
			return
		case <-p.quit:
			return
		}
	}
}

// spawn is set while pools start a goroutine per function (SetReuse(false)).
var spawn atomic.Bool

// SetReuse sets whether every pool reuses goroutines (the default) or starts one per function,
// and Reusing reports it: benchmarks compare the two in one run. Servers built while it is off
// start a goroutine per request of their own as well (node's gRPC servers read it when built).
func SetReuse(on bool) { spawn.Store(!on) }

// Reusing reports whether pools reuse goroutines.
func Reusing() bool { return !spawn.Load() }
