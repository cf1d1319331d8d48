// Package demo is kvnode demo: a guided tour that shows a hot partition held to its
// per_partition_rate_limit while the other partitions carry on.
//
// Run starts three nodes in the calling process (package node) on free loopback ports, with
// their data in a temporary directory; creates a keyspace with replication factor 3 and a table
// whose partitions may take Config.Limit writes per second; then for Config.Duration drives one
// hot partition at Config.HotRate writes per second beside Config.BackgroundRate operations per
// second of background traffic over BackgroundPartitions other partitions, both through the
// load generator of package bench at consistency QUORUM, the nodes coordinating in turn
// (Config.Coordinator). It prints each step as it happens, one
// row per second (hot offered, accepted and rejected against the limit; background offered,
// accepted, rejected and p50/p99 latency), and a short reading of the results. Then it stops
// the nodes and removes the directory, also on error or when its context is cancelled.
//
// Each second is a fresh pair of bench runs aligned to the wall-clock second, the instant at
// which the replicas' counters halve; see runLoad for why.
package demo
