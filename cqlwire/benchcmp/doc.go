// Package benchcmp holds only tests: it checks that cqlwire and
// github.com/datastax/go-cassandra-native-protocol encode the representative
// frames of docs/cql-protocol.md to the same bytes and decode each other's
// output, and benchmarks both on them.
package benchcmp
