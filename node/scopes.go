package node

import (
	"context"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/coordinator/shell/systables"
	"github.com/kvnode/kvnode/internode"
)

// scopeSyncTimeout bounds the sync of the budgets' counters from a peer when the node starts.
const scopeSyncTimeout = 2 * time.Second

var _ shell.TopClientsSender = transport{}

// transport carries counter updates to their leader (internode's counter_update).
var _ shell.CounterTransport = transport{}

// startScopes serves the peers' budget counts and spenders, exports the budgets' metrics, and fills the
// coordinator's counters from a live peer's before the node serves CQL clients, so that a
// node that starts or restarts judges its first limited requests on the cluster's load. A
// node without live peers (the first) starts empty, under the onset bound.
func (n *Node) startScopes(ctx context.Context) {
	internode.Handle(n.mux, n.exec.ScopeCounts)
	internode.Handle(n.mux, n.exec.TopClients)
	n.registry.MustRegister(n.exec.ScopeCollector())
	ctx, cancel := context.WithTimeout(ctx, scopeSyncTimeout)
	defer cancel()
	if from, err := n.exec.SyncScopes(ctx); err != nil {
		n.log.Warn("budgets' counters start empty", "err", err)
	} else if from != "" {
		n.log.Debug("budgets' counters synced", "from", from)
	}
}

var _ systables.TopClientsSource = systemSource{}

// ClusterTopClients lists who spends the budgets across the cluster (system.top_clients).
func (s systemSource) ClusterTopClients(ctx context.Context, kind, budget string, k int) (coordinator.TopClients, error) {
	return s.n.exec.ClusterTopClients(ctx, kind, budget, k)
}
