package coordinator

import (
	"cmp"
	"slices"

	"github.com/kvnode/kvnode/schema"
)

// HotPartition is one node's view of a partition its limiter saw above twice its limit in the
// last seconds.
type HotPartition struct {
	Table schema.TableID
	Op    schema.Op
	Token int64
	// Key is the partition key's components in the table's encoding, when the node knows them
	// (else nil).
	Key [][]byte
	// OpsPerSecond is the node's estimate of the partition's rate; the rejection rates are its
	// coordinator-local and its replica rejections.
	OpsPerSecond, CoordinatorRejectionsPerSecond, ReplicaRejectionsPerSecond float64
	// The would-reject rates are the same for a table whose limit is in shadow mode: what the
	// node would have rejected, had the limit been enforced.
	CoordinatorWouldRejectPerSecond, ReplicaWouldRejectPerSecond float64
}

// NodeHotPartitions is one node's answer when asked for its hot partitions.
type NodeHotPartitions struct {
	Node       NodeID
	Partitions []HotPartition
	// Unreachable is set when the node is down or did not answer in time (Partitions is
	// then empty).
	Unreachable bool
}

// TopPartitions is the cluster's hottest partitions now, merged over the nodes' answers
// (MergeTopPartitions).
type TopPartitions struct {
	// Tables are the tables with hot partitions, in keyspace and name order.
	Tables []TableTopPartitions
	// Unreachable are the nodes that are down or did not answer, in order: partitions only they
	// saw hot are missing.
	Unreachable []NodeID
}

// TableTopPartitions is one table's hot partitions, hottest first.
type TableTopPartitions struct {
	// Table is the table (its partition key columns name and type the partitions' keys).
	Table      *schema.Table
	Partitions []TopPartition
}

// TopPartition is one hot partition of a table, merged over the nodes that listed it.
type TopPartition struct {
	Op    schema.Op
	Token int64
	// Key holds the partition key's components in the table's encoding, as the first node
	// that knew them listed them; nil when none did.
	Key [][]byte
	// EstimatedOpsPerSecond is the offered load: the largest of the nodes' estimates (each
	// replica's counter measures the partition's whole load).
	EstimatedOpsPerSecond float64
	// Limit is the table's limit for Op (0: none, since it was removed).
	Limit uint32
	// RejectedPerSecond is the sum of the nodes' coordinator-local rejections plus the largest
	// rate among the enforcing replicas (the enforcing replicas of one operation reject it
	// together); RejectedShare is its share of the offered load, 0..1.
	RejectedPerSecond, RejectedShare float64
	// WouldRejectPerSecond is what the limit would reject were it enforced (the table's limit
	// is in shadow mode), merged alike; 0 otherwise.
	WouldRejectPerSecond float64
	// Nodes is how many nodes listed the partition.
	Nodes int
}

// MergeTopPartitions merges the nodes' answers into the cluster's hot partitions: the views of
// one partition (table, op, token) are combined as TopPartition describes, and each table of s
// (of keyspace only, when it is not empty) that has hot partitions lists at most limit of them
// (all when limit ≤ 0), hottest first (ties by token, then op). Partitions of tables s does not
// hold (dropped, or dropped and created again) are left out. The gRPC API's TopPartitions and
// the virtual table system.top_partitions both answer with it.
func MergeTopPartitions(s *schema.Schema, answers []NodeHotPartitions, keyspace string, limit int) TopPartitions {
	type hotKey struct {
		table schema.TableID
		op    schema.Op
		token int64
	}
	type merged struct {
		p                    TopPartition
		coordRej, repRej     float64
		coordWould, repWould float64
	}
	var out TopPartitions
	byKey := map[hotKey]*merged{}
	var keys []hotKey // in the order first listed: nothing below depends on the map's order
	for _, a := range answers {
		if a.Unreachable {
			out.Unreachable = append(out.Unreachable, a.Node)
			continue
		}
		for _, h := range a.Partitions {
			k := hotKey{h.Table, h.Op, h.Token}
			m := byKey[k]
			if m == nil {
				m = &merged{p: TopPartition{Op: h.Op, Token: h.Token}}
				byKey[k] = m
				keys = append(keys, k)
			}
			m.p.EstimatedOpsPerSecond = max(m.p.EstimatedOpsPerSecond, h.OpsPerSecond)
			m.coordRej += h.CoordinatorRejectionsPerSecond
			m.repRej = max(m.repRej, h.ReplicaRejectionsPerSecond)
			m.coordWould += h.CoordinatorWouldRejectPerSecond
			m.repWould = max(m.repWould, h.ReplicaWouldRejectPerSecond)
			if m.p.Key == nil && len(h.Key) > 0 {
				m.p.Key = h.Key
			}
			m.p.Nodes++
		}
	}
	slices.Sort(out.Unreachable)
	byTable := map[schema.TableID][]TopPartition{}
	for _, k := range keys {
		m := byKey[k]
		p := m.p
		p.RejectedPerSecond = m.coordRej + m.repRej
		switch {
		case p.EstimatedOpsPerSecond > 0:
			p.RejectedShare = min(1, p.RejectedPerSecond/p.EstimatedOpsPerSecond)
		case p.RejectedPerSecond > 0:
			p.RejectedShare = 1
		}
		p.WouldRejectPerSecond = m.coordWould + m.repWould
		byTable[k.table] = append(byTable[k.table], p)
	}
	for _, t := range s.Tables(keyspace) {
		parts := byTable[t.ID]
		if len(parts) == 0 {
			continue
		}
		for i := range parts {
			parts[i].Limit = t.Limit(parts[i].Op)
		}
		slices.SortFunc(parts, func(a, b TopPartition) int {
			return cmp.Or(cmp.Compare(b.EstimatedOpsPerSecond, a.EstimatedOpsPerSecond), cmp.Compare(a.Token, b.Token), cmp.Compare(a.Op, b.Op))
		})
		if limit > 0 && len(parts) > limit {
			parts = parts[:limit]
		}
		out.Tables = append(out.Tables, TableTopPartitions{Table: t, Partitions: parts})
	}
	return out
}
