package systables

// TableTopClients is the name of the virtual table system.top_clients: who spends each service
// level's and keyspace's budget now, through the node answering (each coordinator sees the
// requests it coordinates; drivers spread a client's over every node, so each node's view is a
// sample of the cluster's, with the same heaviest spenders). Its memory is bounded: 16
// spenders per budget and op, of at most 1024 budgets.
const TableTopClients = "top_clients"

// TopClient is one spender of a budget, as system.top_clients lists it.
type TopClient struct {
	// Kind is "service_level" or "keyspace"; Budget the level's or keyspace's name.
	Kind, Budget string
	// Op is "read" or "write".
	Op string
	// Client is the role, "client <address>" (authentication off), or "anonymous".
	Client string
	// Rate is the client's recent operations per second on the budget through this node, and
	// Share its part of the budget's operations through it.
	Rate, Share float64
	// Limit is the budget's limit for Op, across the cluster (0: unknown).
	Limit uint32
	// Rank is 1 for the budget's heaviest spender of Op.
	Rank int
}

// TopClientsSource lists the spenders of the budgets (the coordinator's), at most k per budget
// and op, heaviest first. A Source that also implements it serves system.top_clients; any
// other serves it empty.
type TopClientsSource interface {
	TopClients(k int) []TopClient
}

// topClientsPerBudget is how many spenders system.top_clients lists per budget and op: all a
// coordinator keeps.
const topClientsPerBudget = 16

// topClientsTable is system.top_clients: partition key (kind, budget), clustering op and rank.
func topClientsTable() *table {
	return define(KeyspaceSystem, TableTopClients, []string{"kind", "text", "budget", "text"}, []string{"op", "text", "rank", "int"}, []string{
		"client", "text",
		"ops_per_second", "double",
		"share", "double",
		"limit_per_second", "int",
	}, topClientRows)
}

func topClientRows(v *view) []map[string][]byte {
	rows := make([]map[string][]byte, 0, len(v.clients))
	for _, c := range v.clients {
		if !v.keep("kind", c.Kind) || !v.keep("budget", c.Budget) {
			continue
		}
		row := map[string][]byte{
			"kind":           encText(c.Kind),
			"budget":         encText(c.Budget),
			"op":             encText(c.Op),
			"rank":           encInt(int32(c.Rank)),
			"client":         encText(c.Client),
			"ops_per_second": encDouble(c.Rate),
			"share":          encDouble(c.Share),
		}
		if c.Limit > 0 {
			row["limit_per_second"] = encInt(int32(min(c.Limit, 1<<31-1)))
		}
		rows = append(rows, row)
	}
	return rows
}
