package shell_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
)

// pendingRing is the harness ring with fixed pending replicas for every token: a node joining.
type pendingRing struct {
	*ring
	pending []coordinator.NodeID
}

func (p pendingRing) AppendPending(dst []coordinator.NodeID, _ int64, _ int) []coordinator.NodeID {
	return append(dst, p.pending...)
}

// TestWritesGoToPendingReplicasWithoutCountingTowardTheConsistencyLevel: while n3 joins (pending
// for every token of an RF=2 keyspace on n1, n2), writes reach it too; a write at ALL succeeds with
// n3 hanging, since a pending replica never counts; and a pending replica that is down is not sent
// anything.
func TestWritesGoToPendingReplicasWithoutCountingTowardTheConsistencyLevel(t *testing.T) {
	c := newCluster(t, options{order: []coordinator.NodeID{"n1", "n2"}})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	e, err := shell.NewExecutor(shell.Config{
		LocalID: "n1", Ring: pendingRing{c.ring, []coordinator.NodeID{"n3"}}, Transport: c.transport,
		Local: c.services["n1"], Schema: c.schema, Now: c.clock.Now, Draw: func() float64 { return 0.5 }, WriteTimeout: 300 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	exec := func(stmt string) error {
		_, err := e.Execute(context.Background(), coordinator.Statement{Text: stmt, Consistency: coordinator.All, Keyspace: "ks"})
		return err
	}
	tbl, _ := c.schema.Schema().Table("ks", "t")
	keysOn := func(id coordinator.NodeID) int {
		n, err := c.services[id].Store().TableKeys(tbl.ID)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	if err := exec("INSERT INTO ks.t (k, v) VALUES (1, 1)"); err != nil {
		t.Fatal(err)
	}
	e.WaitIdle()
	if keysOn("n3") == 0 {
		t.Errorf("the pending replica n3 did not get the write")
	}

	hanging := make(chan coordinator.NodeID, 1)
	c.transport.mu.Lock()
	c.transport.hanging = hanging
	c.transport.mu.Unlock()
	c.transport.setFault(hangWrites, "n3")
	if err := exec("INSERT INTO ks.t (k, v) VALUES (2, 2)"); err != nil {
		t.Errorf("write at ALL with the pending replica hanging: %v; a pending replica must not count", err)
	}
	if id := <-hanging; id != "n3" {
		t.Fatalf("%s hangs, want the pending replica n3", id)
	}
	c.transport.clearFaults()
	e.WaitIdle() // the hanging send ends at the write's deadline
	c.transport.mu.Lock()
	sent := c.transport.calls["n3"]
	c.transport.mu.Unlock()
	if sent != 2 {
		t.Errorf("n3 got %d writes as a pending replica, want 2", sent)
	}

	c.ring.setDown("n3")
	before := c.transport.totalCalls()
	if err := exec("INSERT INTO ks.t (k, v) VALUES (3, 3)"); err != nil {
		t.Fatal(err)
	}
	e.Close() // waits for the detached sends; the hanging one ends at its deadline or here
	if got := c.transport.totalCalls(); got != before+2 {
		t.Errorf("a write at RF=2 with its pending replica down made %d replica calls, want 2 (none to the down pending replica)", got-before)
	}
}
