package internode

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// pipePeer is a peer serving pipe tests' handlers: mutate answers at once (table 1) or waits
// until release is closed or its context ends (table 2), reporting its start on entered and its
// context's error on ended.
type pipePeer struct {
	addr    string
	srv     *grpc.Server
	framed  *FramedServer // nil: a peer without the framed protocol
	mux     *Mux
	unary   atomic.Int64 // unary Calls served
	streams atomic.Int64 // gRPC streams served (Pipe among them)
	entered chan time.Duration
	ended   chan error
	release chan struct{}
}

// noDeadline is what entered receives from a handler whose context has no deadline.
const noDeadline = time.Duration(-1)

// The peers of pipe tests: of this release (framed protocol, gRPC with Pipe), of the release
// before (gRPC with Pipe), and of the one before that (gRPC without Pipe).
type peerRelease int

const (
	peerFramed peerRelease = iota
	peerPipe
	peerUnary
)

func newPipePeer(t *testing.T, release peerRelease) *pipePeer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return newPipePeerOn(t, lis, release, FramedServerOptions{})
}

// pipeSender returns a pipePeer of release serving "n2" on loopback and a Sender "n1" that
// reaches it.
func pipeSender(t *testing.T, release peerRelease) (*pipePeer, *Sender) {
	t.Helper()
	p := newPipePeer(t, release)
	book := &addrBook{}
	book.set("n2", p.addr)
	return p, newSender(t, Options{Self: "n1", Addresses: book})
}

// newPipePeerOn serves a pipePeer of release on lis, with the framed server's options fo, whose
// Credentials, when set, the gRPC server uses too.
func newPipePeerOn(t *testing.T, lis net.Listener, release peerRelease, fo FramedServerOptions) *pipePeer {
	t.Helper()
	p := &pipePeer{mux: NewMux(), entered: make(chan time.Duration, 4096), ended: make(chan error, 4096), release: make(chan struct{})}
	Handle(p.mux, func(ctx context.Context, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
		if req.GetMutation().GetTableId() == 3 {
			panic("handler bug")
		}
		if req.GetMutation().GetTableId() == 2 {
			left := noDeadline
			if d, ok := ctx.Deadline(); ok {
				left = time.Until(d)
			}
			p.entered <- left
			select {
			case <-p.release:
			case <-ctx.Done():
				p.ended <- ctx.Err()
				return nil, ctx.Err()
			}
		}
		return &replicapb.MutateResponse{Status: replicapb.Status_STATUS_OK, WouldReject: req.GetMutation().GetTableId() == 1}, nil
	})
	Handle(p.mux, func(ctx context.Context, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error) {
		return &replicapb.ReadResponse{Status: replicapb.Status_STATUS_OK, Tombstones: req.GetLimit()}, nil
	})
	p.addr = lis.Addr().String()
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		p.unary.Add(1)
		return h(ctx, req)
	}), grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		p.streams.Add(1)
		return h(srv, ss)
	})}
	if fo.Credentials != nil {
		opts = append(opts, grpc.Creds(fo.Credentials))
	}
	p.srv = grpc.NewServer(opts...)
	if release == peerFramed {
		p.framed = NewFramedServer(p.mux, fo)
		lis = p.framed.Split(lis)
	}
	if release != peerUnary {
		p.mux.Register(p.srv)
	} else { // an older release: the service without Pipe
		desc := replicapb.Internode_ServiceDesc
		desc.Streams = nil
		for _, s := range replicapb.Internode_ServiceDesc.Streams {
			if s.StreamName != "Pipe" {
				desc.Streams = append(desc.Streams, s)
			}
		}
		p.srv.RegisterService(&desc, p.mux)
	}
	done := make(chan struct{})
	go func() { defer close(done); p.srv.Serve(lis) }()
	t.Cleanup(func() { p.stop(); <-done })
	return p
}

// stop stops p at once: its connections close.
func (p *pipePeer) stop() {
	p.srv.Stop()
	if p.framed != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		p.framed.Stop(ctx)
	}
}

// gracefulStop stops p as a node does: its servers wait for their pipes to end.
func (p *pipePeer) gracefulStop(ctx context.Context) {
	p.srv.GracefulStop()
	if p.framed != nil {
		p.framed.Stop(ctx)
	}
}

func mutateOf(table uint64) *replicapb.MutateRequest {
	return &replicapb.MutateRequest{Mutation: &replicapb.Mutation{TableId: table, PartitionKey: [][]byte{[]byte("k")}}}
}

// TestPipeMultiplexes sends many concurrent data-path calls to a peer: each gets its own answer,
// and none went as a unary call.
func TestPipeMultiplexes(t *testing.T) {
	p, s := pipeSender(t, peerFramed)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 400 {
		wg.Go(func() {
			if i%2 == 0 {
				r, err := Call[*replicapb.ReadResponse](ctx, s, "n2", &replicapb.ReadRequest{Limit: uint32(i)})
				if err == nil && r.GetTombstones() != uint32(i) {
					err = errors.New("a read got another read's answer")
				}
				errs <- err
				return
			}
			r, err := Call[*replicapb.MutateResponse](ctx, s, "n2", mutateOf(1))
			if err == nil && !r.GetWouldReject() {
				err = errors.New("a mutate got another answer")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, st := p.unary.Load(), p.streams.Load(); n != 0 || st != 0 {
		t.Errorf("%d data-path calls went unary and %d on gRPC streams, want all on framed pipes", n, st)
	}
	// Other kinds stay unary.
	if _, err := s.Call(ctx, "n2", &replicapb.ViewRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("a view to a peer without its handler: %v, want Unimplemented", err)
	}
	if n := p.unary.Load(); n != 1 {
		t.Errorf("%d unary calls, want the view's one", n)
	}
}

// TestPipeDeadlineAndCancel checks that a piped request's deadline reaches the peer's handler,
// which ends with it, and that a caller's cancellation ends the handler.
func TestPipeDeadlineAndCancel(t *testing.T) {
	p, s := pipeSender(t, peerFramed)

	ctx, cancel := context.WithTimeout(ctxT(t), 300*time.Millisecond)
	defer cancel()
	_, err := s.Call(ctx, "n2", mutateOf(2))
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a call past its deadline: %v, want DeadlineExceeded", err)
	}
	if left := <-p.entered; left == noDeadline || left > 300*time.Millisecond {
		t.Errorf("the handler had %v left, want the caller's deadline (at most 300ms)", left)
	}
	if err := <-p.ended; !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		t.Errorf("the handler's context ended with %v", err)
	}

	ctx, cancel = context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "n2", mutateOf(2))
		done <- err
	}()
	if left := <-p.entered; left != noDeadline {
		t.Errorf("a call without deadline gave the handler %v", left)
	}
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Errorf("a canceled call: %v, want Canceled", err)
	}
	if err := <-p.ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the canceled handler's context ended with %v, want Canceled", err)
	}
	// The pipe still works.
	if _, err := s.Call(ctxT(t), "n2", mutateOf(1)); err != nil {
		t.Fatal(err)
	}
}

// TestPipePeerStops stops the peer while requests wait on its pipes: they fail Unavailable, not
// hang, and the handlers' contexts end.
func TestPipePeerStops(t *testing.T) {
	p, s := pipeSender(t, peerFramed)
	ctx := ctxT(t)
	done := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := s.Call(ctx, "n2", mutateOf(2))
			done <- err
		}()
	}
	for range 8 {
		<-p.entered
	}
	p.stop()
	for range 8 {
		if err := <-done; status.Code(err) != codes.Unavailable && status.Code(err) != codes.Canceled {
			t.Errorf("a call in flight when the peer stopped: %v, want Unavailable", err)
		}
	}
	for range 8 {
		<-p.ended
	}
	if _, err := s.Call(ctx, "n2", mutateOf(1)); status.Code(err) != codes.Unavailable {
		t.Errorf("a call to the stopped peer: %v, want Unavailable", err)
	}
}

// TestPipeBackpressure fills a peer's pipes: the next call waits for a slot until its deadline,
// without reaching the peer, and gets one once a call ends.
func TestPipeBackpressure(t *testing.T) {
	p, s := pipeSender(t, peerFramed)
	ctx := ctxT(t)
	const full = PipesPerPeer * PipeMaxInFlight
	done := make(chan error, full)
	for range full {
		go func() {
			_, err := s.Call(ctx, "n2", mutateOf(2))
			done <- err
		}()
	}
	for range full {
		<-p.entered
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Call(short, "n2", mutateOf(1)); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a call beyond the full pipes: %v, want DeadlineExceeded", err)
	}
	if len(p.entered) != 0 {
		t.Errorf("a call beyond the bound reached the peer")
	}
	close(p.release)
	for range full {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Call(ctx, "n2", mutateOf(1)); err != nil {
		t.Fatal(err)
	}
}

// TestPipeServerBounds speaks the Pipe protocol directly: requests beyond PipeMaxInFlight, and
// malformed ones, are answered with an error each, and the stream goes on.
func TestPipeServerBounds(t *testing.T) {
	p := newPipePeer(t, peerFramed)
	ctx := ctxT(t)
	st, err := replicapb.NewInternodeClient(dial(t, p.addr)).Pipe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wrap := func(m *replicapb.MutateRequest) *replicapb.Request {
		return &replicapb.Request{Msg: &replicapb.Request_Mutate{Mutate: m}}
	}
	var batch replicapb.PipeRequests
	for id := range uint64(PipeMaxInFlight) {
		batch.Requests = append(batch.Requests, &replicapb.PipeRequest{Id: id + 1, Request: wrap(mutateOf(2))})
	}
	batch.Requests = append(batch.Requests, &replicapb.PipeRequest{Id: PipeMaxInFlight + 1, Request: wrap(mutateOf(1))})
	if err := st.Send(&batch); err != nil {
		t.Fatal(err)
	}
	r, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if a := r.GetResponses(); len(a) != 1 || a[0].GetId() != PipeMaxInFlight+1 || codes.Code(a[0].GetCode()) != codes.ResourceExhausted {
		t.Fatalf("the request beyond the bound was answered %v, want ResourceExhausted", a)
	}
	close(p.release)
	got := 0
	for got < PipeMaxInFlight {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range r.GetResponses() {
			if a.GetCode() != 0 || a.GetResponse().GetMutate() == nil {
				t.Fatalf("answer %v, want a mutate response", a)
			}
			got++
		}
	}
	bad := &replicapb.PipeRequests{Requests: []*replicapb.PipeRequest{
		{Id: 0, Request: wrap(mutateOf(1))},
		{Id: 7, Request: wrap(mutateOf(1)), TimeoutMicros: -1},
		{Id: 8},
	}}
	if err := st.Send(bad); err != nil {
		t.Fatal(err)
	}
	codesGot := map[uint64]codes.Code{}
	for len(codesGot) < 3 {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range r.GetResponses() {
			codesGot[a.GetId()] = codes.Code(a.GetCode())
		}
	}
	for id, c := range codesGot {
		if c != codes.InvalidArgument {
			t.Errorf("malformed request %d answered %v, want InvalidArgument", id, c)
		}
	}
}

// TestPipeFallback sends data-path calls to a peer of an older release, without Pipe: they go
// unary and succeed.
func TestPipeFallback(t *testing.T) {
	p, s := pipeSender(t, peerUnary)
	ctx := ctxT(t)
	for range 5 {
		if _, err := Call[*replicapb.MutateResponse](ctx, s, "n2", mutateOf(1)); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.unary.Load(); n != 5 {
		t.Errorf("%d unary calls reached the old peer, want 5", n)
	}
}

// TestPipeDrain drains a peer's pipes as a node does before stopping: the request in flight is
// answered, the callers end their pipes, so that the graceful stop ends, and later calls still
// succeed (on a new pipe or unary) while the server serves.
func TestPipeDrain(t *testing.T) {
	p, s := pipeSender(t, peerFramed)
	ctx := ctxT(t)
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "n2", mutateOf(2))
		done <- err
	}()
	<-p.entered
	p.mux.Drain()
	if _, err := s.Call(ctx, "n2", mutateOf(1)); err != nil {
		t.Errorf("a call while the peer drains: %v", err)
	}
	stopped := make(chan struct{})
	go func() { p.gracefulStop(ctx); close(stopped) }()
	close(p.release)
	if err := <-done; err != nil {
		t.Errorf("the call in flight during the drain: %v", err)
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("the graceful stop did not end: a pipe stayed open")
	}
}

// TestPipeRecoversPanics checks that a panic of a piped request's handler fails that request by
// the Mux's recovery, as the gRPC server's interceptor fails a unary call's.
func TestPipeRecoversPanics(t *testing.T) {
	p := newPipePeer(t, peerFramed)
	var got atomic.Value
	p.mux.SetRecover(func(r any, req *replicapb.Request) error {
		got.Store(Kind(req))
		return status.Errorf(codes.Internal, "recovered %v", r)
	})
	book := &addrBook{}
	book.set("n2", p.addr)
	s := newSender(t, Options{Self: "n1", Addresses: book})
	ctx := ctxT(t)
	if _, err := s.Call(ctx, "n2", mutateOf(3)); status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "handler bug") {
		t.Errorf("a call whose handler panicked: %v, want the recovery's Internal error", err)
	}
	if got.Load() != "mutate" {
		t.Errorf("the recovery saw a request of kind %v, want mutate", got.Load())
	}
	if _, err := s.Call(ctx, "n2", mutateOf(1)); err != nil {
		t.Errorf("the pipe after a panic: %v", err)
	}
}

// startMutate starts a mutate to "n2" through s and returns where its answer arrives, or nil
// when Start declined it.
func startMutate(ctx context.Context, s *Sender, table uint64) chan error {
	done := make(chan error, 2) // room for a second answer, which the test reports
	if !Start(ctx, s, "n2", mutateOf(table), func(r *replicapb.MutateResponse, err error) {
		if err == nil && r.GetWouldReject() != (table == 1) {
			err = errors.New("a mutate got another answer")
		}
		done <- err
	}) {
		return nil
	}
	return done
}

// TestPipeStart sends calls by Start: each is answered once on its pipe, a deadline and a
// cancellation end the call and the peer's handler, and calls Start cannot make on a pipe (to
// this node, a kind not on pipes, a peer without pipes) are declined, not sent.
func TestPipeStart(t *testing.T) {
	p := newPipePeer(t, peerFramed)
	book := &addrBook{}
	book.set("n2", p.addr)
	s := newSender(t, Options{Self: "n1", Addresses: book})
	var answers []chan error
	for range 200 {
		d := startMutate(ctxT(t), s, 1)
		if d == nil {
			t.Fatal("Start declined a mutate to a peer with pipes")
		}
		answers = append(answers, d)
	}
	for _, d := range answers {
		if err := <-d; err != nil {
			t.Fatal(err)
		}
	}
	if n, st := p.unary.Load(), p.streams.Load(); n != 0 || st != 0 {
		t.Errorf("%d started calls went unary and %d on gRPC streams, want all on framed pipes", n, st)
	}

	ctx, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
	defer cancel()
	d := startMutate(ctx, s, 2)
	if left := <-p.entered; left == noDeadline || left > 200*time.Millisecond {
		t.Errorf("the handler had %v left, want the caller's deadline (at most 200ms)", left)
	}
	if err := <-d; status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a started call past its deadline: %v, want DeadlineExceeded", err)
	}
	<-p.ended

	ctx, cancel = context.WithCancel(t.Context())
	d = startMutate(ctx, s, 2)
	<-p.entered
	cancel()
	if err := <-d; status.Code(err) != codes.Canceled {
		t.Errorf("a canceled started call: %v, want Canceled", err)
	}
	if err := <-p.ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the canceled handler's context ended with %v, want Canceled", err)
	}
	// Each call was answered once, and the pipe still works.
	if err := <-startMutate(ctxT(t), s, 1); err != nil {
		t.Fatal(err)
	}
	for _, d := range append(answers, d) {
		select {
		case err := <-d:
			t.Fatalf("a started call answered twice (%v)", err)
		default:
		}
	}

	if Start(ctxT(t), s, "n2", &replicapb.ViewRequest{}, func(*replicapb.ViewResponse, error) {
		t.Error("a declined call was answered")
	}) {
		t.Error("Start took a kind that is not on pipes")
	}
	// The first call to a peer without pipes is started: the pipe learns that the peer does not
	// serve it, and the call goes unary; later ones are declined.
	old := newPipePeer(t, peerUnary)
	book.set("n3", old.addr)
	done := make(chan error, 1)
	if !Start(ctxT(t), s, "n3", mutateOf(1), func(_ *replicapb.MutateResponse, err error) { done <- err }) {
		t.Fatal("Start declined the first call to a peer")
	}
	if err := <-done; err != nil {
		t.Fatalf("a started call to a peer without pipes: %v", err)
	}
	if n := old.unary.Load(); n != 1 {
		t.Errorf("%d unary calls reached the peer without pipes, want 1", n)
	}
	if Start(ctxT(t), s, "n3", mutateOf(1), func(*replicapb.MutateResponse, error) {
		t.Error("a declined call was answered")
	}) {
		t.Error("Start took a call to a peer without pipes")
	}
}
