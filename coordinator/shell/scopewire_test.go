package shell_test

import (
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/scopelimit"
)

type oneAddr string

func (a oneAddr) InternodeAddr(internode.NodeID) (string, bool) { return string(a), true }

// TestScopeCountsOverInternode sends scope_counts to an executor's handler registered on a real
// internode Mux, served by gRPC on loopback: deltas are learned, a sync answers the counters, and
// bad input comes back INVALID_ARGUMENT with its reason.
func TestScopeCountsOverInternode(t *testing.T) {
	c := newCluster(t, options{budgets: fixedBudgets(level("org", 0, 50))})
	c.must(schemaRF3...)
	e := c.executors["n2"]
	mux := internode.NewMux()
	internode.Handle(mux, e.ScopeCounts)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	mux.Register(srv)
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	s, err := internode.NewSender(internode.Options{Self: "n1", Addresses: oneAddr(lis.Addr().String())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()

	label := shell.ScopeLabel(scopelimit.KindLevel, coordinator.OpWrite)
	id := scopelimit.BudgetID(scopelimit.KindLevel, "org")
	req := &replicapb.ScopeCountsRequest{Deltas: []*replicapb.ScopeCount{{Id: id, Label: label, Count: 12, Limit: 50}}}
	if _, err := internode.Call[*replicapb.ScopeCountsResponse](ctx, s, "n2", req); err != nil {
		t.Fatal(err)
	}
	if got := e.PeekScope(scopelimit.KindLevel, "org", coordinator.OpWrite); got != 12 {
		t.Errorf("n2 learned %d of 12", got)
	}
	// n2 judges a write itself: the level is then one it knows, and a sync answers its counter.
	if _, err := c.exec("n2", one, "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	resp, err := internode.Call[*replicapb.ScopeCountsResponse](ctx, s, "n2", &replicapb.ScopeCountsRequest{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	if cs := resp.GetCounts(); len(cs) != 1 || cs[0].GetId() != id || cs[0].GetLabel() != label || cs[0].GetCount() != 13 || cs[0].GetLimit() != 50 {
		t.Errorf("sync answered %v, want the level's 13 writes of 50/s", cs)
	}
	bad := &replicapb.ScopeCountsRequest{Deltas: []*replicapb.ScopeCount{{Id: id, Label: 0xff02, Count: 1}}}
	_, err = internode.Call[*replicapb.ScopeCountsResponse](ctx, s, "n2", bad)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "has label 0xff02") {
		t.Errorf("a bad label answered %v, want INVALID_ARGUMENT naming it", err)
	}
}
