package node

import (
	"cmp"
	"context"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// DefaultTopPartitions is how many partitions per table TopPartitions lists when the request
// does not say.
const DefaultTopPartitions = 10

// topPartitionsTimeout bounds how long TopPartitions waits for each node's list; a node that
// has not answered by then is reported unreachable.
const topPartitionsTimeout = 5 * time.Second

// clientAPI is the node's client service (kvnodepb.KVNode): the coordinator executes
// statements, and TopPartitions, which needs every node, is answered by the node.
type clientAPI struct {
	*coordinator.Server
	n     *Node
	limit int // the largest response, in bytes (MessageLimit)
}

// Execute runs one statement; see coordinator.Executor.Execute. A result larger than the
// message limit is refused with an error that says so and how to ask for less, instead of the
// transport failing to send it.
func (a clientAPI) Execute(ctx context.Context, req *kvnodepb.ExecuteRequest) (*kvnodepb.ExecuteResponse, error) {
	resp, err := a.Server.Execute(ctx, req)
	if err != nil {
		return nil, err
	}
	if n := proto.Size(resp); n > a.limit {
		return nil, status.Errorf(codes.ResourceExhausted,
			"the result is %d bytes, more than this node's message limit of %d bytes (2 × max_mutation_size + 4 MiB); select fewer rows with LIMIT or a clustering restriction", n, a.limit)
	}
	return resp, nil
}

// TopPartitions implements kvnodepb.KVNodeServer; see Node.TopPartitions.
func (a clientAPI) TopPartitions(ctx context.Context, req *kvnodepb.TopPartitionsRequest) (*kvnodepb.TopPartitionsResponse, error) {
	return a.n.TopPartitions(ctx, req)
}

// TopPartitions lists, per table, the partitions the cluster's limiters see as hottest now: it
// asks every live node for the partitions its limiter saw above twice their limit in the last
// seconds and merges the answers by (table, op, token). A partition's estimated rate is the
// largest among the nodes (each replica's counter measures the partition's whole load);
// rejections add up the nodes' coordinator-local rejections, plus the largest rate among
// enforcing replicas (the enforcing replicas of one operation reject it together). Each table
// lists at most req.Limit partitions (DefaultTopPartitions when 0), hottest first. Nodes that
// are down or do not answer within a few seconds are named in the response.
//
// Errors are gRPC statuses: INVALID_ARGUMENT for a table without its keyspace or a keyspace or
// table the schema does not hold.
func (n *Node) TopPartitions(ctx context.Context, req *kvnodepb.TopPartitionsRequest) (*kvnodepb.TopPartitionsResponse, error) {
	s := n.schema.Schema()
	var only schema.TableID
	switch {
	case req.GetTable() != "" && req.GetKeyspace() == "":
		return nil, status.Errorf(codes.InvalidArgument, "table %q needs its keyspace", req.GetTable())
	case req.GetTable() != "":
		t, ok := s.Table(req.GetKeyspace(), req.GetTable())
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "unknown table %s.%s", req.GetKeyspace(), req.GetTable())
		}
		only = t.ID
	case req.GetKeyspace() != "":
		if _, ok := s.Keyspace(req.GetKeyspace()); !ok {
			return nil, status.Errorf(codes.InvalidArgument, "unknown keyspace %s", req.GetKeyspace())
		}
	}
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = DefaultTopPartitions
	}

	lists, unreachable := n.gatherTopPartitions(ctx, &replicapb.TopPartitionsRequest{TableId: uint64(only)})
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return &kvnodepb.TopPartitionsResponse{
		Tables:           mergeTopPartitions(s, lists, req.GetKeyspace(), limit),
		UnreachableNodes: unreachable,
	}, nil
}

// gatherTopPartitions asks every live member for its hot partitions, in parallel, and returns
// the lists that came back and the ids of the members that are down or failed to answer.
func (n *Node) gatherTopPartitions(ctx context.Context, req *replicapb.TopPartitionsRequest) ([][]*replicapb.HotPartition, []string) {
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
	var lists [][]*replicapb.HotPartition
	for range asked {
		a := <-answers
		if a.err != nil {
			n.log.Warn("a node did not list its hot partitions", "peer", string(a.id), "err", a.err)
			unreachable = append(unreachable, string(a.id))
			continue
		}
		lists = append(lists, a.parts)
	}
	slices.Sort(unreachable)
	return lists, unreachable
}

// hotKey identifies a partition of a table for one op.
type hotKey struct {
	table schema.TableID
	op    replicapb.Op
	token int64
}

// hotMerge is one partition merged over the nodes that listed it.
type hotMerge struct {
	key              [][]byte
	ops              float64
	coordRej, repRej float64
	nodes            int
}

// mergeTopPartitions merges the nodes' lists into the client API's answer: per table of s (in
// keyspace only, when set) that has hot partitions, at most limit of them, hottest first.
// Tables ordered by keyspace and name.
func mergeTopPartitions(s *schema.Schema, lists [][]*replicapb.HotPartition, keyspace string, limit int) []*kvnodepb.TableTopPartitions {
	merged := map[hotKey]*hotMerge{}
	for _, list := range lists {
		for _, p := range list {
			k := hotKey{schema.TableID(p.GetTableId()), p.GetOp(), p.GetToken()}
			m := merged[k]
			if m == nil {
				m = &hotMerge{}
				merged[k] = m
			}
			m.ops = max(m.ops, p.GetOpsPerSecond())
			m.coordRej += p.GetCoordinatorRejectionsPerSecond()
			m.repRej = max(m.repRej, p.GetReplicaRejectionsPerSecond())
			if m.key == nil && len(p.GetPartitionKey()) > 0 {
				m.key = p.GetPartitionKey()
			}
			m.nodes++
		}
	}
	byTable := map[schema.TableID][]*kvnodepb.TopPartition{}
	keys := make([]hotKey, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b hotKey) int { return cmp.Compare(a.token, b.token) })
	for _, k := range keys {
		t, ok := s.TableByID(k.table)
		if !ok {
			continue
		}
		if cur, ok := s.Table(t.Keyspace, t.Name); !ok || cur.ID != t.ID || (keyspace != "" && t.Keyspace != keyspace) {
			continue // dropped, or not asked for
		}
		m := merged[k]
		rejected := m.coordRej + m.repRej
		share := 0.0
		switch {
		case m.ops > 0:
			share = min(1, rejected/m.ops)
		case rejected > 0:
			share = 1
		}
		byTable[t.ID] = append(byTable[t.ID], &kvnodepb.TopPartition{
			Op:                    opToProto(k.op),
			PartitionKey:          keyValues(t, m.key),
			Token:                 k.token,
			EstimatedOpsPerSecond: m.ops,
			Limit:                 limitOf(t, k.op),
			RejectedPerSecond:     rejected,
			RejectedShare:         share,
			Nodes:                 uint32(m.nodes),
		})
	}
	var out []*kvnodepb.TableTopPartitions
	for _, t := range s.Tables(keyspace) {
		parts := byTable[t.ID]
		if len(parts) == 0 {
			continue
		}
		slices.SortStableFunc(parts, func(a, b *kvnodepb.TopPartition) int {
			return cmp.Compare(b.EstimatedOpsPerSecond, a.EstimatedOpsPerSecond)
		})
		if len(parts) > limit {
			parts = parts[:limit]
		}
		tp := &kvnodepb.TableTopPartitions{Keyspace: t.Keyspace, Table: t.Name, Partitions: parts}
		for _, c := range t.PartitionKey {
			tp.PartitionKeyColumns = append(tp.PartitionKeyColumns, &kvnodepb.Column{Name: c.Name, Type: coordinator.ProtoColumnType(c.Type)})
		}
		out = append(out, tp)
	}
	return out
}

// keyValues decodes a partition key's components by the table's partition key types; nil when
// the key is unknown or does not match the table.
func keyValues(t *schema.Table, key [][]byte) []*kvnodepb.Value {
	if len(key) != len(t.PartitionKey) {
		return nil
	}
	out := make([]*kvnodepb.Value, len(key))
	for i, c := range key {
		v, err := coordinator.ProtoValue(t.PartitionKey[i].Type, c)
		if err != nil {
			return nil
		}
		out[i] = v
	}
	return out
}

func limitOf(t *schema.Table, op replicapb.Op) uint32 {
	if op == replicapb.Op_OP_READ {
		return t.RateLimit.MaxReadsPerSecond
	}
	return t.RateLimit.MaxWritesPerSecond
}

func opToProto(op replicapb.Op) kvnodepb.Op {
	switch op {
	case replicapb.Op_OP_READ:
		return kvnodepb.Op_OP_READ
	case replicapb.Op_OP_WRITE:
		return kvnodepb.Op_OP_WRITE
	}
	return kvnodepb.Op_OP_UNSPECIFIED
}
