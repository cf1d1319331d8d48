package native

import (
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/frontend/admission"
	"github.com/kvnode/kvnode/internal/gopool"
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

// start runs job: at once, on a goroutine of pool (the server's, internal/gopool), when t
// holds a slot or there is no controller; left in the queue when t holds a place there, to run
// on the goroutine of the statement whose slot passes to it (admission.Waiter.Go). t is spent.
func (t *ticket) start(a *admission.Controller, pool *gopool.Pool, job admission.Job) {
	switch {
	case t.queued != nil:
		t.queued.Go(job)
	case t.slot:
		pool.Go(func() { a.Run(job) })
	default:
		pool.Go(func() { job(nil) })
	}
	*t = ticket{}
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
