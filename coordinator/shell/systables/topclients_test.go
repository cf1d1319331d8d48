package systables

import (
	"slices"
	"testing"
)

type clientsSource struct {
	fakeSource
	clients []TopClient
	k       int
}

func (s *clientsSource) TopClients(k int) []TopClient {
	s.k = k
	return s.clients
}

func TestTopClientsListsSpendersPerBudget(t *testing.T) {
	src := &clientsSource{fakeSource: fakeSource{sch: mustSchema(t)}, clients: []TopClient{
		{Kind: "service_level", Budget: "org", Op: "write", Client: "alice", Rate: 24, Share: 0.75, Limit: 100, Rank: 1},
		{Kind: "service_level", Budget: "org", Op: "write", Client: "bob", Rate: 8, Share: 0.25, Limit: 100, Rank: 2},
		{Kind: "keyspace", Budget: "ks", Op: "read", Client: "client 10.0.0.7", Rate: 1, Share: 1, Rank: 1},
	}}
	tb, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	rows := selectRows(t, tb, "SELECT * FROM system.top_clients WHERE kind = 'service_level' AND budget = 'org'")
	if got := colValues(t, rows, "client"); !slices.Equal(got, []string{"alice", "bob"}) || src.k != topClientsPerBudget {
		t.Errorf("clients %q (k %d), want alice and bob of level org", got, src.k)
	}
	rows = selectRows(t, tb, "SELECT budget, client, limit_per_second FROM system.top_clients WHERE kind = 'keyspace'")
	if len(rows.Values) != 1 || string(rows.Values[0][1]) != "client 10.0.0.7" || rows.Values[0][2] != nil {
		t.Errorf("keyspace rows %q, want the one anonymous client without a limit", rows.Values)
	}
	// A Source without TopClients serves the table empty.
	tb, _ = New(fakeSource{sch: mustSchema(t)})
	if rows := selectRows(t, tb, "SELECT * FROM system.top_clients"); len(rows.Values) != 0 {
		t.Errorf("rows %q without a TopClientsSource", rows.Values)
	}
}
