package shell_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// The harness's transport carries the Paxos exchanges too (shell.PaxosTransport), with the
// same faults as reads (prepare) and writes (propose, commit).

func (t *transport) PaxosPrepare(ctx context.Context, to coordinator.NodeID, req *replicapb.PaxosPrepareRequest) (*replicapb.PaxosPrepareResponse, error) {
	svc, err := t.begin(ctx, to, false)
	if err != nil {
		return nil, err
	}
	resp, err := svc.PaxosPrepare(ctx, overTheWire(req))
	return overTheWire(resp), err
}

func (t *transport) PaxosPropose(ctx context.Context, to coordinator.NodeID, req *replicapb.PaxosProposeRequest) (*replicapb.PaxosProposeResponse, error) {
	if t.beforePropose != nil {
		if err := t.beforePropose(to); err != nil {
			return nil, err
		}
	}
	svc, err := t.begin(ctx, to, true)
	if err != nil {
		return nil, err
	}
	resp, err := svc.PaxosPropose(ctx, overTheWire(req))
	return overTheWire(resp), err
}

func (t *transport) PaxosCommit(ctx context.Context, to coordinator.NodeID, req *replicapb.PaxosCommitRequest) (*replicapb.PaxosCommitResponse, error) {
	if t.beforeCommit != nil {
		t.beforeCommit(ctx, to, req)
	}
	svc, err := t.begin(ctx, to, true)
	if err != nil {
		return nil, err
	}
	resp, err := svc.PaxosCommit(ctx, overTheWire(req))
	return overTheWire(resp), err
}

const serial = coordinator.Serial

// casQuery runs a conditional statement and returns its result rows formatted.
func (c *cluster) casQuery(node coordinator.NodeID, stmt string) []string {
	c.t.Helper()
	got, err := c.query(node, quorum, stmt)
	if err != nil {
		c.t.Fatalf("%s through %s: %v", stmt, node, err)
	}
	return got
}

func TestConditionalStatements(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	for _, tc := range []struct {
		node coordinator.NodeID
		stmt string
		want []string
	}{
		{"n1", "INSERT INTO t (k, c, v, w) VALUES ('a', 1, 'x', 1) IF NOT EXISTS", []string{"true"}},
		{"n2", "INSERT INTO t (k, c, v, w) VALUES ('a', 1, 'y', 2) IF NOT EXISTS", []string{"false 'a' 1 'x' 1"}},
		{"n3", "UPDATE t SET v = 'z' WHERE k = 'a' AND c = 1 IF w = 2", []string{"false 1"}},
		{"n3", "UPDATE t SET v = 'z' WHERE k = 'a' AND c = 1 IF w = 1 AND v IN ('q', 'x')", []string{"true"}},
		{"n1", "UPDATE t SET w = 5 WHERE k = 'a' AND c = 1 IF w > 1", []string{"false 1"}},
		{"n1", "UPDATE t SET w = 5 WHERE k = 'a' AND c = 1 IF w <= 1 AND v != 'x'", []string{"true"}},
		{"n2", "UPDATE t SET w = 6 WHERE k = 'a' AND c = 2 IF EXISTS", []string{"false"}},
		{"n2", "UPDATE t SET w = 6 WHERE k = 'a' AND c = 2 IF w = NULL", []string{"true"}},
		{"n2", "DELETE FROM t WHERE k = 'a' AND c = 1 IF EXISTS", []string{"true"}},
		{"n2", "DELETE FROM t WHERE k = 'a' AND c = 1 IF EXISTS", []string{"false"}},
		{"n3", "UPDATE t SET w = 7 WHERE k = 'a' AND c = 1 IF w = 5", []string{"false"}},
	} {
		if got := c.casQuery(tc.node, tc.stmt); !slices.Equal(got, tc.want) {
			t.Errorf("%s through %s = %q, want %q", tc.stmt, tc.node, got, tc.want)
		}
	}
	got, err := c.query("n3", serial, "SELECT k, c, v, w FROM t WHERE k = 'a'")
	if want := []string{"'a' 2 null 6"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("SERIAL read = %q, %v; want %q", got, err, want)
	}
	c.settle() // commits go on to every replica after the statement has its acks
	for _, node := range nodes {
		if got, want := c.localRows(node, "SELECT k, c, v, w FROM t WHERE k = 'a'"), []string{"'a' 2 null 6"}; !slices.Equal(got, want) {
			t.Errorf("replica %s holds %q, want %q: every replica gets the commits", node, got, want)
		}
	}
	for _, tc := range []struct {
		stmt string
		cl   coordinator.Consistency
		want string
	}{
		{"DELETE FROM t WHERE k = 'a' IF EXISTS", quorum, "must restrict every PRIMARY KEY column"},
		{"UPDATE t SET v = 'q' WHERE k = 'a' AND c = 1 IF c = 1", quorum, "clustering column c cannot have IF conditions"},
		{"UPDATE t SET v = 'q' WHERE k = 'a' AND c = 1 IF w < NULL", quorum, "invalid comparison with null"},
		{"UPDATE t SET v = 'q' WHERE k = 'a' AND c = 1 IF EXISTS", serial, "SERIAL is not supported as conditional update commit consistency"},
		{"UPDATE t USING TIMESTAMP 5 SET v = 'q' WHERE k = 'a' AND c = 1 IF EXISTS", quorum, "Cannot provide custom timestamp for conditional updates"},
		{"INSERT INTO t (k, c) VALUES ('a', 1) IF NOT EXISTS USING TIMESTAMP 5", quorum, "Cannot provide custom timestamp for conditional updates"},
		{"UPDATE t SET v = 'q' WHERE k = 'a' AND c = 1", serial, "SERIAL is only for SELECT and conditional statements"},
	} {
		_, err := c.exec("n1", tc.cl, tc.stmt)
		var inv *coordinator.InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s at %v: %v, want Invalid naming %q", tc.stmt, tc.cl, err, tc.want)
		}
	}
}

// TestConditionalPreparedMarkers: the markers of an IF clause are variables of the prepared
// statement, typed by their columns (IN ? a list of it), and bind at execution.
func TestConditionalPreparedMarkers(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.must("INSERT INTO t (k, c, v, w) VALUES ('a', 1, 'x', 1)")
	e := c.executors["n1"]
	p, err := e.Prepare(context.Background(), "UPDATE t SET v = ? WHERE k = ? AND c = ? IF w = ? AND v IN ?", "ks")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, v := range p.Variables {
		types = append(types, v.Name+" "+string(v.Type))
	}
	if want := []string{"v text", "k text", "c int", "w int", "in(v) frozen<list<text>>"}; !slices.Equal(types, want) {
		t.Fatalf("variables %q, want %q", types, want)
	}
	list := []byte{0, 0, 0, 2, 0, 0, 0, 1, 'q', 0, 0, 0, 1, 'x'}
	res, err := e.Execute(context.Background(), coordinator.Statement{Prepared: p, Keyspace: "ks", Consistency: quorum, Values: []coordinator.Value{
		{Bytes: []byte("y")}, {Bytes: []byte("a")}, {Bytes: []byte{0, 0, 0, 1}}, {Bytes: []byte{0, 0, 0, 1}}, {Bytes: list},
	}})
	if got := formatRows(res.Rows); err != nil || !slices.Equal(got, []string{"true"}) {
		t.Fatalf("prepared conditional update = %q, %v; want applied", got, err)
	}
}

// TestInsertIfNotExistsRace: 16 clients race INSERT ... IF NOT EXISTS on one key through every
// node; at most one is applied, the others answer not applied or time out (CAS), and a SERIAL
// read through every node shows the applied one's row, or with none applied one that timed out.
func TestInsertIfNotExistsRace(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	const clients = 16
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		applied  []string
		timedOut []string
	)
	for i := range clients {
		wg.Go(func() {
			node := nodes[i%len(nodes)]
			stmt := fmt.Sprintf("INSERT INTO t (k, c, v, w) VALUES ('race', 1, 'x', %d) IF NOT EXISTS", i)
			res, err := c.exec(node, quorum, stmt)
			mu.Lock()
			defer mu.Unlock()
			var to *coordinator.TimeoutError
			switch {
			case errors.As(err, &to) && to.CAS:
				timedOut = append(timedOut, fmt.Sprint(i))
			case err != nil:
				t.Errorf("%s through %s: %v", stmt, node, err)
			case slices.Equal(formatRows(res.Rows), []string{"true"}):
				applied = append(applied, fmt.Sprint(i))
			case len(res.Rows.Values) != 1 || len(res.Rows.Values[0]) != 5:
				t.Errorf("%s through %s: not applied with %q, want the existing row", stmt, node, formatRows(res.Rows))
			}
		})
	}
	wg.Wait()
	if len(applied) > 1 {
		t.Fatalf("%d racing inserts were applied (%v), want at most 1", len(applied), applied)
	}
	for _, node := range nodes {
		got, err := c.query(node, serial, "SELECT w FROM t WHERE k = 'race' AND c = 1")
		if err != nil || len(got) != 1 {
			t.Fatalf("SERIAL read through %s = %q, %v; want one row", node, got, err)
		}
		if len(applied) == 1 && got[0] != applied[0] || len(applied) == 0 && !slices.Contains(timedOut, got[0]) {
			t.Errorf("SERIAL read through %s = %q; applied %v, timed out %v", node, got, applied, timedOut)
		}
	}
}

// TestConditionalRateLimited: a conditional statement is one write of its partition, decided
// once before any promise. Through a replica the coordinator decides and rejects without a
// message; through a non-replica the prepare carries the draw, a rejecting replica promises
// nothing, and no round follows.
func TestConditionalRateLimited(t *testing.T) {
	c := newCluster(t, options{})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k text, c int, v text, w int, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 2}")
	for _, node := range []coordinator.NodeID{"n1", "n2"} { // n1 is the one replica
		var rejected *coordinator.RateLimitError
		before := c.services["n1"].PaxosStats()
		for i := range 20 {
			_, err := c.exec(node, quorum, fmt.Sprintf("UPDATE t SET w = %d WHERE k = '%s' AND c = 1 IF w = NULL", i, node))
			if errors.As(err, &rejected) {
				break
			}
			if err != nil {
				t.Fatalf("conditional update %d through %s: %v", i, node, err)
			}
		}
		if rejected == nil {
			t.Fatalf("20 conditional updates of one partition through %s at a limit of 2/s: none rejected", node)
		}
		after := c.services["n1"].PaxosStats()
		wantBy := coordinator.RejectedByCoordinator
		if node != "n1" {
			wantBy = coordinator.RejectedByReplicas
			if after.RateLimited != before.RateLimited+1 {
				t.Errorf("through %s the replica rejected %d prepares, want 1", node, after.RateLimited-before.RateLimited)
			}
		} else if after.RateLimited != before.RateLimited {
			t.Errorf("through the replica n1 the replica was asked and rejected a prepare: the coordinator decides")
		}
		if rejected.RejectedBy != wantBy || rejected.Op != coordinator.OpWrite || rejected.Limit != 2 {
			t.Errorf("through %s: %+v, want a write rejected by %v at limit 2", node, rejected, wantBy)
		}
		// Every admitted statement took one round (no contention); the rejected one none
		// through the replica, and its rejected prepare alone through n2.
		rounds := after.Promised - before.Promised
		if node != "n1" {
			rounds++
		}
		if st := c.executors[node].LWTStats(); st.RateLimited != 1 || st.Rounds != rounds {
			t.Errorf("through %s: LWTStats %+v, replica promised %d: want one rejection and one promise per round", node, st, after.Promised-before.Promised)
		}
	}
}

// TestSerialReadCountsOneRead: a SERIAL read is one read of its partition, counted on its
// prepare; the QUORUM read that follows is not counted again. At a limit of 5 reads/s the first
// 2L = 10 are always admitted, and the next are rejected (the draw is 0.99).
func TestSerialReadCountsOneRead(t *testing.T) {
	c := newCluster(t, options{})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k text, c int, v text, w int, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_reads_per_second': 5}")
	for _, node := range []coordinator.NodeID{"n1", "n2"} { // n1 is the one replica
		key := "s-" + string(node)
		for i := range 10 {
			if _, err := c.query(node, serial, "SELECT w FROM t WHERE k = '"+key+"'"); err != nil {
				t.Fatalf("SERIAL read %d of 10 through %s at a limit of 5/s: %v", i+1, node, err)
			}
		}
		_, err := c.query(node, serial, "SELECT w FROM t WHERE k = '"+key+"'")
		var rl *coordinator.RateLimitError
		if !errors.As(err, &rl) || rl.Op != coordinator.OpRead {
			t.Errorf("SERIAL read 11 through %s: %v, want a read rejected by the rate limit", node, err)
		}
	}
}

// TestConditionalBatch: a BATCH with conditions on one partition applies all its statements or
// none, in one Paxos round, and answers with the rows its conditions read when not applied.
func TestConditionalBatch(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.must("INSERT INTO t (k, c, v, w) VALUES ('b', 1, 'x', 1)")
	for _, tc := range []struct {
		stmt string
		want []string
	}{
		{"BEGIN BATCH UPDATE t SET w = 2 WHERE k = 'b' AND c = 1 IF w = 1; INSERT INTO t (k, c, v) VALUES ('b', 2, 'y') IF NOT EXISTS; APPLY BATCH", []string{"true"}},
		{"BEGIN BATCH UPDATE t SET w = 3 WHERE k = 'b' AND c = 1 IF w = 1; INSERT INTO t (k, c, v) VALUES ('b', 3, 'z'); APPLY BATCH", []string{"false 'b' 1 2"}},
		{"BEGIN BATCH INSERT INTO t (k, c, v) VALUES ('b', 2, 'q') IF NOT EXISTS; UPDATE t SET w = 9 WHERE k = 'b' AND c = 1 IF w = 2; APPLY BATCH", []string{"false 'b' 1 'x' 2", "false 'b' 2 'y' null"}},
		{"BEGIN BATCH UPDATE t SET w = 4 WHERE k = 'b' AND c = 7 IF EXISTS; APPLY BATCH", []string{"false"}},
	} {
		if got := c.casQuery("n2", tc.stmt); !slices.Equal(got, tc.want) {
			t.Errorf("%s = %q, want %q", tc.stmt, got, tc.want)
		}
	}
	// The protocol's BATCH, its statements with their own values.
	res, err := c.executors["n1"].ExecuteBatch(context.Background(), coordinator.BatchStatement{Keyspace: "ks", Consistency: quorum, Children: []coordinator.BatchChild{
		{Text: "UPDATE t SET w = ? WHERE k = 'b' AND c = 1 IF w = ?", Values: []coordinator.Value{{Bytes: []byte{0, 0, 0, 5}}, {Bytes: []byte{0, 0, 0, 7}}}},
	}})
	if got := formatRows(res.Rows); err != nil || !slices.Equal(got, []string{"false 'b' 1 2"}) {
		t.Errorf("protocol BATCH with a false condition = %q, %v; want not applied with w = 2", got, err)
	}
	got, err := c.query("n3", serial, "SELECT c, v, w FROM t WHERE k = 'b'")
	if want := []string{"1 'x' 2", "2 'y' null"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("SERIAL read = %q, %v; want %q (the first batch whole, nothing of the others)", got, err, want)
	}
	for _, tc := range []struct{ stmt, want string }{
		{"BEGIN BATCH UPDATE t SET w = 1 WHERE k = 'b' AND c = 1 IF w = 2; UPDATE t SET w = 1 WHERE k = 'other' AND c = 1; APPLY BATCH", "Batch with conditions cannot span multiple partitions"},
		{"BEGIN BATCH USING TIMESTAMP 5 UPDATE t SET w = 1 WHERE k = 'b' AND c = 1 IF w = 2; APPLY BATCH", "Cannot provide custom timestamp for conditional BATCH"},
	} {
		_, err := c.exec("n1", quorum, tc.stmt)
		var inv *coordinator.InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want Invalid naming %q", tc.stmt, err, tc.want)
		}
	}
}

// TestLWTRefusedDuringUpgrade: while a member runs a release of a data format before
// schema.FormatLWT (it would not answer the Paxos exchanges), conditional statements and SERIAL
// reads are refused, naming it; nothing is sent.
func TestLWTRefusedDuringUpgrade(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.ring.setFormats(map[coordinator.NodeID]int{"n1": schema.FormatLWT, "n2": schema.FormatLWT, "n3": schema.FormatLWT - 1})
	calls := c.transport.totalCalls()
	for _, tc := range []struct {
		stmt string
		cl   coordinator.Consistency
	}{
		{"INSERT INTO t (k, c) VALUES ('u', 1) IF NOT EXISTS", quorum},
		{"SELECT * FROM t WHERE k = 'u'", serial},
	} {
		_, err := c.exec("n1", tc.cl, tc.stmt)
		var inv *coordinator.InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), fmt.Sprintf("data format %d", schema.FormatLWT)) || !strings.Contains(err.Error(), "n3") {
			t.Errorf("%s during the upgrade: %v, want Invalid naming format %d and n3", tc.stmt, err, schema.FormatLWT)
		}
	}
	if n := c.transport.totalCalls() - calls; n != 0 {
		t.Errorf("%d replica calls during refused statements, want none", n)
	}
	c.ring.setFormats(nil)
	if got := c.casQuery("n1", "INSERT INTO t (k, c) VALUES ('u', 1) IF NOT EXISTS"); !slices.Equal(got, []string{"true"}) {
		t.Errorf("after the upgrade: %q, want applied", got)
	}
}

// TestConditionalLocalRejectionIsPropagated: a conditional statement rejected by its
// coordinator's own counter reaches the other replicas' counters through account propagation,
// as a plain write's local rejection does, so that every replica counts the partition's whole
// load (without it, coordinators in turn each admitted about twice the limit together).
func TestConditionalLocalRejectionIsPropagated(t *testing.T) {
	c := newCluster(t, options{draw: 0.99, propagate: true})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text, c int, v text, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 2}")
	tbl, _ := c.schema.Schema().Table("ks", "t")
	token := partitioner.Token([]byte("hot"))
	var rejected, admitted int
	for i := range 12 {
		_, err := c.exec("n1", quorum, fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('hot', %d, 'x') IF NOT EXISTS", i))
		var rl *coordinator.RateLimitError
		switch {
		case errors.As(err, &rl):
			rejected++
		case err != nil:
			t.Fatalf("conditional insert %d: %v", i, err)
		default:
			admitted++
		}
	}
	if rejected == 0 {
		t.Fatalf("12 conditional inserts of one partition at a limit of 2/s: none rejected")
	}
	for _, n := range []coordinator.NodeID{"n2", "n3"} {
		poll.Must(t, 30*time.Second, fmt.Sprintf("%s to count all 12 statements", n), func() error {
			if got := c.services[n].Count(tbl.ID, token, schema.OpWrite, c.clock.Now()); got != 12 {
				return fmt.Errorf("%s counts %d (%d admitted, %d rejected by n1)", n, got, admitted, rejected)
			}
			return nil
		})
	}
}

// TestConditionalOneCoordinatorNoDuel: statements on one partition through one coordinator take
// turns (its line) instead of duelling: sixteen concurrent compare-and-sets through n1 all
// decide, none loses a round to another, and the increments they applied add up.
func TestConditionalOneCoordinatorNoDuel(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.casQuery("n1", "INSERT INTO t (k, c, v, w) VALUES ('line', 1, 'x', 0) IF NOT EXISTS")
	before := c.executors["n1"].LWTStats()
	const clients, each = 16, 4
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range each {
				// Read the current w, then set it one higher if nobody moved it: retry when
				// another client did.
				for {
					got, err := c.query("n1", serial, "SELECT w FROM t WHERE k = 'line' AND c = 1")
					if err != nil || len(got) != 1 {
						t.Errorf("SERIAL read = %q, %v; want one row", got, err)
						return
					}
					var w int
					fmt.Sscan(got[0], &w)
					res, err := c.exec("n1", quorum, fmt.Sprintf("UPDATE t SET w = %d WHERE k = 'line' AND c = 1 IF w = %d", w+1, w))
					if err != nil {
						t.Errorf("compare-and-set through n1: %v", err)
						return
					}
					if formatRows(res.Rows)[0] == "true" {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	if got := c.casQuery("n1", "SELECT w FROM t WHERE k = 'line' AND c = 1"); !slices.Equal(got, []string{fmt.Sprint(clients * each)}) {
		t.Errorf("w after %d applied increments = %q", clients*each, got)
	}
	if st := c.executors["n1"].LWTStats(); st.Contended != before.Contended {
		t.Errorf("LWTStats %+v (before %+v): %d rounds lost to contention through one coordinator, want none", st, before, st.Contended-before.Contended)
	}
}

// TestLocalSerialAcrossDataCenters: n1 and n2 in dc1, n3 and n4 in dc2, a keyspace placed per
// data center with two replicas in each. LOCAL_SERIAL runs Paxos over dc1's replicas alone, so
// with dc2 down a conditional write and a read at LOCAL_SERIAL through n1 succeed where SERIAL
// (3 of 4) is Unavailable; with dc2 up the commit reaches its replicas too. On a SimpleStrategy
// keyspace LOCAL_SERIAL is SERIAL. A serial consistency that is not serial is refused.
func TestLocalSerialAcrossDataCenters(t *testing.T) {
	c := newCluster(t, options{order: []coordinator.NodeID{"n1", "n2", "n3", "n4"},
		dcs: map[coordinator.NodeID]string{"n1": "dc1", "n2": "dc1", "n3": "dc2", "n4": "dc2"}})
	c.must("CREATE KEYSPACE nts WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}",
		"CREATE TABLE nts.t (k int PRIMARY KEY, v int)",
		"CREATE KEYSPACE simple WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 4}",
		"CREATE TABLE simple.t (k int PRIMARY KEY, v int)")
	cas := func(serial, cl coordinator.Consistency, stmt string) (coordinator.Result, error) {
		return c.executors["n1"].Execute(context.Background(), coordinator.Statement{Text: stmt, Consistency: cl, SerialConsistency: serial})
	}
	// Every node up: the commit of a LOCAL_SERIAL write reaches dc2.
	if res, err := cas(coordinator.LocalSerial, coordinator.Quorum, "INSERT INTO nts.t (k, v) VALUES (1, 1) IF NOT EXISTS"); err != nil || !slices.Equal(formatRows(res.Rows), []string{"true"}) {
		t.Fatalf("LOCAL_SERIAL insert with every node up: %v, %v", rowsOf(res), err)
	}
	c.settle()
	for _, node := range []coordinator.NodeID{"n3", "n4"} {
		if got := c.localRows(node, "SELECT v FROM nts.t WHERE k = 1"); !slices.Equal(got, []string{"1"}) {
			t.Errorf("%s (dc2) holds %q after a LOCAL_SERIAL insert through dc1, want the row", node, got)
		}
	}
	c.ring.setDown("n3", "n4")
	for _, tc := range []struct {
		serial, cl  coordinator.Consistency
		unavailable bool
	}{
		{coordinator.LocalSerial, coordinator.LocalQuorum, false},
		{coordinator.LocalSerial, coordinator.One, false},
		{coordinator.Serial, coordinator.LocalQuorum, true},
		{0, coordinator.LocalQuorum, true}, // SERIAL when not said
	} {
		res, err := cas(tc.serial, tc.cl, "UPDATE nts.t SET v = 2 WHERE k = 1 IF v = 1")
		switch {
		case tc.unavailable && !isUnavailable(err):
			t.Errorf("conditional update at serial %v, commit %v, dc2 down: %v, %v; want Unavailable", tc.serial, tc.cl, rowsOf(res), err)
		case !tc.unavailable && (err != nil || !slices.Equal(formatRows(res.Rows), []string{"true"})):
			t.Errorf("conditional update at serial %v, commit %v, dc2 down: %v, %v; want applied", tc.serial, tc.cl, formatRows(res.Rows), err)
		}
		if !tc.unavailable {
			c.must() // let the commit settle
			if _, err := cas(tc.serial, tc.cl, "UPDATE nts.t SET v = 1 WHERE k = 1 IF v = 2"); err != nil {
				t.Fatalf("conditional update back at %v: %v", tc.serial, err)
			}
		}
	}
	if got, err := c.query("n1", coordinator.LocalSerial, "SELECT v FROM nts.t WHERE k = 1"); err != nil || !slices.Equal(got, []string{"1"}) {
		t.Errorf("LOCAL_SERIAL read through n1 with dc2 down = %q, %v; want the row", got, err)
	}
	if _, err := c.query("n1", coordinator.Serial, "SELECT v FROM nts.t WHERE k = 1"); !isUnavailable(err) {
		t.Errorf("SERIAL read through n1 with dc2 down: %v, want Unavailable", err)
	}
	// SimpleStrategy: LOCAL_SERIAL is SERIAL, over all four replicas.
	if _, err := cas(coordinator.LocalSerial, coordinator.One, "INSERT INTO simple.t (k, v) VALUES (1, 1) IF NOT EXISTS"); !isUnavailable(err) {
		t.Errorf("LOCAL_SERIAL insert into a SimpleStrategy keyspace with 2 of 4 replicas down: %v, want Unavailable", err)
	}
	c.ring.setDown()
	if _, err := cas(coordinator.Quorum, coordinator.One, "INSERT INTO nts.t (k, v) VALUES (2, 1) IF NOT EXISTS"); err == nil || !strings.Contains(err.Error(), "Must be one of SERIAL or LOCAL_SERIAL") {
		t.Errorf("serial consistency QUORUM: %v, want Cassandra's refusal", err)
	}
}

// TestConditionalStatic: conditions on static columns read the partition's static row, as
// Cassandra 4.1: a write of static columns alone that restricts the partition key only is
// conditional on the static row (IF NOT EXISTS: no live static cell), a full-key write may
// condition on static and row columns together, and a statement not applied answers the
// static values (clustering null when the row does not exist).
func TestConditionalStatic(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaStatic...)
	for _, step := range []struct{ stmt, want string }{
		// Static-only: IF NOT EXISTS on the static row.
		{"INSERT INTO st (k, s) VALUES ('p', 's1') IF NOT EXISTS", "true"},
		{"INSERT INTO st (k, s) VALUES ('p', 's2') IF NOT EXISTS", "false 'p' null 's1' null"},
		// A row's IF NOT EXISTS looks at the row, not the static row.
		{"INSERT INTO st (k, c, v) VALUES ('p', 1, 10) IF NOT EXISTS", "true"},
		{"INSERT INTO st (k, c, v) VALUES ('p', 1, 11) IF NOT EXISTS", "false 'p' 1 's1' 10"},
		// Static-only with a static condition.
		{"UPDATE st SET s = 's3' WHERE k = 'p' IF s = 's1'", "true"},
		{"UPDATE st SET s = 's4' WHERE k = 'p' IF s = 's1'", "false 's3'"},
		{"UPDATE st SET s = 's4' WHERE k = 'p' IF EXISTS", "true"},
		{"UPDATE st SET s = 'x' WHERE k = 'q' IF EXISTS", "false"},
		{"UPDATE st SET s = 'x' WHERE k = 'q' IF s = null", "true"},
		// A full key: a static and a row condition together; the result names both.
		{"UPDATE st SET v = 12 WHERE k = 'p' AND c = 1 IF s = 's4' AND v = 10", "true"},
		{"UPDATE st SET v = 13 WHERE k = 'p' AND c = 1 IF s = 's3' AND v = 12", "false 's4' 12"},
		// A missing row under a live static row: the static values, clustering null.
		{"UPDATE st SET v = 1 WHERE k = 'p' AND c = 9 IF s = 'zz'", "false 's4'"},
		{"DELETE s FROM st WHERE k = 'p' IF s = 's4'", "true"},
		{"INSERT INTO st (k, s) VALUES ('p', 's5') IF NOT EXISTS", "true"},
	} {
		if got := c.casQuery(nodes[len(step.stmt)%3], step.stmt); !slices.Equal(got, []string{step.want}) {
			t.Errorf("%s = %q, want %q", step.stmt, got, step.want)
		}
	}
	if got := c.casQuery("n1", "SELECT c, s, v FROM st WHERE k = 'p'"); !slices.Equal(got, []string{"1 's5' 12"}) {
		t.Errorf("partition p after the conditional writes = %q", got)
	}
	// A conditional BATCH conditions on the static row too.
	if got := c.casQuery("n2", "BEGIN BATCH UPDATE st SET v = 20 WHERE k = 'p' AND c = 1 IF s = 's5'; INSERT INTO st (k, c, v) VALUES ('p', 2, 21) APPLY BATCH"); !slices.Equal(got, []string{"true"}) {
		t.Errorf("conditional BATCH on a static condition = %q, want applied", got)
	}
	if got := c.casQuery("n3", "BEGIN BATCH UPDATE st SET v = 30 WHERE k = 'p' AND c = 1 IF s = 'no'; INSERT INTO st (k, c, v) VALUES ('p', 3, 31) APPLY BATCH"); !slices.Equal(got, []string{"false 'p' 1 's5'"}) {
		t.Errorf("conditional BATCH on a failing static condition = %q", got)
	}
}

// TestConditionalElementsAndFields: IF conditions on a map's value at a key, a list's element at
// an index and a user type's field, non-frozen and frozen, and on a non-frozen collection whole,
// as Cassandra 4.1: a missing element or field is null.
func TestConditionalElementsAndFields(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3[0], "CREATE TYPE ks.addr (street text, n int)",
		"CREATE TABLE ks.ct (k int PRIMARY KEY, m map<text, int>, l list<int>, st set<int>, fm frozen<map<text, int>>, u addr, fu frozen<addr>, v int)",
		"INSERT INTO ks.ct (k, m, l, st, fm, u, fu, v) VALUES (1, {'a': 1, 'b': 2}, [10, 20], {7}, {'x': 5}, {street: 'main', n: 3}, {street: 'elm', n: 4}, 0)")
	for i, step := range []struct {
		cond    string
		applied bool
	}{
		{"m['a'] = 1", true},
		{"m['a'] = 2", false},
		{"m['a'] IN (0, 1) AND m['b'] > 1", true},
		{"m['zz'] = null", true},
		{"m['zz'] > 0", false},
		{"m = {'a': 1, 'b': 2}", true}, // a non-frozen map whole
		{"l[1] = 20 AND l[0] < 11", true},
		{"l[5] = null", true},
		{"l[0] > 10", false},
		{"fm['x'] = 5", true},
		{"fm['x'] != 5", false},
		{"u.n = 3 AND u.street = 'main'", true},
		{"u.n >= 4", false},
		{"fu.n IN (4, 5) AND fu.street = 'elm'", true},
		{"u = {street: 'main', n: 3}", true},
	} {
		stmt := fmt.Sprintf("UPDATE ks.ct SET v = %d WHERE k = 1 IF %s", i+1, step.cond)
		res, err := c.exec(nodes[i%3], quorum, stmt)
		if err != nil {
			t.Errorf("%s: %v", stmt, err)
			continue
		}
		if got := res.Rows.Values[0][0]; string(got) != string(schema.EncodeBoolean(step.applied)) {
			t.Errorf("%s: [applied] = %v (%q), want %v", stmt, got, formatRows(res.Rows), step.applied)
		}
	}
	// Markers: the key binds as the map's key type, the value as its value type.
	p := c.prepare("n1", "UPDATE ks.ct SET v = 0 WHERE k = ? IF m[?] = ? AND u.n = ?")
	if got := fmt.Sprintf("%s %s %s %s %s", p.Variables[1].Name, p.Variables[1].Type, p.Variables[2].Name, p.Variables[2].Type, p.Variables[3].Type); got != "key(m) text value(m) int int" {
		t.Errorf("variables of IF m[?] = ? AND u.n = ?: %s", got)
	}
	for stmt, want := range map[string]string{
		"UPDATE ks.ct SET v = 0 WHERE k = 1 IF v['a'] = 1":   "invalid element access syntax for non-collection column v",
		"UPDATE ks.ct SET v = 0 WHERE k = 1 IF st[7] = 7":    "invalid element access syntax for set column st",
		"UPDATE ks.ct SET v = 0 WHERE k = 1 IF u.zz = 1":     "has no field zz",
		"UPDATE ks.ct SET v = 0 WHERE k = 1 IF fm.x = 1":     "is not a user type",
		"UPDATE ks.ct SET v = 0 WHERE k = 1 IF m[null] = 1":  "invalid null or unset key(m)",
		"UPDATE ks.ct SET v = 0 WHERE k = 1 IF m['a'] = 'x'": "",
	} {
		_, err := c.exec("n1", quorum, stmt)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", stmt, err, want)
		}
	}
}

// TestLocalSerialCommitLevel: under LOCAL_SERIAL the commit still counts the other data center
// for QUORUM: with dc2 down a LOCAL_SERIAL write committed at QUORUM (3 of 4) is Unavailable at
// QUORUM up front, at LOCAL_QUORUM applied, and a LOCAL_SERIAL read through the other dc1 node
// sees it.
func TestLocalSerialCommitLevel(t *testing.T) {
	c := newCluster(t, options{order: []coordinator.NodeID{"n1", "n2", "n3", "n4"},
		dcs: map[coordinator.NodeID]string{"n1": "dc1", "n2": "dc1", "n3": "dc2", "n4": "dc2"}})
	c.must("CREATE KEYSPACE nts WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}",
		"CREATE TABLE nts.t (k int PRIMARY KEY, v int)")
	cas := func(cl coordinator.Consistency, stmt string) (coordinator.Result, error) {
		return c.executors["n1"].Execute(context.Background(), coordinator.Statement{Text: stmt, Consistency: cl, SerialConsistency: coordinator.LocalSerial})
	}
	c.ring.setDown("n3", "n4")
	_, err := cas(coordinator.Quorum, "INSERT INTO nts.t (k, v) VALUES (1, 1) IF NOT EXISTS")
	if un, ok := errors.AsType[*coordinator.UnavailableError](err); !ok || un.Consistency != coordinator.Quorum || un.Required != 3 || un.Live != 2 {
		t.Errorf("LOCAL_SERIAL insert committed at QUORUM with dc2 down: %v, want Unavailable at QUORUM, 2 live of 3", err)
	}
	if res, err := cas(coordinator.LocalQuorum, "INSERT INTO nts.t (k, v) VALUES (1, 1) IF NOT EXISTS"); err != nil || !slices.Equal(formatRows(res.Rows), []string{"true"}) {
		t.Errorf("LOCAL_SERIAL insert committed at LOCAL_QUORUM with dc2 down: %v, %v; want applied", rowsOf(res), err)
	}
	if got, err := c.query("n2", coordinator.LocalSerial, "SELECT v FROM nts.t WHERE k = 1"); err != nil || !slices.Equal(got, []string{"1"}) {
		t.Errorf("LOCAL_SERIAL read through n2 with dc2 down = %q, %v", got, err)
	}
}

// TestLWTContentionTimeout: a statement's Paxos rounds are bounded by the 1 s contention
// timeout, not its write timeout (here a minute): with two of three replicas hanging, a
// conditional write answers a CAS write timeout at SERIAL long before its write timeout.
func TestLWTContentionTimeout(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	e, err := shell.NewExecutor(shell.Config{
		LocalID: "n1", Ring: c.ring, Transport: c.transport, Local: c.services["n1"], Schema: c.schema,
		Now: c.clock.Now, Options: shell.Options{WriteTimeout: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	c.transport.setFault(hang, "n2", "n3")
	start := time.Now()
	_, err = e.Execute(context.Background(), coordinator.Statement{Text: "INSERT INTO t (k, c, v) VALUES ('ct', 1, 'x') IF NOT EXISTS", Consistency: quorum, Keyspace: "ks"})
	took := time.Since(start)
	c.transport.clearFaults()
	if to, ok := errors.AsType[*coordinator.TimeoutError](err); !ok || !to.CAS || to.Consistency != coordinator.Serial {
		t.Fatalf("conditional write with two replicas hanging: %v, want a CAS write timeout at SERIAL", err)
	}
	if took > 30*time.Second {
		t.Errorf("the conditional write timed out after %v, want about the 1 s contention timeout, not the minute's write timeout", took)
	}
}

// TestConditionalStampAheadStaysInItsPartition: a conditional write stamped above a partition's
// future-stamped cell (docs/consistency.md, "Mixing LWT and plain writes") must not carry that
// stamp to the coordinator's later conditional writes of other partitions: there a plain write
// made after the conditional one must still win, last-write-wins. (The model-checked workload,
// test/model, found the ballot clock taking the stamp, so every later conditional write through
// the node shadowed the plain writes after it.)
func TestConditionalStampAheadStaysInItsPartition(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	ahead := c.clock.Now().Add(time.Hour).UnixMicro()
	c.must(fmt.Sprintf("UPDATE t USING TIMESTAMP %d SET w = 1 WHERE k = 'a' AND c = 1", ahead))
	c.clock.Advance(time.Millisecond)
	if got := c.casQuery("n1", "UPDATE t SET v = 'y' WHERE k = 'a' AND c = 1 IF w = 1"); !slices.Equal(got, []string{"true"}) {
		t.Fatalf("the conditional update of the future-stamped row = %q, want applied", got)
	}
	c.clock.Advance(time.Millisecond)
	if got := c.casQuery("n1", "INSERT INTO t (k, c, v) VALUES ('b', 1, 'x') IF NOT EXISTS"); !slices.Equal(got, []string{"true"}) {
		t.Fatalf("INSERT IF NOT EXISTS of another partition = %q, want applied", got)
	}
	c.clock.Advance(time.Millisecond)
	if _, err := c.exec("n1", quorum, "UPDATE t SET v = 'z' WHERE k = 'b' AND c = 1"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.query("n2", quorum, "SELECT v FROM t WHERE k = 'b' AND c = 1"); err != nil || !slices.Equal(got, []string{"'z'"}) {
		t.Errorf("after a plain update of the conditionally inserted row, a QUORUM read = %q, %v; want 'z' (the later write wins)", got, err)
	}
	// The stamp ahead still holds in its own partition.
	if got, err := c.query("n2", quorum, "SELECT v FROM t WHERE k = 'a' AND c = 1"); err != nil || !slices.Equal(got, []string{"'y'"}) {
		t.Errorf("the conditional update over the future-stamped row reads %q, %v; want 'y'", got, err)
	}
}

// TestConditionalWriteStampedByTheClockNotABallotAhead: a round refused by a ballot ahead of
// the clock (a restarted store's promise fence runs up to a second ahead; another coordinator's
// clock may be fast) takes a ballot above it, but the write keeps the clock's time, so a plain
// write made after the conditional one still wins, last-write-wins. (The model-checked workload,
// test/model, found a conditional insert through a node restarted moments before shadowing a
// delete made 160 ms after it.)
func TestConditionalWriteStampedByTheClockNotABallotAhead(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	tbl, _ := c.schema.Schema().Table("ks", "t")
	pk := [][]byte{[]byte("a")}
	token := partitioner.Token(partitioner.AppendKey(nil, pk))
	ahead := &replicapb.SchemaBallot{Counter: c.clock.Now().Add(time.Second).UnixMicro(), Node: "zz"}
	for _, node := range nodes {
		r, err := c.transport.services[node].PaxosPrepare(context.Background(), &replicapb.PaxosPrepareRequest{
			Ballot: ahead, Read: &replicapb.ReadRequest{TableId: uint64(tbl.ID), PartitionKey: pk, Token: token}})
		if err != nil || !r.GetPromised() {
			t.Fatalf("promise of the ballot ahead on %s: %v, %v", node, r, err)
		}
	}
	c.clock.Advance(time.Millisecond)
	if got := c.casQuery("n1", "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x') IF NOT EXISTS"); !slices.Equal(got, []string{"true"}) {
		t.Fatalf("INSERT IF NOT EXISTS past the ballot ahead = %q, want applied", got)
	}
	c.clock.Advance(time.Millisecond)
	if _, err := c.exec("n2", quorum, "DELETE FROM t WHERE k = 'a' AND c = 1"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.query("n3", quorum, "SELECT v FROM t WHERE k = 'a' AND c = 1"); err != nil || len(got) != 0 {
		t.Errorf("after a plain delete of the conditionally inserted row, a QUORUM read = %q, %v; want no row (the later write wins)", got, err)
	}
}

// TestConditionalWritesInPaxosOrderOnAStoppedClock: with the clock standing still, each
// conditional write is still stamped above every earlier one of its partition, whatever it
// wrote or deleted (a cell, a row, a collection whole, a static cell), so the order Paxos chose
// is the order last-write-wins keeps.
func TestConditionalWritesInPaxosOrderOnAStoppedClock(t *testing.T) {
	c := newCluster(t, options{})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text, c int, s int static, v text, m map<int, int>, PRIMARY KEY (k, c))")
	for i, step := range []struct{ stmt, want string }{
		{"INSERT INTO t (k, c, s, v, m) VALUES ('a', 1, 1, 'x', {1: 1}) IF NOT EXISTS", "true"},
		{"DELETE v FROM t WHERE k = 'a' AND c = 1 IF v = 'x'", "true"},
		{"UPDATE t SET v = 'y' WHERE k = 'a' AND c = 1 IF v = null", "true"},
		{"DELETE s FROM t WHERE k = 'a' IF s = 1", "true"},
		{"UPDATE t SET s = 2 WHERE k = 'a' IF s = null", "true"},
		{"DELETE FROM t WHERE k = 'a' AND c = 1 IF EXISTS", "true"},
		{"INSERT INTO t (k, c, v) VALUES ('a', 1, 'z') IF NOT EXISTS", "true"},
		{"UPDATE t SET m = {2: 2} WHERE k = 'a' AND c = 1 IF v = 'z'", "true"},
		{"DELETE m FROM t WHERE k = 'a' AND c = 1 IF m = {2: 2}", "true"},
		{"UPDATE t SET m = m + {3: 3} WHERE k = 'a' AND c = 1 IF m = null", "true"},
	} {
		if got := c.casQuery(nodes[i%3], step.stmt); !slices.Equal(got, []string{step.want}) {
			t.Fatalf("%s through %s = %q, want %q", step.stmt, nodes[i%3], got, step.want)
		}
	}
	if got, err := c.query("n1", quorum, "SELECT s, v, m FROM t WHERE k = 'a' AND c = 1"); err != nil || !slices.Equal(got, []string{"2 'z' [{3 3}]"}) {
		t.Errorf("the partition after the conditional writes = %q, %v; want [2 'z' [{3 3}]] (s 2, v 'z', m {3: 3})", got, err)
	}
}

// TestLWTCommitByReference: a replica that accepted the proposal gets its commit by reference
// (ballot and partition, no rows); one that no longer holds the proposal when the commit comes
// answers so and gets the commit in full, and every replica ends holding the row.
func TestLWTCommitByReference(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	var (
		mu     sync.Mutex
		victim coordinator.NodeID
		kinds  = map[coordinator.NodeID][]string{}
	)
	c.transport.beforeCommit = func(ctx context.Context, to coordinator.NodeID, req *replicapb.PaxosCommitRequest) {
		mu.Lock()
		defer mu.Unlock()
		kind := "full"
		if req.GetPartition() != nil {
			kind = "ref"
			if victim == "" {
				// The first replica to get a commit by reference loses the proposal first:
				// a later ballot's commit (of no rows) completes past it.
				victim = to
				later := &replicapb.PaxosProposal{Ballot: &replicapb.SchemaBallot{Counter: req.GetProposal().GetBallot().GetCounter() + 1, Node: "zz"}, Mutation: req.GetPartition()}
				if r, err := c.transport.services[to].PaxosCommit(ctx, &replicapb.PaxosCommitRequest{Proposal: later}); err != nil || r.GetStatus() != replicapb.Status_STATUS_OK {
					t.Errorf("the later commit on %s: %v, %v", to, r, err)
				}
			}
		}
		kinds[to] = append(kinds[to], kind)
	}
	if got := c.casQuery("n1", "INSERT INTO t (k, c, v, w) VALUES ('a', 1, 'x', 1) IF NOT EXISTS"); !slices.Equal(got, []string{"true"}) {
		t.Fatalf("insert = %q, want applied", got)
	}
	c.settle()
	mu.Lock()
	defer mu.Unlock()
	if victim == "" || !slices.Equal(kinds[victim], []string{"ref", "full"}) {
		t.Fatalf("commits by node %v (victim %q), want one replica to get a commit by reference, answer it missing and get it in full", kinds, victim)
	}
	for _, node := range nodes {
		if got, want := c.localRows(node, "SELECT k, c, v, w FROM t WHERE k = 'a'"), []string{"'a' 1 'x' 1"}; !slices.Equal(got, want) {
			t.Errorf("replica %s holds %q, want %q", node, got, want)
		}
	}
}

// TestLWTProposesToThePromisers: an uncontended statement's proposal goes only to the replicas
// whose promises made the prepare's quorum; when one of those fails it, the other live replica
// gets it and the statement applies.
func TestLWTProposesToThePromisers(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	var (
		mu        sync.Mutex
		to        []coordinator.NodeID
		failFirst bool
	)
	c.transport.beforePropose = func(id coordinator.NodeID) error {
		mu.Lock()
		defer mu.Unlock()
		to = append(to, id)
		if failFirst && len(to) == 1 {
			return errors.New("injected propose failure")
		}
		return nil
	}
	if got := c.casQuery("n1", "INSERT INTO t (k, c, v, w) VALUES ('a', 1, 'x', 1) IF NOT EXISTS"); !slices.Equal(got, []string{"true"}) {
		t.Fatalf("insert = %q, want applied", got)
	}
	mu.Lock()
	if len(to) != 2 {
		t.Errorf("proposals went to %v, want the two promisers only", to)
	}
	to, failFirst = nil, true
	mu.Unlock()
	if got := c.casQuery("n1", "INSERT INTO t (k, c, v, w) VALUES ('b', 1, 'x', 1) IF NOT EXISTS"); !slices.Equal(got, []string{"true"}) {
		t.Fatalf("insert with a promiser failing its proposal = %q, want applied", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Sort(to); !slices.Equal(to, nodes) {
		t.Errorf("with a promiser failing, proposals went to %v, want %v (the third replica too)", to, nodes)
	}
}

// TestLWTHedgesASlowPromiser: when a replica whose promise made the quorum has not answered the
// proposal after the hedge, the other live replica gets it, and the statement applies on the
// two answers without waiting for the slow one.
func TestLWTHedgesASlowPromiser(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	var (
		mu     sync.Mutex
		to     []coordinator.NodeID
		hedged = make(chan struct{}) // closed when a third replica got the proposal
	)
	c.transport.beforePropose = func(id coordinator.NodeID) error {
		mu.Lock()
		to = append(to, id)
		n := len(to)
		mu.Unlock()
		switch n {
		case 1: // the first promiser answers only after the hedge reached the third replica
			select {
			case <-hedged:
			case <-time.After(30 * time.Second): // a guard against hanging; the test fails below
			}
		case 3:
			close(hedged)
		}
		return nil
	}
	if got := c.casQuery("n1", "INSERT INTO t (k, c, v, w) VALUES ('a', 1, 'x', 1) IF NOT EXISTS"); !slices.Equal(got, []string{"true"}) {
		t.Fatalf("insert with a slow promiser = %q, want applied", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(to) != 3 {
		t.Fatalf("proposals went to %v, want the two promisers and then, after the hedge, the third replica", to)
	}
	select {
	case <-hedged:
	default:
		t.Fatal("the statement answered before the third replica got the proposal")
	}
}

// TestLWTCommitWithAReplicaDown: a conditional write whose commit level needs more replicas
// than are live is refused up front, unavailable at that level, and applies nowhere (as a write
// at ALL is); at QUORUM it applies, and the replica down gets the commit as a hint.
func TestLWTCommitWithAReplicaDown(t *testing.T) {
	rec := &hintRecorder{}
	c := newCluster(t, options{hints: rec})
	c.must(schemaRF3...)
	rec.reset()
	c.ring.setDown("n3")
	_, err := c.exec("n1", coordinator.All, "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x') IF NOT EXISTS")
	var ue *coordinator.UnavailableError
	if !errors.As(err, &ue) || ue.Consistency != coordinator.All || ue.Live != 2 || ue.Required != 3 {
		t.Fatalf("INSERT IF NOT EXISTS committed at ALL with a replica down: %v, want unavailable at ALL, 2 live of 3 required", err)
	}
	if got := c.localRows("n1", "SELECT v FROM t WHERE k = 'a'"); len(got) != 0 {
		t.Fatalf("the refused statement left %q on n1", got)
	}
	if got := c.casQuery("n1", "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x') IF NOT EXISTS"); !slices.Equal(got, []string{"true"}) {
		t.Fatalf("the same statement at QUORUM = %q, want applied", got)
	}
	c.settle()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Equal(rec.hints, []string{"n3"}) || len(rec.muts[0].GetRows()) != 1 {
		t.Fatalf("hints %v (mutations %v), want the commit's row hinted for n3, the replica down", rec.hints, rec.muts)
	}
}
