package shell_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/internal/lockedbuf"
	"github.com/kvnode/kvnode/schema"
)

const (
	one         = coordinator.One
	quorum      = coordinator.Quorum
	all         = coordinator.All
	unspecified = coordinator.Consistency(0) // means ONE
)

// schemaRF3 creates keyspace ks (RF 3) and table ks.t, clustered by c.
var schemaRF3 = []string{
	"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
	"CREATE TABLE ks.t (k text, c int, v text, w int, PRIMARY KEY (k, c))",
}

func TestInsertThenSelectAtEachConsistency(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	for i, cl := range []coordinator.Consistency{one, quorum, all, unspecified} {
		for _, coord := range nodes {
			key := fmt.Sprintf("%v-%s", cl, coord)
			insert := fmt.Sprintf("INSERT INTO t (k, c, v, w) VALUES ('%s', %d, 'x', 7)", key, i)
			resp, err := c.exec(coord, cl, insert)
			if err != nil {
				t.Fatalf("%s at %v through %s: %v", insert, cl, coord, err)
			}
			if resp.Kind != coordinator.ResultVoid {
				t.Errorf("%s at %v returned %v, want a void result", insert, cl, resp)
			}
			// Below QUORUM a read need not see a write that is still on its way to the other
			// replicas; let it land.
			c.settle()
			sel := fmt.Sprintf("SELECT k, c, v, w FROM t WHERE k = '%s'", key)
			got, err := c.query(coord, cl, sel)
			want := []string{fmt.Sprintf("'%s' %d 'x' 7", key, i)}
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("%s at %v through %s = %q, %v; want %q", sel, cl, coord, got, err, want)
			}
		}
	}
}

func TestWriteSemantics(t *testing.T) {
	tests := []struct {
		name  string
		stmts []string
		query string
		want  []string
	}{
		{
			name:  "INSERT creates a row that exists with null cells",
			stmts: []string{"INSERT INTO t (k, c) VALUES ('a', 1)"},
			query: "SELECT * FROM t WHERE k = 'a'",
			want:  []string{"'a' 1 null null"},
		},
		{
			name:  "UPDATE creates a row without a marker",
			stmts: []string{"UPDATE t SET v = 'u' WHERE k = 'a' AND c = 1"},
			query: "SELECT * FROM t WHERE k = 'a'",
			want:  []string{"'a' 1 'u' null"},
		},
		{
			name:  "a row created by UPDATE vanishes when its last cell is deleted",
			stmts: []string{"UPDATE t SET v = 'u' WHERE k = 'a' AND c = 1", "DELETE v FROM t WHERE k = 'a' AND c = 1"},
			query: "SELECT * FROM t WHERE k = 'a'",
			want:  []string{},
		},
		{
			name:  "a row created by INSERT survives the deletion of its cells",
			stmts: []string{"INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')", "DELETE v FROM t WHERE k = 'a' AND c = 1"},
			query: "SELECT * FROM t WHERE k = 'a'",
			want:  []string{"'a' 1 null null"},
		},
		{
			name:  "setting a cell to null deletes it",
			stmts: []string{"INSERT INTO t (k, c, v, w) VALUES ('a', 1, 'x', 3)", "UPDATE t SET w = NULL WHERE k = 'a' AND c = 1"},
			query: "SELECT v, w FROM t WHERE k = 'a'",
			want:  []string{"'x' null"},
		},
		{
			name:  "UPDATE overwrites cells of an existing row and keeps the others",
			stmts: []string{"INSERT INTO t (k, c, v, w) VALUES ('a', 1, 'x', 3)", "UPDATE t SET v = 'y' WHERE k = 'a' AND c = 1"},
			query: "SELECT * FROM t WHERE k = 'a'",
			want:  []string{"'a' 1 'y' 3"},
		},
		{
			name: "DELETE of a row removes only that row",
			stmts: []string{
				"INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')", "INSERT INTO t (k, c, v) VALUES ('a', 2, 'y')",
				"DELETE FROM t WHERE k = 'a' AND c = 1",
			},
			query: "SELECT c, v FROM t WHERE k = 'a'",
			want:  []string{"2 'y'"},
		},
		{
			name: "DELETE of a partition removes every row and only that partition",
			stmts: []string{
				"INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')", "INSERT INTO t (k, c, v) VALUES ('a', 2, 'y')",
				"INSERT INTO t (k, c, v) VALUES ('b', 1, 'z')", "DELETE FROM t WHERE k = 'a'",
			},
			query: "SELECT k, c, v FROM t WHERE k = 'a'",
			want:  []string{},
		},
		{
			name: "a write after a partition deletion is visible",
			stmts: []string{
				"INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')", "DELETE FROM t WHERE k = 'a'",
				"INSERT INTO t (k, c, v) VALUES ('a', 2, 'y')",
			},
			query: "SELECT c, v FROM t WHERE k = 'a'",
			want:  []string{"2 'y'"},
		},
		{
			name: "DELETE of a range of rows removes the rows in it",
			stmts: []string{
				"INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')", "INSERT INTO t (k, c, v) VALUES ('a', 2, 'y')",
				"INSERT INTO t (k, c, v) VALUES ('a', 3, 'z')", "DELETE FROM t WHERE k = 'a' AND c >= 2",
			},
			query: "SELECT c, v FROM t WHERE k = 'a'",
			want:  []string{"1 'x'"},
		},
		{
			name:  "DELETE of an empty range succeeds",
			stmts: []string{"INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')", "DELETE FROM t WHERE k = 'a' AND c > 5"},
			query: "SELECT c, v FROM t WHERE k = 'a'",
			want:  []string{"1 'x'"},
		},
		{
			name: "a write with an older USING TIMESTAMP loses to a newer one",
			stmts: []string{
				"INSERT INTO t (k, c, v) VALUES ('a', 1, 'new') USING TIMESTAMP 2000",
				"INSERT INTO t (k, c, v) VALUES ('a', 1, 'old') USING TIMESTAMP 1000",
			},
			query: "SELECT v FROM t WHERE k = 'a'",
			want:  []string{"'new'"},
		},
		{
			name:  "a delete with an older USING TIMESTAMP does not delete a newer write",
			stmts: []string{"INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')", "DELETE FROM t USING TIMESTAMP 1 WHERE k = 'a'"},
			query: "SELECT v FROM t WHERE k = 'a'",
			want:  []string{"'x'"},
		},
		{
			name: "rows come back in clustering order, limited and restricted",
			stmts: []string{
				"INSERT INTO t (k, c, v) VALUES ('a', 3, 'z')", "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')",
				"INSERT INTO t (k, c, v) VALUES ('a', 2, 'y')", "INSERT INTO t (k, c, v) VALUES ('a', 4, 'w')",
			},
			query: "SELECT c, v FROM t WHERE k = 'a' AND c > 1 LIMIT 2",
			want:  []string{"2 'y'", "3 'z'"},
		},
		{
			name:  "SELECT returns columns in the order asked, repeated if asked",
			stmts: []string{"INSERT INTO t (k, c, v, w) VALUES ('a', 1, 'x', 5)"},
			query: "SELECT w, k, w FROM t WHERE k = 'a' AND c = 1",
			want:  []string{"5 'a' 5"},
		},
		{
			name:  "a row kept alive by a column that is not selected is returned",
			stmts: []string{"UPDATE t SET w = 1 WHERE k = 'a' AND c = 1"},
			query: "SELECT v FROM t WHERE k = 'a'",
			want:  []string{"null"},
		},
		{
			name:  "empty text is not null",
			stmts: []string{"INSERT INTO t (k, c, v) VALUES ('a', 1, '')"},
			query: "SELECT v FROM t WHERE k = 'a'",
			want:  []string{"''"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, options{})
			c.must(schemaRF3...)
			for _, s := range tt.stmts {
				c.clock.Advance(time.Millisecond) // distinct timestamps even without the tie-breaker
				c.must(s)
			}
			for _, cl := range []coordinator.Consistency{one, quorum, all} {
				got, err := c.query("n2", cl, tt.query)
				if err != nil || !slices.Equal(got, tt.want) {
					t.Errorf("after %q, %s at %v = %q, %v; want %q", tt.stmts, tt.query, cl, got, err, tt.want)
				}
			}
		})
	}
}

func TestAllTypesRoundTrip(t *testing.T) {
	c := newCluster(t, options{})
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.types (a int, b bigint, PRIMARY KEY ((a, b), d), d double, t text, bo boolean, bl blob, ts timestamp)",
		"INSERT INTO types (a, b, d, t, bo, bl, ts) VALUES (-1, 9000000000, 1.5, 'héllo', true, 0xcafe, '2024-03-01 12:00:00Z')",
	)
	got, err := c.query("n3", quorum, "SELECT a, b, d, t, bo, bl, ts FROM types WHERE a = -1 AND b = 9000000000")
	want := []string{"-1 9000000000 1.5 'héllo' true 0xcafe 2024-03-01T12:00:00Z"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("SELECT of every type = %q, %v; want %q", got, err, want)
	}
	resp, err := c.exec("n1", one, "SELECT * FROM types WHERE a = -1 AND b = 9000000000")
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, col := range resp.Rows.Columns {
		cols = append(cols, col.Name+":"+strings.ToUpper(col.Type.String()))
	}
	wantCols := []string{"a:INT", "b:BIGINT", "d:DOUBLE", "bl:BLOB", "bo:BOOLEAN", "t:TEXT", "ts:TIMESTAMP"}
	if !slices.Equal(cols, wantCols) {
		t.Errorf("SELECT * columns = %q, want %q", cols, wantCols)
	}
}

// TestReadRepair writes to n1 alone, then reads at QUORUM through n1 (which reads n1 and n2):
// the read returns the data and repairs n2 before answering, so a later QUORUM read through n2,
// with n1 down, still sees it.
// readRepairCase is a partition whose replicas disagree: n1 holds what partial wrote, n2 and
// n3 do not.
type readRepairCase struct {
	name     string
	before   []string // written everywhere
	partial  []string // written to n1 only
	query    string
	want     []string
	repaired []string // what a repaired replica holds afterwards
}

// readRepairCases has a case for each thing a stale replica can lack.
func readRepairCases() []readRepairCase {
	return []readRepairCase{
		{
			name:     "a missing row",
			partial:  []string{"INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')"},
			query:    "SELECT c, v FROM t WHERE k = 'a'",
			want:     []string{"1 'x'"},
			repaired: []string{"'a' 1 'x' null"},
		},
		{
			name:     "a stale cell",
			before:   []string{"INSERT INTO t (k, c, v, w) VALUES ('a', 1, 'old', 1)"},
			partial:  []string{"UPDATE t SET v = 'new' WHERE k = 'a' AND c = 1"},
			query:    "SELECT c, v, w FROM t WHERE k = 'a'",
			want:     []string{"1 'new' 1"},
			repaired: []string{"'a' 1 'new' 1"},
		},
		{
			name:     "a missing row tombstone",
			before:   []string{"INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')", "INSERT INTO t (k, c, v) VALUES ('a', 2, 'y')"},
			partial:  []string{"DELETE FROM t WHERE k = 'a' AND c = 1"},
			query:    "SELECT c, v FROM t WHERE k = 'a'",
			want:     []string{"2 'y'"},
			repaired: []string{"'a' 2 'y' null"},
		},
		{
			name:     "a missing partition tombstone",
			before:   []string{"INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')"},
			partial:  []string{"DELETE FROM t WHERE k = 'a'"},
			query:    "SELECT c, v FROM t WHERE k = 'a'",
			want:     []string{},
			repaired: []string{},
		},
		{
			name:     "a missing cell tombstone",
			before:   []string{"INSERT INTO t (k, c, v, w) VALUES ('a', 1, 'x', 2)"},
			partial:  []string{"UPDATE t SET v = NULL WHERE k = 'a' AND c = 1"},
			query:    "SELECT c, v, w FROM t WHERE k = 'a'",
			want:     []string{"1 null 2"},
			repaired: []string{"'a' 1 null 2"},
		},
	}
}

// setUp makes a cluster holding tt's partition: before everywhere, partial on n1 only. It
// returns the cluster and what n2 and n3 hold.
func (tt readRepairCase) setUp(t *testing.T) (*cluster, []string) {
	t.Helper()
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	for _, s := range tt.before {
		c.clock.Advance(time.Millisecond)
		c.must(s)
	}
	c.transport.setFault(failWrites, "n2", "n3")
	for _, s := range tt.partial {
		c.clock.Advance(time.Millisecond)
		if _, err := c.exec("n1", one, s); err != nil {
			t.Fatalf("%s at ONE with n2 and n3 failing: %v", s, err)
		}
	}
	c.settle()
	c.transport.clearFaults()
	return c, c.localRows("n2", "SELECT * FROM t WHERE k = 'a'")
}

func TestReadRepair(t *testing.T) {
	for _, tt := range readRepairCases() {
		t.Run(tt.name, func(t *testing.T) {
			c, stale := tt.setUp(t)
			if slices.Equal(stale, tt.repaired) {
				t.Fatalf("n2 holds %q before the read, want it stale", stale)
			}

			got, err := c.query("n1", quorum, tt.query)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("%s at QUORUM through n1 = %q, %v; want %q", tt.query, got, err, tt.want)
			}
			if got := c.localRows("n2", "SELECT * FROM t WHERE k = 'a'"); !slices.Equal(got, tt.repaired) {
				t.Errorf("after the QUORUM read, n2 holds %q, want %q (repaired)", got, tt.repaired)
			}
			if got := c.localRows("n3", "SELECT * FROM t WHERE k = 'a'"); !slices.Equal(got, stale) {
				t.Errorf("after the QUORUM read, n3 (not contacted) holds %q, want %q (untouched)", got, stale)
			}
			_, _, repairs := c.observer.snapshot()
			if want := []string{"ks.t 1 ok"}; !slices.Equal(repairs, want) {
				t.Errorf("Observer saw read repairs %q, want %q", repairs, want)
			}

			c.ring.setDown("n1")
			c.transport.setFault(failAll, "n1")
			got, err = c.query("n2", quorum, tt.query)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("%s at QUORUM through n2 with n1 down = %q, %v; want %q (monotonic)", tt.query, got, err, tt.want)
			}
		})
	}
}

// TestReadRepairRefusedGoesElsewhere: when the stale replica a QUORUM read contacted refuses
// its repair (a full disk), the read's whole result goes to the replica it did not ask, and the
// read succeeds: the result is on a quorum, so a later QUORUM read without the first replica
// sees it too.
func TestReadRepairRefusedGoesElsewhere(t *testing.T) {
	for _, tt := range readRepairCases() {
		t.Run(tt.name, func(t *testing.T) {
			c, stale := tt.setUp(t)
			c.transport.setFault(failWrites, "n2")
			got, err := c.query("n1", quorum, tt.query)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("%s at QUORUM through n1, n2 refusing writes = %q, %v; want %q", tt.query, got, err, tt.want)
			}
			if got := c.localRows("n2", "SELECT * FROM t WHERE k = 'a'"); !slices.Equal(got, stale) {
				t.Errorf("n2, which refused its repair, holds %q, want %q (stale)", got, stale)
			}
			if got := c.localRows("n3", "SELECT * FROM t WHERE k = 'a'"); !slices.Equal(got, tt.repaired) {
				t.Errorf("n3, not asked by the read, holds %q, want %q (the result written to it)", got, tt.repaired)
			}
			if _, _, repairs := c.observer.snapshot(); !slices.Equal(repairs, []string{"ks.t 1 additional"}) {
				t.Errorf("Observer saw read repairs %q, want one that went elsewhere", repairs)
			}
			c.transport.clearFaults()
			c.ring.setDown("n1")
			c.transport.setFault(failAll, "n1")
			if got, err := c.query("n2", quorum, tt.query); err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("%s at QUORUM through n2 with n1 down = %q, %v; want %q (monotonic)", tt.query, got, err, tt.want)
			}
		})
	}
	t.Run("no replica left", func(t *testing.T) {
		c, _ := readRepairCases()[0].setUp(t)
		c.transport.setFault(failWrites, "n2", "n3")
		_, err := c.exec("n1", quorum, "SELECT * FROM t WHERE k = 'a'")
		var fe *coordinator.FailureError
		if !errors.As(err, &fe) || fe.Received != 1 || fe.Required != 2 {
			t.Errorf("a QUORUM read whose repairs n2 and n3 both refuse: %v, want a failure with 1 of 2 replicas", err)
		}
		if _, _, repairs := c.observer.snapshot(); !slices.Equal(repairs, []string{"ks.t 1 failed"}) {
			t.Errorf("Observer saw read repairs %q, want one failed", repairs)
		}
	})
}

func TestReadRepairAtAllAndNotAtOne(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.transport.setFault(failWrites, "n2", "n3")
	if _, err := c.exec("n1", one, "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.transport.clearFaults()
	stmt := "SELECT * FROM t WHERE k = 'a'"
	// At ONE through n2, only n2 is read: it has nothing, and nothing is repaired.
	if got, err := c.query("n2", one, stmt); err != nil || len(got) != 0 {
		t.Fatalf("%s at ONE through the stale n2 = %q, %v; want no rows", stmt, got, err)
	}
	if got := c.localRows("n1", stmt); len(got) != 1 {
		t.Fatalf("n1 holds %q, want the row", got)
	}
	// At ALL every replica is read and both stale ones are repaired.
	if got, err := c.query("n2", all, stmt); err != nil || len(got) != 1 {
		t.Fatalf("%s at ALL = %q, %v; want the row", stmt, got, err)
	}
	for _, n := range []coordinator.NodeID{"n2", "n3"} {
		if got := c.localRows(n, stmt); len(got) != 1 {
			t.Errorf("after the read at ALL, %s holds %q, want the row", n, got)
		}
	}
	if _, _, repairs := c.observer.snapshot(); !slices.Equal(repairs, []string{"ks.t 2 ok"}) {
		t.Errorf("Observer saw read repairs %q, want one of 2 replicas", repairs)
	}
}

// TestReadRepairTimeout: a read whose repair is not acknowledged in time fails, so that a
// QUORUM read never returns data that a later QUORUM read could miss.
func TestReadRepairTimeout(t *testing.T) {
	c := newCluster(t, options{readTimeout: 500 * time.Millisecond})
	c.must(schemaRF3...)
	c.transport.setFault(failWrites, "n2", "n3")
	if _, err := c.exec("n1", one, "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.transport.setFault(hangWrites, "n2")
	_, err := c.exec("n1", quorum, "SELECT * FROM t WHERE k = 'a'")
	var te *coordinator.TimeoutError
	want := coordinator.TimeoutError{Op: coordinator.OpRead, Consistency: coordinator.Quorum, Received: 1, Required: 2}
	if !errors.As(err, &te) || *te != want {
		t.Errorf("a QUORUM read whose repair of n2 hangs: %v, want %v", err, &want)
	}
	if _, _, repairs := c.observer.snapshot(); !slices.Equal(repairs, []string{"ks.t 1 timeout"}) {
		t.Errorf("Observer saw read repairs %q, want one timed out", repairs)
	}
}

// TestNoLocalLimiter: without a local limiter, a coordinator that is a replica lets the
// replicas enforce.
func TestNoLocalLimiter(t *testing.T) {
	c := newCluster(t, options{})
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v text) WITH per_partition_rate_limit = {'max_writes_per_second': 1}",
	)
	e, err := shell.NewExecutor(shell.Config{
		LocalID: "n1", Ring: c.ring, Transport: c.transport, Schema: c.schema, Now: c.clock.Now,
		Draw: func() float64 { return 0.99 },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	req := coordinator.Statement{Text: "INSERT INTO ks.t (k, v) VALUES ('hot', 'x')", Consistency: quorum}
	for i := range 2 {
		if _, err := e.Execute(context.Background(), req); err != nil {
			t.Fatalf("write %d of 2 at limit 1: %v", i+1, err)
		}
		// A QUORUM write answers after two acks; its third replica may count it later. Were
		// two replicas each still to count one of the writes, the third would find two of them
		// at counter 2 and admit it. Let every replica count every write first.
		e.WaitIdle()
	}
	_, err = e.Execute(context.Background(), req)
	var rl *coordinator.RateLimitError
	if !errors.As(err, &rl) || rl.RejectedBy != coordinator.RejectedByReplicas {
		t.Errorf("write 3 at limit 1 without a local limiter: %v, want a rejection by replicas", err)
	}
}

// TestShortReadIsCompleted: n2 deleted the first rows but n1 did not hear of it. A QUORUM read
// with LIMIT 2 gets n1's first two rows, which n2's tombstones delete; the coordinator must read
// past them rather than return fewer rows than exist.
func TestShortReadIsCompleted(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	for i := 1; i <= 4; i++ {
		c.must(fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('a', %d, 'v%d')", i, i))
	}
	c.transport.setFault(failWrites, "n1", "n3")
	for _, s := range []string{"DELETE FROM t WHERE k = 'a' AND c = 1", "DELETE FROM t WHERE k = 'a' AND c = 2"} {
		c.clock.Advance(time.Millisecond)
		if _, err := c.exec("n2", one, s); err != nil {
			t.Fatal(err)
		}
	}
	c.settle()
	c.transport.clearFaults()
	got, err := c.query("n1", quorum, "SELECT c, v FROM t WHERE k = 'a' LIMIT 2")
	if want := []string{"3 'v3'", "4 'v4'"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("SELECT ... LIMIT 2 at QUORUM with disagreeing replicas = %q, %v; want %q", got, err, want)
	}
}

func TestRateLimitCoordinatorIsReplica(t *testing.T) {
	c := newCluster(t, options{draw: 0.99})
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text, c int, v text, w int, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 5, 'max_reads_per_second': 5}",
	)
	tests := []struct {
		op   string
		stmt func(i int) string
	}{
		{"write", func(i int) string { return fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('hot', %d, 'x')", i) }},
		{"read", func(i int) string { return "SELECT * FROM t WHERE k = 'hot'" }},
	}
	for _, tt := range tests {
		// 2L = 10 operations in one second are always admitted; with r = 0.99 the 11th is not.
		for i := range 10 {
			if _, err := c.exec("n1", quorum, tt.stmt(i)); err != nil {
				t.Fatalf("%s %d of 10 at limit 5: %v", tt.op, i+1, err)
			}
		}
		// The QUORUM writes answered after two acks; let their last replica calls land before
		// counting the calls the rejection makes.
		c.settle()
		calls := c.transport.totalCalls()
		_, err := c.exec("n1", quorum, tt.stmt(10))
		var rl *coordinator.RateLimitError
		if !errors.As(err, &rl) {
			t.Fatalf("%s 11 at limit 5: %v, want a *RateLimitError", tt.op, err)
		}
		want := coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: opOf(tt.op), RejectedBy: coordinator.RejectedByCoordinator, Limit: 5, Count: 11, RetryAfter: 750 * time.Millisecond}
		if *rl != want {
			t.Errorf("%s 11 at limit 5: %+v, want %+v", tt.op, *rl, want)
		}
		if n := c.transport.totalCalls() - calls; n != 0 {
			t.Errorf("the coordinator's rejection of %s 11 made %d replica calls, want 0", tt.op, n)
		}
		wantMsg := fmt.Sprintf("rate limit exceeded for %ss on ks.t (limit 5/s), rejected by coordinator; retry after 750ms", tt.op)
		if err.Error() != wantMsg {
			t.Errorf("rejection message %q, want %q", err, wantMsg)
		}
		// Another partition of the same table is unaffected.
		if _, err := c.exec("n1", quorum, "INSERT INTO t (k, c, v) VALUES ('cold', 1, 'x')"); err != nil {
			t.Errorf("a write to another partition after %s rejections: %v", tt.op, err)
		}
		if _, err := c.exec("n1", quorum, "SELECT * FROM t WHERE k = 'cold'"); err != nil {
			t.Errorf("a read of another partition after %s rejections: %v", tt.op, err)
		}
	}
	_, rateLimited, _ := c.observer.snapshot()
	if want := []string{"ks.t write coordinator", "ks.t read coordinator"}; !slices.Equal(rateLimited, want) {
		t.Errorf("Observer saw rate limiting %q, want %q", rateLimited, want)
	}

	c.must("ALTER TABLE ks.t WITH per_partition_rate_limit = {}")
	for i := range 5 {
		if _, err := c.exec("n1", quorum, fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('hot', %d, 'y')", 100+i)); err != nil {
			t.Errorf("write %d to the hot partition after ALTER ... {}: %v, want no limit", i, err)
		}
		if _, err := c.exec("n1", quorum, "SELECT * FROM t WHERE k = 'hot'"); err != nil {
			t.Errorf("read %d of the hot partition after ALTER ... {}: %v, want no limit", i, err)
		}
	}
}

func opOf(s string) coordinator.Op {
	if s == "read" {
		return coordinator.OpRead
	}
	return coordinator.OpWrite
}

// TestRateLimitReplicasEnforce: with RF 1 and the ring placing every partition on n2, n1 is not
// a replica: it sends with ACCOUNT_AND_ENFORCE and n2 rejects.
func TestRateLimitReplicasEnforce(t *testing.T) {
	c := newCluster(t, options{draw: 0.99, order: []coordinator.NodeID{"n2", "n3", "n1"}})
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k text, c int, v text, w int, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 5}",
	)
	for i := range 10 {
		if _, err := c.exec("n1", one, fmt.Sprintf("INSERT INTO t (k, c) VALUES ('hot', %d)", i)); err != nil {
			t.Fatalf("write %d of 10 at limit 5: %v", i+1, err)
		}
	}
	_, err := c.exec("n1", one, "INSERT INTO t (k, c) VALUES ('hot', 10)")
	var rl *coordinator.RateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("write 11 at limit 5: %v, want a *RateLimitError", err)
	}
	want := coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: coordinator.OpWrite, RejectedBy: coordinator.RejectedByReplicas, Limit: 5, Count: 11, RetryAfter: 750 * time.Millisecond}
	if *rl != want {
		t.Errorf("write 11 at limit 5: %+v, want %+v", *rl, want)
	}
	if _, err := c.exec("n1", one, "INSERT INTO t (k, c) VALUES ('cold', 1)"); err != nil {
		t.Errorf("a write to another partition: %v", err)
	}
	// Reads have no limit on this table.
	if got, err := c.query("n1", one, "SELECT c FROM t WHERE k = 'hot' LIMIT 1"); err != nil || len(got) != 1 {
		t.Errorf("a read of the hot partition = %q, %v; want one row (reads are not limited)", got, err)
	}
}

func TestUnavailable(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.ring.setDown("n2", "n3")
	tests := []struct {
		stmt string
		cl   coordinator.Consistency
		want *coordinator.UnavailableError // nil: succeeds
	}{
		{"INSERT INTO t (k, c) VALUES ('a', 1)", quorum, &coordinator.UnavailableError{Consistency: coordinator.Quorum, Live: 1, Required: 2}},
		{"INSERT INTO t (k, c) VALUES ('a', 1)", all, &coordinator.UnavailableError{Consistency: coordinator.All, Live: 1, Required: 3}},
		{"SELECT * FROM t WHERE k = 'a'", quorum, &coordinator.UnavailableError{Consistency: coordinator.Quorum, Live: 1, Required: 2}},
		{"INSERT INTO t (k, c) VALUES ('a', 1)", one, nil},
		{"SELECT * FROM t WHERE k = 'a'", one, nil},
	}
	for _, tt := range tests {
		calls := c.transport.totalCalls()
		_, err := c.exec("n1", tt.cl, tt.stmt)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s at %v with one live replica: %v, want success", tt.stmt, tt.cl, err)
			}
			continue
		}
		var ue *coordinator.UnavailableError
		if !errors.As(err, &ue) || *ue != *tt.want {
			t.Errorf("%s at %v with one live replica: %v, want %v", tt.stmt, tt.cl, err, tt.want)
		}
		if n := c.transport.totalCalls() - calls; n != 0 {
			t.Errorf("%s at %v, unavailable, made %d replica calls, want 0", tt.stmt, tt.cl, n)
		}
	}
}

func TestTimeout(t *testing.T) {
	tests := []struct {
		name string
		stmt string
		cl   coordinator.Consistency
		hang []coordinator.NodeID
		want coordinator.TimeoutError
	}{
		{"a write at QUORUM", "INSERT INTO t (k, c) VALUES ('a', 1)", quorum, []coordinator.NodeID{"n2", "n3"},
			coordinator.TimeoutError{Op: coordinator.OpWrite, Consistency: coordinator.Quorum, Received: 1, Required: 2}},
		{"a write at ALL", "INSERT INTO t (k, c) VALUES ('a', 1)", all, []coordinator.NodeID{"n3"},
			coordinator.TimeoutError{Op: coordinator.OpWrite, Consistency: coordinator.All, Received: 2, Required: 3}},
		// Reads ask a spare replica when one is silent (speculative_retry), so they time out
		// only when the spares are silent too.
		{"a read at QUORUM", "SELECT * FROM t WHERE k = 'a'", quorum, []coordinator.NodeID{"n2", "n3"},
			coordinator.TimeoutError{Op: coordinator.OpRead, Consistency: coordinator.Quorum, Received: 1, Required: 2}},
		{"a read at ONE", "SELECT * FROM t WHERE k = 'a'", one, []coordinator.NodeID{"n1", "n2", "n3"},
			coordinator.TimeoutError{Op: coordinator.OpRead, Consistency: coordinator.One, Received: 0, Required: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, options{writeTimeout: 500 * time.Millisecond, readTimeout: 500 * time.Millisecond})
			c.must(schemaRF3...)
			c.transport.setFault(hang, tt.hang...)
			_, err := c.exec("n1", tt.cl, tt.stmt)
			var te *coordinator.TimeoutError
			if !errors.As(err, &te) || *te != tt.want {
				t.Fatalf("%s with %v never answering: %v, want %v", tt.stmt, tt.hang, err, &tt.want)
			}
			// Close cancels the calls still hanging and waits for their goroutines.
			c.executors["n1"].Close()
		})
	}
}

// TestReplicaCallPanicCountsAsItsFailure: a replica call that panics (a bug) is logged with its
// stack and counts as that replica's failure: a QUORUM write still succeeds on the other two,
// a write at ALL fails as the replica's failure would make it, and the process goes on.
func TestReplicaCallPanicCountsAsItsFailure(t *testing.T) {
	var logged lockedbuf.Buffer
	c := newCluster(t, options{logger: slog.New(slog.NewTextHandler(&logged, nil))})
	c.must(schemaRF3...)
	c.transport.setFault(panics, "n3")
	if _, err := c.exec("n1", quorum, "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')"); err != nil {
		t.Fatalf("a QUORUM write whose call to n3 panics: %v, want success on n1 and n2", err)
	}
	if _, err := c.exec("n1", all, "INSERT INTO t (k, c, v) VALUES ('a', 2, 'y')"); err == nil {
		t.Error("a write at ALL whose call to n3 panics succeeded, want it to fail")
	}
	if log := logged.String(); !strings.Contains(log, "a bug in the call to n3") || !strings.Contains(log, "goroutine") {
		t.Errorf("the log does not hold the panic and its stack:\n%s", log)
	}
}

// TestClientDeadline: a client deadline shorter than the coordinator's timeout wins.
func TestClientDeadline(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.transport.setFault(hang, "n2", "n3")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.executors["n1"].Execute(ctx, coordinator.Statement{Text: "INSERT INTO ks.t (k, c) VALUES ('a', 1)", Consistency: quorum})
	var te *coordinator.TimeoutError
	want := coordinator.TimeoutError{Op: coordinator.OpWrite, Consistency: coordinator.Quorum, Received: 1, Required: 2}
	if !errors.As(err, &te) || *te != want {
		t.Errorf("a QUORUM write with a 300ms client deadline and two hanging replicas: %v, want %v", err, &want)
	}
}

// TestWriteReachesSlowReplicasAfterAnswer: a write at ONE answers after the first ack, but the
// other replicas still get the write.
func TestWriteReachesSlowReplicasAfterAnswer(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	if _, err := c.exec("n1", one, "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	for _, n := range nodes {
		if got := c.localRows(n, "SELECT c, v FROM t WHERE k = 'a'"); !slices.Equal(got, []string{"1 'x'"}) {
			t.Errorf("after a write at ONE, %s holds %q, want the row", n, got)
		}
	}
}

func TestWriteTimestamps(t *testing.T) {
	c := newCluster(t, options{}) // the clock stands still: only the tie-breaker orders writes
	c.must(schemaRF3...)
	const workers, writes = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*writes)
	for w := range workers {
		wg.Go(func() {
			for i := range writes {
				_, err := c.exec("n1", all, fmt.Sprintf("INSERT INTO t (k, c) VALUES ('w%d', %d)", w, i))
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Every replica got every write; the writes of one worker are sequential, so their
	// timestamps must increase, and no two writes may share one.
	byTimestamp := make(map[int64]string)
	byWrite := make(map[string]int64)
	c.transport.mu.Lock()
	defer c.transport.mu.Unlock()
	for _, m := range c.transport.mutated {
		row := m.Mutation.Rows[0]
		ts := *row.Marker
		write := fmt.Sprintf("%s/%x", m.Mutation.PartitionKey[0], row.Clustering[0])
		if other, ok := byTimestamp[ts]; ok && other != write {
			t.Fatalf("timestamp %d was assigned to two writes (%s and %s)", ts, other, write)
		}
		if other, ok := byWrite[write]; ok && other != ts {
			t.Fatalf("write %s reached replicas with timestamps %d and %d", write, other, ts)
		}
		byTimestamp[ts], byWrite[write] = write, ts
	}
	if len(byWrite) != workers*writes {
		t.Fatalf("%d distinct writes reached the replicas, want %d", len(byWrite), workers*writes)
	}
	base := c.clock.Now().UnixMicro()
	for w := range workers {
		prev := base - 1
		for i := range writes {
			ts := byWrite[fmt.Sprintf("w%d/%x", w, schema.EncodeInt(int32(i)))]
			if ts <= prev {
				t.Errorf("worker %d's write %d has timestamp %d, want more than its previous write's %d", w, i, ts, prev)
			}
			prev = ts
		}
	}
}

func TestUsingTimestampOverrides(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.must("INSERT INTO t (k, c) VALUES ('a', 1) USING TIMESTAMP 42")
	c.transport.mu.Lock()
	m := c.transport.mutated[len(c.transport.mutated)-1]
	c.transport.mu.Unlock()
	if ts := *m.Mutation.Rows[0].Marker; ts != 42 {
		t.Errorf("INSERT ... USING TIMESTAMP 42 wrote at %d, want 42", ts)
	}
	_, err := c.exec("n1", one, "INSERT INTO t (k, c) VALUES ('a', 1) USING TIMESTAMP -9223372036854775808")
	var ie *coordinator.InvalidError
	if !errors.As(err, &ie) {
		t.Errorf("USING TIMESTAMP math.MinInt64: %v, want an *InvalidError (reserved)", err)
	}
}

func TestInvalidStatements(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	tests := []struct {
		stmt string
		cl   coordinator.Consistency
		want string // the error message
	}{
		{"SELEC * FROM t", one, "1:1: expected statement, found identifier SELEC"},
		{"INSERT INTO t (k, c) VALUES ('a', 1); SELECT * FROM t WHERE k = 'a'", one, "1:39: one statement per request, found 2"},
		{"", one, "no statement: the request is empty"},
		{"SELECT * FROM nope WHERE k = 'a'", one, "1:15: unknown table ks.nope"},
		{"SELECT * FROM other.t WHERE k = 'a'", one, "1:15: unknown keyspace other"},
		{"SELECT * FROM t WHERE k = 'a' AND v = 'x'", one, "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"},
		{"INSERT INTO t (k, c, zz) VALUES ('a', 1, 2)", one, "unknown column zz in table ks.t"},
		{"INSERT INTO t (k, c) VALUES ('a', 1)", coordinator.Consistency(42), "unknown consistency level 42 (valid: ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL)"},
		{"CREATE TABLE t (k text PRIMARY KEY)", one, "1:14: table ks.t already exists"},
		{"USE nowhere", one, "1:5: unknown keyspace nowhere"},
		{"ALTER KEYSPACE nowhere WITH durable_writes = true", one, "1:16: unknown keyspace nowhere"},
		{"ALTER KEYSPACE system_schema WITH durable_writes = true", one, "system keyspace system_schema is not user-modifiable: kvnode computes the system keyspaces on each node"},
		{"ALTER KEYSPACE ks WITH rate_limit = {'max_reads_per_second': 0}", one, "keyspace ks: rate_limit: 'max_reads_per_second' = 0 is zero; a limit is a positive integer (leave the key out for no limit)"},
		{"DESCRIBE TABLE nope", one, "1:16: unknown table ks.nope"},
		{"DESCRIBE TABLE nope WITH INTERNALS", one, "1:16: unknown table ks.nope"},
		{"CREATE MATERIALIZED VIEW v AS SELECT * FROM t PRIMARY KEY (k)", one, "1:8: materialized views are not supported: to query a table by a regular column, create a secondary index on it (CREATE INDEX ON ks.t (col)), or keep a second table written beside it"},
	}
	for _, tt := range tests {
		_, err := c.exec("n1", tt.cl, tt.stmt)
		var ie *coordinator.InvalidError
		if !errors.As(err, &ie) || err.Error() != tt.want {
			t.Errorf("%q: %v, want an *InvalidError %q", tt.stmt, err, tt.want)
		}
	}
}

func TestSchemaStatements(t *testing.T) {
	c := newCluster(t, options{})
	tests := []struct {
		stmt string
		want string // the result, formatted by describeResult
	}{
		{"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", "CREATED ks"},
		{"CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", "void"},
		{"CREATE TABLE t (k text PRIMARY KEY, v int)", "CREATED ks.t"},
		{"ALTER TABLE ks.t WITH per_partition_rate_limit = {'max_reads_per_second': 10}", "UPDATED ks.t"},
		{"ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", "UPDATED ks"},
		{"ALTER KEYSPACE IF EXISTS nope WITH durable_writes = true", "void"},
		{"USE ks", "keyspace ks"},
		{"DESCRIBE KEYSPACES", "description ks\n"},
		{"DESCRIBE TABLES", "description t\n"},
		{"DESCRIBE CLUSTER", "description cluster test: 3 nodes"},
		{"DROP TABLE t", "DROPPED ks.t"},
		{"DROP TABLE IF EXISTS t", "void"},
		{"DROP KEYSPACE ks", "DROPPED ks"},
		{"DROP KEYSPACE IF EXISTS ks", "void"},
		{"DROP TABLE IF EXISTS ks.t", "void"},
		{"DROP TABLE IF EXISTS nope.t", "void"},
	}
	for _, tt := range tests {
		resp, err := c.exec("n2", one, tt.stmt)
		if err != nil {
			t.Fatalf("%s: %v", tt.stmt, err)
		}
		if got := describeResult(resp); got != tt.want {
			t.Errorf("%s returned %q, want %q", tt.stmt, got, tt.want)
		}
	}
}

// TestDescribeWithInternals checks DESCRIBE ... WITH INTERNALS, which gocql sends on every
// metadata refresh and reads as Cassandra 4's rows: (keyspace_name, type, name,
// create_statement).
func TestDescribeWithInternals(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	resp, err := c.exec("n1", one, "DESCRIBE KEYSPACE ks WITH INTERNALS")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Kind != coordinator.ResultRows || len(resp.Rows.Columns) != 4 || resp.Rows.Columns[3].Name != "create_statement" {
		t.Fatalf("DESCRIBE KEYSPACE ks WITH INTERNALS = %v, want rows of 4 columns ending in create_statement", resp)
	}
	var got []string
	for _, row := range resp.Rows.Values {
		got = append(got, string(row[0])+" "+string(row[1])+" "+string(row[2])+": "+strings.SplitN(string(row[3]), " (", 2)[0])
	}
	want := []string{"ks keyspace ks: CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3};", "ks table t: CREATE TABLE ks.t"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DESCRIBE KEYSPACE ks WITH INTERNALS rows = %q, want %q", got, want)
	}
}

// systemTables is a SystemTables that only describes: keyspace system with one table.
type systemTables struct{}

func (systemTables) Select(context.Context, *cql.SelectStmt, string, []coordinator.Value) (coordinator.Result, bool, error) {
	return coordinator.Result{}, false, nil
}

func (systemTables) Prepare(*cql.SelectStmt, string) ([]coordinator.Variable, []coordinator.RowColumn, bool, error) {
	return nil, nil, false, nil
}

func (systemTables) HasKeyspace(name string) bool { return name == "system" }

func (systemTables) Describe(ks, table string) ([]schema.Element, bool) {
	if ks != "system" || (table != "" && table != "local") {
		return nil, false
	}
	var els []schema.Element
	if table == "" {
		els = append(els, schema.Element{Keyspace: "system", Type: "keyspace", Name: "system", CreateStatement: "CREATE KEYSPACE system"})
	}
	return append(els, schema.Element{Keyspace: "system", Type: "table", Name: "local", CreateStatement: "CREATE TABLE system.local"}), true
}

// TestDescribeSystemKeyspace checks that DESCRIBE of a system keyspace or table, which the schema
// does not hold, is answered by the system tables, as rows WITH INTERNALS (gocql's tests send
// DESCRIBE KEYSPACE system WITH INTERNALS) and as text without; what they do not know stays an
// unknown keyspace or table.
func TestDescribeSystemKeyspace(t *testing.T) {
	c := newCluster(t, options{system: systemTables{}})
	tests := []struct{ stmt, want string }{
		{"DESCRIBE KEYSPACE system WITH INTERNALS", "system keyspace system: CREATE KEYSPACE system|system table local: CREATE TABLE system.local"},
		{"DESCRIBE TABLE system.local WITH INTERNALS", "system table local: CREATE TABLE system.local"},
		{"DESCRIBE KEYSPACE system", "description CREATE KEYSPACE system\n\nCREATE TABLE system.local\n"},
		{"DESCRIBE TABLE system.local", "description CREATE TABLE system.local\n"},
	}
	for _, tt := range tests {
		resp, err := c.exec("n1", one, tt.stmt)
		if err != nil {
			t.Fatalf("%s: %v", tt.stmt, err)
		}
		var got string
		if resp.Kind == coordinator.ResultRows {
			var rows []string
			for _, row := range resp.Rows.Values {
				rows = append(rows, string(row[0])+" "+string(row[1])+" "+string(row[2])+": "+string(row[3]))
			}
			got = strings.Join(rows, "|")
		} else {
			got = describeResult(resp)
		}
		if got != tt.want {
			t.Errorf("%s = %q, want %q", tt.stmt, got, tt.want)
		}
	}
	for _, stmt := range []string{"DESCRIBE TABLE system.nope WITH INTERNALS", "DESCRIBE KEYSPACE nope WITH INTERNALS"} {
		var ie *coordinator.InvalidError
		if _, err := c.exec("n1", one, stmt); !errors.As(err, &ie) {
			t.Errorf("%s: %v, want an InvalidError", stmt, err)
		}
	}
}

func describeResult(resp coordinator.Result) string {
	switch resp.Kind {
	case coordinator.ResultSchemaChange:
		sc := resp.SchemaChange
		name := sc.Keyspace
		if sc.Table != "" {
			name += "." + sc.Table
		}
		if (sc.Target == coordinator.TargetTable) != (sc.Table != "") {
			return fmt.Sprintf("bad schema change %+v", sc)
		}
		return sc.Change.String() + " " + name
	case coordinator.ResultVoid:
		return "void"
	case coordinator.ResultSetKeyspace:
		return "keyspace " + resp.Keyspace
	case coordinator.ResultDescription:
		return "description " + resp.Description
	}
	return fmt.Sprint(resp)
}

func TestSchemaManagerFailureIsInternal(t *testing.T) {
	c := newCluster(t, options{})
	c.schema.fail = errors.New("disk full")
	_, err := c.exec("n1", one, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	var ie *coordinator.InvalidError
	if err == nil || errors.As(err, &ie) || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("CREATE KEYSPACE with a failing schema manager: %v, want an internal error saying disk full", err)
	}
}

func TestObserverSeesEveryRequest(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.exec("n1", quorum, "INSERT INTO t (k, c) VALUES ('a', 1)")
	c.exec("n1", one, "SELECT * FROM t WHERE k = 'a'")
	c.exec("n1", one, "SELEC")
	c.ring.setDown("n2", "n3")
	c.exec("n1", all, "SELECT * FROM t WHERE k = 'a'")
	c.exec("n1", one, "USE ks")
	requests, _, _ := c.observer.snapshot()
	want := []string{"schema ok", "schema ok", "write QUORUM ok", "read ONE ok", "other invalid", "read ALL unavailable", "other ok"}
	if !slices.Equal(requests, want) {
		t.Errorf("Observer saw %q, want %q", requests, want)
	}
}

func TestExecuteAfterClose(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	e := c.executors["n1"]
	e.Close()
	if _, err := c.exec("n1", one, "INSERT INTO t (k, c) VALUES ('a', 1)"); !errors.Is(err, coordinator.ErrClosed) {
		t.Errorf("a write after Close: %v, want ErrClosed", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("a second Close: %v, want nil", err)
	}
}

func TestCloseStopsRunningRequests(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.transport.mu.Lock()
	c.transport.hanging = make(chan coordinator.NodeID, 2)
	c.transport.mu.Unlock()
	c.transport.setFault(hang, "n2", "n3")
	errc := make(chan error, 1)
	go func() {
		_, err := c.exec("n1", quorum, "INSERT INTO t (k, c) VALUES ('a', 1)")
		errc <- err
	}()
	<-c.transport.hanging
	<-c.transport.hanging
	c.executors["n1"].Close()
	if err := <-errc; !errors.Is(err, coordinator.ErrClosed) {
		t.Errorf("a write waiting for hanging replicas when the executor closes: %v, want ErrClosed", err)
	}
}

func TestNewExecutorValidates(t *testing.T) {
	ok := shell.Config{LocalID: "n1", Ring: &ring{}, Transport: &transport{}, Schema: newSchemaManager("n1", newClock())}
	tests := []struct {
		name   string
		modify func(*shell.Config)
		want   string
	}{
		{"no id", func(c *shell.Config) { c.LocalID = "" }, "coordinator: Config.LocalID is empty"},
		{"no ring", func(c *shell.Config) { c.Ring = nil }, "coordinator: Config.Ring is nil"},
		{"no transport", func(c *shell.Config) { c.Transport = nil }, "coordinator: Config.Transport is nil"},
		{"no schema", func(c *shell.Config) { c.Schema = nil }, "coordinator: Config.Schema is nil"},
		{"negative write timeout", func(c *shell.Config) { c.WriteTimeout = -time.Second }, "coordinator: Options.WriteTimeout (write_timeout) is -1s, want a positive duration"},
		{"negative read timeout", func(c *shell.Config) { c.ReadTimeout = -time.Second }, "coordinator: Options.ReadTimeout (read_timeout) is -1s, want a positive duration"},
		{"negative timestamp bound", func(c *shell.Config) { c.MaxTimestampAhead = -time.Hour }, "coordinator: Options.MaxTimestampAhead (max_timestamp_ahead) is -1h0m0s, want a positive duration"},
		{"negative propagation interval", func(c *shell.Config) { c.PropagationInterval = -1 }, "coordinator: Options.PropagationInterval is -1ns, want a positive duration"},
		{"negative mutation size", func(c *shell.Config) { c.MaxMutationSize = -1 }, "coordinator: Options.MaxMutationSize (max_mutation_size) is -1, want a positive number of bytes"},
		{"statement size over int32", func(c *shell.Config) { c.MaxStatementSize = 1 << 31 }, "coordinator: Options.MaxStatementSize (max_statement_size) is 2147483648, want 1 to 2147483647 bytes"},
		{"page over uint32", func(c *shell.Config) { c.ReadPageBytes = 1 << 32 }, "coordinator: Options.ReadPageBytes is 4294967296, want 1 to 4294967295 bytes"},
	}
	for _, tt := range tests {
		cfg := ok
		tt.modify(&cfg)
		if _, err := shell.NewExecutor(cfg); err == nil || err.Error() != tt.want {
			t.Errorf("NewExecutor with %s: %v, want %q", tt.name, err, tt.want)
		}
	}
	if e, err := shell.NewExecutor(ok); err != nil {
		t.Errorf("NewExecutor with the required fields: %v", err)
	} else {
		e.Close()
	}
}

var _ shell.SchemaManager = (*schemaManager)(nil)

// TestAlterKeyspaceWarnsToRepair: raising a keyspace's replication factor warns, as Cassandra
// 4.1 does, that the new replicas need a repair; lowering it does not.
func TestAlterKeyspaceWarnsToRepair(t *testing.T) {
	c := newCluster(t, options{})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	for _, tt := range []struct {
		rf   int
		warn bool
	}{{3, true}, {2, false}, {2, false}} {
		resp, err := c.exec("n1", one, fmt.Sprintf("ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", tt.rf))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(strings.Join(resp.Warnings, "\n"), "When increasing replication factor you need to run a repair")
		if got != tt.warn || describeResult(resp) != "UPDATED ks" {
			t.Errorf("ALTER KEYSPACE to RF %d: %s, warnings %q; want UPDATED ks and a repair warning %v", tt.rf, describeResult(resp), resp.Warnings, tt.warn)
		}
	}
}
