// Package interop checks kvnode's CQL native protocol from outside, with drivers nobody here
// wrote: gocql (ScyllaDB's fork, module path github.com/gocql/gocql through go.mod's replace
// directive) in Go tests, and the DataStax Python and Node.js drivers through the scripts in
// python/ and node/, which the Go runner starts against the same kind of cluster.
//
// Every test runs three real `kvnode serve` processes on 127.0.0.1, 127.0.0.2 and 127.0.0.3 with
// the same ports on each address, as drivers expect of a cluster (test/proc.StartHosts).
package interop
