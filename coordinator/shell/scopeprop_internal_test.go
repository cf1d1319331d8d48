package shell

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/scopelimit"
)

// recordingSender records the scope_counts each peer gets.
type recordingSender struct {
	nodes []coordinator.NodeID
	mu    sync.Mutex
	got   map[coordinator.NodeID][]*replicapb.ScopeCount
}

func (r *recordingSender) ScopeCounts(_ context.Context, to coordinator.NodeID, req *replicapb.ScopeCountsRequest) (*replicapb.ScopeCountsResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got[to] = append(r.got[to], req.GetDeltas()...)
	return &replicapb.ScopeCountsResponse{}, nil
}

func (r *recordingSender) AppendNodes(dst []coordinator.NodeID) []coordinator.NodeID {
	return append(dst, r.nodes...)
}

// TestScopePropagationLoop runs the propagation loop on synctest's clock: every interval it
// sends each live peer (never itself, never a down one) the counts judged since the last send,
// coalesced per budget and op, with the budget's limit; an interval without counts sends
// nothing.
func TestScopePropagationLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := newScopes(time.Now, nil)
		if err != nil {
			t.Fatal(err)
		}
		send := &recordingSender{nodes: []coordinator.NodeID{"n1", "n2", "n3"}, got: map[coordinator.NodeID][]*replicapb.ScopeCount{}}
		live := func(id coordinator.NodeID) bool { return id != "n3" }
		s.prop = newScopeProp(s, send, "n1", live, DefaultScopeInterval, slog.New(slog.NewTextHandler(io.Discard, nil)))
		defer s.prop.close()
		org := scopelimit.Budget{Kind: scopelimit.KindLevel, Name: "org", ID: scopelimit.BudgetID(scopelimit.KindLevel, "org"), Writes: 1000}
		for range 5 {
			if err := s.judge(context.Background(), []scopelimit.Budget{org}, "ks", "t", coordinator.OpWrite, 2, nil); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(DefaultScopeInterval)
		synctest.Wait()
		send.mu.Lock()
		got := send.got["n2"]
		if len(got) != 1 || got[0].GetId() != org.ID || got[0].GetCount() != 10 || got[0].GetLimit() != 1000 ||
			got[0].GetLabel() != scopeLabel(scopelimit.KindLevel, coordinator.OpWrite) || len(send.got["n1"]) != 0 || len(send.got["n3"]) != 0 {
			t.Errorf("after one interval the peers got %v; want n2 alone to get the level's 10 writes, limit 1000", send.got)
		}
		send.mu.Unlock()
		time.Sleep(3 * DefaultScopeInterval)
		synctest.Wait()
		send.mu.Lock()
		if n := len(send.got["n2"]); n != 1 {
			t.Errorf("quiet intervals sent %d more counts", n-1)
		}
		send.mu.Unlock()
	})
}
