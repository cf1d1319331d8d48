package grpcapi

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/schema"
)

// DefaultTopPartitions is how many partitions per table TopPartitions lists when the request
// does not say.
const DefaultTopPartitions = 10

// TopSource is what TopPartitions needs of the node: its schema, and every node's answer when
// asked for the partitions its limiter saw above twice their limit in the last seconds.
type TopSource interface {
	// Schema returns the node's current schema.
	Schema() *schema.Schema
	// HotPartitions asks every live node for its hot partitions of table (0: every table) and
	// returns one answer per node of the cluster: its list, or that it is down or did not
	// answer in time.
	HotPartitions(ctx context.Context, table schema.TableID) []coordinator.NodeHotPartitions
}

// TopPartitions lists, per table, the partitions the cluster's limiters see as hottest now,
// merged over the nodes' lists by coordinator.MergeTopPartitions (a partition's estimated rate is
// the largest among the nodes; rejections add up the nodes' coordinator-local rejections, plus
// the largest rate among enforcing replicas). Each table lists at most req.Limit partitions
// (DefaultTopPartitions when 0), hottest first. Nodes that are down or do not answer are named
// in the response.
//
// Errors are gRPC statuses: INVALID_ARGUMENT for a table without its keyspace or a keyspace or
// table the schema does not hold.
func (s *Server) TopPartitions(ctx context.Context, req *kvnodepb.TopPartitionsRequest) (*kvnodepb.TopPartitionsResponse, error) {
	if s.cfg.Top == nil {
		return s.UnimplementedKVNodeServer.TopPartitions(ctx, req)
	}
	sch := s.cfg.Top.Schema()
	var only schema.TableID
	switch {
	case req.GetTable() != "" && req.GetKeyspace() == "":
		return nil, status.Errorf(codes.InvalidArgument, "table %q needs its keyspace", req.GetTable())
	case req.GetTable() != "":
		t, ok := sch.Table(req.GetKeyspace(), req.GetTable())
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "unknown table %s.%s", req.GetKeyspace(), req.GetTable())
		}
		only = t.ID
	case req.GetKeyspace() != "":
		if _, ok := sch.Keyspace(req.GetKeyspace()); !ok {
			return nil, status.Errorf(codes.InvalidArgument, "unknown keyspace %s", req.GetKeyspace())
		}
	}
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = DefaultTopPartitions
	}
	answers := s.cfg.Top.HotPartitions(ctx, only)
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return topPartitionsResponse(coordinator.MergeTopPartitions(sch, answers, req.GetKeyspace(), limit)), nil
}

// topPartitionsResponse is the client API's form of the cluster's hot partitions.
func topPartitionsResponse(top coordinator.TopPartitions) *kvnodepb.TopPartitionsResponse {
	resp := &kvnodepb.TopPartitionsResponse{}
	for _, tt := range top.Tables {
		t := tt.Table
		tp := &kvnodepb.TableTopPartitions{Keyspace: t.Keyspace, Table: t.Name}
		for _, c := range t.PartitionKey {
			tp.PartitionKeyColumns = append(tp.PartitionKeyColumns, &kvnodepb.Column{Name: c.Name, Type: ColumnType(c.Type)})
		}
		for _, p := range tt.Partitions {
			tp.Partitions = append(tp.Partitions, &kvnodepb.TopPartition{
				Op:                    opToProto(p.Op),
				PartitionKey:          keyValues(t, p.Key),
				Token:                 p.Token,
				EstimatedOpsPerSecond: p.EstimatedOpsPerSecond,
				Limit:                 p.Limit,
				RejectedPerSecond:     p.RejectedPerSecond,
				RejectedShare:         p.RejectedShare,
				Nodes:                 uint32(p.Nodes),
				WouldRejectPerSecond:  p.WouldRejectPerSecond,
			})
		}
		resp.Tables = append(resp.Tables, tp)
	}
	for _, id := range top.Unreachable {
		resp.UnreachableNodes = append(resp.UnreachableNodes, string(id))
	}
	return resp
}

// keyValues decodes a partition key's components by the table's partition key types; nil when
// the key is unknown or does not match the table.
func keyValues(t *schema.Table, key [][]byte) []*kvnodepb.Value {
	if len(key) != len(t.PartitionKey) {
		return nil
	}
	out := make([]*kvnodepb.Value, len(key))
	for i, c := range key {
		v, err := Value(t.PartitionKey[i].Type, c)
		if err != nil {
			return nil
		}
		out[i] = v
	}
	return out
}
