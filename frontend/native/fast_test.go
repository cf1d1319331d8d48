package native

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/schema"
)

// admittingExecutor is a fakeExecutor with an early limiter decision (an Admitter).
type admittingExecutor struct {
	fakeExecutor
	mu    sync.Mutex
	keys  [][][]byte // the keys AdmitPrepared was asked about, copied
	cls   []coordinator.Consistency
	calls int // Execute calls
	admit func(p *coordinator.Prepared) error
}

func (a *admittingExecutor) AdmitPrepared(_ context.Context, p *coordinator.Prepared, cl coordinator.Consistency, key [][]byte) (AdmittedWrite, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := make([][]byte, len(key))
	for i, v := range key {
		k[i] = bytes.Clone(v)
	}
	a.keys, a.cls = append(a.keys, k), append(a.cls, cl)
	return nil, a.admit(p)
}

func (a *admittingExecutor) Execute(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
	a.mu.Lock()
	a.calls++
	a.mu.Unlock()
	return coordinator.Result{}, nil
}

// TestExecuteRejectedByTheEarlyDecision: the reader hands the executor the partition key's
// values, read in place in key order (here markers 2 then 0), and answers its rejection with the
// rate-limit error without running the statement; a write the executor does not decide early
// runs as usual, as does one whose prepared id is unknown (Unprepared).
func TestExecuteRejectedByTheEarlyDecision(t *testing.T) {
	var pass atomic.Bool
	exec := &admittingExecutor{admit: func(p *coordinator.Prepared) error {
		if pass.Load() {
			return nil
		}
		return &coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: schema.OpWrite, RejectedBy: coordinator.RejectedByCoordinator, Limit: 5, Count: 40, RetryAfter: time.Second}
	}}
	exec.prepare = func(_ context.Context, text, keyspace string) (*coordinator.Prepared, error) {
		return &coordinator.Prepared{ID: [16]byte{9}, Text: text, Keyspace: keyspace, PKIndexes: []int{2, 0},
			Variables: []coordinator.Variable{{Name: "k2", Type: schema.TypeText}, {Name: "v", Type: schema.TypeInt}, {Name: "k1", Type: schema.TypeText}}}, nil
	}
	_, addr := startServer(t, Config{Executor: exec})
	c := dial(t, addr)
	c.startup(map[string]string{rateLimitOption: ""})
	p, ok := c.roundTrip(&cqlwire.Prepare{Query: "INSERT INTO ks.t (k2, v, k1) VALUES (?, ?, ?)"}).(*cqlwire.PreparedResult)
	if !ok {
		t.Fatal("PREPARE did not answer a prepared result")
	}
	execute := &cqlwire.Execute{ID: p.ID, Params: cqlwire.QueryParams{Consistency: cqlwire.Quorum, Values: []cqlwire.Value{
		{Bytes: []byte("second")}, {Bytes: []byte("not an int")}, {Bytes: []byte("first")}}}}
	e, ok := c.roundTrip(execute).(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrRateLimit || e.RateLimitOp != cqlwire.RateLimitWrite || !e.RejectedByCoordinator ||
		!contains(e.Message, "rate limit exceeded for writes on ks.t (limit 5/s), rejected by coordinator") {
		t.Fatalf("EXECUTE to a rejected partition answered %#v, want the rate-limit error", e)
	}
	exec.mu.Lock()
	if exec.calls != 0 || len(exec.keys) != 1 || len(exec.keys[0]) != 2 || string(exec.keys[0][0]) != "first" || string(exec.keys[0][1]) != "second" || exec.cls[0] != coordinator.Quorum {
		t.Errorf("Execute ran %d times, AdmitPrepared saw keys %q at %v; want 0 runs and one key [first second] at QUORUM", exec.calls, exec.keys, exec.cls)
	}
	exec.mu.Unlock()

	pass.Store(true) // no early decision: the statement runs
	if m := c.roundTrip(execute); m.Opcode() != cqlwire.OpResult {
		t.Fatalf("EXECUTE without an early decision answered %#v, want a RESULT", m)
	}
	unknown := *execute
	unknown.ID = bytes.Repeat([]byte{7}, 16)
	if e, ok := c.roundTrip(&unknown).(*cqlwire.Error); !ok || e.Code != cqlwire.ErrUnprepared {
		t.Fatalf("EXECUTE of an unknown id answered %#v, want Unprepared", e)
	}
	exec.mu.Lock()
	defer exec.mu.Unlock()
	if exec.calls != 1 || len(exec.keys) != 2 {
		t.Errorf("Execute ran %d times and AdmitPrepared %d times, want 1 and 2", exec.calls, len(exec.keys))
	}
}
