package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// TestDeletedRowsStayDeletedAcrossBootstrapAndDecommission is the audit's repro of deleted rows
// coming back: at RF=2 with gc_grace_seconds = 0, rows written on 3 nodes, a fourth node
// bootstraps (the old nodes lose some ranges to it), the rows are deleted and every node is
// repaired (the tombstones are purged), then the fourth node is decommissioned (its ranges
// stream back to the old nodes). A node that kept the rows of the ranges it lost would serve
// them again at ONE, and a QUORUM read could repair them back onto the others: after each
// topology change, every node deletes the data of the ranges it no longer replicates. Then
// kvnode cleanup through the Admin service finds nothing left to delete.
func TestDeletedRowsStayDeletedAcrossBootstrapAndDecommission(t *testing.T) {
	tc := startCluster(t, 3)
	c := tc.client(0)
	const rows = 60
	exec(t, c, client.Quorum, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	exec(t, c, client.Quorum, "CREATE TABLE ks.t (k int PRIMARY KEY, v int) WITH gc_grace_seconds = 0")
	for k := range rows {
		exec(t, c, client.All, fmt.Sprintf("INSERT INTO ks.t (k, v) VALUES (%d, %d)", k, k))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	i, err := tc.c.Add(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tc.nodes = append(tc.nodes, tc.c.Node(i).Node())
	tc.ids = append(tc.ids, tc.c.Node(i).ID)
	waitCleanedUp(t, tc)

	for k := range rows {
		exec(t, c, client.All, fmt.Sprintf("DELETE FROM ks.t WHERE k = %d", k))
	}
	for j := range tc.nodes {
		repair(ctx, t, tc.nodes[j].Addr())
	}
	if _, err := tc.nodes[i].Decommission(ctx); err != nil {
		t.Fatalf("decommission of the fourth node: %v", err)
	}
	tc.stop(i)
	tc.nodes = tc.nodes[:i]
	tc.waitLive(30*time.Second, 3)
	for j := range 3 {
		cj := tc.client(j)
		for k := range rows {
			for _, cl := range []client.Consistency{client.One, client.Quorum} {
				res := exec(t, cj, cl, fmt.Sprintf("SELECT v FROM ks.t WHERE k = %d", k))
				if len(res.Rows) != 0 {
					t.Fatalf("row %d, deleted before the decommission, reads back at %v through node %d: %v", k, cl, j, res.Rows)
				}
			}
		}
	}

	waitCleanedUp(t, tc)
	conn, err := grpc.NewClient(tc.nodes[0].Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := kvnodepb.NewAdminClient(conn).Cleanup(ctx, &kvnodepb.CleanupRequest{})
	if err != nil || resp.GetRangesDeleted() != 0 {
		t.Errorf("kvnode cleanup after the nodes cleaned up by themselves = %v, %v; want nothing left to delete", resp, err)
	}
}

// repair runs kvnode repair on the node at addr and fails the test unless every range was
// repaired.
func repair(ctx context.Context, t *testing.T, addr string) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := kvnodepb.NewRepairClient(conn).Repair(ctx, &kvnodepb.RepairRequest{})
	if err != nil {
		t.Fatalf("repair through %s: %v", addr, err)
	}
	for _, tr := range resp.GetTables() {
		if tr.GetRangesFailed() > 0 {
			t.Fatalf("repair through %s: %v", addr, tr)
		}
	}
}

// waitCleanedUp waits until every running node has cleaned up after the last topology change
// it saw.
func waitCleanedUp(t *testing.T, tc *testCluster) {
	t.Helper()
	poll.Must(t, time.Minute, "every node cleans up after the topology change", poll.Bool(func() bool {
		for _, nd := range tc.nodes {
			if nd != nil && !node.CleanedUp(nd) {
				return false
			}
		}
		return true
	}))
}
