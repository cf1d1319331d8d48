// Package toppartitions is kvnode toppartitions: it asks one node for the cluster's hottest
// partitions (those recently above twice their per_partition_rate_limit on some node) and
// prints them per table, hottest first, as a table or as JSON.
//
// The node gathers every live node's view and merges it; see node.Node.TopPartitions for the
// estimates. Partition keys are printed decoded by the table's partition key types: text as
// is, numbers as numbers, a composite key as a tuple.
//
// It may import client, cql and internal/cliflags: it talks to nodes only through the client API.
package toppartitions
