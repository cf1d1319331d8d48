package replicapb

// repair.proto is compiled from proto/ as replicapb/repair.proto (importing replica.proto from
// this directory), so that its registered name differs from kvnodepb's repair.proto.
//go:generate sh -c "cd .. && protoc -I . -I replicapb --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative replicapb/repair.proto"
