package coordinator

import (
	"cmp"
	"slices"
)

// BudgetSpenders is one coordinator's view of who spends one budget (a service level's or a
// keyspace's rate) for one op: the spenders it tracks, with their recent rates.
type BudgetSpenders struct {
	// Scope is ScopeServiceLevel or ScopeKeyspace; Budget the level's or keyspace's name.
	Scope  Scope
	Budget string
	Op     Op
	// Limit is the budget's limit for Op across the cluster, as the coordinator last applied it
	// (0: unknown).
	Limit uint32
	// Spenders are every spender the coordinator tracks (roles, "client <address>" or
	// "anonymous"), each at most once.
	Spenders []Spender
}

// Spender is one role or client spending a budget, at Rate operations per second.
type Spender struct {
	Client string
	Rate   float64
}

// NodeTopClients is one node's answer when asked who spends the budgets through it.
type NodeTopClients struct {
	Node    NodeID
	Budgets []BudgetSpenders
	// Unreachable is set when the node is down or did not answer in time (Budgets is then
	// empty).
	Unreachable bool
	// Truncated is set when the node had more spenders than one answer holds and left some
	// budgets out.
	Truncated bool
}

// TopClients is who spends each budget across the cluster now, merged over the nodes' answers
// (MergeTopClients).
type TopClients struct {
	// Budgets are in (scope, budget name, op) order.
	Budgets []BudgetTopClients
	// Unreachable are the nodes that are down or did not answer, in order: what only they
	// coordinated is missing.
	Unreachable []NodeID
	// Truncated are the nodes that listed only some of their budgets, in order.
	Truncated []NodeID
}

// BudgetTopClients is one budget's heaviest spenders of one op across the cluster.
type BudgetTopClients struct {
	Scope  Scope
	Budget string
	Op     Op
	// Limit is the largest limit the nodes reported (they differ only briefly, after an
	// ALTER); 0 when none knew it.
	Limit uint32
	// Rate is the budget's rate over every spender the nodes listed, also those past the top.
	Rate float64
	// Clients are the heaviest spenders, heaviest first.
	Clients []TopClient
}

// TopClient is one spender of a budget, merged over the nodes that listed it.
type TopClient struct {
	Client string
	// Rate is the sum of the nodes' rates; Share its part of the budget's Rate, 0..1.
	Rate, Share float64
	// Nodes is how many nodes listed the spender.
	Nodes int
}

// MergeTopClients merges the nodes' answers into who spends each budget across the cluster: a
// spender's rates on one (scope, budget, op) are summed over the nodes (each node coordinates
// a different part of its requests), its share is recomputed against the budget's summed rate,
// and each budget lists its k heaviest spenders (all when k ≤ 0), heaviest first, ties by
// client name. Spenders without a positive rate are left out, and budgets left with none.
// system.top_clients answers with it.
func MergeTopClients(answers []NodeTopClients, k int) TopClients {
	type budgetKey struct {
		scope  Scope
		budget string
		op     Op
	}
	type merged struct {
		b       BudgetTopClients
		clients map[string]int // index in b.Clients
	}
	var out TopClients
	byKey := map[budgetKey]*merged{}
	for _, a := range answers {
		if a.Unreachable {
			out.Unreachable = append(out.Unreachable, a.Node)
			continue
		}
		if a.Truncated {
			out.Truncated = append(out.Truncated, a.Node)
		}
		for _, bs := range a.Budgets {
			key := budgetKey{bs.Scope, bs.Budget, bs.Op}
			m := byKey[key]
			if m == nil {
				m = &merged{b: BudgetTopClients{Scope: bs.Scope, Budget: bs.Budget, Op: bs.Op}, clients: map[string]int{}}
				byKey[key] = m
			}
			m.b.Limit = max(m.b.Limit, bs.Limit)
			for _, sp := range bs.Spenders {
				if !(sp.Rate > 0) { // also NaN
					continue
				}
				m.b.Rate += sp.Rate
				i, ok := m.clients[sp.Client]
				if !ok {
					i = len(m.b.Clients)
					m.clients[sp.Client] = i
					m.b.Clients = append(m.b.Clients, TopClient{Client: sp.Client})
				}
				m.b.Clients[i].Rate += sp.Rate
				m.b.Clients[i].Nodes++
			}
		}
	}
	slices.Sort(out.Unreachable)
	slices.Sort(out.Truncated)
	for _, m := range byKey {
		b := m.b
		if len(b.Clients) == 0 {
			continue
		}
		slices.SortFunc(b.Clients, func(x, y TopClient) int {
			return cmp.Or(cmp.Compare(y.Rate, x.Rate), cmp.Compare(x.Client, y.Client))
		})
		if k > 0 && len(b.Clients) > k {
			b.Clients = b.Clients[:k:k]
		}
		for i := range b.Clients {
			b.Clients[i].Share = min(1, b.Clients[i].Rate/b.Rate)
		}
		out.Budgets = append(out.Budgets, b)
	}
	slices.SortFunc(out.Budgets, func(x, y BudgetTopClients) int {
		return cmp.Or(cmp.Compare(x.Scope, y.Scope), cmp.Compare(x.Budget, y.Budget), cmp.Compare(x.Op, y.Op))
	})
	return out
}
