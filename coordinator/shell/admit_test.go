package shell_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internal/lockedbuf"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// admitSetup makes the table of the admission tests (RF 3, every node a replica, 5 writes/s per
// partition) and prepares an insert into it on n1.
func admitSetup(t *testing.T, o options) (*cluster, *coordinator.Prepared, schema.TableID) {
	t.Helper()
	c := newCluster(t, o)
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text, c int, v int, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 5}",
		"CREATE TABLE ks.free (k text PRIMARY KEY, v int)",
	)
	p, err := c.executors["n1"].Prepare(context.Background(), "INSERT INTO t (k, c, v) VALUES (?, ?, ?)", "ks")
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := c.schema.Schema().Table("ks", "t")
	return c, p, tbl.ID
}

func int32Bytes(i int) []byte { return []byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)} }

func hotValues(i int, v []byte) []coordinator.Value {
	return []coordinator.Value{{Bytes: []byte("hot")}, {Bytes: int32Bytes(i)}, {Bytes: v}}
}

// TestAdmitPreparedRejectsBeforeBinding: on the coordinator path, the early decision counts each
// write once (on every replica, with the admitted write's account-only sends), and rejects the
// write past 2L with the same error Execute gives, without a replica call and without looking at
// the other values (the rejected write's v is not a valid int).
func TestAdmitPreparedRejectsBeforeBinding(t *testing.T) {
	c, p, id := admitSetup(t, options{draw: 0.99})
	e := c.executors["n1"]
	ctx := context.Background()
	key := [][]byte{[]byte("hot")}
	token := partitioner.Token([]byte("hot"))
	count := func(n coordinator.NodeID) uint32 {
		return c.services[n].Count(id, token, schema.OpWrite, c.clock.Now())
	}
	for i := range 10 {
		adm, err := e.AdmitPrepared(ctx, p, coordinator.Quorum, key)
		if err != nil || adm == nil {
			t.Fatalf("AdmitPrepared of write %d of 10 at limit 5 = %v, %v; want an admission", i+1, adm, err)
		}
		if _, err := adm.Execute(ctx, coordinator.Statement{Prepared: p, Consistency: coordinator.Quorum, Values: hotValues(i, int32Bytes(1))}); err != nil {
			t.Fatalf("write %d of 10: %v", i+1, err)
		}
		if got := count("n1"); got != uint32(i+1) {
			t.Fatalf("after %d admitted writes n1 counts %d, want %d (one count per write)", i+1, got, i+1)
		}
	}
	c.settle()
	for _, n := range []coordinator.NodeID{"n2", "n3"} {
		if got := count(n); got != 10 {
			t.Errorf("%s counts %d writes, want 10 (the account-only sends)", n, got)
		}
	}
	calls := c.transport.totalCalls()
	adm, err := e.AdmitPrepared(ctx, p, coordinator.Quorum, key)
	var rl *coordinator.RateLimitError
	if adm != nil || !errors.As(err, &rl) {
		t.Fatalf("AdmitPrepared of write 11 = %v, %v; want a *RateLimitError", adm, err)
	}
	want := coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: coordinator.OpWrite, RejectedBy: coordinator.RejectedByCoordinator, Limit: 5, Count: 11, RetryAfter: 750 * time.Millisecond}
	if *rl != want {
		t.Errorf("AdmitPrepared rejected with %+v, want %+v (what Execute gives)", *rl, want)
	}
	if n := c.transport.totalCalls() - calls; n != 0 {
		t.Errorf("the early rejection made %d replica calls, want 0", n)
	}
	if got := count("n1"); got != 11 {
		t.Errorf("n1 counts %d after the rejection, want 11", got)
	}
	requests, rateLimited, _ := c.observer.snapshot()
	if len(rateLimited) != 1 || rateLimited[0] != "ks.t write coordinator" {
		t.Errorf("Observer saw rate limiting %q, want one write rejected by the coordinator", rateLimited)
	}
	if last := requests[len(requests)-1]; last != "write QUORUM rate_limited" {
		t.Errorf("Observer's last request %q, want the rejected write", last)
	}
}

// TestAdmitPreparedRejectionAllocatesOnlyItsError: a hot partition's early rejection allocates
// the outcome and the error it returns, nothing more (no request, replica set or account list
// of its own: they are reused), and the request it leaves for reuse serves the next write whole.
func TestAdmitPreparedRejectionAllocatesOnlyItsError(t *testing.T) {
	c, p, _ := admitSetup(t, options{draw: 0.99, noObserver: true})
	e := c.executors["n1"]
	ctx := context.Background()
	key := [][]byte{[]byte("hot")}
	for i := range 10 { // 2L admitted; the clock stands still, so the counter never decays
		adm, err := e.AdmitPrepared(ctx, p, coordinator.Quorum, key)
		if err != nil || adm == nil {
			t.Fatalf("AdmitPrepared of write %d of 10 at limit 5 = %v, %v; want an admission", i+1, adm, err)
		}
		if _, err := adm.Execute(ctx, coordinator.Statement{Prepared: p, Consistency: coordinator.Quorum, Values: hotValues(i, int32Bytes(1))}); err != nil {
			t.Fatal(err)
		}
	}
	c.settle()
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := e.AdmitPrepared(ctx, p, coordinator.Quorum, key); err == nil {
			t.Fatal("a write past 2L was admitted")
		}
	})
	if allocs > 2 && !raceEnabled {
		t.Errorf("an early rejection allocates %.1f objects, want at most 2 (its outcome and its error)", allocs)
	}
	// The next write, to a cold partition, gets a reused request: it is admitted and stored.
	cold := [][]byte{[]byte("cold")}
	adm, err := e.AdmitPrepared(ctx, p, coordinator.Quorum, cold)
	if err != nil || adm == nil {
		t.Fatalf("AdmitPrepared of a cold partition after the rejections = %v, %v; want an admission", adm, err)
	}
	values := []coordinator.Value{{Bytes: []byte("cold")}, {Bytes: int32Bytes(1)}, {Bytes: int32Bytes(7)}}
	if _, err := adm.Execute(ctx, coordinator.Statement{Prepared: p, Consistency: coordinator.Quorum, Values: values}); err != nil {
		t.Fatalf("the cold write after the rejections: %v", err)
	}
	res, err := e.Execute(ctx, coordinator.Statement{Text: "SELECT v FROM t WHERE k = 'cold'", Keyspace: "ks", Consistency: coordinator.All})
	if err != nil || res.Rows == nil || len(res.Rows.Values) != 1 || !bytes.Equal(res.Rows.Values[0][0], int32Bytes(7)) {
		t.Fatalf("reading the cold write back at ALL = %+v, %v; want its row, v = 7", res.Rows, err)
	}
}

// TestAdmittedWriteRefusedByValidationIsCountedOnce: a write admitted early and then refused
// because of a value the early decision did not look at has been counted by n1; the other
// replicas count it through propagation, so that every counter still agrees.
func TestAdmittedWriteRefusedByValidationIsCountedOnce(t *testing.T) {
	c, p, id := admitSetup(t, options{draw: 0.99, propagate: true})
	e := c.executors["n1"]
	ctx := context.Background()
	adm, err := e.AdmitPrepared(ctx, p, coordinator.All, [][]byte{[]byte("hot")})
	if err != nil || adm == nil {
		t.Fatalf("AdmitPrepared = %v, %v; want an admission", adm, err)
	}
	_, err = adm.Execute(ctx, coordinator.Statement{Prepared: p, Consistency: coordinator.All, Values: hotValues(1, []byte("bad"))})
	var inv *coordinator.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("an admitted write with a 3-byte int: %v, want an *InvalidError", err)
	}
	if _, err := adm.Execute(ctx, coordinator.Statement{Prepared: p, Values: hotValues(1, int32Bytes(1))}); err == nil {
		t.Error("an admission executed twice succeeded, want an error")
	}
	token := partitioner.Token([]byte("hot"))
	for _, n := range nodes {
		poll.Must(t, 30*time.Second, fmt.Sprintf("%s to count the refused write once", n), func() error {
			if got := c.services[n].Count(id, token, schema.OpWrite, c.clock.Now()); got != 1 {
				return fmt.Errorf("%s counts %d", n, got)
			}
			return nil
		})
	}
	if c.transport.totalCalls() != 0 {
		t.Errorf("the refused write made %d replica calls, want 0", c.transport.totalCalls())
	}
}

// TestPropagationPanicIsRecovered: a propagated account whose delivery panics (a bug of the
// node's) is logged with its stack and lost, as an undelivered one is; the other replica still
// gets its own, and the process goes on.
func TestPropagationPanicIsRecovered(t *testing.T) {
	var logged lockedbuf.Buffer
	c, p, id := admitSetup(t, options{draw: 0.99, propagate: true, logger: slog.New(slog.NewTextHandler(&logged, nil))})
	c.transport.setFault(panics, "n3")
	ctx := context.Background()
	adm, err := c.executors["n1"].AdmitPrepared(ctx, p, coordinator.All, [][]byte{[]byte("hot")})
	if err != nil || adm == nil {
		t.Fatalf("AdmitPrepared = %v, %v; want an admission", adm, err)
	}
	// Refused by validation after n1 counted it: n2 and n3 get the count by propagation.
	if _, err = adm.Execute(ctx, coordinator.Statement{Prepared: p, Consistency: coordinator.All, Values: hotValues(1, []byte("bad"))}); err == nil {
		t.Fatal("an admitted write with a 3-byte int succeeded, want an *InvalidError")
	}
	token := partitioner.Token([]byte("hot"))
	poll.Must(t, 30*time.Second, "n2 to count the write by propagation", func() error {
		if got := c.services["n2"].Count(id, token, schema.OpWrite, c.clock.Now()); got != 1 {
			return fmt.Errorf("n2 counts %d", got)
		}
		return nil
	})
	poll.Must(t, 30*time.Second, "the panic of n3's delivery in the log, with its stack", func() error {
		if log := logged.String(); !strings.Contains(log, "a bug in the account delta to n3") || !strings.Contains(log, "goroutine") {
			return fmt.Errorf("the log holds:\n%s", log)
		}
		return nil
	})
}

// TestAdmitPreparedLeavesOtherWritesToExecute: every case the early decision does not apply to
// is answered nil, nil (and counts nothing), so that Execute decides it.
func TestAdmitPreparedLeavesOtherWritesToExecute(t *testing.T) {
	c, p, id := admitSetup(t, options{})
	e := c.executors["n1"]
	ctx := context.Background()
	prep := func(text string) *coordinator.Prepared {
		t.Helper()
		p, err := e.Prepare(ctx, text, "ks")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	hot := [][]byte{[]byte("hot")}
	for _, tt := range []struct {
		name string
		p    *coordinator.Prepared
		cl   coordinator.Consistency
		key  [][]byte
	}{
		{"a literal partition key", prep("INSERT INTO t (k, c, v) VALUES ('hot', ?, ?)"), coordinator.One, hot},
		{"an unlimited table", prep("INSERT INTO free (k, v) VALUES (?, ?)"), coordinator.One, hot},
		{"a read", prep("SELECT * FROM t WHERE k = ?"), coordinator.One, hot},
		{"USING TIMEOUT", prep("INSERT INTO t (k, c, v) VALUES (?, ?, ?) USING TIMEOUT 1s"), coordinator.One, hot},
		{"a null key", p, coordinator.One, [][]byte{nil}},
		{"an empty key", p, coordinator.One, [][]byte{{}}},
		{"too many key values", p, coordinator.One, [][]byte{[]byte("a"), []byte("b")}},
		{"an unknown consistency level", p, coordinator.Consistency(99), hot},
	} {
		adm, err := e.AdmitPrepared(ctx, tt.p, tt.cl, tt.key)
		if adm != nil || err != nil {
			t.Errorf("AdmitPrepared with %s = %v, %v; want nil, nil", tt.name, adm, err)
		}
	}
	token := partitioner.Token([]byte("hot"))
	if got := c.services["n1"].Count(id, token, schema.OpWrite, c.clock.Now()); got != 0 {
		t.Errorf("n1 counts %d writes, want 0", got)
	}

	// A coordinator that is not a replica leaves the decision to the replicas.
	c2 := newCluster(t, options{order: []coordinator.NodeID{"n2", "n3", "n1"}})
	c2.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k text, c int, v int, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 5}",
	)
	p2, err := c2.executors["n1"].Prepare(ctx, "INSERT INTO t (k, c, v) VALUES (?, ?, ?)", "ks")
	if err != nil {
		t.Fatal(err)
	}
	if adm, err := c2.executors["n1"].AdmitPrepared(ctx, p2, coordinator.One, hot); adm != nil || err != nil {
		t.Errorf("AdmitPrepared on a node that is not a replica = %v, %v; want nil, nil", adm, err)
	}
}

// TestAdmitPreparedRejectsOnALearnedPartition: a coordinator that is not a replica of a
// partition, once it has learned from the replicas' rejections that the partition is hot,
// rejects a prepared write to it early as well, with no replica request.
func TestAdmitPreparedRejectsOnALearnedPartition(t *testing.T) {
	clk := &clock{}
	clk.ns.Store(time.Unix(1_700_000_000, 100_000_000).UnixNano())
	e, _, g, _ := grpcCluster(t, clk, "c", func() float64 { return 0.99 })
	ctx := context.Background()
	exec := func(stmt string) error {
		_, err := e.Execute(ctx, coordinator.Statement{Text: stmt, Keyspace: "ks", Consistency: coordinator.Quorum})
		return err
	}
	for _, s := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 10}",
	} {
		if err := exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	p, err := e.Prepare(ctx, "INSERT INTO t (k, v) VALUES (?, ?)", "ks")
	if err != nil {
		t.Fatal(err)
	}
	key := [][]byte{[]byte("hot")}
	if adm, err := e.AdmitPrepared(ctx, p, coordinator.Quorum, key); adm != nil || err != nil {
		t.Fatalf("AdmitPrepared before anything was learned = %v, %v; want nil, nil (the replicas decide)", adm, err)
	}
	for i := range 20 { // 2L in the partition's first second
		if err := exec("INSERT INTO t (k, v) VALUES ('hot', 1)"); err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
	}
	e.WaitIdle()
	clk.Advance(time.Second)
	for i := 0; ; i++ { // until the coordinator rejects on what it learned
		err := exec("INSERT INTO t (k, v) VALUES ('hot', 1)")
		var rl *coordinator.RateLimitError
		if errors.As(err, &rl) && rl.RejectedBy == coordinator.RejectedByCoordinator {
			break
		}
		if i == 40 {
			t.Fatalf("after %d writes the coordinator has not learned the partition is hot (last: %v)", i, err)
		}
	}
	e.WaitIdle()
	sent := g.sent()
	adm, err := e.AdmitPrepared(ctx, p, coordinator.Quorum, key)
	var rl *coordinator.RateLimitError
	if adm != nil || !errors.As(err, &rl) || rl.RejectedBy != coordinator.RejectedByCoordinator {
		t.Fatalf("AdmitPrepared of a learned hot partition = %v, %v; want a rejection by the coordinator", adm, err)
	}
	e.WaitIdle()
	if got := g.sent(); got != sent {
		t.Errorf("the early rejection sent %d replica requests, want 0", got-sent)
	}
}

// TestAdmitPreparedLeavesUnauthorizedWritesToExecute: with authentication on, a role without
// MODIFY on the table gets no early decision (so its writes never count against the
// partition's limit) and Execute refuses it; a role with MODIFY is rejected early as usual once
// its grants are cached (the fast path never reads system_auth).
func TestAdmitPreparedLeavesUnauthorizedWritesToExecute(t *testing.T) {
	c := newAuthCluster(t)
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 1}",
		"CREATE ROLE reader WITH PASSWORD = 'pw' AND LOGIN = true",
		"CREATE ROLE writer WITH PASSWORD = 'pw' AND LOGIN = true",
		"GRANT MODIFY ON ks.t TO writer",
	} {
		if _, err := c.as("admin", "n1", stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	c.settle()
	e := c.executors["n1"]
	p, err := e.Prepare(auth.WithRole(context.Background(), "admin"), "INSERT INTO t (k, v) VALUES (?, ?)", "ks")
	if err != nil {
		t.Fatal(err)
	}
	key := [][]byte{[]byte("hot")}
	reader := auth.WithRole(context.Background(), "reader")
	for range 5 {
		if adm, err := e.AdmitPrepared(reader, p, quorum, key); adm != nil || err != nil {
			t.Fatalf("AdmitPrepared for a role without MODIFY = %v, %v; want nil, nil", adm, err)
		}
	}
	writer := auth.WithRole(context.Background(), "writer")
	var rejected bool
	for i := 0; i < 10 && !rejected; i++ {
		adm, err := e.AdmitPrepared(writer, p, quorum, key)
		switch {
		case adm != nil:
			adm.Abandon()
		case err == nil:
			// No early decision while the role's grants are not cached: the front end then
			// executes the statement in full, which reads and caches them.
			e.Execute(writer, coordinator.Statement{Prepared: p, Keyspace: "ks", Consistency: quorum,
				Values: []coordinator.Value{{Bytes: key[0]}, {Bytes: []byte{0, 0, 0, 1}}}})
		}
		var rl *coordinator.RateLimitError
		rejected = errors.As(err, &rl)
	}
	if !rejected {
		t.Error("a role with MODIFY was not rejected early after 10 writes at limit 1/s")
	}
}
