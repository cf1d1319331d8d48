package grpcapi

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/frontend/admission"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// Executor is the domain API the front end adapts: package node gives it the coordinator's
// executor.
type Executor interface {
	Execute(ctx context.Context, st coordinator.Statement) (coordinator.Result, error)
}

// Config configures a Server: what the node wires in. Executor is required; the zero value of
// every other field means its default.
type Config struct {
	// Executor executes statements.
	Executor Executor
	// Top gathers the cluster's hot partitions for TopPartitions. Nil makes TopPartitions
	// UNIMPLEMENTED.
	Top TopSource
	// MessageLimit is the largest response the transport sends, in bytes: a larger result is
	// refused with an error that says so and how to ask for less, instead of the transport
	// failing to send it. Zero means no check.
	MessageLimit int
	// LimitHint explains where MessageLimit comes from, for that error ("" for nothing).
	LimitHint string
	// Admission, when set, bounds the Execute calls the node runs at once and queues; one it
	// has no room for is answered RESOURCE_EXHAUSTED with RetryInfo and ErrorInfo reason
	// OVERLOADED. The node shares it with its other client front end. Nil means no bound.
	Admission *admission.Controller
}

// Server is the client-facing gRPC service (kvnodepb.KVNode) of a node. Register it with
// kvnodepb.RegisterKVNodeServer; health and reflection are the node's to register.
type Server struct {
	kvnodepb.UnimplementedKVNodeServer
	cfg Config
}

// New returns the gRPC service for cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg}, nil
}

// EnsureDefaults returns c: every zero field of Config already means what it should (no
// admission bound, no message limit check, no top partitions).
func (c *Config) EnsureDefaults() *Config { return c }

// Validate reports whether c, after EnsureDefaults, describes a service New can build.
func (c *Config) Validate() error {
	switch {
	case c.Executor == nil:
		return errors.New("grpcapi: Config.Executor is nil")
	case c.MessageLimit < 0:
		return fmt.Errorf("grpcapi: Config.MessageLimit is %d, want ≥ 0 bytes (0: no check)", c.MessageLimit)
	}
	return nil
}

// Execute runs one statement: it translates the request into a coordinator.Statement, executes
// it, and renders the result, or the error as ErrorStatus describes it.
func (s *Server) Execute(ctx context.Context, req *kvnodepb.ExecuteRequest) (*kvnodepb.ExecuteResponse, error) {
	st, err := statement(req)
	if err != nil {
		return nil, ErrorStatus(err).Err()
	}
	if err := s.cfg.Admission.Acquire(ctx, client(ctx)); err != nil {
		return nil, s.admit(err)
	}
	res, err := s.cfg.Executor.Execute(withClientAddr(ctx), st)
	s.cfg.Admission.Release()
	if err != nil {
		return nil, ErrorStatus(err).Err()
	}
	resp, err := response(res)
	if err != nil {
		return nil, status.New(codes.Internal, err.Error()).Err()
	}
	if n := proto.Size(resp); s.cfg.MessageLimit > 0 && n > s.cfg.MessageLimit {
		hint := ""
		if s.cfg.LimitHint != "" {
			hint = " (" + s.cfg.LimitHint + ")"
		}
		return nil, status.Errorf(codes.ResourceExhausted,
			"the result is %d bytes, more than this node's message limit of %d bytes%s; select fewer rows with LIMIT or a clustering restriction", n, s.cfg.MessageLimit, hint)
	}
	return resp, nil
}

var _ kvnodepb.KVNodeServer = (*Server)(nil)
