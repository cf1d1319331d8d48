// Package kvnodepb holds the client-facing gRPC API of kvnode, generated from kvnode.proto.
//
// Regenerate with `go generate ./proto/kvnodepb/` (needs protoc from Debian's protobuf-compiler and
// libprotobuf-dev; the Go plugins are pinned as tools in go.mod).
//
// Generated code; it imports nothing of kvnode. Only the gRPC front end (frontend/grpcapi), node
// (which registers the service on its server) and the Go client (client) may import it.
package kvnodepb
