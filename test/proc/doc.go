// Package proc runs kvnode clusters as real `kvnode serve` processes on loopback: it builds
// the binary, starts nodes on random ports (each with its data directory and log files), learns
// each node's identity and addresses from its serving line, restarts a node on the same
// directory and addresses, SIGKILLs it, and stops everything. The end-to-end tests (test/e2e,
// including the model checker's crash runs), the fault tests (test/fault, whose nodes run under
// `ip netns exec` and are reached through a dialer of theirs: Node.Wrapper, Node.Dial) and the
// perf driver (test/perf) share it.
//
// Membership is read as data: every node serves Prometheus metrics on a loopback port, and
// MemberStates reads its kvnode_cluster_member_up{member} series (one per ring member, 1 up,
// 0 down) from there, never DESCRIBE CLUSTER's text. Waits go through internal/poll.
//
// It may import client, internal/poll and internal/serveline, and runs the kvnode binary rather
// than linking the server; only tests and test/perf import it.
package proc
