package systables

import (
	"context"
	"strings"

	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// TableTopPartitions is the name of the virtual table system.top_partitions: the cluster's
// hottest partitions now, per table, as kvnode toppartitions prints them. Every node answers it
// by asking every live node (TopSource), so it costs a round of internode requests: it is for
// operators and tools, not for a hot path.
const TableTopPartitions = "top_partitions"

// TopPartition is one hot partition of a table, merged over the nodes that listed it, as
// system.top_partitions shows it.
type TopPartition struct {
	// Table is the partition's table (its partition key columns name and type the key).
	Table *schema.Table
	Op    schema.Op
	// Key holds the partition key's components in the table's encoding; nil when no node knew
	// them, only the token.
	Key   [][]byte
	Token int64
	// EstimatedOpsPerSecond is the offered load the limiters' counters estimate.
	EstimatedOpsPerSecond float64
	// Limit is the table's limit for Op (0: none, since it was removed).
	Limit uint32
	// RejectedPerSecond and RejectedShare (0..1 of the offered load) are the limiters'
	// rejections.
	RejectedPerSecond, RejectedShare float64
	// WouldRejectPerSecond is what the limit would reject were it enforced: the table's limit is
	// in shadow mode; 0 otherwise.
	WouldRejectPerSecond float64
	// Nodes is how many nodes listed the partition.
	Nodes int
}

// TopPartitions is the cluster's answer: each table's hot partitions, hottest first, tables in
// keyspace and name order; and the nodes that did not answer.
type TopPartitions struct {
	Partitions []TopPartition
	// Unreachable are the ids of the nodes that are down or did not answer: partitions only
	// they saw hot are missing.
	Unreachable []string
}

// TopSource gathers the cluster's hot partitions for system.top_partitions (package node
// adapts the same gathering and merging that the gRPC API's TopPartitions serves). A Source
// that also implements it serves the table; any other serves it empty.
type TopSource interface {
	// TopPartitions asks every live node for its hot partitions and merges them: at most limit
	// per table, of keyspace only when it is not empty.
	TopPartitions(ctx context.Context, keyspace string, limit int) (TopPartitions, error)
}

// TopPartitionsWarning starts the warning that names the nodes that did not answer a SELECT of
// system.top_partitions; the ids follow, separated by ", ".
const TopPartitionsWarning = "top_partitions: nodes that did not answer (partitions only they saw hot are missing): "

// topPartitionsPerTable bounds the rows of one table: kvnode toppartitions' largest --top.
const topPartitionsPerTable = 1000

// topPartitionsTable is system.top_partitions: partition key keyspace_name, clustering
// table_name and rank (1 is the hottest of the table).
func topPartitionsTable() *table {
	return define(KeyspaceSystem, TableTopPartitions, []string{"keyspace_name", "text"}, []string{"table_name", "text", "rank", "int"}, []string{
		"op", "text",
		// The partition key as the token is computed over it (one component: its bytes;
		// several: Cassandra's CompositeType encoding), with the columns that decode it.
		"partition_key", "blob",
		"key_columns", "frozen<list<text>>",
		"key_types", "frozen<list<text>>",
		// The key for people: (name="value", ...).
		"partition_key_text", "text",
		"token", "bigint",
		"estimated_ops_per_second", "double",
		"limit_per_second", "int",
		"rejected_per_second", "double",
		"rejected_share", "double",
		"would_reject_per_second", "double",
		"nodes", "int",
	}, topPartitionRows)
}

// readTop fills v.top for a query of system.top_partitions.
func (t *Tables) readTop(ctx context.Context, v *view) error {
	top, ok := t.src.(TopSource)
	if !ok {
		return nil
	}
	var ks string
	if w, ok := v.restrict["keyspace_name"]; ok {
		ks = string(w)
	}
	res, err := top.TopPartitions(ctx, ks, topPartitionsPerTable)
	if err != nil {
		return err
	}
	v.top = res.Partitions
	if len(res.Unreachable) > 0 {
		v.warnings = append(v.warnings, TopPartitionsWarning+strings.Join(res.Unreachable, ", "))
	}
	return nil
}

func topPartitionRows(v *view) []map[string][]byte {
	rows := make([]map[string][]byte, 0, len(v.top))
	var rank int32
	var last *schema.Table
	for _, p := range v.top {
		if p.Table != last {
			last, rank = p.Table, 0
		}
		rank++
		t := p.Table
		names := make([]string, len(t.PartitionKey))
		types := make([]string, len(t.PartitionKey))
		for i, c := range t.PartitionKey {
			names[i], types[i] = c.Name, c.Type.String()
		}
		row := map[string][]byte{
			"keyspace_name":            encText(t.Keyspace),
			"table_name":               encText(t.Name),
			"rank":                     encInt(rank),
			"op":                       encText(p.Op.String()),
			"key_columns":              encTextList(names),
			"key_types":                encTextList(types),
			"token":                    schema.EncodeBigInt(p.Token),
			"estimated_ops_per_second": encDouble(p.EstimatedOpsPerSecond),
			"rejected_per_second":      encDouble(p.RejectedPerSecond),
			"rejected_share":           encDouble(p.RejectedShare),
			"would_reject_per_second":  encDouble(p.WouldRejectPerSecond),
			"nodes":                    encInt(int32(p.Nodes)),
		}
		if p.Limit > 0 {
			row["limit_per_second"] = encInt(int32(min(p.Limit, 1<<31-1)))
		}
		if len(p.Key) == len(t.PartitionKey) && partitioner.CheckComponents(p.Key) == nil {
			row["partition_key"] = partitioner.AppendKey(nil, p.Key)
			row["partition_key_text"] = encText(schema.FormatKey(t.PartitionKey, p.Key))
		}
		rows = append(rows, row)
	}
	return rows
}
