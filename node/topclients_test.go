package node_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// TestTopClientsIsClusterWide spreads one role's writes over the three coordinators of a
// cluster on a frozen clock (the spenders' counts never decay): each node's system.top_clients
// shows the role's whole rate over internode, not the part it coordinated itself.
func TestTopClientsIsClusterWide(t *testing.T) {
	tc := startClusterWith(t, 3, frozenClock)
	c := tc.client(0)
	exec(t, c, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND rate_limit = {'max_writes_per_second': 100000}")
	exec(t, c, client.One, "CREATE TABLE ks.t (k text PRIMARY KEY, v int)")
	write := func(i int, role string, n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(auth.WithRole(context.Background(), role), 30*time.Second)
		defer cancel()
		for j := range n {
			stmt := coordinator.Statement{Text: fmt.Sprintf("INSERT INTO t (k, v) VALUES ('%s-%d-%d', 1)", role, i, j), Keyspace: "ks"}
			if _, err := tc.nodes[i].Executor().Execute(ctx, stmt); err != nil {
				t.Fatalf("write through node %d: %v", i, err)
			}
		}
	}
	write(0, "app", 30)
	write(1, "app", 20)
	write(2, "app", 10)
	write(1, "batch", 20)
	double := func(b []byte) float64 { return math.Float64frombits(binary.BigEndian.Uint64(b)) }
	for i, nd := range tc.nodes {
		rows := sysRows(t, nd, "SELECT op, rank, client, ops_per_second, share, limit_per_second FROM system.top_clients WHERE kind = 'keyspace' AND budget = 'ks'")
		var got []string
		for _, r := range rows {
			got = append(got, fmt.Sprintf("%s #%d %s %g/s %.2f limit %d", r["op"], int32Of(r["rank"]), r["client"], double(r["ops_per_second"]), double(r["share"]), int32Of(r["limit_per_second"])))
		}
		want := "write #1 app 60/s 0.75 limit 100000; write #2 batch 20/s 0.25 limit 100000"
		if strings.Join(got, "; ") != want {
			t.Errorf("node %d's system.top_clients:\n%s\nwant\n%s", i, strings.Join(got, "\n"), want)
		}
	}

	// Over internode, a bad top_clients request gets INVALID_ARGUMENT naming what is wrong, and a
	// good one the peer's own spenders.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := node.CallPeer(ctx, tc.nodes[0], tc.ids[1], &replicapb.TopClientsRequest{Kind: "tenant"})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `kind "tenant" is neither`) {
		t.Errorf("a top_clients request of kind tenant: %v, want INVALID_ARGUMENT naming the kind", err)
	}
	_, err = node.CallPeer(ctx, tc.nodes[0], tc.ids[1], &replicapb.TopClientsResponse{})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("a top_clients response sent as a request: %v, want INVALID_ARGUMENT", err)
	}
	m, err := node.CallPeer(ctx, tc.nodes[0], tc.ids[2], &replicapb.TopClientsRequest{Kind: "keyspace"})
	resp, ok := m.(*replicapb.TopClientsResponse)
	if err != nil || !ok || len(resp.GetBudgets()) != 1 || len(resp.GetBudgets()[0].GetSpenders()) != 1 ||
		resp.GetBudgets()[0].GetSpenders()[0].GetClient() != "app" || resp.GetBudgets()[0].GetSpenders()[0].GetOpsPerSecond() != 10 {
		t.Errorf("node 2's own spenders: %v, %v; want app at 10/s", m, err)
	}
}
