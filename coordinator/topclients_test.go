package coordinator

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// describeTopClients renders a merge for comparison: one line per budget, its clients in order.
func describeTopClients(top TopClients) string {
	var b strings.Builder
	for _, bt := range top.Budgets {
		fmt.Fprintf(&b, "%v %s %v limit=%d rate=%g:", bt.Scope, bt.Budget, bt.Op, bt.Limit, bt.Rate)
		for _, c := range bt.Clients {
			fmt.Fprintf(&b, " %s=%g/%.3g/%d", c.Client, c.Rate, c.Share, c.Nodes)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "unreachable %v truncated %v\n", top.Unreachable, top.Truncated)
	return b.String()
}

func TestMergeTopClients(t *testing.T) {
	org := func(limit uint32, sp ...Spender) BudgetSpenders {
		return BudgetSpenders{Scope: ScopeServiceLevel, Budget: "org", Op: OpWrite, Limit: limit, Spenders: sp}
	}
	tests := []struct {
		name    string
		answers []NodeTopClients
		k       int
		want    string
	}{
		{
			name: "no answers",
			want: "unreachable [] truncated []\n",
		},
		{
			name: "one spender over three nodes sums its rates and has the whole share",
			answers: []NodeTopClients{
				{Node: "n1", Budgets: []BudgetSpenders{org(300, Spender{"alice", 100})}},
				{Node: "n2", Budgets: []BudgetSpenders{org(300, Spender{"alice", 90})}},
				{Node: "n3", Budgets: []BudgetSpenders{org(300, Spender{"alice", 110})}},
			},
			want: "service_level org write limit=300 rate=300: alice=300/1/3\n" +
				"unreachable [] truncated []\n",
		},
		{
			name: "shares against the summed total; a spender one node saw alone keeps its rate",
			answers: []NodeTopClients{
				{Node: "n1", Budgets: []BudgetSpenders{org(100, Spender{"alice", 30}, Spender{"bob", 10})}},
				{Node: "n2", Budgets: []BudgetSpenders{org(100, Spender{"alice", 30}, Spender{"carol", 30})}},
			},
			want: "service_level org write limit=100 rate=100: alice=60/0.6/2 carol=30/0.3/1 bob=10/0.1/1\n" +
				"unreachable [] truncated []\n",
		},
		{
			name: "k keeps the heaviest; shares stay against every spender's rate",
			answers: []NodeTopClients{
				{Node: "n1", Budgets: []BudgetSpenders{org(0, Spender{"a", 50}, Spender{"b", 30}, Spender{"c", 20})}},
			},
			k:    2,
			want: "service_level org write limit=0 rate=100: a=50/0.5/1 b=30/0.3/1\nunreachable [] truncated []\n",
		},
		{
			name: "ties by client name, whatever the nodes' order",
			answers: []NodeTopClients{
				{Node: "n2", Budgets: []BudgetSpenders{org(10, Spender{"zed", 5}, Spender{"amy", 2})}},
				{Node: "n1", Budgets: []BudgetSpenders{org(10, Spender{"bea", 5}, Spender{"amy", 3})}},
			},
			k:    2,
			want: "service_level org write limit=10 rate=15: amy=5/0.333/2 bea=5/0.333/1\nunreachable [] truncated []\n",
		},
		{
			name: "budgets in scope, name and op order; the largest limit; unreachable and truncated named in order",
			answers: []NodeTopClients{
				{Node: "n3", Unreachable: true},
				{Node: "n2", Truncated: true, Budgets: []BudgetSpenders{
					{Scope: ScopeKeyspace, Budget: "ks", Op: OpRead, Spenders: []Spender{{"client 10.0.0.7", 4}}},
					org(200, Spender{"alice", 1}),
				}},
				{Node: "n1", Budgets: []BudgetSpenders{
					{Scope: ScopeServiceLevel, Budget: "org", Op: OpRead, Limit: 50, Spenders: []Spender{{"alice", 2}}},
					org(100, Spender{"alice", 1}),
					{Scope: ScopeServiceLevel, Budget: "a", Op: OpWrite, Spenders: []Spender{{"bob", 1}}},
				}},
				{Node: "n0", Unreachable: true},
			},
			want: "service_level a write limit=0 rate=1: bob=1/1/1\n" +
				"service_level org read limit=50 rate=2: alice=2/1/1\n" +
				"service_level org write limit=200 rate=2: alice=2/1/2\n" +
				"keyspace ks read limit=0 rate=4: client 10.0.0.7=4/1/1\n" +
				"unreachable [n0 n3] truncated [n2]\n",
		},
		{
			name: "spenders without a positive rate are left out, and budgets left empty",
			answers: []NodeTopClients{
				{Node: "n1", Budgets: []BudgetSpenders{
					org(10, Spender{"idle", 0}, Spender{"nan", math.NaN()}, Spender{"neg", -1}, Spender{"alice", 1}),
					{Scope: ScopeKeyspace, Budget: "quiet", Op: OpRead, Spenders: []Spender{{"x", 0}}},
				}},
			},
			want: "service_level org write limit=10 rate=1: alice=1/1/1\nunreachable [] truncated []\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describeTopClients(MergeTopClients(tt.answers, tt.k))
			if got != tt.want {
				t.Errorf("MergeTopClients:\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
