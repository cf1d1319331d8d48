package shell_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/internal/lockedbuf"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// pendingRing is the harness ring with fixed pending replicas for every token: a node joining.
type pendingRing struct {
	*ring
	pending []coordinator.NodeID
}

func (p pendingRing) AppendWriteReplicas(replicas, pending []coordinator.NodeID, token int64, rf schema.Replication) ([]coordinator.NodeID, []coordinator.NodeID) {
	return p.AppendReplicas(replicas, token, rf), append(pending, p.pending...)
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
		Local: c.services["n1"], Schema: c.schema, Now: c.clock.Now, Draw: func() float64 { return 0.5 }, Options: shell.Options{WriteTimeout: 300 * time.Millisecond},
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

// finishingRing is the harness ring while n3 joins: n3 is pending for every token until finish
// is called, when n3's join completes (the harness keeps n1, n2 as the natural replicas, which
// is what a write that started before the switch uses).
type finishingRing struct {
	*ring
	mu       sync.Mutex
	finished bool
}

func (f *finishingRing) finish() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished = true
}

func (f *finishingRing) AppendWriteReplicas(replicas, pending []coordinator.NodeID, token int64, rf schema.Replication) ([]coordinator.NodeID, []coordinator.NodeID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	replicas = f.AppendReplicas(replicas, token, rf)
	if f.finished {
		return replicas, pending
	}
	return replicas, append(pending, "n3")
}

// hookTransport calls onMutate before each Mutate it delivers.
type hookTransport struct {
	*transport
	onMutate func(to coordinator.NodeID)
}

func (h hookTransport) Mutate(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	h.onMutate(to)
	return h.transport.Mutate(ctx, to, req)
}

// TestPendingReplicasAreThoseOfTheRingTheWriteStartedWith: a write that starts while n3 joins
// must reach n3 even when n3's join finishes while the write is in flight (n3 may have streamed
// the range already, so nothing else brings it the write): its pending replicas come from the
// ring its natural replicas came from, not from the ring once they have answered.
func TestPendingReplicasAreThoseOfTheRingTheWriteStartedWith(t *testing.T) {
	c := newCluster(t, options{order: []coordinator.NodeID{"n1", "n2"}})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	r := &finishingRing{ring: c.ring}
	tr := hookTransport{c.transport, func(to coordinator.NodeID) {
		if to != "n3" {
			r.finish() // n3 becomes normal while the natural replicas apply the write
		}
	}}
	e, err := shell.NewExecutor(shell.Config{
		LocalID: "n1", Ring: r, Transport: tr,
		Local: c.services["n1"], Schema: c.schema, Now: c.clock.Now, Draw: func() float64 { return 0.5 }, Options: shell.Options{WriteTimeout: time.Second},
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.Execute(context.Background(), coordinator.Statement{Text: "INSERT INTO ks.t (k, v) VALUES (1, 1)", Consistency: coordinator.All, Keyspace: "ks"}); err != nil {
		t.Fatal(err)
	}
	e.WaitIdle()
	tbl, _ := c.schema.Schema().Table("ks", "t")
	n, err := c.services["n3"].Store().TableKeys(tbl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("n3, pending when the write started, did not get it because its join finished while the write was in flight")
	}
}

// TestDownPendingReplicaGetsAHint: a pending replica that is down when a write starts is not
// sent it, but gets a hint for it, as a natural replica that is down does (it may have streamed
// the write's range already: without the hint it would never get the write).
func TestDownPendingReplicaGetsAHint(t *testing.T) {
	rec := &hintRecorder{}
	c := newCluster(t, options{order: []coordinator.NodeID{"n1", "n2"}})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	e, err := shell.NewExecutor(shell.Config{
		LocalID: "n1", Ring: pendingRing{c.ring, []coordinator.NodeID{"n3"}}, Transport: c.transport,
		Local: c.services["n1"], Schema: c.schema, Now: c.clock.Now, Draw: func() float64 { return 0.5 }, Options: shell.Options{WriteTimeout: 300 * time.Millisecond},
		Hints: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	c.ring.setDown("n3")
	if _, err := e.Execute(context.Background(), coordinator.Statement{Text: "INSERT INTO ks.t (k, v) VALUES (1, 1)", Consistency: coordinator.All, Keyspace: "ks"}); err != nil {
		t.Fatal(err)
	}
	e.WaitIdle()
	if got := rec.targets(); !slices.Equal(got, []string{"n3"}) {
		t.Errorf("hints after a write with its pending replica n3 down: %v, want [n3]", got)
	}
	c.transport.mu.Lock()
	sent := c.transport.calls["n3"]
	c.transport.mu.Unlock()
	if sent != 0 {
		t.Errorf("the down pending replica n3 was sent %d writes, want 0", sent)
	}
}

// TestPendingReplicaPanicCountsAsItsFailure: a write to a pending replica whose call panics (a
// bug of the node's) is logged with its stack and hinted, as a failed write to it is; the write
// succeeds on its natural replicas and the process goes on.
func TestPendingReplicaPanicCountsAsItsFailure(t *testing.T) {
	c := newCluster(t, options{order: []coordinator.NodeID{"n1", "n2"}})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	var logged lockedbuf.Buffer
	hints := &hintRecorder{}
	e, err := shell.NewExecutor(shell.Config{
		LocalID: "n1", Ring: pendingRing{c.ring, []coordinator.NodeID{"n3"}}, Transport: c.transport,
		Local: c.services["n1"], Schema: c.schema, Now: c.clock.Now, Draw: func() float64 { return 0.5 }, Options: shell.Options{WriteTimeout: 300 * time.Millisecond},
		Hints: hints, Logger: slog.New(slog.NewTextHandler(&logged, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	c.transport.setFault(panics, "n3")
	if _, err := e.Execute(context.Background(), coordinator.Statement{Text: "INSERT INTO ks.t (k, v) VALUES (1, 1)", Consistency: coordinator.All, Keyspace: "ks"}); err != nil {
		t.Fatalf("a write at ALL whose pending replica's call panics: %v, want success on n1 and n2", err)
	}
	e.WaitIdle()
	if got := hints.targets(); !slices.Equal(got, []string{"n3"}) {
		t.Errorf("hints after the pending replica's call panicked: %q, want one for n3", got)
	}
	if log := logged.String(); !strings.Contains(log, "a bug in the call to n3") || !strings.Contains(log, "goroutine") {
		t.Errorf("the log does not hold the panic and its stack:\n%s", log)
	}
}

// TestLWTQuorumCountsPendingReplicas: while n3 joins (pending for every token of an RF=2
// keyspace on n1, n2), a lightweight transaction's Paxos quorum is a majority of the natural
// replicas plus the pending one (3 of 3, as Cassandra counts it): n3 promises, accepts and
// gets the commit, and with n3 down the statement is Unavailable rather than decided by a
// quorum the node taking over the range never saw.
func TestLWTQuorumCountsPendingReplicas(t *testing.T) {
	c := newCluster(t, options{order: []coordinator.NodeID{"n1", "n2"}})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	e, err := shell.NewExecutor(shell.Config{
		LocalID: "n1", Ring: pendingRing{c.ring, []coordinator.NodeID{"n3"}}, Transport: c.transport,
		Local: c.services["n1"], Schema: c.schema, Now: c.clock.Now, Draw: func() float64 { return 0.5 },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	exec := func(stmt string) (coordinator.Result, error) {
		return e.Execute(context.Background(), coordinator.Statement{Text: stmt, Consistency: coordinator.Quorum, Keyspace: "ks"})
	}
	before := c.services["n3"].PaxosStats().Promised
	if res, err := exec("INSERT INTO ks.t (k, v) VALUES (1, 1) IF NOT EXISTS"); err != nil || !slices.Equal(formatRows(res.Rows), []string{"true"}) {
		t.Fatalf("conditional insert while n3 joins: %v, %v", rowsOf(res), err)
	}
	e.WaitIdle()
	if got := c.services["n3"].PaxosStats().Promised - before; got != 1 {
		t.Errorf("the pending replica n3 promised %d prepares, want 1", got)
	}
	tbl, _ := c.schema.Schema().Table("ks", "t")
	if n, err := c.services["n3"].Store().TableKeys(tbl.ID); err != nil || n == 0 {
		t.Errorf("the pending replica n3 holds %d keys (%v), want the committed row", n, err)
	}
	c.ring.setDown("n3")
	if _, err := exec("INSERT INTO ks.t (k, v) VALUES (2, 2) IF NOT EXISTS"); !isUnavailable(err) {
		t.Errorf("conditional insert with the pending replica down: %v, want Unavailable (2 live of 3 required)", err)
	}
}
