package node

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// membership answers the removed and announce requests on the internode listener: how removals
// (kvnode removenode) travel between nodes, never by gossip alone (cluster.RemovalPeers).
type membership struct {
	n *Node
}

// Removed answers a removed request: every removal this node knows.
func (m membership) Removed(context.Context, *replicapb.RemovedRequest) (*replicapb.RemovedResponse, error) {
	resp := &replicapb.RemovedResponse{}
	for _, r := range m.n.cluster.Removals() {
		resp.Removals = append(resp.Removals, &replicapb.Removal{Id: string(r.ID), At: r.At})
	}
	resp.Removing = removingToWire(m.n.cluster.Removing())
	return resp, nil
}

// Announce answers an announce request: it applies and persists removals made by a member of
// the cluster.
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

// removalPeers implements cluster.RemovalPeers over the node's Sender, at the peers' gossiped
// internode addresses (membership may not list them yet while it starts).
type removalPeers struct{ s *internode.Sender }

// removalCall sends req to peer, waiting for its connection to come up.
func removalCall[Resp proto.Message](ctx context.Context, s *internode.Sender, peer cluster.Member, req proto.Message) (Resp, error) {
	if peer.RPCAddr == "" {
		var zero Resp
		return zero, fmt.Errorf("node %s: no internode address known", peer.ID)
	}
	return internode.Call[Resp](ctx, s, internode.NodeID(peer.ID), req, internode.WaitForReady(), internode.At(dialAddr(peer)))
}

// Removed asks peer for its removals and the removals it has in progress.
func (p removalPeers) Removed(ctx context.Context, peer cluster.Member) ([]cluster.Removal, []cluster.NodeID, error) {
	resp, err := removalCall[*replicapb.RemovedResponse](ctx, p.s, peer, &replicapb.RemovedRequest{})
	if status.Code(err) == codes.Unimplemented {
		return nil, nil, nil // a release that serves no removed requests: it confirms no removal
	}
	if err != nil {
		return nil, nil, err
	}
	return removalsFromWire(resp.GetRemovals()), removingFromWire(resp.GetRemoving()), nil
}

// AnnounceRemoving tells peer of the removals this node has in progress.
func (p removalPeers) AnnounceRemoving(ctx context.Context, peer cluster.Member, from cluster.NodeID, removing []cluster.NodeID) error {
	req := &replicapb.AnnounceRequest{From: string(from), Removing: removingToWire(removing)}
	_, err := removalCall[*replicapb.AnnounceResponse](ctx, p.s, peer, req)
	return err
}

// Announce tells peer of removals made by this node.
func (p removalPeers) Announce(ctx context.Context, peer cluster.Member, from cluster.NodeID, removals []cluster.Removal) error {
	req := &replicapb.AnnounceRequest{From: string(from)}
	for _, r := range removals {
		req.Removals = append(req.Removals, &replicapb.Removal{Id: string(r.ID), At: r.At})
	}
	_, err := removalCall[*replicapb.AnnounceResponse](ctx, p.s, peer, req)
	return err
}
