// Package toppartitions is kvnode toppartitions: it asks one node for the cluster's hottest
// partitions (those recently above twice their per_partition_rate_limit on some node) and
// prints them per table, hottest first, as a table or as JSON.
//
// By default it asks over the CQL native protocol, through gocql on one connection: a SELECT of
// the virtual table system.top_partitions, whose partition keys come serialized with their
// column types (decoded here) and whose unreachable nodes come back as a response warning. With
// --protocol grpc it calls the gRPC API's TopPartitions instead. Either way the node gathers
// every live node's view and merges it (the same code behind both); see docs/operations.md for
// the estimates. Partition keys are printed decoded by the table's partition key types: text as
// is, numbers as numbers, a composite key as a tuple.
//
// It may import client, cql, schema (to decode key components), gocql and tool/cliflags: it
// talks to nodes only through the client protocols.
package toppartitions
