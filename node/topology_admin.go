package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

func invalidArg(format string, args ...any) error {
	return status.Error(codes.InvalidArgument, fmt.Sprintf(format, args...))
}

// adminServer is the Admin service (kvnode status, decommission, removenode, cleanup), served
// next to the client API.
type adminServer struct {
	kvnodepb.UnimplementedAdminServer
	n *Node
}

// adminError maps a topology error to its gRPC status.
func adminError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errRefused):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, cluster.ErrUnknownNode):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codes.Internal, err.Error())
}

// Status implements kvnodepb.AdminServer: every ring member as this node sees it, with the load
// each live member reports.
func (a adminServer) Status(ctx context.Context, _ *kvnodepb.StatusRequest) (*kvnodepb.StatusResponse, error) {
	n := a.n
	members := n.cluster.Members()
	own := n.cluster.Ring().Ownership(widestPlacement(n.schema.Schema()))
	loads := make([]int64, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		loads[i] = -1
		if !m.Live {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := n.view(ctx, m.ID); err == nil {
				loads[i] = v.GetLoadBytes()
			}
		}()
	}
	wg.Wait()
	resp := &kvnodepb.StatusResponse{}
	for i, m := range members {
		if m.State == cluster.StateLeft {
			continue
		}
		up, state := "D", m.State.Letter()
		if m.Live && m.Unavailable == "" { // the local node is live whatever it says (diskfull.go)
			up = "U"
		}
		if m.Unrepaired && m.State == cluster.StateNormal {
			state = "R" // unrepaired: serves no reads until a repair run on it completes
		}
		resp.Nodes = append(resp.Nodes, &kvnodepb.NodeStatus{
			HostId: string(m.ID), Address: m.RPCAddr, State: up + state,
			Tokens: uint32(m.NumTokens), LoadBytes: loads[i], Owns: own[m.ID], DownReason: m.Unavailable,
			DataCenter: cmp.Or(m.DataCenter, cluster.DefaultDataCenter), Rack: cmp.Or(m.Rack, cluster.DefaultRack),
		})
	}
	repairs, err := n.repair.AutoStatus()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reading the repair times: %v", err)
	}
	resp.AutoRepair = n.cfg.Repair.AutoRepair
	for _, r := range repairs {
		tr := &kvnodepb.TableRepairStatus{Keyspace: r.Keyspace, Table: r.Table, DueUnixNanos: r.Due.UnixNano(),
			RangesDone: uint32(r.Done), RangesTotal: uint32(r.Total)}
		if !r.LastRepaired.IsZero() {
			tr.LastRepairedUnixNanos = r.LastRepaired.UnixNano()
		}
		resp.Repairs = append(resp.Repairs, tr)
	}
	return resp, nil
}

// allowTopologyChange refuses a topology change (decommission, removenode, cleanup) or a change
// of the node's snapshots (take, clear, restore) asked over a connection from another host when
// the node has no authenticator: the Admin and Snapshot services share the client port, and
// without logins anyone who reaches it could otherwise take the node out of the cluster, remove
// others, fill its disk with snapshots or delete its backups, as Cassandra's nodetool is
// local-only unless JMX authentication is on. With authentication on, the gRPC interceptors already demand a
// superuser (grpcapi.AuthInterceptors).
func (n *Node) allowTopologyChange(ctx context.Context, what string) error {
	if n.cfg.authEnabled() {
		return nil
	}
	p, ok := peer.FromContext(ctx)
	if ok && sameHost(p) {
		return nil
	}
	from := "an unknown peer"
	if ok && p.Addr != nil {
		from = p.Addr.String()
	}
	return status.Errorf(codes.PermissionDenied,
		"%s from %s refused: with authenticator none this node takes topology and snapshot changes only from its own host; run kvnode %s on the node, or turn on authentication (authenticator: password) and log in as a superuser",
		what, from, what)
}

// sameHost reports whether p's connection comes from this host: over loopback, or from the
// address it reached (a host dialing one of its own addresses connects from it).
func sameHost(p *peer.Peer) bool {
	remote, ok := p.Addr.(*net.TCPAddr)
	if !ok {
		return false
	}
	if remote.IP.IsLoopback() {
		return true
	}
	local, ok := p.LocalAddr.(*net.TCPAddr)
	return ok && !remote.IP.IsUnspecified() && remote.IP.Equal(local.IP)
}

// Decommission implements kvnodepb.AdminServer.
func (a adminServer) Decommission(ctx context.Context, _ *kvnodepb.DecommissionRequest) (*kvnodepb.DecommissionResponse, error) {
	if err := a.n.allowTopologyChange(ctx, "decommission"); err != nil {
		return nil, err
	}
	got, err := a.n.decommission(ctx)
	if err != nil {
		return nil, adminError(err)
	}
	return &kvnodepb.DecommissionResponse{EntriesStreamed: got}, nil
}

// RemoveNode implements kvnodepb.AdminServer.
func (a adminServer) RemoveNode(ctx context.Context, req *kvnodepb.RemoveNodeRequest) (*kvnodepb.RemoveNodeResponse, error) {
	if err := a.n.allowTopologyChange(ctx, "removenode"); err != nil {
		return nil, err
	}
	id := cluster.NodeID(req.GetHostId())
	if id == "" {
		return nil, invalidArg("removenode: host_id is empty")
	}
	got, err := a.n.removeNode(ctx, id)
	if err != nil {
		return nil, adminError(err)
	}
	return &kvnodepb.RemoveNodeResponse{EntriesStreamed: got}, nil
}

// Cleanup implements kvnodepb.AdminServer.
func (a adminServer) Cleanup(ctx context.Context, _ *kvnodepb.CleanupRequest) (*kvnodepb.CleanupResponse, error) {
	if err := a.n.allowTopologyChange(ctx, "cleanup"); err != nil { // it deletes data, as they do
		return nil, err
	}
	st, err := a.n.Cleanup(ctx)
	if err != nil {
		return nil, adminError(err)
	}
	return &kvnodepb.CleanupResponse{Tables: uint32(st.Tables), RangesDeleted: uint32(st.Ranges)}, nil
}
