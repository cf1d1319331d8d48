package model

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/testcluster"
)

// TestEveryRowReadableThroughEveryNodeRF1 is the reproduction of the bug that motivated this
// package: a row of a table without clustering columns crossed gRPC with a nil clustering key,
// and the coordinator's merge took nil for its end marker, so a node answered only for the rows
// it stored itself (3 nodes, RF 1: 5, 10 and 15 of 30 rows). Every row inserted through node 1
// must be read back through every node.
func TestEveryRowReadableThroughEveryNodeRF1(t *testing.T) {
	ctx := context.Background()
	tc, err := testcluster.Start(ctx, testcluster.Options{Dir: t.TempDir(), Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	c1 := tc.Node(0).Client()
	mustExec(t, c1, client.One, "CREATE KEYSPACE j WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	mustExec(t, c1, client.One, "CREATE TABLE j.t (k int PRIMARY KEY, v int)")
	const rows = 30
	for k := range rows {
		mustExec(t, c1, client.One, fmt.Sprintf("INSERT INTO j.t (k, v) VALUES (%d, %d)", k, 100+k))
	}
	for _, n := range tc.Nodes() {
		found := 0
		var missing []int
		for k := range rows {
			res := mustExec(t, n.Client(), client.One, fmt.Sprintf("SELECT k, v FROM j.t WHERE k = %d", k))
			switch {
			case len(res.Rows) == 0:
				missing = append(missing, k)
			case len(res.Rows) != 1 || res.Rows[0][0] != int32(k) || res.Rows[0][1] != int32(100+k):
				t.Errorf("SELECT k, v FROM j.t WHERE k = %d through %s = %v, want [[%d %d]]", k, n.Name, res.Rows, k, 100+k)
			default:
				found++
			}
		}
		if found != rows {
			t.Errorf("through %s, %d of %d rows inserted through n1 were read back, want all; missing keys %v", n.Name, found, rows, missing)
		}
	}
}

// mustExec runs stmt at cl through c and fails the test on error.
func mustExec(t *testing.T, c *client.Client, cl client.Consistency, stmt string) *client.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Execute(ctx, cl, stmt)
	if err != nil {
		t.Fatalf("%s at %v through %s: %v", stmt, cl, c.Addr(), err)
	}
	return res
}
