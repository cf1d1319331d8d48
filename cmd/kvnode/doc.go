// Command kvnode is the kvnode server and its tools, one command each:
//
//	kvnode [serve] [flags]        run a node (the default)
//	kvnode cql [flags]            a CQL shell
//	kvnode bench [flags]          a load generator
//	kvnode demo [flags]           a 3-node cluster in one process showing a hot partition held to its limit
//	kvnode toppartitions [flags]  the cluster's hottest partitions per table
//	kvnode status [flags]         every node with its state, load and effective ownership
//	kvnode decommission, removenode, cleanup, repair
//	                              the nodetool-like operations on the ring and its data
//
// `kvnode --help` lists them; `kvnode <command> --help` prints a command's flags and exits 0. A
// mistake on the command line (an unknown command, flag or argument) exits with status 2, any
// other failure with 1.
//
// It may import node and the tools under tool/ (bench, cqlsh, demo, toppartitions, cliflags) and
// internal/; it is imported by nothing.
package main
