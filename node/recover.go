package node

import (
	"context"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
)

// newGRPCPanics returns the counter of the panics the gRPC servers recovered, by server.
func newGRPCPanics() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kvnode_grpc_panics_total",
		Help: "Panics (bugs in the node) in gRPC calls, recovered instead of ending the process: the call fails as Internal. Each is logged with its stack. By server: client (--addr) or internode (--internode-addr).",
	}, []string{"server"})
}

// recoveryOptions returns the interceptors that turn a panic in a call of the gRPC server
// named server, which is a bug of the node's, into an Internal error for that call, logged
// with its stack and counted, instead of ending the process and every other call with it.
// They come first in the chain, so they cover the interceptors after them too. On the
// internode server, where every request is an Internode Call or Stream, the log names the
// request's kind instead of the method. (The count stays by server: a series per kind or
// method would be absent until its first panic, and the alert that sums the count with the
// native front end's would then see nothing.) A panic that carries a storage failure
// (replica.StorageFailure) is no bug: it goes to the store's failure, the disk failure policy,
// and the call fails as Unavailable.
func (n *Node) recoveryOptions(server string) []grpc.ServerOption {
	panics := n.grpcPanics.WithLabelValues(server) // exported at 0 from the start
	recovered := func(r any, method string, req any, err *error) {
		if r == nil {
			return
		}
		if f, ok := replica.StorageFailure(r); ok && n.store != nil {
			// Not a bug, and not one call's failure: the node must stop serving.
			n.store.Fail(f)
			*err = status.Error(codes.Unavailable, "this node's storage failed and it stops serving (disk_failure_policy): "+f.Error())
			return
		}
		if ir, ok := req.(*replicapb.Request); ok && internode.Kind(ir) != "" {
			method = internode.Kind(ir)
		}
		panics.Inc()
		n.log.Error("a gRPC call panicked; it fails as Internal", "server", server, "method", method,
			"panic", r, "stack", string(debug.Stack()))
		*err = status.Error(codes.Internal, "internal error: the call hit a bug in this node, which logged it")
	}
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() { recovered(recover(), info.FullMethod, req, &err) }()
		return handler(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		if server != "internode" {
			defer func() { recovered(recover(), info.FullMethod, nil, &err) }()
			return handler(srv, ss)
		}
		rs := &requestStream{ServerStream: ss}
		defer func() { recovered(recover(), info.FullMethod, rs.req, &err) }()
		return handler(srv, rs)
	}
	if server == "internode" && n.mux != nil { // a pipe's requests run on goroutines of their own
		n.mux.SetRecover(func(r any, req *replicapb.Request) (err error) { recovered(r, "pipe", req, &err); return err })
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
}

// requestStream is a server stream that keeps the first message it received: an internode
// Stream's request, for the recovery's log.
type requestStream struct {
	grpc.ServerStream
	req any
}

func (s *requestStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil && s.req == nil {
		s.req = m
	}
	return err
}
