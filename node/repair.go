package node

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/repair"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// Anti-entropy repair (package repair): the node is its Host, and serves the Repair admin
// service (`kvnode repair`) by converting kvnodepb to repair's domain types and back.

// repairHost adapts the node to repair.Host.
type repairHost struct{ n *Node }

func (h repairHost) Self() coordinator.NodeID { return coordinator.NodeID(h.n.cluster.LocalID()) }

func (h repairHost) Ring() repair.Ring { return repairRing{h.n.cluster.Ring()} }

func (h repairHost) Schema() *schema.Schema { return h.n.schema.Schema() }

func (h repairHost) AntiEntropy(id coordinator.NodeID) (repair.AntiEntropy, error) {
	if id != h.Self() && !h.n.cluster.IsLive(cluster.NodeID(id)) {
		return nil, repair.ErrDown
	}
	return antiEntropyPeer{h.n.sender, internode.NodeID(id)}, nil
}

func (h repairHost) Mutate(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	return h.n.trans.Mutate(ctx, to, req)
}

// Throttle takes the bytes from the node's stream budget (topology.throttle): repair and
// streaming together send at most stream_throughput.
func (h repairHost) Throttle(ctx context.Context, n int) error { return h.n.topo.throttle(ctx, n) }

func (h repairHost) SetRepairedAt(id schema.TableID, at time.Time) error {
	return h.n.store.SetRepairedAt(id, at)
}

func (h repairHost) RepairedAt(id schema.TableID) (time.Time, bool, error) {
	return h.n.store.RepairedAt(id)
}

func (h repairHost) Purge(ctx context.Context, t *schema.Table, now time.Time) (replica.PurgeStats, error) {
	return h.n.store.Purge(ctx, t, now)
}

// repairRing adapts a cluster ring to repair.Ring.
type repairRing struct{ r *cluster.Ring }

func (r repairRing) Tokens() []int64 {
	var out []int64
	for _, id := range r.r.Nodes() {
		out = append(out, r.r.Tokens(id)...)
	}
	return out
}

func (r repairRing) Replicas(token int64, rf schema.Replication) []coordinator.NodeID {
	ids := r.r.AppendReplicasFor(nil, token, rf)
	out := make([]coordinator.NodeID, len(ids))
	for i, id := range ids {
		out[i] = coordinator.NodeID(id)
	}
	return out
}

// antiEntropyPeer is repair.AntiEntropy of node to over the node's Sender.
type antiEntropyPeer struct {
	s  *internode.Sender
	to internode.NodeID
}

func (p antiEntropyPeer) RangeHashes(ctx context.Context, req *replicapb.RangeHashesRequest) (*replicapb.RangeHashesResponse, error) {
	return internode.Call[*replicapb.RangeHashesResponse](ctx, p.s, p.to, req)
}

func (p antiEntropyPeer) PartitionHashes(ctx context.Context, req *replicapb.PartitionHashesRequest) (*replicapb.PartitionHashesResponse, error) {
	return internode.Call[*replicapb.PartitionHashesResponse](ctx, p.s, p.to, req)
}

func (p antiEntropyPeer) FetchPartitions(ctx context.Context, req *replicapb.FetchPartitionsRequest) (*replicapb.FetchPartitionsResponse, error) {
	return internode.Call[*replicapb.FetchPartitionsResponse](ctx, p.s, p.to, req)
}

// autoRepairStateFile, in the data directory, holds the automatic repair's round in progress.
const autoRepairStateFile = "auto_repair.json"

// startRepair creates the node's repair service and starts its periodic purge and its automatic
// repair. Repairs and purges run on the clock that stamps tombstones' local deletion time.
func (n *Node) startRepair() error {
	r, err := repair.New(repair.Config{Options: n.cfg.Repair, StateFile: filepath.Join(n.cfg.DataDir, autoRepairStateFile),
		Host: repairHost{n}, Logger: n.log, Now: time.Now, WriteTimeout: n.cfg.Coordinator.WriteTimeout})
	if err != nil {
		return err
	}
	n.repair = r
	r.Start()
	r.StartAuto()
	return nil
}

// repairServer serves the Repair admin service over the node's repair service.
type repairServer struct {
	kvnodepb.UnimplementedRepairServer
	n *Node
}

// Repair implements kvnodepb.RepairServer.
func (r repairServer) Repair(ctx context.Context, req *kvnodepb.RepairRequest) (*kvnodepb.RepairResponse, error) {
	s := r.n.schema.Schema()
	var (
		tables []*schema.Table
		err    error
	)
	// With authentication on, system_auth's roles and grants are repaired as well: with every
	// table, or when named.
	sys := r.n.schema.System()
	if _, named := sys.Keyspace(req.GetKeyspace()); named && r.n.cfg.authEnabled() {
		s = sys
		tables, err = repair.Select(sys, req.GetKeyspace(), req.GetTable())
	} else if tables, err = repair.Select(s, req.GetKeyspace(), req.GetTable()); err == nil && req.GetKeyspace() == "" && r.n.cfg.authEnabled() {
		tables = append(tables, sys.Tables("")...)
	}
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	var targets []repair.Target
	for _, t := range tables {
		ks, ok := s.Keyspace(t.Keyspace)
		if !ok {
			if ks, ok = sys.Keyspace(t.Keyspace); !ok {
				continue
			}
		}
		targets = append(targets, repair.Target{Table: t, RF: ks.Replication()})
	}
	results, err := r.n.repair.Repair(ctx, targets)
	switch {
	case errors.Is(err, repair.ErrRunning):
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	case err != nil:
		return nil, status.FromContextError(err).Err()
	}
	resp := &kvnodepb.RepairResponse{}
	complete := req.GetKeyspace() == "" && req.GetTable() == ""
	for _, tr := range results {
		complete = complete && tr.RangesFailed == 0
		pb := &kvnodepb.TableRepair{Keyspace: tr.Keyspace, Table: tr.Table, StartedUnixNanos: tr.Started.UnixNano(),
			Ranges: uint32(tr.Ranges), RangesFailed: uint32(tr.RangesFailed), LeavesMismatched: tr.LeavesMismatched,
			PartitionsStreamed: tr.PartitionsStreamed, BytesStreamed: tr.BytesStreamed}
		for _, e := range tr.Errors {
			pb.Errors = append(pb.Errors, e.Error())
		}
		resp.Tables = append(resp.Tables, pb)
	}
	if complete {
		// Every range of every table this node replicates now matches its other replicas: a
		// node started despite a corrupt log serves reads again (storage.go).
		if err := r.n.repaired(); err != nil {
			return nil, status.Errorf(codes.Internal, "repair completed, but clearing the node's unrepaired mark failed: %v", err)
		}
	}
	return resp, nil
}
