package grpcapi

import (
	"cmp"
	"context"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/schema"
)

// DefaultTopPartitions is how many partitions per table TopPartitions lists when the request
// does not say.
const DefaultTopPartitions = 10

// TopSource is what TopPartitions needs of the node: its schema, and every live node's list of
// the partitions its limiter saw above twice their limit in the last seconds.
type TopSource interface {
	// Schema returns the node's current schema.
	Schema() *schema.Schema
	// HotPartitions asks every live node for its hot partitions of table (0: every table) and
	// returns one list per node that answered, and the ids of the nodes that are down or did not
	// answer in time.
	HotPartitions(ctx context.Context, table schema.TableID) (lists [][]HotPartition, unreachable []string)
}

// HotPartition is one node's view of a hot partition.
type HotPartition struct {
	Table schema.TableID
	Op    schema.Op
	Token int64
	// Key is the partition key's components, when the node knows them (else nil).
	Key [][]byte
	// OpsPerSecond is the node's estimate of the partition's rate; the rejection rates are its
	// coordinator-local and replica rejections.
	OpsPerSecond, CoordinatorRejectionsPerSecond, ReplicaRejectionsPerSecond float64
	// The would-reject rates are the same for a table whose limit is in shadow mode: what the
	// node would have rejected, had the limit been enforced.
	CoordinatorWouldRejectPerSecond, ReplicaWouldRejectPerSecond float64
}

// TopPartitions lists, per table, the partitions the cluster's limiters see as hottest now,
// merged by (table, op, token) over the nodes' lists. A partition's estimated rate is the largest
// among the nodes (each replica's counter measures the partition's whole load); rejections add
// up the nodes' coordinator-local rejections, plus the largest rate among enforcing replicas
// (the enforcing replicas of one operation reject it together). Each table lists at most
// req.Limit partitions (DefaultTopPartitions when 0), hottest first. Nodes that are down or do
// not answer are named in the response.
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
	lists, unreachable := s.cfg.Top.HotPartitions(ctx, only)
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return &kvnodepb.TopPartitionsResponse{
		Tables:           mergeTopPartitions(sch, lists, req.GetKeyspace(), limit),
		UnreachableNodes: unreachable,
	}, nil
}

// hotKey identifies a partition of a table for one op.
type hotKey struct {
	table schema.TableID
	op    schema.Op
	token int64
}

// hotMerge is one partition merged over the nodes that listed it.
type hotMerge struct {
	key              [][]byte
	ops              float64
	coordRej, repRej float64
	coordWould       float64 // shadow mode's would-be rejections, merged alike
	repWould         float64
	nodes            int
}

// mergeTopPartitions merges the nodes' lists into the client API's answer: per table of s (in
// keyspace only, when set) that has hot partitions, at most limit of them, hottest first.
// Tables ordered by keyspace and name.
func mergeTopPartitions(s *schema.Schema, lists [][]HotPartition, keyspace string, limit int) []*kvnodepb.TableTopPartitions {
	merged := map[hotKey]*hotMerge{}
	for _, list := range lists {
		for _, p := range list {
			k := hotKey{p.Table, p.Op, p.Token}
			m := merged[k]
			if m == nil {
				m = &hotMerge{}
				merged[k] = m
			}
			m.ops = max(m.ops, p.OpsPerSecond)
			m.coordRej += p.CoordinatorRejectionsPerSecond
			m.repRej = max(m.repRej, p.ReplicaRejectionsPerSecond)
			m.coordWould += p.CoordinatorWouldRejectPerSecond
			m.repWould = max(m.repWould, p.ReplicaWouldRejectPerSecond)
			if m.key == nil && len(p.Key) > 0 {
				m.key = p.Key
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
			Limit:                 t.Limit(k.op),
			RejectedPerSecond:     rejected,
			RejectedShare:         share,
			Nodes:                 uint32(m.nodes),
			WouldRejectPerSecond:  m.coordWould + m.repWould,
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
			tp.PartitionKeyColumns = append(tp.PartitionKeyColumns, &kvnodepb.Column{Name: c.Name, Type: ColumnType(c.Type)})
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
		v, err := Value(t.PartitionKey[i].Type, c)
		if err != nil {
			return nil
		}
		out[i] = v
	}
	return out
}
