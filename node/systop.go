package node

import (
	"context"

	"github.com/kvnode/kvnode/coordinator/shell/systables"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

var _ systables.TopSource = systemSource{}

// TopPartitions serves system.top_partitions: the same gathering from every live node and the
// same merge as the gRPC API's TopPartitions (grpcapi.MergeTopPartitions), with each partition's
// key taken in its encoded form from the nodes' lists.
func (s systemSource) TopPartitions(ctx context.Context, keyspace string, limit int) (systables.TopPartitions, error) {
	lists, unreachable := s.n.gatherTopPartitions(ctx, &replicapb.TopPartitionsRequest{})
	if err := ctx.Err(); err != nil {
		return systables.TopPartitions{}, err
	}
	sch := s.n.schema.Schema()
	type hotKey struct {
		table schema.TableID
		op    schema.Op
		token int64
	}
	keys := map[hotKey][][]byte{}
	for _, list := range lists {
		for _, p := range list {
			k := hotKey{p.Table, p.Op, p.Token}
			if keys[k] == nil && len(p.Key) > 0 {
				keys[k] = p.Key
			}
		}
	}
	out := systables.TopPartitions{Unreachable: unreachable}
	for _, tt := range grpcapi.MergeTopPartitions(sch, lists, keyspace, limit) {
		t, ok := sch.Table(tt.GetKeyspace(), tt.GetTable())
		if !ok {
			continue
		}
		for _, p := range tt.GetPartitions() {
			op := schema.OpRead
			if p.GetOp() == kvnodepb.Op_OP_WRITE {
				op = schema.OpWrite
			}
			out.Partitions = append(out.Partitions, systables.TopPartition{
				Table: t, Op: op, Key: keys[hotKey{t.ID, op, p.GetToken()}], Token: p.GetToken(),
				EstimatedOpsPerSecond: p.GetEstimatedOpsPerSecond(),
				Limit:                 p.GetLimit(),
				RejectedPerSecond:     p.GetRejectedPerSecond(),
				RejectedShare:         p.GetRejectedShare(),
				WouldRejectPerSecond:  p.GetWouldRejectPerSecond(),
				Nodes:                 int(p.GetNodes()),
			})
		}
	}
	return out, nil
}
