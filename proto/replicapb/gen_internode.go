package replicapb

// internode.proto imports repair.proto, so it is compiled from proto/ as repair.proto is (see
// gen_repair.go), as replicapb/internode.proto.
//go:generate sh -c "cd .. && protoc -I . -I replicapb --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative replicapb/internode.proto"
