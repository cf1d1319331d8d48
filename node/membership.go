package node

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// membership serves the Membership service on the internode listener: how removals (kvnode
// removenode) travel between nodes, never by gossip alone (cluster.RemovalPeers).
type membership struct {
	replicapb.UnimplementedMembershipServer
	n *Node
}

// Removed implements replicapb.MembershipServer: every removal this node knows.
func (m membership) Removed(context.Context, *replicapb.RemovedRequest) (*replicapb.RemovedResponse, error) {
	resp := &replicapb.RemovedResponse{}
	for _, r := range m.n.cluster.Removals() {
		resp.Removals = append(resp.Removals, &replicapb.Removal{Id: string(r.ID), At: r.At})
	}
	resp.Removing = removingToWire(m.n.cluster.Removing())
	return resp, nil
}

// Announce implements replicapb.MembershipServer: it applies and persists removals made by a
// member of the cluster.
func (m membership) Announce(ctx context.Context, req *replicapb.AnnounceRequest) (*replicapb.AnnounceResponse, error) {
	from := cluster.NodeID(req.GetFrom())
	if _, ok := m.n.cluster.Member(from); !ok || from == m.n.cluster.LocalID() {
		return nil, invalidArg("membership announce: %q is not another member of the cluster", req.GetFrom())
	}
	if len(req.GetRemovals()) > cluster.MaxRemovals {
		return nil, invalidArg("membership announce: %d removals, the limit is %d", len(req.GetRemovals()), cluster.MaxRemovals)
	}
	if len(req.GetRemoving().GetIds()) > cluster.MaxRemovals {
		return nil, invalidArg("membership announce: %d removals in progress, the limit is %d", len(req.GetRemoving().GetIds()), cluster.MaxRemovals)
	}
	if err := m.n.cluster.LearnRemovals(from, removalsFromWire(req.GetRemovals())); err != nil {
		return nil, err
	}
	if req.Removing != nil {
		if err := m.n.cluster.LearnRemoving(from, removingFromWire(req.GetRemoving())); err != nil {
			return nil, err
		}
	}
	return &replicapb.AnnounceResponse{}, nil
}

func removingToWire(ids []cluster.NodeID) *replicapb.Removing {
	out := &replicapb.Removing{}
	for _, id := range ids {
		out.Ids = append(out.Ids, string(id))
	}
	return out
}

func removingFromWire(r *replicapb.Removing) []cluster.NodeID {
	var out []cluster.NodeID
	for _, id := range r.GetIds() {
		out = append(out, cluster.NodeID(id))
	}
	return out
}

func removalsFromWire(rs []*replicapb.Removal) []cluster.Removal {
	out := make([]cluster.Removal, 0, len(rs))
	for _, r := range rs {
		out = append(out, cluster.Removal{ID: cluster.NodeID(r.GetId()), At: r.GetAt()})
	}
	return out
}

// removalPeers implements cluster.RemovalPeers over the peers' internode listeners, with the
// node's internode credentials (mutual TLS when TLS is on). Removals are rare: each call dials
// its own connection. It needs only the node's security material, so membership can use it
// while it starts.
type removalPeers struct{ n *Node }

func (p removalPeers) dial(m cluster.Member) (replicapb.MembershipClient, func(), error) {
	if m.RPCAddr == "" {
		return nil, nil, fmt.Errorf("node %s: no internode address known", m.ID)
	}
	limit := MessageLimit(p.n.cfg.Coordinator.MaxMutationSize)
	conn, err := grpc.NewClient(dialAddr(m), grpc.WithTransportCredentials(p.n.internodeCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(limit), grpc.MaxCallSendMsgSize(limit)))
	if err != nil {
		return nil, nil, fmt.Errorf("node %s at %s: %w", m.ID, m.RPCAddr, err)
	}
	return replicapb.NewMembershipClient(conn), func() { conn.Close() }, nil
}

// Removed asks peer for its removals and the removals it has in progress.
func (p removalPeers) Removed(ctx context.Context, peer cluster.Member) ([]cluster.Removal, []cluster.NodeID, error) {
	api, done, err := p.dial(peer)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	resp, err := api.Removed(ctx, &replicapb.RemovedRequest{}, grpc.WaitForReady(true))
	if status.Code(err) == codes.Unimplemented {
		return nil, nil, nil // a release before the Membership service: it confirms no removal
	}
	if err != nil {
		return nil, nil, fmt.Errorf("node %s: %w", peer.ID, err)
	}
	return removalsFromWire(resp.GetRemovals()), removingFromWire(resp.GetRemoving()), nil
}

// AnnounceRemoving tells peer of the removals this node has in progress.
func (p removalPeers) AnnounceRemoving(ctx context.Context, peer cluster.Member, from cluster.NodeID, removing []cluster.NodeID) error {
	api, done, err := p.dial(peer)
	if err != nil {
		return err
	}
	defer done()
	req := &replicapb.AnnounceRequest{From: string(from), Removing: removingToWire(removing)}
	if _, err := api.Announce(ctx, req, grpc.WaitForReady(true)); err != nil {
		return fmt.Errorf("node %s: %w", peer.ID, err)
	}
	return nil
}

// Announce tells peer of removals made by this node.
func (p removalPeers) Announce(ctx context.Context, peer cluster.Member, from cluster.NodeID, removals []cluster.Removal) error {
	api, done, err := p.dial(peer)
	if err != nil {
		return err
	}
	defer done()
	req := &replicapb.AnnounceRequest{From: string(from)}
	for _, r := range removals {
		req.Removals = append(req.Removals, &replicapb.Removal{Id: string(r.ID), At: r.At})
	}
	if _, err := api.Announce(ctx, req, grpc.WaitForReady(true)); err != nil {
		return fmt.Errorf("node %s: %w", peer.ID, err)
	}
	return nil
}
