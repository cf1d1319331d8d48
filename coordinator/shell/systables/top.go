package systables

import (
	"context"
	"strings"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// TableTopPartitions is the name of the virtual table system.top_partitions: the cluster's
// hottest partitions now, per table, as kvnode toppartitions prints them. Every node answers it
// by asking every live node (TopSource), so it costs a round of internode requests: it is for
// operators and tools, not for a hot path.
const TableTopPartitions = "top_partitions"

// TopSource gathers the cluster's hot partitions for system.top_partitions, merged by
// coordinator.MergeTopPartitions as for the gRPC API's TopPartitions (package node adapts the
// gathering). A Source that also implements it serves the table; any other serves it empty.
type TopSource interface {
	// TopPartitions asks every live node for its hot partitions and merges them: at most limit
	// per table, of keyspace only when it is not empty.
	TopPartitions(ctx context.Context, keyspace string, limit int) (coordinator.TopPartitions, error)
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
	v.top = res.Tables
	if len(res.Unreachable) > 0 {
		ids := make([]string, len(res.Unreachable))
		for i, id := range res.Unreachable {
			ids[i] = string(id)
		}
		v.warnings = append(v.warnings, TopPartitionsWarning+strings.Join(ids, ", "))
	}
	return nil
}

func topPartitionRows(v *view) []map[string][]byte {
	n := 0
	for _, tt := range v.top {
		n += len(tt.Partitions)
	}
	rows := make([]map[string][]byte, 0, n)
	for _, tt := range v.top {
		t := tt.Table
		names := make([]string, len(t.PartitionKey))
		types := make([]string, len(t.PartitionKey))
		for i, c := range t.PartitionKey {
			names[i], types[i] = c.Name, c.Type.String()
		}
		for i, p := range tt.Partitions {
			rows = append(rows, topPartitionRow(t, int32(i+1), names, types, p))
		}
	}
	return rows
}

// topPartitionRow is the row of p, the rank-th hottest partition of t, whose partition key
// columns are names of types.
func topPartitionRow(t *schema.Table, rank int32, names, types []string, p coordinator.TopPartition) map[string][]byte {
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
	return row
}
