package node_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	repairpkg "github.com/kvnode/kvnode/repair"
)

// TestAlterKeyspaceReplication raises a keyspace's replication factor from 1 to 3 on 3 nodes
// and lowers it back, as docs/operations.md (Changing replication) tells an operator to: the
// ALTER moves no data and warns to repair; a repair on every node brings the new replicas up to
// date (a second repair finds nothing to stream), after which reads at QUORUM and ALL through
// any node see every row; lowering the factor keeps every row readable, and kvnode cleanup then
// deletes the data of the ranges the nodes no longer replicate.
func TestAlterKeyspaceReplication(t *testing.T) {
	tc := startClusterWith(t, 3, func(cfg *node.Config) { cfg.Repair.AutoRepair = repairpkg.AutoRepairOff })
	c := tc.client(0)
	const rows = 20
	exec(t, c, client.Quorum, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c, client.Quorum, "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	for k := range rows {
		exec(t, c, client.All, fmt.Sprintf("INSERT INTO ks.t (k, v) VALUES (%d, %d)", k, k))
	}

	res := exec(t, c, client.Quorum, "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	if sc := res.SchemaChange; sc == nil || !strings.Contains(strings.Join(res.Warnings, " "), "When increasing replication factor you need to run a repair") {
		t.Errorf("ALTER KEYSPACE to RF 3: schema change %+v, warnings %q; want a change and the repair warning", sc, res.Warnings)
	}
	for i, nd := range tc.nodes {
		if k, ok := nd.Schema().Keyspace("ks"); !ok || k.ReplicationFactor != 3 {
			t.Fatalf("node %d holds keyspace ks %+v after the ALTER returned, want RF 3", i, k)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	streamed := func() (partitions, mismatched uint64) {
		for _, nd := range tc.nodes {
			for _, tr := range repairTables(ctx, t, nd.Addr()) {
				partitions += tr.GetPartitionsStreamed()
				mismatched += tr.GetLeavesMismatched()
			}
		}
		return partitions, mismatched
	}
	if p, _ := streamed(); p < 2*rows {
		t.Errorf("the repair after raising RF 1 → 3 streamed %d partitions, want at least %d (two new replicas of each row)", p, 2*rows)
	}
	if p, m := streamed(); p != 0 || m != 0 {
		t.Errorf("a second repair streamed %d partitions (%d leaves differed), want the replicas already in sync", p, m)
	}
	clients := []*client.Client{c, tc.client(1), tc.client(2)}
	readAll := func(cl client.Consistency) {
		t.Helper()
		for i, ci := range clients {
			for k := range rows {
				res := exec(t, ci, cl, fmt.Sprintf("SELECT v FROM ks.t WHERE k = %d", k))
				if len(res.Rows) != 1 || res.Rows[0][0] != int32(k) {
					t.Fatalf("row %d at %v through node %d: %v, want v = %d", k, cl, i, res.Rows, k)
				}
			}
		}
	}
	readAll(client.All)
	readAll(client.Quorum)

	res = exec(t, c, client.Quorum, "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND durable_writes = true")
	if len(res.Warnings) != 0 {
		t.Errorf("ALTER KEYSPACE to RF 1 warned %q, want no warning", res.Warnings)
	}
	readAll(client.All)
	readAll(client.One)
	// Each cleanup waits out the requests in flight (the coordinator timeouts): run them at once.
	var (
		mu      sync.Mutex
		deleted uint32
		errs    []error
		wg      sync.WaitGroup
	)
	for _, nd := range tc.nodes {
		wg.Go(func() {
			resp, err := cleanup(ctx, nd.Addr())
			mu.Lock()
			defer mu.Unlock()
			deleted += resp.GetRangesDeleted()
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if deleted == 0 {
		t.Errorf("kvnode cleanup after lowering RF 3 → 1 deleted no range, want the former replicas' data deleted")
	}
	readAll(client.All)
}

// repairTables runs kvnode repair on the node at addr, fails the test unless every range was
// repaired, and returns what it did per table.
func repairTables(ctx context.Context, t *testing.T, addr string) []*kvnodepb.TableRepair {
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
	return resp.GetTables()
}

// cleanup runs kvnode cleanup on the node at addr.
func cleanup(ctx context.Context, addr string) (*kvnodepb.CleanupResponse, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	resp, err := kvnodepb.NewAdminClient(conn).Cleanup(ctx, &kvnodepb.CleanupRequest{})
	if err != nil {
		return nil, fmt.Errorf("cleanup through %s: %w", addr, err)
	}
	return resp, nil
}
