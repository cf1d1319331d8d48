package systables

import (
	"context"
	"strings"

	"github.com/kvnode/kvnode/coordinator"
)

// TableTopClients is the name of the virtual table system.top_clients: who spends each service
// level's and keyspace's budget now, across the cluster. The node answering asks every live
// node who spends the budgets through it (each coordinator sees the requests it coordinates)
// and sums each spender's rates (coordinator.MergeTopClients), so it costs a round of internode
// requests: it is for operators, not for a hot path. Its memory is bounded: each coordinator
// keeps 16 spenders per budget and op, of at most 1024 budgets.
const TableTopClients = "top_clients"

// TopClientsSource gathers who spends the budgets across the cluster for system.top_clients,
// at most k per budget and op, of kind and budget only when they are not empty (the query's
// restrictions). A Source that also implements it serves the table; any other serves it empty.
type TopClientsSource interface {
	ClusterTopClients(ctx context.Context, kind, budget string, k int) (coordinator.TopClients, error)
}

// TopClientsUnreachableWarning starts the warning that names the nodes that did not answer a
// SELECT of system.top_clients; the ids follow, separated by ", ".
const TopClientsUnreachableWarning = "top_clients: nodes that did not answer (what only they coordinated is missing): "

// TopClientsTruncatedWarning starts the warning that names the nodes that listed only part of
// their budgets' spenders; the ids follow, separated by ", ".
const TopClientsTruncatedWarning = "top_clients: nodes that listed only some of their budgets (restrict kind and budget to see one whole): "

// topClientsPerBudget is how many spenders system.top_clients lists per budget and op: as many
// as a coordinator keeps.
const topClientsPerBudget = 16

// readTopClients fills v.clients for a query of system.top_clients.
func (t *Tables) readTopClients(ctx context.Context, v *view) error {
	src, ok := t.src.(TopClientsSource)
	if !ok {
		return nil
	}
	kind, budget := string(v.restrict["kind"]), string(v.restrict["budget"])
	if kind != "" && kind != coordinator.ScopeServiceLevel.String() && kind != coordinator.ScopeKeyspace.String() {
		return nil // no budget has that kind: no rows, and no round of requests
	}
	res, err := src.ClusterTopClients(ctx, kind, budget, topClientsPerBudget)
	if err != nil {
		return err
	}
	v.clients = res.Budgets
	for _, w := range []struct {
		prefix string
		ids    []coordinator.NodeID
	}{{TopClientsUnreachableWarning, res.Unreachable}, {TopClientsTruncatedWarning, res.Truncated}} {
		if len(w.ids) > 0 {
			ids := make([]string, len(w.ids))
			for i, id := range w.ids {
				ids[i] = string(id)
			}
			v.warnings = append(v.warnings, w.prefix+strings.Join(ids, ", "))
		}
	}
	return nil
}

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
	n := 0
	for _, b := range v.clients {
		n += len(b.Clients)
	}
	rows := make([]map[string][]byte, 0, n)
	for _, b := range v.clients {
		kind := b.Scope.String()
		if !v.keep("kind", kind) || !v.keep("budget", b.Budget) {
			continue
		}
		for i, c := range b.Clients {
			row := map[string][]byte{
				"kind":           encText(kind),
				"budget":         encText(b.Budget),
				"op":             encText(b.Op.String()),
				"rank":           encInt(int32(i + 1)),
				"client":         encText(c.Client),
				"ops_per_second": encDouble(c.Rate),
				"share":          encDouble(c.Share),
			}
			if b.Limit > 0 {
				row["limit_per_second"] = encInt(int32(min(b.Limit, 1<<31-1)))
			}
			rows = append(rows, row)
		}
	}
	return rows
}
