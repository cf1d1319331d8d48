package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

var errEOF = io.EOF

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
	own := n.cluster.Ring().Ownership(maxReplicationFactor(n.schema.Schema()))
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
		up := "D"
		if m.Live {
			up = "U"
		}
		resp.Nodes = append(resp.Nodes, &kvnodepb.NodeStatus{
			HostId: string(m.ID), Address: m.RPCAddr, State: up + m.State.Letter(),
			Tokens: uint32(m.NumTokens), LoadBytes: loads[i], Owns: own[m.ID],
		})
	}
	return resp, nil
}

// Decommission implements kvnodepb.AdminServer.
func (a adminServer) Decommission(ctx context.Context, _ *kvnodepb.DecommissionRequest) (*kvnodepb.DecommissionResponse, error) {
	got, err := a.n.decommission(ctx)
	if err != nil {
		return nil, adminError(err)
	}
	return &kvnodepb.DecommissionResponse{EntriesStreamed: got}, nil
}

// RemoveNode implements kvnodepb.AdminServer.
func (a adminServer) RemoveNode(ctx context.Context, req *kvnodepb.RemoveNodeRequest) (*kvnodepb.RemoveNodeResponse, error) {
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
	st, err := a.n.cleanup(ctx)
	if err != nil {
		return nil, adminError(err)
	}
	return &kvnodepb.CleanupResponse{Tables: uint32(st.Tables), RangesDeleted: uint32(st.Ranges)}, nil
}
