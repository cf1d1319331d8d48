package node_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
)

// TestLargePartitionOverGRPC reads a partition whose clustering keys alone take more than
// gRPC's default 4 MiB message limit (4,200 rows with 1 KB keys) through every node of a
// 3-node cluster with RF 2, at every consistency level: replicas answer in pages over the
// real internode transport, and every node that is not a replica coordinates the read too.
// The statement selects a small column, so the client's own answer stays small.
func TestLargePartitionOverGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 4 MB through the cluster")
	}
	tc := startCluster(t, 3)
	c := tc.client(0)
	exec(t, c, client.All, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	exec(t, c, client.All, "CREATE TABLE ks.big (k int, c text, v int, PRIMARY KEY (k, c))")
	const rows = 4200
	pad := strings.Repeat("x", 1000)
	for i := range rows {
		exec(t, c, client.All, fmt.Sprintf("INSERT INTO ks.big (k, c, v) VALUES (1, '%05d%s', %d)", i, pad, i))
	}
	for i := range tc.nodes {
		ci := tc.client(i)
		for _, cl := range []client.Consistency{client.One, client.Quorum, client.All} {
			start := time.Now()
			res := exec(t, ci, cl, "SELECT v FROM ks.big WHERE k = 1")
			if len(res.Rows) != rows {
				t.Fatalf("node %d at %v: %d rows, want %d", i, cl, len(res.Rows), rows)
			}
			for j, r := range res.Rows {
				if r[0] != int32(j) {
					t.Fatalf("node %d at %v: row %d has v = %v", i, cl, j, r[0])
				}
			}
			t.Logf("node %d at %v: %d rows in %v", i, cl, rows, time.Since(start))
		}
	}

	// Reversed, over a range tombstone that straddles pages, with and without a limit: every
	// page of a backward scan resumes before the last, and carries the tombstone.
	exec(t, c, client.All, "DELETE FROM ks.big WHERE k = 1 AND c >= '01000' AND c < '03000'")
	var want []int32
	for j := rows - 1; j >= 0; j-- {
		if j < 1000 || j >= 3000 {
			want = append(want, int32(j))
		}
	}
	for i := range tc.nodes {
		for _, limit := range []int{0, 1500} {
			stmt := "SELECT v FROM ks.big WHERE k = 1 ORDER BY c DESC"
			w := want
			if limit > 0 {
				stmt += fmt.Sprintf(" LIMIT %d", limit)
				w = want[:limit]
			}
			res := exec(t, tc.client(i), client.All, stmt)
			if len(res.Rows) != len(w) {
				t.Fatalf("node %d: %s: %d rows, want %d", i, stmt, len(res.Rows), len(w))
			}
			for j, r := range res.Rows {
				if r[0] != w[j] {
					t.Fatalf("node %d: %s: row %d has v = %v, want %d", i, stmt, j, r[0], w[j])
				}
			}
		}
	}
}
