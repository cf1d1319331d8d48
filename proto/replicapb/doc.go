// Package replicapb holds the internode replica API of kvnode (mutations, reads and limiter
// instructions between a coordinator and a partition's replicas), generated from replica.proto.
// internode.proto wraps every internode message in the one Internode service's Request and
// Response, which package internode sends and serves.
//
// Regenerate with `go generate ./proto/replicapb/` (needs protoc from Debian's protobuf-compiler
// and libprotobuf-dev; the Go plugins are pinned as tools in go.mod).
//
// Generated code; it imports nothing of kvnode. The conversions between its types and the
// domain's that both ends of the protocol share live in package internode. Only the internode
// edges (internode, coordinator/shell, replica, node) may import it.
package replicapb
