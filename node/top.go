package node

import (
	"context"
	"slices"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// topPartitionsTimeout bounds how long TopPartitions waits for each node's list; a node that
// has not answered by then is reported unreachable.
const topPartitionsTimeout = 5 * time.Second

// topSource is what the client API's TopPartitions needs of the node (grpcapi.TopSource): the
// schema, and every live node's hot partitions.
type topSource struct{ n *Node }

func (t topSource) Schema() *schema.Schema { return t.n.schema.Schema() }

// HotPartitions asks every live member for its hot partitions of table (0: all), in parallel, and
// returns the lists that came back and the ids of the members that are down or failed to answer
// within a few seconds.
func (t topSource) HotPartitions(ctx context.Context, table schema.TableID) ([][]grpcapi.HotPartition, []string) {
	return t.n.gatherTopPartitions(ctx, &replicapb.TopPartitionsRequest{TableId: uint64(table)})
}

// gatherTopPartitions asks every live member for its hot partitions, in parallel, and returns
// the lists that came back and the ids of the members that are down or failed to answer.
func (n *Node) gatherTopPartitions(ctx context.Context, req *replicapb.TopPartitionsRequest) ([][]grpcapi.HotPartition, []string) {
	ctx, cancel := context.WithTimeout(ctx, topPartitionsTimeout)
	defer cancel()
	type answer struct {
		id    cluster.NodeID
		parts []*replicapb.HotPartition
		err   error
	}
	var unreachable []string
	members := n.cluster.Members()
	answers := make(chan answer, len(members)) // room for every answer: no sender ever blocks
	asked := 0
	for _, m := range members {
		if !m.Live {
			unreachable = append(unreachable, string(m.ID))
			continue
		}
		asked++
		go func() { // ends when the call returns, at the latest at ctx's deadline
			resp, err := n.trans.TopPartitions(ctx, coordinator.NodeID(m.ID), req)
			answers <- answer{m.ID, resp.GetPartitions(), err}
		}()
	}
	var lists [][]grpcapi.HotPartition
	for range asked {
		a := <-answers
		if a.err != nil {
			n.log.Warn("a node did not list its hot partitions", "peer", string(a.id), "err", a.err)
			unreachable = append(unreachable, string(a.id))
			continue
		}
		lists = append(lists, hotPartitions(a.parts))
	}
	slices.Sort(unreachable)
	return lists, unreachable
}

// hotPartitions converts a node's list from the internode protocol, skipping entries with an op
// other than read or write.
func hotPartitions(ps []*replicapb.HotPartition) []grpcapi.HotPartition {
	out := make([]grpcapi.HotPartition, 0, len(ps))
	for _, p := range ps {
		op, ok := p.GetOp().Domain()
		if !ok {
			continue
		}
		out = append(out, grpcapi.HotPartition{
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
