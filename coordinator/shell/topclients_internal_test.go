package shell

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
	"github.com/kvnode/kvnode/scopelimit"
)

// TestTopClientsAnswerRefusesBadAnswers checks a peer's top_clients answer before it is merged:
// each way an answer can be wrong is named, and a good one converts whole.
func TestTopClientsAnswerRefusesBadAnswers(t *testing.T) {
	label := scopeLabel(scopelimit.KindLevel, coordinator.OpWrite)
	sp := func(name string, rate float64) *replicapb.TopClientSpender {
		return &replicapb.TopClientSpender{Client: name, OpsPerSecond: rate}
	}
	budget := func(l uint32, name string, sps ...*replicapb.TopClientSpender) *replicapb.TopClientsBudget {
		return &replicapb.TopClientsBudget{Label: l, Budget: name, Limit: 10, Spenders: sps}
	}
	many := func(n int) []*replicapb.TopClientSpender {
		out := make([]*replicapb.TopClientSpender, n)
		for i := range out {
			out[i] = sp(fmt.Sprintf("r%d", i), 1)
		}
		return out
	}
	var full []*replicapb.TopClientsBudget // MaxTopClientsSpenders spenders, then one more
	for i := range MaxTopClientsSpenders / spendersPerBudget {
		full = append(full, budget(label, fmt.Sprintf("l%d", i), many(spendersPerBudget)...))
	}
	full = append(full, budget(label, "last", sp("x", 1)))
	for _, tc := range []struct {
		name    string
		budgets []*replicapb.TopClientsBudget
		want    string
	}{
		{"partition label", []*replicapb.TopClientsBudget{budget(uint32(scopelimit.KindLevel)<<8, "org", sp("a", 1))}, "label 0x100, no budget's"},
		{"label out of range", []*replicapb.TopClientsBudget{budget(1<<16|label, "org")}, "no budget's"},
		{"no budget name", []*replicapb.TopClientsBudget{budget(label, "")}, "name of 0 bytes"},
		{"budget name too long", []*replicapb.TopClientsBudget{budget(label, strings.Repeat("x", 1025))}, "name of 1025 bytes"},
		{"too many spenders for a budget", []*replicapb.TopClientsBudget{budget(label, "org", many(17)...)}, "lists 17 spenders, more than the 16"},
		{"too many spenders in all", full, "more than 4096 spenders"},
		{"empty spender", []*replicapb.TopClientsBudget{budget(label, "org", sp("", 1))}, "whose name has 0 bytes"},
		{"spender name too long", []*replicapb.TopClientsBudget{budget(label, "org", sp(strings.Repeat("x", 1025), 1))}, "whose name has 1025 bytes"},
		{"NaN rate", []*replicapb.TopClientsBudget{budget(label, "org", sp("a", math.NaN()))}, "spender a at NaN"},
		{"infinite rate", []*replicapb.TopClientsBudget{budget(label, "org", sp("a", math.Inf(1)))}, "spender a at +Inf"},
		{"negative rate", []*replicapb.TopClientsBudget{budget(label, "org", sp("a", -1))}, "spender a at -1"},
		{"spender twice", []*replicapb.TopClientsBudget{budget(label, "org", sp("a", 1), sp("a", 2))}, "lists spender a twice"},
	} {
		if _, err := topClientsAnswer(&replicapb.TopClientsResponse{Budgets: tc.budgets}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	got, err := topClientsAnswer(&replicapb.TopClientsResponse{Budgets: []*replicapb.TopClientsBudget{
		budget(scopeLabel(scopelimit.KindKeyspace, coordinator.OpRead), "ks", sp("client 10.0.0.7", 2.5)),
		budget(label, "org"),
	}})
	if err != nil || fmt.Sprint(got) != "[{keyspace ks read 10 [{client 10.0.0.7 2.5}]} {service_level org write 10 []}]" {
		t.Errorf("a good answer converts to %v, %v", got, err)
	}
	if got, err := topClientsAnswer(nil); err != nil || len(got) != 0 {
		t.Errorf("an empty answer converts to %v, %v", got, err)
	}
}

// TestTopClientsAnswersAreBounded fills more budgets than one answer holds: the answer lists
// whole budgets up to MaxTopClientsSpenders and says it is truncated; one budget asked for
// alone comes whole; a spender's overlong name is cut at a character boundary.
func TestTopClientsAnswersAreBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	s, err := newScopes(func() time.Time { return now }, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &Executor{scopes: s}
	const levels = MaxTopClientsSpenders/spendersPerBudget + 1
	for i := range levels {
		name := fmt.Sprintf("l%03d", i)
		st := s.statsOf(&scopelimit.Budget{Kind: scopelimit.KindLevel, Name: name, ID: scopelimit.BudgetID(scopelimit.KindLevel, name)})
		for j := range spendersPerBudget {
			who := fmt.Sprintf("r%02d", j)
			if i == levels-1 && j == 0 {
				who = strings.Repeat("x", 1023) + "é" // 1025 bytes: cut before the é
			}
			st.spend(1, spenderID{role: who}, float64(1+j), now)
		}
	}
	resp, err := e.TopClients(context.Background(), &replicapb.TopClientsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range resp.GetBudgets() {
		n += len(b.GetSpenders())
	}
	if !resp.GetTruncated() || n != MaxTopClientsSpenders || resp.GetBudgets()[len(resp.GetBudgets())-1].GetBudget() != fmt.Sprintf("l%03d", levels-2) {
		t.Errorf("every budget: %d spenders in %d budgets, truncated %v; want %d, the last budget left out", n, len(resp.GetBudgets()), resp.GetTruncated(), MaxTopClientsSpenders)
	}
	last := fmt.Sprintf("l%03d", levels-1)
	resp, err = e.TopClients(context.Background(), &replicapb.TopClientsRequest{Kind: "service_level", Budget: last})
	if err != nil || resp.GetTruncated() || len(resp.GetBudgets()) != 1 || len(resp.GetBudgets()[0].GetSpenders()) != spendersPerBudget {
		t.Fatalf("budget %s alone: %v, %v", last, resp, err)
	}
	sps := resp.GetBudgets()[0].GetSpenders()
	if first := sps[0].GetClient(); first != "r15" || sps[0].GetOpsPerSecond() != 16 {
		t.Errorf("heaviest spender %s at %g/s, want r15 at 16/s", first, sps[0].GetOpsPerSecond())
	}
	cut := sps[len(sps)-1].GetClient()
	if len(cut) != 1023 || !utf8.ValidString(cut) {
		t.Errorf("the overlong name was sent with %d bytes (valid UTF-8: %v), want its first 1023", len(cut), utf8.ValidString(cut))
	}
	if _, err := topClientsAnswer(resp); err != nil {
		t.Errorf("a node's own answer does not pass the check: %v", err)
	}
}

// silentPeers answers top_clients from n2 at once and never from n3 (until the call's context
// ends); every node is live.
type silentPeers struct{}

func (silentPeers) ScopeCounts(context.Context, coordinator.NodeID, *replicapb.ScopeCountsRequest) (*replicapb.ScopeCountsResponse, error) {
	return &replicapb.ScopeCountsResponse{}, nil
}

func (silentPeers) AppendNodes(dst []coordinator.NodeID) []coordinator.NodeID {
	return append(dst, "n1", "n2", "n3")
}

func (silentPeers) TopClients(ctx context.Context, to coordinator.NodeID, _ *replicapb.TopClientsRequest) (*replicapb.TopClientsResponse, error) {
	if to == "n3" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &replicapb.TopClientsResponse{Budgets: []*replicapb.TopClientsBudget{{
		Label: scopeLabel(scopelimit.KindLevel, coordinator.OpWrite), Budget: "org",
		Spenders: []*replicapb.TopClientSpender{{Client: "alice", OpsPerSecond: 5}},
	}}}, nil
}

type allLive struct{}

func (allLive) AppendReplicas(dst []coordinator.NodeID, _ int64, _ schema.Replication) []coordinator.NodeID {
	return dst
}
func (allLive) IsLive(coordinator.NodeID) bool       { return true }
func (allLive) DataCenter(coordinator.NodeID) string { return "" }

// TestClusterTopClientsWaitsBoundedly runs on synctest's clock: a peer that never answers
// holds the answer TopClientsTimeout, no longer, and is named unreachable; the others' spenders
// are in it.
func TestClusterTopClientsWaitsBoundedly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := newScopes(time.Now, nil)
		if err != nil {
			t.Fatal(err)
		}
		logger := slog.New(slog.DiscardHandler)
		s.prop = newScopeProp(s, silentPeers{}, "n1", func(coordinator.NodeID) bool { return true }, -1, logger)
		e := &Executor{scopes: s, localID: "n1", ring: allLive{}, logger: logger}
		start := time.Now()
		top, err := e.ClusterTopClients(context.Background(), "", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != TopClientsTimeout {
			t.Errorf("waited %v for the silent peer, want %v", waited, TopClientsTimeout)
		}
		if fmt.Sprint(top.Unreachable) != "[n3]" || len(top.Budgets) != 1 || top.Budgets[0].Clients[0].Client != "alice" || top.Budgets[0].Clients[0].Rate != 5 {
			t.Errorf("answer %+v, want n2's alice at 5/s and n3 unreachable", top)
		}
	})
}
