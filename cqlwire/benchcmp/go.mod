// Module benchcmp compares cqlwire with github.com/datastax/go-cassandra-native-protocol
// (encoded bytes and per-frame cost). It is a separate module so that kvnode does
// not depend on the library; see docs/cql-protocol.md.
module github.com/kvnode/kvnode/cqlwire/benchcmp

go 1.26.0

require (
	github.com/datastax/go-cassandra-native-protocol v0.0.0-20240903140133-605a850e203b
	github.com/kvnode/kvnode v0.0.0
)

require (
	github.com/golang/snappy v0.0.5-0.20231225225746-43d5d4cd4e0e // indirect
	github.com/pierrec/lz4/v4 v4.1.22 // indirect
)

replace github.com/kvnode/kvnode => ../..
