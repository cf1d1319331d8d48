package internode

import (
	"context"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// Peers makes a coordinator's calls to replicas and peers over a Sender, one typed method per
// request kind, addressed by the domain's node ids: what the coordinator's shell consumes as its
// Transport, RangeReader, PaxosTransport, DeltaSender, ScopeSender, TopClientsSender and the
// calls of its Batchlog, and hints and repair as their senders. A subsystem's new kind adds its
// method here, so a node's wiring only hands the Peers of its Sender around.
type Peers struct{ S *Sender }

// Mutate sends a mutation to replica to.
func (p Peers) Mutate(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	return Call[*replicapb.MutateResponse](ctx, p.S, NodeID(to), req)
}

// MutateAsync sends a mutation to replica to without waiting, as Sender.Start does: done gets
// the answer; false when the mutation must go by Mutate instead.
func (p Peers) MutateAsync(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest, done func(*replicapb.MutateResponse, error)) bool {
	return Start(ctx, p.S, NodeID(to), req, done)
}

// Read sends a read to replica to.
func (p Peers) Read(ctx context.Context, to coordinator.NodeID, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error) {
	return Call[*replicapb.ReadResponse](ctx, p.S, NodeID(to), req)
}

// ReadRange sends a page of a token-range scan to replica to.
func (p Peers) ReadRange(ctx context.Context, to coordinator.NodeID, req *replicapb.RangeReadRequest) (*replicapb.RangeReadResponse, error) {
	return Call[*replicapb.RangeReadResponse](ctx, p.S, NodeID(to), req)
}

// CounterUpdate sends a counter update to the replica that leads it.
func (p Peers) CounterUpdate(ctx context.Context, to coordinator.NodeID, req *replicapb.CounterUpdateRequest) (*replicapb.CounterUpdateResponse, error) {
	return Call[*replicapb.CounterUpdateResponse](ctx, p.S, NodeID(to), req)
}

// PaxosPrepare sends a lightweight transaction's prepare (with its read) to replica to.
func (p Peers) PaxosPrepare(ctx context.Context, to coordinator.NodeID, req *replicapb.PaxosPrepareRequest) (*replicapb.PaxosPrepareResponse, error) {
	return Call[*replicapb.PaxosPrepareResponse](ctx, p.S, NodeID(to), req)
}

// PaxosPropose sends a lightweight transaction's proposal to replica to.
func (p Peers) PaxosPropose(ctx context.Context, to coordinator.NodeID, req *replicapb.PaxosProposeRequest) (*replicapb.PaxosProposeResponse, error) {
	return Call[*replicapb.PaxosProposeResponse](ctx, p.S, NodeID(to), req)
}

// PaxosCommit sends a lightweight transaction's commit to replica to.
func (p Peers) PaxosCommit(ctx context.Context, to coordinator.NodeID, req *replicapb.PaxosCommitRequest) (*replicapb.PaxosCommitResponse, error) {
	return Call[*replicapb.PaxosCommitResponse](ctx, p.S, NodeID(to), req)
}

// AccountDelta sends account-only deltas to replica to.
func (p Peers) AccountDelta(ctx context.Context, to coordinator.NodeID, req *replicapb.AccountDeltaRequest) (*replicapb.AccountDeltaResponse, error) {
	return Call[*replicapb.AccountDeltaResponse](ctx, p.S, NodeID(to), req)
}

// StoreBatch stores a logged batch in node to's batchlog.
func (p Peers) StoreBatch(ctx context.Context, to coordinator.NodeID, req *replicapb.StoreBatchRequest) (*replicapb.BatchlogResponse, error) {
	return Call[*replicapb.BatchlogResponse](ctx, p.S, NodeID(to), req)
}

// RemoveBatch removes a batch from node to's batchlog.
func (p Peers) RemoveBatch(ctx context.Context, to coordinator.NodeID, req *replicapb.RemoveBatchRequest) (*replicapb.BatchlogResponse, error) {
	return Call[*replicapb.BatchlogResponse](ctx, p.S, NodeID(to), req)
}

// ScopeCounts sends budget counts to peer to.
func (p Peers) ScopeCounts(ctx context.Context, to coordinator.NodeID, req *replicapb.ScopeCountsRequest) (*replicapb.ScopeCountsResponse, error) {
	return Call[*replicapb.ScopeCountsResponse](ctx, p.S, NodeID(to), req)
}

// TopClients asks peer to who spends the budgets through it.
func (p Peers) TopClients(ctx context.Context, to coordinator.NodeID, req *replicapb.TopClientsRequest) (*replicapb.TopClientsResponse, error) {
	return Call[*replicapb.TopClientsResponse](ctx, p.S, NodeID(to), req)
}
