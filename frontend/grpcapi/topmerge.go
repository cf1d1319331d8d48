package grpcapi

import (
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/schema"
)

// MergeTopPartitions merges the nodes' lists of hot partitions exactly as TopPartitions does
// (per table of s, in keyspace only when it is not empty, at most limit partitions, hottest
// first), for the node's other view of the same data: the native protocol's
// system.top_partitions, which package node builds from this answer rather than merging again.
func MergeTopPartitions(s *schema.Schema, lists [][]HotPartition, keyspace string, limit int) []*kvnodepb.TableTopPartitions {
	return mergeTopPartitions(s, lists, keyspace, limit)
}
