package shell_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// TopClients asks a peer executor who spends its budgets, over the wire's encoding; of the
// transport's faults, it heeds failAll and panics.
func (s scopeTransport) TopClients(ctx context.Context, to coordinator.NodeID, req *replicapb.TopClientsRequest) (*replicapb.TopClientsResponse, error) {
	s.c.transport.mu.Lock()
	f := s.c.transport.faults[to]
	s.c.transport.mu.Unlock()
	switch f {
	case failAll:
		return nil, fmt.Errorf("node %s is unreachable", to)
	case panics:
		panic(fmt.Sprintf("a bug in the top_clients request to %s", to))
	}
	e := s.c.executors[to]
	if e == nil {
		return nil, fmt.Errorf("no node %s", to)
	}
	resp, err := e.TopClients(ctx, overTheWire(req))
	return overTheWire(resp), err
}

// describeBudgets renders a ClusterTopClients answer: one line per budget.
func describeBudgets(top coordinator.TopClients) string {
	var b strings.Builder
	for _, bt := range top.Budgets {
		fmt.Fprintf(&b, "%v %s %v limit=%d:", bt.Scope, bt.Budget, bt.Op, bt.Limit)
		for _, c := range bt.Clients {
			fmt.Fprintf(&b, " %s=%.0f/s %.2f on %d", c.Client, c.Rate, c.Share, c.Nodes)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "unreachable %v", top.Unreachable)
	return b.String()
}

// TestClusterTopClientsSumsTheCoordinators spreads one role's writes over the three
// coordinators: each sees a part, and any one of them answers with the whole rate.
func TestClusterTopClientsSumsTheCoordinators(t *testing.T) {
	c := newCluster(t, options{scopes: true, budgets: fixedBudgets(level("org", 0, 1000))})
	c.must(schemaRF3...)
	write := func(node coordinator.NodeID, who string, n, from int) {
		t.Helper()
		ctx := auth.WithRole(context.Background(), who)
		for i := range n {
			stmt := coordinator.Statement{Text: fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('%s%d', 1, 'x')", who, from+i), Keyspace: "ks"}
			if _, err := c.executors[node].Execute(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("n1", "alice", 30, 0)
	write("n2", "alice", 20, 100)
	write("n3", "alice", 10, 200)
	write("n2", "bob", 10, 0)
	c.settle()
	top := func(node coordinator.NodeID, kind, budget string, k int) string {
		t.Helper()
		res, err := c.executors[node].ClusterTopClients(context.Background(), kind, budget, k)
		if err != nil {
			t.Fatal(err)
		}
		return describeBudgets(res)
	}
	// The clock stands at .25 s past a second: a count of 60 reads 48/s.
	want := "service_level org write limit=1000: alice=48/s 0.86 on 3 bob=8/s 0.14 on 1\nunreachable []"
	for _, n := range nodes {
		if got := top(n, "", "", 0); got != want {
			t.Errorf("%s answers\n%s\nwant\n%s", n, got, want)
		}
	}
	if got, want := top("n1", "service_level", "org", 1), "service_level org write limit=1000: alice=48/s 0.86 on 3\nunreachable []"; got != want {
		t.Errorf("top 1 of org:\n%s\nwant\n%s", got, want)
	}
	if got, want := top("n1", "keyspace", "", 0), "unreachable []"; got != want {
		t.Errorf("keyspaces' spenders:\n%s\nwant none", got)
	}

	// A peer that fails, or panics, is left out and named; a peer down is not asked.
	c.transport.setFault(failAll, "n3")
	if got, want := top("n1", "", "", 0), "service_level org write limit=1000: alice=40/s 0.83 on 2 bob=8/s 0.17 on 1\nunreachable [n3]"; got != want {
		t.Errorf("n3 failing:\n%s\nwant\n%s", got, want)
	}
	c.transport.setFault(panics, "n2")
	c.ring.setDown("n3")
	if got, want := top("n1", "", "", 0), "service_level org write limit=1000: alice=24/s 1.00 on 1\nunreachable [n2 n3]"; got != want {
		t.Errorf("n2 panicking, n3 down:\n%s\nwant\n%s", got, want)
	}
	c.transport.clearFaults()
	c.ring.setDown()

	// A canceled caller gets its error, not a partial answer.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.executors["n1"].ClusterTopClients(ctx, "", "", 0); err != context.Canceled {
		t.Errorf("canceled: error %v, want context.Canceled", err)
	}
}

func TestTopClientsRefusesBadRequests(t *testing.T) {
	c := newCluster(t, options{budgets: fixedBudgets(level("org", 0, 1000))})
	e := c.executors["n1"]
	for _, tc := range []struct {
		req  *replicapb.TopClientsRequest
		want string
	}{
		{&replicapb.TopClientsRequest{Kind: "tenant"}, `kind "tenant" is neither "service_level" nor "keyspace"`},
		{&replicapb.TopClientsRequest{Kind: "partition"}, `kind "partition" is neither`},
		{&replicapb.TopClientsRequest{Budget: strings.Repeat("x", 1025)}, "budget name of 1025 bytes is longer than 1024"},
	} {
		_, err := e.TopClients(context.Background(), tc.req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want INVALID_ARGUMENT saying %q", tc.req, err, tc.want)
		}
		if _, err := e.ClusterTopClients(context.Background(), tc.req.GetKind(), tc.req.GetBudget(), 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ClusterTopClients %v: error %v, want one saying %q", tc.req, err, tc.want)
		}
	}
	if resp, err := e.TopClients(context.Background(), &replicapb.TopClientsRequest{Kind: "keyspace", Budget: "ks"}); err != nil || len(resp.GetBudgets()) != 0 || resp.GetTruncated() {
		t.Errorf("a good request for a budget without spenders: %v, %v", resp, err)
	}
}
