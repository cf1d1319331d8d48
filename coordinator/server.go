package coordinator

import (
	"context"

	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// Server is the client-facing gRPC service (kvnodepb.KVNode) of a node: it executes each
// statement with an Executor and returns errors as gRPC statuses with details (see
// ErrorStatus). Register it with kvnodepb.RegisterKVNodeServer; health and reflection are the
// node's to register.
type Server struct {
	kvnodepb.UnimplementedKVNodeServer
	e *Executor
}

// NewServer returns the gRPC service that executes statements with e.
func NewServer(e *Executor) *Server { return &Server{e: e} }

// Execute runs one statement; see Executor.Execute.
func (s *Server) Execute(ctx context.Context, req *kvnodepb.ExecuteRequest) (*kvnodepb.ExecuteResponse, error) {
	resp, err := s.e.Execute(ctx, req)
	if err != nil {
		return nil, ErrorStatus(err).Err()
	}
	return resp, nil
}

var _ kvnodepb.KVNodeServer = (*Server)(nil)
