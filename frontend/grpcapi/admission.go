package grpcapi

import (
	"context"
	"errors"
	"net"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/frontend/admission"
)

// OverloadedReason and OverloadedDomain are the google.rpc.ErrorInfo of a request the node's
// admission control refused, which tells it apart from the other RESOURCE_EXHAUSTED answers (a
// rate limit carries kvnodepb.RateLimitDetail; a result too large, neither).
const (
	OverloadedReason = "OVERLOADED"
	OverloadedDomain = "kvnode"
)

// overloadedStatus is the answer to a request the node had no room for: RESOURCE_EXHAUSTED with
// google.rpc.RetryInfo (the retry hint) and google.rpc.ErrorInfo (reason OVERLOADED, and
// metadata naming why: queue_full or queue_timeout).
func overloadedStatus(e *admission.OverloadedError) *status.Status {
	return withDetails(codes.ResourceExhausted, e.Error(),
		&errdetails.RetryInfo{RetryDelay: durationpb.New(e.RetryAfter)},
		&errdetails.ErrorInfo{Reason: OverloadedReason, Domain: OverloadedDomain, Metadata: map[string]string{"why": e.Reason}})
}

// admit returns the status refusing a request admission control did not let in: Overloaded, or
// the request's context ending while it waited.
func (s *Server) admit(err error) error {
	var oe *admission.OverloadedError
	if errors.As(err, &oe) {
		return overloadedStatus(oe).Err()
	}
	return ErrorStatus(err).Err()
}

// client is the admission.Key of the request's client: its peer's address, the same value for
// every request of one connection (the transport keeps one), so that admission control shares
// the node fairly between connections. An address of another type than TCP's or a Unix
// socket's (a custom listener's, perhaps not comparable) is keyed by its name; a request
// without a peer (not from a gRPC server) shares the nil key.
func client(ctx context.Context) admission.Key {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return nil
	}
	switch a := p.Addr.(type) {
	case *net.TCPAddr, *net.UnixAddr:
		return a
	default:
		return a.Network() + "://" + a.String()
	}
}

// withClientAddr returns ctx carrying the request's client address (auth.WithClient), which
// service levels attached to client addresses are looked up by: its peer's IP address, when it
// came over TCP.
func withClientAddr(ctx context.Context) context.Context {
	if p, ok := peer.FromContext(ctx); ok {
		if a, ok := p.Addr.(*net.TCPAddr); ok {
			return auth.WithClient(ctx, a.AddrPort().Addr().Unmap())
		}
	}
	return ctx
}
