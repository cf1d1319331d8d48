package shell_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// asyncTransport is the cluster's transport as node from, starting mutations to the other nodes
// as a pipe does (shell.AsyncMutator): the answer comes to done on a goroutine that is not the
// executor's. Its goroutine ends when the call returns, which a hanging call does when its
// context ends.
type asyncTransport struct {
	*transport
	from    coordinator.NodeID
	started *atomic.Int64
}

func (a asyncTransport) MutateAsync(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest, done func(*replicapb.MutateResponse, error)) bool {
	if to == a.from {
		return false // the local node: called by Mutate
	}
	a.started.Add(1)
	go func() { done(a.Mutate(ctx, to, req)) }()
	return true
}

// transportFor returns the transport of node id's executor: asynchronous or not.
func (c *cluster) transportFor(id coordinator.NodeID, async bool) shell.Transport {
	if !async {
		return c.transport
	}
	return asyncTransport{transport: c.transport, from: id, started: &c.asyncStarted}
}

// TestAsyncMutations runs writes over a transport that starts remote mutations without a
// goroutine of the executor's waiting: they reach every replica, a replica that fails or is
// down gets a hint, replicas that never answer make the write time out at its deadline, and
// Close ends the write with the calls still waiting.
func TestAsyncMutations(t *testing.T) {
	rec := &hintRecorder{}
	c := newCluster(t, options{hints: rec, async: true, writeTimeout: 500 * time.Millisecond})
	c.must(schemaRF3...)
	rec.reset()

	if _, err := c.exec("n1", one, "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	for _, n := range nodes {
		if got := c.localRows(n, "SELECT c, v FROM t WHERE k = 'a'"); !slices.Equal(got, []string{"1 'x'"}) {
			t.Errorf("after a write at ONE, %s holds %q, want the row", n, got)
		}
	}
	if n := c.asyncStarted.Load(); n < 2 {
		t.Fatalf("%d mutations started asynchronously, want the write's 2 to n2 and n3", n)
	}
	if got := rec.targets(); len(got) != 0 {
		t.Errorf("a write every replica acknowledged left hints for %v", got)
	}

	c.ring.setDown("n3")
	c.transport.setFault(failWrites, "n2")
	if _, err := c.exec("n1", one, "INSERT INTO t (k, c) VALUES ('b', 2)"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if got, want := rec.targets(), []string{"n2", "n3"}; !slices.Equal(got, want) {
		t.Errorf("hints for %v, want %v", got, want)
	}
	c.ring.setDown()
	c.transport.clearFaults()

	c.transport.setFault(hang, "n2", "n3")
	start := time.Now()
	_, err := c.exec("n1", quorum, "INSERT INTO t (k, c) VALUES ('c', 3)")
	var te *coordinator.TimeoutError
	want := coordinator.TimeoutError{Op: coordinator.OpWrite, Consistency: coordinator.Quorum, Received: 1, Required: 2}
	if !errors.As(err, &te) || *te != want {
		t.Fatalf("a QUORUM write with n2 and n3 never answering: %v, want %v", err, &want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the write timed out after %v, want about its 500ms timeout", d)
	}

	c.transport.mu.Lock()
	c.transport.hanging = make(chan coordinator.NodeID, 2)
	c.transport.mu.Unlock()
	errc := make(chan error, 1)
	go func() {
		_, err := c.exec("n1", quorum, "INSERT INTO t (k, c) VALUES ('d', 4)")
		errc <- err
	}()
	<-c.transport.hanging
	<-c.transport.hanging
	c.executors["n1"].Close() // waits for the started calls, which end with their context
	if err := <-errc; !errors.Is(err, coordinator.ErrClosed) {
		t.Errorf("a write waiting for hanging replicas when the executor closes: %v, want ErrClosed", err)
	}
}
