package kvnodepb

// repair.proto is compiled from proto/ as kvnodepb/repair.proto, so that its registered name
// differs from replicapb's repair.proto.
//go:generate sh -c "cd .. && protoc -I . --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative kvnodepb/repair.proto"
