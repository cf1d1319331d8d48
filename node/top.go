package node

import (
	"context"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell/systables"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// topPartitionsTimeout bounds how long TopPartitions waits for each node's list; a node that
// has not answered by then is reported unreachable.
const topPartitionsTimeout = 5 * time.Second

// topSource is what the client API's TopPartitions needs of the node (grpcapi.TopSource): the
// schema, and every node's hot partitions.
type topSource struct{ n *Node }

var _ grpcapi.TopSource = topSource{}

func (t topSource) Schema() *schema.Schema { return t.n.schema.Schema() }

// HotPartitions asks every live member for its hot partitions of table (0: all), in parallel,
// and returns every member's answer.
func (t topSource) HotPartitions(ctx context.Context, table schema.TableID) []coordinator.NodeHotPartitions {
	return t.n.gatherTopPartitions(ctx, &replicapb.TopPartitionsRequest{TableId: uint64(table)})
}

var _ systables.TopSource = systemSource{}

// TopPartitions serves system.top_partitions: the same gathering from every live node and the
// same merge (coordinator.MergeTopPartitions) as the gRPC API's TopPartitions.
func (s systemSource) TopPartitions(ctx context.Context, keyspace string, limit int) (coordinator.TopPartitions, error) {
	answers := s.n.gatherTopPartitions(ctx, &replicapb.TopPartitionsRequest{})
	if err := ctx.Err(); err != nil {
		return coordinator.TopPartitions{}, err
	}
	return coordinator.MergeTopPartitions(s.n.schema.Schema(), answers, keyspace, limit), nil
}

// gatherTopPartitions asks every live member for its hot partitions, in parallel, and returns
// one answer per member: its list, or that it is down or failed to answer within a few seconds.
func (n *Node) gatherTopPartitions(ctx context.Context, req *replicapb.TopPartitionsRequest) []coordinator.NodeHotPartitions {
	ctx, cancel := context.WithTimeout(ctx, topPartitionsTimeout)
	defer cancel()
	type answer struct {
		id    coordinator.NodeID
		parts []*replicapb.HotPartition
		err   error
	}
	members := n.cluster.Members()
	out := make([]coordinator.NodeHotPartitions, 0, len(members))
	answers := make(chan answer, len(members)) // room for every answer: no sender ever blocks
	asked := 0
	for _, m := range members {
		id := coordinator.NodeID(m.ID)
		if !m.Live {
			out = append(out, coordinator.NodeHotPartitions{Node: id, Unreachable: true})
			continue
		}
		asked++
		go func() { // ends when the call returns, at the latest at ctx's deadline
			resp, err := internode.Call[*replicapb.TopPartitionsResponse](ctx, n.sender, internode.NodeID(id), req)
			answers <- answer{id, resp.GetPartitions(), err}
		}()
	}
	for range asked {
		a := <-answers
		if a.err != nil {
			n.log.Warn("a node did not list its hot partitions", "peer", string(a.id), "err", a.err)
			out = append(out, coordinator.NodeHotPartitions{Node: a.id, Unreachable: true})
			continue
		}
		out = append(out, coordinator.NodeHotPartitions{Node: a.id, Partitions: hotPartitions(a.parts)})
	}
	return out
}

// hotPartitions converts a node's list from the internode protocol, skipping entries with an op
// other than read or write.
func hotPartitions(ps []*replicapb.HotPartition) []coordinator.HotPartition {
	out := make([]coordinator.HotPartition, 0, len(ps))
	for _, p := range ps {
		op, ok := internode.DomainOp(p.GetOp())
		if !ok {
			continue
		}
		out = append(out, coordinator.HotPartition{
			Table: schema.TableID(p.GetTableId()), Op: op, Token: p.GetToken(), Key: p.GetPartitionKey(),
			OpsPerSecond:                   p.GetOpsPerSecond(),
			CoordinatorRejectionsPerSecond: p.GetCoordinatorRejectionsPerSecond(),
			ReplicaRejectionsPerSecond:     p.GetReplicaRejectionsPerSecond(),

			CoordinatorWouldRejectPerSecond: p.GetCoordinatorWouldRejectPerSecond(),
			ReplicaWouldRejectPerSecond:     p.GetReplicaWouldRejectPerSecond(),
		})
	}
	return out
}
