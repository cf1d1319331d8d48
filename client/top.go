package client

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// HotPartition is one partition the cluster's rate limiters see as hot: recently above twice
// its limit on some node, where rejections begin.
type HotPartition struct {
	// Op is the limited operation: reads and writes of a partition are limited separately.
	Op Op
	// Key holds one value per partition key column (TableHotPartitions.KeyColumns), typed as
	// result rows are; nil when no node knew the key, only its token.
	Key   []any
	Token int64
	// EstimatedOpsPerSecond is the offered load, estimated from the limiter counters (the
	// largest estimate among the nodes).
	EstimatedOpsPerSecond float64
	// Limit is the table's limit for Op, per second; 0 when it was removed since.
	Limit uint32
	// RejectedPerSecond and RejectedShare (0..1 of the offered load) estimate the rejections.
	RejectedPerSecond float64
	RejectedShare     float64
	// WouldRejectPerSecond estimates what the limit would reject were it enforced: the table's
	// limit is in shadow mode ('mode': 'shadow'); 0 otherwise.
	WouldRejectPerSecond float64
	// Nodes is how many nodes reported the partition.
	Nodes int
}

// TableHotPartitions is one table's hot partitions, hottest first.
type TableHotPartitions struct {
	Keyspace, Table string
	KeyColumns      []Column
	Partitions      []HotPartition
}

// TopPartitionsResult is the answer of TopPartitions.
type TopPartitionsResult struct {
	// Tables with hot partitions, by keyspace and table name.
	Tables []TableHotPartitions
	// UnreachableNodes are the ids of nodes that are down or did not answer: partitions only
	// they saw hot are missing.
	UnreachableNodes []string
}

// TopPartitions asks the node to gather, from every live node, the partitions whose rate
// limiters see them as hottest now, and lists at most limit per table (0: the server's default,
// 10). keyspace and table narrow the list (empty: all; a table needs its keyspace). Names are
// matched exactly, as stored: unquoted CQL identifiers are lower case.
func (c *Client) TopPartitions(ctx context.Context, keyspace, table string, limit int) (*TopPartitionsResult, error) {
	if limit < 0 {
		return nil, fmt.Errorf("client: top partitions: limit %d is negative", limit)
	}
	if table != "" && keyspace == "" {
		return nil, fmt.Errorf("client: top partitions: table %q needs its keyspace", table)
	}
	resp, err := c.api.TopPartitions(ctx, &kvnodepb.TopPartitionsRequest{Keyspace: keyspace, Table: table, Limit: uint32(min(limit, 1<<31))})
	if err != nil {
		if st, ok := status.FromError(err); ok && st.Code() == codes.InvalidArgument {
			return nil, errors.New("kvnode: " + st.Message())
		}
		return nil, fromStatus(err)
	}
	res := &TopPartitionsResult{UnreachableNodes: resp.GetUnreachableNodes()}
	for _, tp := range resp.GetTables() {
		t := TableHotPartitions{Keyspace: tp.GetKeyspace(), Table: tp.GetTable()}
		for _, col := range tp.GetPartitionKeyColumns() {
			t.KeyColumns = append(t.KeyColumns, Column{Name: col.GetName(), Type: typeName(col.GetType())})
		}
		for _, p := range tp.GetPartitions() {
			h := HotPartition{
				Op:                    opFromProto(p.GetOp()),
				Token:                 p.GetToken(),
				EstimatedOpsPerSecond: p.GetEstimatedOpsPerSecond(),
				Limit:                 p.GetLimit(),
				RejectedPerSecond:     p.GetRejectedPerSecond(),
				RejectedShare:         p.GetRejectedShare(),
				Nodes:                 int(p.GetNodes()),
				WouldRejectPerSecond:  p.GetWouldRejectPerSecond(),
			}
			if vals := p.GetPartitionKey(); len(vals) > 0 {
				h.Key = make([]any, len(vals))
				for i, v := range vals {
					x, err := decodeValue(v)
					if err != nil {
						return nil, fmt.Errorf("client: %s.%s partition key: %w", t.Keyspace, t.Table, err)
					}
					h.Key[i] = x
				}
			}
			t.Partitions = append(t.Partitions, h)
		}
		res.Tables = append(res.Tables, t)
	}
	return res, nil
}
