package node_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/schema"
	"github.com/kvnode/kvnode/snapshot"
)

// selectOne returns the one row of stmt, read at ALL through c, or nil if it has none.
func selectOne(t *testing.T, c *client.Client, stmt string) []any {
	t.Helper()
	rows := exec(t, c, client.All, stmt).Rows
	switch len(rows) {
	case 0:
		return nil
	case 1:
		return rows[0]
	}
	t.Fatalf("%s: %d rows, want at most 1", stmt, len(rows))
	return nil
}

// TestAlterTableAddDropWhileWriting changes a table's columns through one node while an
// application writes through another: no write fails, every node ends with the same columns,
// a dropped column's data does not come back when a column of its name is added again, and
// the rows written throughout read back.
func TestAlterTableAddDropWhileWriting(t *testing.T) {
	tc := startCluster(t, 3)
	c0, c1, c2 := tc.client(0), tc.client(1), tc.client(2)
	exec(t, c0, client.One, "CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, c0, client.One, "CREATE TABLE r.t (k text PRIMARY KEY, v int, w text)")
	exec(t, c0, client.All, "INSERT INTO r.t (k, v, w) VALUES ('old', 1, 'before the drop')")

	// The application: writes k0, k1, ... at QUORUM until told to stop.
	var written atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, err := c0.Execute(ctx, client.Quorum, fmt.Sprintf("INSERT INTO r.t (k, v) VALUES ('k%d', %d)", i, i))
			cancel()
			if err != nil {
				writeErr = fmt.Errorf("write k%d: %w", i, err)
				return
			}
			written.Add(1)
		}
	}()
	for _, stmt := range []string{
		"ALTER TABLE r.t ADD (x int, y text)",
		"ALTER TABLE r.t DROP w",
		"ALTER TABLE r.t ADD w text",
		"ALTER TABLE r.t DROP (x, y)",
	} {
		exec(t, c1, client.One, stmt)
	}
	close(stop)
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("the application's write failed during the schema changes: %v", writeErr)
	}
	n := written.Load()
	if n == 0 {
		t.Fatalf("the application wrote nothing while the schema changed")
	}
	tc.waitSchema("every node has r.t (k, v, w)", func(s *schema.Schema) bool {
		tb, ok := s.Table("r", "t")
		if !ok || len(tb.Columns) != 3 {
			return false
		}
		_, hasW := tb.Column("w")
		return hasW && len(tb.DroppedColumns()) == 3
	})
	if got := selectOne(t, c2, "SELECT v, w FROM r.t WHERE k = 'old'"); len(got) != 2 || got[0] != int32(1) || got[1] != nil {
		t.Errorf("after DROP w and ADD w, the old row reads %v, want [1 <nil>]: the dropped value came back", got)
	}
	exec(t, c2, client.All, "UPDATE r.t SET w = 'after' WHERE k = 'old'")
	if got := selectOne(t, c0, "SELECT w FROM r.t WHERE k = 'old'"); len(got) != 1 || got[0] != "after" {
		t.Errorf("the re-added column reads %v after a new write, want [after]", got)
	}
	for _, i := range []int64{0, n / 2, n - 1} {
		if got := selectOne(t, c1, fmt.Sprintf("SELECT v FROM r.t WHERE k = 'k%d'", i)); len(got) != 1 || got[0] != int32(i) {
			t.Errorf("row k%d written during the changes reads %v, want [%d]", i, got, i)
		}
	}
}

// TestAlterTableErrors: invalid changes fail as Cassandra 4.1 says, with the column's position.
func TestAlterTableErrors(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(0)
	exec(t, c, client.One, "CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c, client.One, "CREATE TABLE r.t (k text, c int, v int, PRIMARY KEY (k, c))")
	for _, tt := range []struct{ stmt, want string }{
		{"ALTER TABLE r.t ADD v text", "1:21: Column with name 'v' already exists"},
		{"ALTER TABLE r.t DROP k", "1:22: Cannot drop PRIMARY KEY column k"},
		{"ALTER TABLE r.t DROP nope", "1:22: Column nope was not found in table r.t"},
		{"ALTER TABLE r.t RENAME v TO w", "1:24: Cannot rename non PRIMARY KEY column v"},
		{"ALTER TABLE r.t ADD a int, b int", "1:26: expected ';' or end of input, found ','"},
	} {
		err := execErr(c, tt.stmt)
		var ie *client.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(ie.Message, tt.want) {
			t.Errorf("%s: error %v, want an invalid request saying %q", tt.stmt, err, tt.want)
		}
	}
	exec(t, c, client.One, "ALTER TABLE r.t RENAME k TO key AND c TO cl")
	exec(t, c, client.One, "INSERT INTO r.t (key, cl, v) VALUES ('a', 1, 2)")
	if got := selectOne(t, c, "SELECT v FROM r.t WHERE key = 'a' AND cl = 1"); len(got) != 1 || got[0] != int32(2) {
		t.Errorf("after RENAME the row reads %v, want [2]", got)
	}
}

// TestTruncate truncates a table written at ALL: no node returns or stores its rows, late
// writes timestamped before the truncation are discarded, later ones kept, a table beside it
// keeps its data, and while a node is down TRUNCATE is refused as unavailable at ALL.
func TestTruncate(t *testing.T) {
	tc := startCluster(t, 3)
	c := tc.client(0)
	for _, stmt := range []string{
		"CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE r.t (k text PRIMARY KEY, v int)",
		"CREATE TABLE r.keep (k text PRIMARY KEY, v int)",
	} {
		exec(t, c, client.One, stmt)
	}
	for i := range 20 {
		exec(t, c, client.All, fmt.Sprintf("INSERT INTO r.t (k, v) VALUES ('k%d', %d) USING TIMESTAMP 1000", i, i))
		exec(t, c, client.All, fmt.Sprintf("INSERT INTO r.keep (k, v) VALUES ('k%d', %d)", i, i))
	}
	id := tableID(t, tc.nodes[0].Schema(), "r", "t")
	keepID := tableID(t, tc.nodes[0].Schema(), "r", "keep")
	keep := make([]int, 3)
	for i := range tc.nodes {
		keep[i] = tc.tableKeys(i, keepID)
	}
	if res := exec(t, tc.client(1), client.One, "TRUNCATE TABLE r.t"); len(res.Rows) != 0 {
		t.Fatalf("TRUNCATE returned rows %v", res.Rows)
	}
	tc.waitSchema("every node has the truncation", func(s *schema.Schema) bool {
		tb, ok := s.Table("r", "t")
		if !ok {
			return false
		}
		_, truncated := tb.TruncatedAt()
		return truncated
	})
	for i := range tc.nodes {
		if n := tc.tableKeys(i, id); n != 0 {
			t.Errorf("node %d still stores %d keys of r.t after TRUNCATE", i, n)
		}
		// auto_snapshot: each node snapshotted the table before deleting its data.
		infos, err := tc.nodes[i].Snapshots().List()
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != 1 || infos[0].Reason != snapshot.ReasonTruncated || infos[0].Keyspace != "r" || infos[0].Table != "t" {
			t.Errorf("node %d's snapshots after TRUNCATE: %+v, want one of r.t taken because it was truncated", i, infos)
		}
		if n := tc.tableKeys(i, keepID); n != keep[i] {
			t.Errorf("node %d stores %d keys of r.keep after r.t was truncated, want %d", i, n, keep[i])
		}
	}
	for i := range 20 {
		if got := selectOne(t, tc.client(i%3), fmt.Sprintf("SELECT v FROM r.t WHERE k = 'k%d'", i)); got != nil {
			t.Fatalf("k%d reads %v after TRUNCATE, want no row", i, got)
		}
	}
	// A write timestamped before the truncation (an in-flight write, a hint) is discarded; a
	// later one is kept.
	exec(t, c, client.All, "INSERT INTO r.t (k, v) VALUES ('late', 1) USING TIMESTAMP 2000")
	exec(t, c, client.All, "INSERT INTO r.t (k, v) VALUES ('new', 2)")
	if got := selectOne(t, c, "SELECT v FROM r.t WHERE k = 'late'"); got != nil {
		t.Errorf("a write timestamped before the TRUNCATE reads %v, want no row", got)
	}
	if got := selectOne(t, c, "SELECT v FROM r.t WHERE k = 'new'"); len(got) != 1 || got[0] != int32(2) {
		t.Errorf("a write after the TRUNCATE reads %v, want [2]", got)
	}

	tc.stop(2)
	tc.waitLive(20*time.Second, 2)
	err := execErr(c, "TRUNCATE r.t")
	var ue *client.UnavailableError
	if !errors.As(err, &ue) || ue.Consistency != client.All || ue.Live != 2 || ue.Required != 3 {
		t.Fatalf("TRUNCATE with a node down: error %v, want unavailable at ALL, 2 live of 3 required", err)
	}
	if rows := exec(t, c, client.Quorum, "SELECT v FROM r.t WHERE k = 'new'").Rows; len(rows) != 1 {
		t.Errorf("the refused TRUNCATE deleted data: 'new' reads %v", rows)
	}
}
