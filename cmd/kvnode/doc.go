// Command kvnode is the kvnode server and its tools.
//
//	kvnode [serve] [flags]   run a node (the default)
//	kvnode cql [flags]       an interactive CQL shell
//	kvnode bench [flags]     a load generator
//	kvnode demo [flags]      a 3-node cluster in one process showing a hot partition held to its limit
//	kvnode toppartitions [flags]  the cluster's hottest partitions per table
//
// Run `kvnode <command> -h` for a command's flags.
//
// It may import node and the tools under tool/ (bench, cqlsh, demo, toppartitions) and internal/serveline;
// it is imported by nothing.
package main
