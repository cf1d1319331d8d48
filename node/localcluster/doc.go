// Package localcluster runs a kvnode cluster inside one process: real nodes (node.Start) on
// loopback with random ports, real pebble in data directories the caller chooses, real memberlist
// and gRPC, each with a connected Go client. The node package's tests and `kvnode demo` start
// their clusters through it (test/e2e and test/perf run processes: see test/proc), and
// learn membership as data (Members), never by reading DESCRIBE CLUSTER text. Its waits go
// through internal/poll.
//
// A Cluster is driven from one goroutine at a time: Stop and Restart change which nodes run.
//
// It may import node, cluster, replica, client and internal/poll; only tests, benchmarks and
// tool/demo import it.
package localcluster
