package internode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// NodeID names a node of the cluster, as its membership does.
type NodeID string

// Addresses resolves where nodes' internode listeners are reached. The Sender asks it on every
// call, so a node that moves (restarts on another port) is redialled at its new address.
type Addresses interface {
	// InternodeAddr returns the host:port at which node id serves internode requests, and false
	// when no address of it is known.
	InternodeAddr(id NodeID) (string, bool)
}

// DefaultMaxMessageBytes is the largest message a Sender sends or receives when
// Options.MaxMessageBytes is zero: gRPC's own default.
const DefaultMaxMessageBytes = 4 << 20

// Options configures a Sender.
type Options struct {
	// Self is the sender's own node: calls to it run in process on Local.
	Self NodeID
	// Local serves the calls to Self; nil sends them over the network as to any other node.
	Local *Mux
	// Addresses resolves the peers' internode addresses. Required.
	Addresses Addresses
	// Credentials secure the connections (mutual TLS when the node has a certificate); nil
	// means plaintext.
	Credentials credentials.TransportCredentials
	// MaxMessageBytes bounds each message sent or received, wrapper included; 0 means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
}

// EnsureDefaults replaces zero fields with their defaults and returns o. A nil o is treated as
// the zero Options.
func (o *Options) EnsureDefaults() *Options {
	if o == nil {
		o = &Options{}
	}
	if o.Credentials == nil {
		o.Credentials = insecure.NewCredentials()
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, describes a Sender NewSender can make.
func (o *Options) Validate() error {
	switch {
	case o.Addresses == nil:
		return errors.New("internode: Options.Addresses is required")
	case o.Local != nil && o.Self == "":
		return errors.New("internode: Options.Local needs Options.Self, the node it serves")
	case o.MaxMessageBytes < 0:
		return fmt.Errorf("internode: Options.MaxMessageBytes %d is negative", o.MaxMessageBytes)
	}
	return nil
}

// Keepalive of the Sender's connections (see NewSender): a connection that has read nothing for
// KeepaliveTime is pinged, and closed when the ping is not answered within KeepaliveTimeout;
// KeepaliveTimeout also bounds how long sent data may stay unacknowledged (TCP_USER_TIMEOUT).
// A node's internode server must allow pings this often (MinKeepaliveInterval).
const (
	KeepaliveTime    = 5 * time.Second
	KeepaliveTimeout = 5 * time.Second
)

// MinKeepaliveInterval is the shortest interval between pings a node's internode server must
// permit (keepalive.EnforcementPolicy.MinTime) for Senders' keepalive: below KeepaliveTime, so
// that a ping a little early is not taken for abuse.
const MinKeepaliveInterval = KeepaliveTime - time.Second

// ErrClosed is the error of a Sender's calls once it is closed.
var ErrClosed = errors.New("internode: sender closed")

// Sender sends internode requests: in process to its own node, over one gRPC connection per peer
// to the others. It is safe for concurrent use.
type Sender struct {
	self      NodeID
	local     *Mux
	kinds     *kinds
	addrs     Addresses
	creds     credentials.TransportCredentials // also the framed connections' (pipe.go)
	dialOpts  []grpc.DialOption
	waitReady []grpc.CallOption

	closed atomic.Bool
	mu     sync.RWMutex
	conns  map[NodeID]*peerConn

	// piped holds, by kind index, whether the kind's calls go on pipes (pipe.go).
	piped []bool
	// ctx ends the pipes' streams (stop, by Close); wg counts the pipes' goroutines.
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	stats senderStats // metrics.go

	// pipeNoYield makes the pipes write each request at once (pipe.flush): for benchmarks.
	pipeNoYield bool
}

// peerConn is the connection to one peer, at the address it was dialled at.
type peerConn struct {
	addr string
	conn *grpc.ClientConn
	api  replicapb.InternodeClient

	pipes pipes // pipe.go
}

// NewSender returns a Sender with the options o (defaults applied to a copy). It dials no peer
// until a call needs it.
func NewSender(o Options) (*Sender, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	k := newKinds()
	if o.Local != nil {
		k = o.Local.kinds
	}
	piped := make([]bool, len(k.req))
	for i := range piped {
		piped[i] = slices.Contains(pipeKindNames[:], k.name(i))
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Sender{
		piped: piped, ctx: ctx, stop: stop,
		self: o.Self, local: o.Local, kinds: k, addrs: o.Addresses, creds: o.Credentials,
		stats: senderStats{crossDC: make([]atomic.Uint64, len(k.req))},
		dialOpts: []grpc.DialOption{
			grpc.WithTransportCredentials(o.Credentials),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(o.MaxMessageBytes), grpc.MaxCallSendMsgSize(o.MaxMessageBytes)),
			// gRPC's default reconnect backoff grows to 2 minutes; a peer that restarts must be
			// reachable again as soon as membership sees it, so retries stay close together.
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
				MinConnectTimeout: 5 * time.Second,
			}),
			// A connection whose peer went silent (a cut between data centers, a peer that
			// vanished) is closed after KeepaliveTime without a byte from it plus
			// KeepaliveTimeout without the ping's answer, and after KeepaliveTimeout of data
			// left unacknowledged (gRPC sets TCP_USER_TIMEOUT to it): the next call redials
			// at once instead of waiting out TCP's retransmission backoff, which after a cut
			// heals kept calls failing for seconds.
			grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: KeepaliveTime, Timeout: KeepaliveTimeout, PermitWithoutStream: true}),
		},
		waitReady: []grpc.CallOption{grpc.WaitForReady(true)},
		conns:     map[NodeID]*peerConn{},
	}, nil
}

// CallOption changes how one call is made.
type CallOption struct {
	waitForReady bool
	addr         string
}

// WaitForReady makes a call to a peer that is not connected wait, until its context ends, for
// the connection to come up instead of failing at once (Unavailable). It has no effect on a call
// to the node itself.
func WaitForReady() CallOption { return CallOption{waitForReady: true} }

// At sends the call to addr instead of the address Addresses gives: for the calls a node makes
// to a peer its membership has told it of but cannot look up yet (while it joins). The peer's
// connection is redialled at addr when it was elsewhere, as for a move.
func At(addr string) CallOption { return CallOption{addr: addr} }

// options returns the gRPC options and the address opts ask for.
func (s *Sender) options(opts []CallOption) (grpcOpts []grpc.CallOption, addr string) {
	for _, o := range opts {
		if o.waitForReady {
			grpcOpts = s.waitReady
		}
		if o.addr != "" {
			addr = o.addr
		}
	}
	return grpcOpts, addr
}

// Call sends request req to node to and returns its answer. req must be a message of
// replicapb.Request's oneof, whose handler answers by Call. Errors are described in the package
// documentation. The package-level Call returns the answer typed.
func (s *Sender) Call(ctx context.Context, to NodeID, req proto.Message, opts ...CallOption) (proto.Message, error) {
	i, err := s.kinds.kindOf(req)
	if err != nil {
		return nil, err
	}
	resp, err := s.call(ctx, i, to, req, opts)
	if err != nil {
		return nil, s.wrap(i, to, err)
	}
	return resp, nil
}

func (s *Sender) call(ctx context.Context, i int, to NodeID, req proto.Message, opts []CallOption) (proto.Message, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if to == s.self && s.local != nil {
		return s.local.call(ctx, i, req)
	}
	s.count(i, to)
	grpcOpts, addr := s.options(opts)
	pc, err := s.peer(to, addr)
	if err != nil {
		return nil, err
	}
	r, err := s.kinds.wrap(i, req)
	if err != nil {
		return nil, err
	}
	var resp *replicapb.Response
	if s.piped[i] && grpcOpts == nil {
		if size := proto.Size(r); size <= pipeMaxSingleBytes {
			if p := s.pipeFor(pc); p != nil {
				resp, err = p.call(ctx, r, size)
				if err != errUseCall {
					if err != nil {
						return nil, err
					}
					return s.kinds.unwrapResponse(resp)
				}
			}
		}
	}
	resp, err = pc.api.Call(ctx, r, grpcOpts...)
	if err != nil {
		return nil, err
	}
	return s.kinds.unwrapResponse(resp)
}

// Start sends request req to node to, as Call does, without waiting: done gets the answer or
// the error, exactly once, on another goroutine or before Start returns, and must not block. It
// reports false, having sent nothing and without calling done, when the request does not go on
// a pipe (to this node itself, a kind the pipes do not carry, a large request, a peer without
// pipes): the caller then makes the call with Call. The package-level Start types the answer.
func (s *Sender) Start(ctx context.Context, to NodeID, req proto.Message, done func(proto.Message, error)) bool {
	i, err := s.kinds.kindOf(req)
	if err != nil || !s.piped[i] || to == s.self && s.local != nil || s.closed.Load() {
		return false
	}
	pc, err := s.peer(to, "")
	if err != nil {
		return false
	}
	r, err := s.kinds.wrap(i, req)
	if err != nil {
		return false
	}
	size := proto.Size(r)
	if size > pipeMaxSingleBytes {
		return false
	}
	p := s.pipeFor(pc)
	if p == nil {
		return false
	}
	s.count(i, to)
	err = p.start(ctx, r, size, func(res pipeResult) {
		if res.err == errUseCall {
			s.callUnary(ctx, i, to, pc, r, done) // the peer wants the answer by Call
			return
		}
		s.finish(i, to, res.resp, res.err, done)
	})
	switch {
	case err == errUseCall:
		s.callUnary(ctx, i, to, pc, r, done)
	case err != nil:
		done(nil, s.wrap(i, to, err))
	}
	return true
}

// finish hands a started call's answer resp or error err to done, as Call returns them.
func (s *Sender) finish(i int, to NodeID, resp *replicapb.Response, err error, done func(proto.Message, error)) {
	if err != nil {
		done(nil, s.wrap(i, to, err))
		return
	}
	m, err := s.kinds.unwrapResponse(resp)
	if err != nil {
		done(nil, s.wrap(i, to, err))
		return
	}
	done(m, nil)
}

// callUnary makes a started call whose request the pipe could not carry as a unary call, on a
// goroutine of s's (Close waits for it), and hands its answer to done.
func (s *Sender) callUnary(ctx context.Context, i int, to NodeID, pc *peerConn, r *replicapb.Request, done func(proto.Message, error)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		done(nil, ErrClosed)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		resp, err := pc.api.Call(ctx, r)
		s.finish(i, to, resp, err, done)
	}()
}

// Start is Sender.Start with the answer typed as a Resp: an Internal error when the node answers
// with another message.
func Start[Resp proto.Message](ctx context.Context, s *Sender, to NodeID, req proto.Message, done func(Resp, error)) bool {
	return s.Start(ctx, to, req, func(m proto.Message, err error) {
		var zero Resp
		if err != nil {
			done(zero, err)
			return
		}
		r, ok := m.(Resp)
		if !ok {
			i, _ := s.kinds.kindOf(req)
			done(zero, s.wrap(i, to, status.Errorf(codes.Internal, "answered with %s, want %s", messageName(m), messageName(zero))))
			return
		}
		done(r, nil)
	})
}

// Call sends request req to node to through s and returns its answer as a Resp: an Internal
// error when the node answers with another message.
func Call[Resp proto.Message](ctx context.Context, s *Sender, to NodeID, req proto.Message, opts ...CallOption) (Resp, error) {
	var zero Resp
	i, err := s.kinds.kindOf(req)
	if err != nil {
		return zero, err
	}
	m, err := s.call(ctx, i, to, req, opts)
	if err != nil {
		return zero, s.wrap(i, to, err)
	}
	r, ok := m.(Resp)
	if !ok {
		return zero, s.wrap(i, to, status.Errorf(codes.Internal, "answered with %s, want %s", messageName(m), messageName(zero)))
	}
	return r, nil
}

// Stream sends request req to node to and passes each message of its answer to recv, in order,
// on the calling goroutine. It returns nil once the answer is complete, recv's error (unwrapped)
// when recv fails, which ends the stream, or the stream's error. req must be a message of
// replicapb.Request's oneof whose handler answers by Stream.
func (s *Sender) Stream(ctx context.Context, to NodeID, req proto.Message, recv func(proto.Message) error, opts ...CallOption) error {
	i, err := s.kinds.kindOf(req)
	if err != nil {
		return err
	}
	return s.stream(ctx, i, to, req, recv, opts)
}

func (s *Sender) stream(ctx context.Context, i int, to NodeID, req proto.Message, recv func(proto.Message) error, opts []CallOption) error {
	var recvErr error
	recvOnce := func(m proto.Message) error {
		if err := recv(m); err != nil {
			recvErr = err
			return err
		}
		return nil
	}
	err := s.streamTo(ctx, i, to, req, recvOnce, opts)
	switch {
	case recvErr != nil:
		return recvErr
	case err != nil:
		return s.wrap(i, to, err)
	}
	return nil
}

func (s *Sender) streamTo(ctx context.Context, i int, to NodeID, req proto.Message, recv func(proto.Message) error, opts []CallOption) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if to == s.self && s.local != nil {
		return s.local.stream(ctx, i, req, recv)
	}
	s.count(i, to)
	grpcOpts, addr := s.options(opts)
	pc, err := s.peer(to, addr)
	if err != nil {
		return err
	}
	r, err := s.kinds.wrap(i, req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream when recv fails
	st, err := pc.api.Stream(ctx, r, grpcOpts...)
	if err != nil {
		return err
	}
	for {
		resp, err := st.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		m, err := s.kinds.unwrapResponse(resp)
		if err != nil {
			return err
		}
		if err := recv(m); err != nil {
			return err
		}
	}
}

// Stream sends request req to node to through s and passes each message of its answer to recv
// as a Resp, as Sender.Stream does; a message of another type ends the stream with an Internal
// error.
func Stream[Resp proto.Message](ctx context.Context, s *Sender, to NodeID, req proto.Message, recv func(Resp) error, opts ...CallOption) error {
	i, err := s.kinds.kindOf(req)
	if err != nil {
		return err
	}
	var mismatch error
	err = s.stream(ctx, i, to, req, func(m proto.Message) error {
		r, ok := m.(Resp)
		if !ok {
			var zero Resp
			mismatch = status.Errorf(codes.Internal, "answered with %s, want %s", messageName(m), messageName(zero))
			return mismatch
		}
		return recv(r)
	}, opts)
	if mismatch != nil && errors.Is(err, mismatch) {
		return s.wrap(i, to, mismatch)
	}
	return err
}

// wrap names the kind and the node in err (not in ErrClosed: the Sender is closed for all).
func (s *Sender) wrap(i int, to NodeID, err error) error {
	if err == ErrClosed {
		return err
	}
	return fmt.Errorf("internode: %s to node %s: %w", s.kinds.name(i), to, err)
}

// peer returns the connection to node to at addr, or at the address Addresses gives when addr
// is empty, dialling (lazily, without blocking) on first use and again when the node's address
// changed.
func (s *Sender) peer(to NodeID, addr string) (*peerConn, error) {
	if addr == "" {
		var ok bool
		if addr, ok = s.addrs.InternodeAddr(to); !ok || addr == "" {
			return nil, status.Error(codes.Unavailable, "no internode address known")
		}
	}
	s.mu.RLock()
	pc := s.conns[to]
	s.mu.RUnlock()
	if pc != nil && pc.addr == addr {
		// The node's address is known, so it is believed up: a connection still backing off
		// from an earlier outage would fail fast until its backoff ran out.
		if pc.conn.GetState() == connectivity.TransientFailure {
			pc.conn.ResetConnectBackoff()
		}
		return pc, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if pc := s.conns[to]; pc != nil {
		if pc.addr == addr {
			return pc, nil // dialled meanwhile
		}
		pc.close() // its calls in flight fail (Canceled)
		delete(s.conns, to)
	}
	conn, err := grpc.NewClient(addr, s.dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	pc = &peerConn{addr: addr, conn: conn, api: replicapb.NewInternodeClient(conn)}
	s.conns[to] = pc
	return pc, nil
}

// Close closes the Sender's connections: their calls in flight fail, and later calls fail with
// ErrClosed (calls to the node itself too).
func (s *Sender) Close() error {
	s.mu.Lock()
	s.closed.Store(true)
	s.stop()
	var errs []error
	for id, pc := range s.conns {
		errs = append(errs, pc.close())
		delete(s.conns, id)
	}
	s.mu.Unlock()
	s.wg.Wait() // the pipes' goroutines
	return errors.Join(errs...)
}

// close closes pc's connection and ends its pipes: their calls in flight fail (Canceled).
func (pc *peerConn) close() error {
	pc.pipes.mu.Lock()
	for _, p := range pc.pipes.open {
		if p != nil {
			p.stop()
		}
	}
	pc.pipes.mu.Unlock()
	return pc.conn.Close()
}
