package native

import (
	"runtime"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/frontend/admission"
	"github.com/kvnode/kvnode/internal/poll"
)

// TestAdmissionShedsStatements blocks the executor so that one statement holds the node's one
// execution slot and another waits in its one place in the queue: the next statement is
// answered Overloaded at once, OPTIONS still answers, and the two held statements complete once
// the executor is released.
func TestAdmissionShedsStatements(t *testing.T) {
	ctl, g, c, q := slotHeld(t, 1)
	c.send(2, q)
	poll.Must(t, timeout, "the second statement to queue", poll.Bool(func() bool { return ctl.Queued() == 1 }))

	c.send(3, q)
	f := c.recv()
	e, ok := f.Message.(*cqlwire.Error)
	if f.Header.Stream != 3 || !ok || e.Code != cqlwire.ErrOverloaded || !contains(e.Message, "retry after") {
		t.Fatalf("the third statement was answered %#v on stream %d, want Overloaded with a retry hint on stream 3", f.Message, f.Header.Stream)
	}
	c.send(4, cqlwire.Options{})
	if f := c.recv(); f.Header.Stream != 4 || f.Header.Opcode != cqlwire.OpSupported {
		t.Errorf("OPTIONS with the node full answered %v on stream %d, want SUPPORTED on stream 4", f.Header.Opcode, f.Header.Stream)
	}
	close(g.release)
	got := map[int16]cqlwire.Opcode{}
	for range 2 {
		f := c.recv()
		got[f.Header.Stream] = f.Header.Opcode
	}
	if got[1] != cqlwire.OpResult || got[2] != cqlwire.OpResult {
		t.Errorf("after the release the held statements were answered %v, want RESULTs on streams 1 and 2", got)
	}
	poll.Must(t, timeout, "the slot to be free", poll.Bool(func() bool { return ctl.InFlight() == 0 && ctl.Queued() == 0 }))
}

// TestOverloadedAnswerAllocatesNothing: the answer to a statement the admission controller
// refuses is made once and shared, so that shedding a flood allocates nothing per request.
func TestOverloadedAnswerAllocatesNothing(t *testing.T) {
	ctl, err := admission.New(admission.Options{MaxConcurrent: 1, MaxQueued: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Acquire(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	_, refused := ctl.Try("a")
	if refused == nil {
		t.Fatal("Try with the one slot taken and no queue admitted the request, want it refused")
	}
	s := &Server{}
	var m *cqlwire.Error
	allocs := testing.AllocsPerRun(100, func() { m = s.errorMessage(nil, refused, request{}) })
	if allocs != 0 {
		t.Errorf("answering a refused statement allocates %v times, want 0", allocs)
	}
	if m.Code != cqlwire.ErrOverloaded || m.Message != refused.Error() {
		t.Errorf("the answer to a refused statement is %#v, want Overloaded with the refusal's message %q", m, refused.Error())
	}
}

// TestQueuedStatementsHoldNoGoroutine: statements waiting for an execution slot wait as work
// in the admission queue, not as goroutines blocked there, and each runs once the statement
// before it frees its slot (on that statement's goroutine).
func TestQueuedStatementsHoldNoGoroutine(t *testing.T) {
	ctl, g, c, q := slotHeld(t, 64)
	before := runtime.NumGoroutine()
	const queued = 40
	for i := range queued {
		c.send(int16(2+i), q)
	}
	poll.Must(t, timeout, "the statements to queue", poll.Bool(func() bool { return ctl.Queued() == queued }))
	if grown := runtime.NumGoroutine() - before; grown >= queued/4 {
		t.Errorf("%d statements waiting in the queue added %d goroutines, want next to none", queued, grown)
	}
	close(g.release)
	answered := map[int16]bool{}
	for range queued + 1 {
		f := c.recv()
		if f.Header.Opcode != cqlwire.OpResult {
			t.Errorf("stream %d answered %v, want RESULT", f.Header.Stream, f.Header.Opcode)
		}
		answered[f.Header.Stream] = true
	}
	if len(answered) != queued+1 {
		t.Errorf("%d distinct streams answered, want %d", len(answered), queued+1)
	}
	poll.Must(t, timeout, "the slot to be free", poll.Bool(func() bool { return ctl.InFlight() == 0 && ctl.Queued() == 0 }))
}

// TestDisconnectRefusesQueuedStatements: a client that goes away while its statements wait
// for a slot has them taken out of the queue at once (not at the queue timeout, an hour here),
// and its connection is dropped.
func TestDisconnectRefusesQueuedStatements(t *testing.T) {
	ctl, err := admission.New(admission.Options{MaxConcurrent: 1, MaxQueued: 8, QueueTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	g := newGate()
	s, addr := startServer(t, Config{Executor: &fakeExecutor{execute: g.execute}, Admission: ctl})
	q := &cqlwire.Query{Query: "SELECT * FROM ks.t", Params: cqlwire.QueryParams{Consistency: cqlwire.One}}
	holder := dial(t, addr)
	holder.startup(nil)
	holder.send(1, q)
	<-g.arrived // holds the slot
	c := dial(t, addr)
	c.startup(nil)
	c.send(1, q)
	c.send(2, q)
	poll.Must(t, timeout, "the statements to queue", poll.Bool(func() bool { return ctl.Queued() == 2 }))
	c.nc.Close()
	poll.Must(t, timeout, "the closed connection's statements to leave the queue and the connection to be dropped",
		poll.Bool(func() bool { return ctl.Queued() == 0 && connCount(s) == 1 }))
	close(g.release)
	if f := holder.recv(); f.Header.Opcode != cqlwire.OpResult {
		t.Errorf("the statement holding the slot answered %v, want RESULT", f.Header.Opcode)
	}
	poll.Must(t, timeout, "the slot to be free", poll.Bool(func() bool { return ctl.InFlight() == 0 }))
}

// slotHeld starts a server with one execution slot and maxQueued places in its queue, whose
// executor holds every statement at a gate, and sends a query on stream 1 of a started
// connection: it returns once that statement holds the slot.
func slotHeld(t *testing.T, maxQueued int) (*admission.Controller, *gate, *testClient, *cqlwire.Query) {
	t.Helper()
	ctl, err := admission.New(admission.Options{MaxConcurrent: 1, MaxQueued: maxQueued, QueueTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	g := newGate()
	_, addr := startServer(t, Config{Executor: &fakeExecutor{execute: g.execute}, Admission: ctl})
	c := dial(t, addr)
	c.startup(nil)
	q := &cqlwire.Query{Query: "SELECT * FROM ks.t", Params: cqlwire.QueryParams{Consistency: cqlwire.One}}
	c.send(1, q)
	<-g.arrived // holds the slot
	return ctl, g, c, q
}
