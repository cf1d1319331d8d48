package internode

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// Mux serves internode requests: it dispatches each to the handler registered for its kind. It
// implements replicapb.InternodeServer, and a Sender's calls to its own node go through it in
// process.
//
// Handlers are registered at wiring time, before or while the Mux serves; a request of a kind
// whose handler is not registered yet is answered Unimplemented. A Mux is safe for concurrent
// use.
type Mux struct {
	replicapb.UnsafeInternodeServer // Mux implements every method itself

	kinds *kinds
	// handlers holds each kind's handler, by kind index; nil until registered.
	handlers []atomic.Pointer[handler]
	// pipes are the Pipe streams being served (pipe_server.go).
	pipes pipeServers
	// recovered turns a panic of a piped request's handler into its error (SetRecover).
	recovered atomic.Pointer[func(r any, req *replicapb.Request) error]
}

// SetRecover makes f the recovery of a panic in a handler serving a request that came on a
// pipe, which runs on a goroutine of its own, out of reach of the gRPC server's interceptors:
// f returns the error the request fails with (and logs, counts, or fails the node as the
// server's interceptors do). Without it such a panic ends the process, as it would without
// interceptors.
func (m *Mux) SetRecover(f func(r any, req *replicapb.Request) error) { m.recovered.Store(&f) }

// handler is the registered handler of one kind: unary or stream, not both.
type handler struct {
	kind   string
	unary  func(ctx context.Context, req proto.Message) (proto.Message, error)
	stream func(ctx context.Context, req proto.Message, send func(proto.Message) error) error
}

// NewMux returns a Mux without handlers.
func NewMux() *Mux {
	k := newKinds()
	return &Mux{kinds: k, handlers: make([]atomic.Pointer[handler], len(k.req))}
}

// Register registers m as the Internode service of s (the node's internode gRPC server).
func (m *Mux) Register(s grpc.ServiceRegistrar) { replicapb.RegisterInternodeServer(s, m) }

// Handle registers f as m's handler of the requests of type Req, answered by Call with one Resp.
// It panics when Req is not a message of the Request oneof, Resp not one of the Response oneof,
// or Req's kind already has a handler: wiring errors, found by the first test that starts a
// node.
func Handle[Req, Resp proto.Message](m *Mux, f func(ctx context.Context, req Req) (Resp, error)) {
	i := m.resolve(reflect.TypeFor[Req](), reflect.TypeFor[Resp]())
	kind := m.kinds.name(i)
	m.register(i, &handler{kind: kind, unary: func(ctx context.Context, req proto.Message) (proto.Message, error) {
		r, err := f(ctx, req.(Req))
		if err != nil {
			return nil, err
		}
		if !r.ProtoReflect().IsValid() {
			return nil, status.Errorf(codes.Internal, "internode: the %s handler returned no response and no error", kind)
		}
		return r, nil
	}})
}

// HandleStream registers f as m's handler of the requests of type Req, answered by Stream with
// the Resp messages f sends, in order. send returns an error once the stream is broken (the
// caller went away, or its context ended): f should then return. It panics as Handle does.
func HandleStream[Req, Resp proto.Message](m *Mux, f func(ctx context.Context, req Req, send func(Resp) error) error) {
	i := m.resolve(reflect.TypeFor[Req](), reflect.TypeFor[Resp]())
	kind := m.kinds.name(i)
	m.register(i, &handler{kind: kind, stream: func(ctx context.Context, req proto.Message, send func(proto.Message) error) error {
		return f(ctx, req.(Req), func(r Resp) error {
			if !r.ProtoReflect().IsValid() {
				return status.Errorf(codes.Internal, "internode: the %s handler sent no message", kind)
			}
			return send(r)
		})
	}})
}

// resolve returns the kind of request type req, or panics when req is not a message of the
// Request oneof or resp not one of the Response oneof.
func (m *Mux) resolve(req, resp reflect.Type) int {
	i, ok := m.kinds.byReq[req]
	if !ok {
		panic(fmt.Sprintf("internode: %v is not a message of replicapb.Request's oneof", req))
	}
	if _, ok := m.kinds.byResp[resp]; !ok {
		panic(fmt.Sprintf("internode: %v is not a message of replicapb.Response's oneof", resp))
	}
	return i
}

func (m *Mux) register(i int, h *handler) {
	if !m.handlers[i].CompareAndSwap(nil, h) {
		panic(fmt.Sprintf("internode: a handler of %s requests is already registered", h.kind))
	}
}

// handler returns the handler of kind i, or an Unimplemented error.
func (m *Mux) handler(i int, stream bool) (*handler, error) {
	h := m.handlers[i].Load()
	switch {
	case h == nil:
		return nil, status.Errorf(codes.Unimplemented, "internode: this node serves no %s requests", m.kinds.name(i))
	case stream && h.stream == nil:
		return nil, status.Errorf(codes.Unimplemented, "internode: %s requests are answered by Call, not Stream", h.kind)
	case !stream && h.unary == nil:
		return nil, status.Errorf(codes.Unimplemented, "internode: %s requests are answered by Stream, not Call", h.kind)
	}
	return h, nil
}

// Call implements replicapb.InternodeServer.
func (m *Mux) Call(ctx context.Context, r *replicapb.Request) (*replicapb.Response, error) {
	i, req, err := m.kinds.unwrap(r)
	if err != nil {
		return nil, err
	}
	h, err := m.handler(i, false)
	if err != nil {
		return nil, err
	}
	resp, err := h.unary(ctx, req)
	if err != nil {
		return nil, err
	}
	return m.kinds.respond(i, resp)
}

// Stream implements replicapb.InternodeServer.
func (m *Mux) Stream(r *replicapb.Request, ss grpc.ServerStreamingServer[replicapb.Response]) error {
	i, req, err := m.kinds.unwrap(r)
	if err != nil {
		return err
	}
	h, err := m.handler(i, true)
	if err != nil {
		return err
	}
	return h.stream(ss.Context(), req, func(resp proto.Message) error {
		w, err := m.kinds.respond(i, resp)
		if err != nil {
			return err
		}
		return ss.Send(w)
	})
}

// call runs the handler of request req, of kind i, in process, as a call over the network
// would: see the package documentation.
func (m *Mux) call(ctx context.Context, i int, req proto.Message) (proto.Message, error) {
	h, err := m.handler(i, false)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	resp, err := h.unary(ctx, req)
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err() // the caller's deadline came first
	}
	if err != nil {
		return nil, asStatus(err)
	}
	return resp, nil
}

// stream runs the stream handler of request req, of kind i, in process, passing each message it
// sends to recv on its goroutine. An error of recv ends the stream as over the network: the
// handler's context is canceled, its sends fail, and stream returns recv's error.
func (m *Mux) stream(ctx context.Context, i int, req proto.Message, recv func(proto.Message) error) error {
	h, err := m.handler(i, true)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var recvErr error
	err = h.stream(ctx, req, func(resp proto.Message) error {
		if recvErr != nil {
			return status.Error(codes.Canceled, "internode: the receiver ended the stream")
		}
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		if err := recv(resp); err != nil {
			recvErr = err
			cancel()
			return status.Error(codes.Canceled, "internode: the receiver ended the stream")
		}
		return nil
	})
	switch {
	case recvErr != nil:
		return recvErr
	case ctx.Err() != nil:
		return status.FromContextError(ctx.Err()).Err()
	case err != nil:
		return asStatus(err)
	}
	return nil
}

// asStatus returns err as the gRPC server sends a handler's error: a status as it is, a
// context's error as Canceled or DeadlineExceeded, any other as Unknown.
func asStatus(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.FromContextError(err).Err()
}
