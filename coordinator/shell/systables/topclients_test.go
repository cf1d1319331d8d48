package systables

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
)

type clientsSource struct {
	fakeSource
	top          coordinator.TopClients
	err          error
	kind, budget string
	k, calls     int
}

func (s *clientsSource) ClusterTopClients(_ context.Context, kind, budget string, k int) (coordinator.TopClients, error) {
	s.kind, s.budget, s.k = kind, budget, k
	s.calls++
	return s.top, s.err
}

func TestTopClientsListsSpendersPerBudget(t *testing.T) {
	src := &clientsSource{fakeSource: fakeSource{sch: mustSchema(t)}, top: coordinator.TopClients{
		Budgets: []coordinator.BudgetTopClients{
			{Scope: coordinator.ScopeServiceLevel, Budget: "org", Op: coordinator.OpWrite, Limit: 100, Rate: 32, Clients: []coordinator.TopClient{
				{Client: "alice", Rate: 24, Share: 0.75, Nodes: 3}, {Client: "bob", Rate: 8, Share: 0.25, Nodes: 1},
			}},
			{Scope: coordinator.ScopeKeyspace, Budget: "ks", Op: coordinator.OpRead, Rate: 1, Clients: []coordinator.TopClient{
				{Client: "client 10.0.0.7", Rate: 1, Share: 1, Nodes: 1},
			}},
		},
		Unreachable: []coordinator.NodeID{"n4", "n5"},
		Truncated:   []coordinator.NodeID{"n2"},
	}}
	tb, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	rows := selectRows(t, tb, "SELECT * FROM system.top_clients WHERE kind = 'service_level' AND budget = 'org'")
	if got := colValues(t, rows, "client"); !slices.Equal(got, []string{"alice", "bob"}) || src.k != topClientsPerBudget {
		t.Errorf("clients %q (k %d), want alice and bob of level org", got, src.k)
	}
	if src.kind != "service_level" || src.budget != "org" {
		t.Errorf("the source was asked for kind %q budget %q; want the query's restrictions", src.kind, src.budget)
	}
	rows = selectRows(t, tb, "SELECT budget, client, limit_per_second FROM system.top_clients WHERE kind = 'keyspace'")
	if len(rows.Values) != 1 || string(rows.Values[0][1]) != "client 10.0.0.7" || rows.Values[0][2] != nil {
		t.Errorf("keyspace rows %q, want the one anonymous client without a limit", rows.Values)
	}
	res, handled, err := run(t, tb, "SELECT * FROM system.top_clients")
	if err != nil || !handled {
		t.Fatalf("SELECT * FROM system.top_clients: handled %v, error %v", handled, err)
	}
	if src.kind != "" || src.budget != "" {
		t.Errorf("the source was asked for kind %q budget %q; want every budget", src.kind, src.budget)
	}
	want := []string{TopClientsUnreachableWarning + "n4, n5", TopClientsTruncatedWarning + "n2"}
	if !slices.Equal(res.Warnings, want) {
		t.Errorf("warnings %q, want %q", res.Warnings, want)
	}
	ranks, clients := colValues(t, res.Rows, "rank"), colValues(t, res.Rows, "client")
	got := map[string]string{}
	for i, c := range clients {
		got[c] = string(ranks[i])
	}
	if len(got) != 3 || got["alice"] != string(encInt(1)) || got["bob"] != string(encInt(2)) || got["client 10.0.0.7"] != string(encInt(1)) {
		t.Errorf("ranks by client %q, want alice 1, bob 2 (org), the anonymous client 1 (ks)", got)
	}

	// A kind no budget has asks nobody.
	calls := src.calls
	if rows := selectRows(t, tb, "SELECT * FROM system.top_clients WHERE kind = 'partition'"); len(rows.Values) != 0 || src.calls != calls {
		t.Errorf("kind partition: rows %q, %d calls", rows.Values, src.calls-calls)
	}
	// The source's error is the query's.
	src.err = errors.New("boom")
	if _, _, err := run(t, tb, "SELECT * FROM system.top_clients"); err == nil || !errors.Is(err, src.err) {
		t.Errorf("error %v, want the source's", err)
	}

	// A Source without ClusterTopClients serves the table empty.
	tb, _ = New(fakeSource{sch: mustSchema(t)})
	if rows := selectRows(t, tb, "SELECT * FROM system.top_clients"); len(rows.Values) != 0 {
		t.Errorf("rows %q without a TopClientsSource", rows.Values)
	}
}
