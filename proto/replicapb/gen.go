// Package replicapb holds the internode replica API of kvnode (mutations, reads and limiter
// instructions between a coordinator and a partition's replicas), generated from replica.proto.
//
// Regenerate with `go generate ./proto/replicapb/` (needs protoc from Debian's protobuf-compiler and
// libprotobuf-dev; the Go plugins are pinned as tools in go.mod).
package replicapb

//go:generate sh -c "protoc --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative replica.proto"
