// Package e2e holds kvnode's end-to-end tests: they build the real kvnode binary once and run
// clusters of `kvnode serve` processes on loopback (random ports, one data directory each, real
// pebble on disk, real memberlist gossip and gRPC), driven through the real shell
// (`kvnode cql`), the real load generator (`kvnode bench`) and the Go client. The processes are
// run by test/proc. TestModelAcrossSIGKILL runs the model-checked workload of test/model
// against them, SIGKILLing and restarting nodes between phases (-model.seed replays a history,
// -model.ops sets the length of each phase). TestREADMETour runs the README's tour verbatim, from
// a copy of the working tree, in network, PID and mount namespaces of its own (it needs root, and
// skips without), and TestREADMEGoSnippetCompiles compiles the README's Go code.
//
// The tests are part of `go test ./...`. `go test -short` skips them, for quick local loops.
//
// Each node's stdout and stderr are kept in files under the test's temporary directory; when a
// test fails, the tail of every node's stderr is printed. Every process a test starts is stopped
// in its cleanup (SIGTERM, then SIGKILL after a grace period), and a node that does not exit
// cleanly on SIGTERM fails the test.
package e2e
