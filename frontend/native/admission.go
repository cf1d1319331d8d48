package native

import (
	"context"

	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/internal/admission"
)

// isStatement reports whether op is a request that executes a statement, which the node's
// admission control bounds (QUERY, PREPARE, EXECUTE, BATCH). The others (OPTIONS, STARTUP,
// REGISTER, AUTH_RESPONSE) are answered by the reader itself, as is an early rate-limit
// rejection (admitExecute): they cost next to nothing and keep the node responsive.
func isStatement(op cqlwire.Opcode) bool {
	switch op {
	case cqlwire.OpQuery, cqlwire.OpPrepare, cqlwire.OpExecute, cqlwire.OpBatch:
		return true
	}
	return false
}

// ticket is one statement's standing with the admission controller: an execution slot, a place
// in its connection's queue, or (the zero ticket) neither, when there is no controller.
type ticket struct {
	slot   bool
	queued *admission.Waiter
}

// take takes a slot or a place in the queue of client (the connection: admission control
// shares the node fairly between connections), or returns the *admission.OverloadedError
// refusing the statement.
func (t *ticket) take(a *admission.Controller, client admission.Key) error {
	if a == nil {
		return nil
	}
	w, err := a.Try(client)
	t.slot, t.queued = w == nil && err == nil, w
	return err
}

// wait turns a place in the queue into a slot, or returns why it could not (the wait timed
// out, the connection closed).
func (t *ticket) wait(ctx context.Context) error {
	w := t.queued
	if w == nil {
		return nil
	}
	t.queued = nil
	if err := w.Wait(ctx); err != nil {
		return err
	}
	t.slot = true
	return nil
}

// drop gives back what t holds.
func (t *ticket) drop(a *admission.Controller) {
	switch {
	case t.slot:
		a.Release()
	case t.queued != nil:
		t.queued.Leave()
	}
	*t = ticket{}
}
