package internode

import (
	"context"
	"sync"
	"time"
)

// handlerCtx is the context of a pipe request's handler: it ends at the request's deadline,
// when the caller cancels the request (cancel), or when the pipe's context, its parent, ends.
// It costs a timer and a place among its parent's children only once something asks for its
// Done channel, its values or a function to run at its end: until then Err compares the clock
// with the deadline. A replica's write only asks Err, so its request costs neither (a
// context.WithTimeout per request did: a timer set and stopped, and the parent's lock twice).
//
// Once asked, it is a context.WithDeadline of its parent (real), and everything goes to that:
// Done, Err, Value (context.Cause finds real's cause through it), AfterFunc (context.AfterFunc
// and the contexts derived from it use it instead of a goroutine each).
type handlerCtx struct {
	parent   context.Context
	deadline time.Time // zero: none

	mu         sync.Mutex
	err        error              // why it ended, while real is nil
	real       context.Context    // made by the first Done, Value or AfterFunc
	cancelReal context.CancelFunc // real's
}

// newHandlerCtx returns the context of a request that may run until deadline (zero: none) or
// until parent ends.
func newHandlerCtx(parent context.Context, deadline time.Time) *handlerCtx {
	return &handlerCtx{parent: parent, deadline: deadline}
}

// Deadline returns the request's deadline.
func (c *handlerCtx) Deadline() (time.Time, bool) {
	return c.deadline, !c.deadline.IsZero()
}

// Err returns why c ended, nil while it has not.
func (c *handlerCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.real != nil {
		return c.real.Err()
	}
	if c.err == nil {
		if err := c.parent.Err(); err != nil {
			c.err = err
		} else if !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
			c.err = context.DeadlineExceeded
		}
	}
	return c.err
}

// Done returns a channel closed once c ends.
func (c *handlerCtx) Done() <-chan struct{} { return c.materialize().Done() }

// Value returns the parent's value for key.
func (c *handlerCtx) Value(key any) any { return c.materialize().Value(key) }

// AfterFunc runs f on its own goroutine once c ends, as context.AfterFunc does; the function
// it returns stops that.
func (c *handlerCtx) AfterFunc(f func()) func() bool { return context.AfterFunc(c.materialize(), f) }

// cancel ends c with context.Canceled, unless it ended already.
func (c *handlerCtx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.real != nil {
		c.cancelReal()
	} else if c.err == nil {
		c.err = context.Canceled
	}
}

// release frees what c holds once its handler returned: real's timer and its place among the
// parent's children.
func (c *handlerCtx) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.real != nil {
		c.cancelReal()
	}
}

// materialize returns real, making it, ended as c is, the first time.
func (c *handlerCtx) materialize() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.real == nil {
		if c.deadline.IsZero() {
			c.real, c.cancelReal = context.WithCancel(c.parent)
		} else {
			c.real, c.cancelReal = context.WithDeadline(c.parent, c.deadline)
		}
		if c.err == context.Canceled && c.parent.Err() == nil {
			c.cancelReal()
		}
	}
	return c.real
}
