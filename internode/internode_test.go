package internode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// addrBook is the test's Addresses: a map the test edits.
type addrBook struct {
	mu    sync.Mutex
	addrs map[NodeID]string
}

func (b *addrBook) InternodeAddr(id NodeID) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.addrs[id]
	return a, ok
}

func (b *addrBook) set(id NodeID, addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.addrs == nil {
		b.addrs = map[NodeID]string{}
	}
	b.addrs[id] = addr
}

// Behaviours of the test Mutate handler, chosen by the mutation's table id.
const (
	mutateOK      = 1 // answers STATUS_OK, would_reject
	mutateBlock   = 2 // blocks until its context ends, returns the context's error
	mutatePlain   = 3 // fails with a plain error
	mutateStatus  = 4 // fails with NotFound
	mutateNothing = 5 // returns no response and no error
	mutateExpire  = 6 // fails with the error of a context of its own that expired
)

// testHandlers are the handlers of node id's Mux: every kind the tests send, except
// top_partitions (which no node serves). calls counts the handlers' runs; ended receives the
// context error of every Pull handler when it returns.
type testHandlers struct {
	id    NodeID
	calls atomic.Int64
	ended chan error
}

func newTestMux(id NodeID) (*Mux, *testHandlers) {
	h := &testHandlers{id: id, ended: make(chan error, 16)}
	m := NewMux()
	Handle(m, func(ctx context.Context, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
		h.calls.Add(1)
		switch req.GetMutation().GetTableId() {
		case mutateBlock:
			<-ctx.Done()
			return nil, ctx.Err()
		case mutatePlain:
			return nil, errors.New("disk full")
		case mutateStatus:
			return nil, status.Error(codes.NotFound, "no such table")
		case mutateNothing:
			return nil, nil
		case mutateExpire:
			inner, cancel := context.WithTimeout(ctx, 0)
			defer cancel()
			<-inner.Done()
			return nil, inner.Err()
		}
		return &replicapb.MutateResponse{Status: replicapb.Status_STATUS_OK, WouldReject: true}, nil
	})
	Handle(m, func(ctx context.Context, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error) {
		h.calls.Add(1)
		// Echoes who answered and the request's limit; page_bytes asks for a row that large.
		row := &replicapb.Row{Clustering: [][]byte{[]byte(h.id)}}
		if n := req.GetPageBytes(); n > 0 {
			row.Cells = []*replicapb.Cell{{Column: "v", Value: make([]byte, n)}}
		}
		return &replicapb.ReadResponse{Status: replicapb.Status_STATUS_OK, Rows: []*replicapb.Row{row}, Tombstones: req.GetLimit()}, nil
	})
	Handle(m, func(ctx context.Context, req *replicapb.ViewRequest) (*replicapb.ViewResponse, error) {
		h.calls.Add(1)
		return &replicapb.ViewResponse{Id: string(h.id)}, nil
	})
	Handle(m, func(ctx context.Context, req *replicapb.SchemaPrepareRequest) (*replicapb.SchemaPrepareResponse, error) {
		h.calls.Add(1)
		return &replicapb.SchemaPrepareResponse{Promised: true, Highest: req.GetBallot(), Value: []byte(req.GetKeyspace())}, nil
	})
	Handle(m, func(ctx context.Context, req *replicapb.RangeHashesRequest) (*replicapb.RangeHashesResponse, error) {
		h.calls.Add(1)
		resp := &replicapb.RangeHashesResponse{Status: replicapb.Status_STATUS_OK, Partitions: uint64(req.GetRange().GetEnd() - req.GetRange().GetStart())}
		for i := range req.GetLeaves() {
			resp.Leaves = append(resp.Leaves, bytes.Repeat([]byte{byte(i)}, 16))
		}
		return resp, nil
	})
	Handle(m, func(ctx context.Context, req *replicapb.StoreBatchRequest) (*replicapb.BatchlogResponse, error) {
		h.calls.Add(1)
		return &replicapb.BatchlogResponse{Status: replicapb.Status_STATUS_OK}, nil
	})
	Handle(m, func(ctx context.Context, req *replicapb.RemoveBatchRequest) (*replicapb.BatchlogResponse, error) {
		h.calls.Add(1)
		return &replicapb.BatchlogResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Message: string(req.GetId())}}, nil
	})
	HandleStream(m, func(ctx context.Context, req *replicapb.PullRequest, send func(*replicapb.PullChunk) error) error {
		h.calls.Add(1)
		defer func() { h.ended <- ctx.Err() }()
		// The requester field says how to answer: "chunks:N" sends N chunks, "fail:N" fails
		// after N, "forever" sends until the stream breaks.
		mode, arg, _ := strings.Cut(req.GetRequester(), ":")
		n, _ := strconv.Atoi(arg)
		for i := 0; mode == "forever" || i < n; i++ {
			if err := send(&replicapb.PullChunk{Entries: []*replicapb.Entry{{Key: []byte{byte(i)}, Value: []byte(h.id)}}}); err != nil {
				return err
			}
		}
		if mode == "fail" {
			return status.Errorf(codes.FailedPrecondition, "pull failed after %d chunks", n)
		}
		return nil
	})
	return m, h
}

// serve serves m on a new internode gRPC server listening on 127.0.0.1, stopped when the test
// ends, and returns its address.
func serve(t testing.TB, m *Mux, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, lis, m, opts...)
}

func serveOn(t testing.TB, lis net.Listener, m *Mux, opts ...grpc.ServerOption) string {
	t.Helper()
	srv := grpc.NewServer(opts...)
	m.Register(srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return lis.Addr().String()
}

func newSender(t testing.TB, o Options) *Sender {
	t.Helper()
	s, err := NewSender(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// pair is node n1 (with its Sender) and node n2, both serving the test handlers on loopback.
type pair struct {
	s      *Sender
	book   *addrBook
	h1, h2 *testHandlers
}

func newPair(t *testing.T) *pair {
	m1, h1 := newTestMux("n1")
	m2, h2 := newTestMux("n2")
	book := &addrBook{}
	book.set("n1", serve(t, m1))
	book.set("n2", serve(t, m2))
	return &pair{s: newSender(t, Options{Self: "n1", Local: m1, Addresses: book}), book: book, h1: h1, h2: h2}
}

// targets are where a call goes: to the sender's node in process, and to a peer over gRPC.
var targets = []struct {
	name string
	to   NodeID
}{{"local", "n1"}, {"remote", "n2"}}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCallRoundTrip(t *testing.T) {
	p := newPair(t)
	ctx := ctxT(t)
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			before := p.h1.calls.Load() + p.h2.calls.Load()
			mut, err := Call[*replicapb.MutateResponse](ctx, p.s, tg.to, &replicapb.MutateRequest{Mutation: &replicapb.Mutation{TableId: mutateOK}})
			if err != nil {
				t.Fatal(err)
			}
			if want := (&replicapb.MutateResponse{Status: replicapb.Status_STATUS_OK, WouldReject: true}); !proto.Equal(mut, want) {
				t.Errorf("mutate answered %v, want %v", mut, want)
			}
			read, err := Call[*replicapb.ReadResponse](ctx, p.s, tg.to, &replicapb.ReadRequest{Limit: 7})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(read.GetRows()[0].GetClustering()[0]); got != string(tg.to) || read.GetTombstones() != 7 {
				t.Errorf("read answered by %q with tombstones %d, want %q and 7", got, read.GetTombstones(), tg.to)
			}
			ballot := &replicapb.SchemaBallot{Counter: 3, Node: "n1"}
			prep, err := Call[*replicapb.SchemaPrepareResponse](ctx, p.s, tg.to, &replicapb.SchemaPrepareRequest{Keyspace: "ks", Ballot: ballot})
			if err != nil {
				t.Fatal(err)
			}
			if !prep.GetPromised() || !proto.Equal(prep.GetHighest(), ballot) || string(prep.GetValue()) != "ks" {
				t.Errorf("schema_prepare answered %v", prep)
			}
			rh, err := Call[*replicapb.RangeHashesResponse](ctx, p.s, tg.to, &replicapb.RangeHashesRequest{Range: &replicapb.RepairRange{Start: 10, End: 25}, Leaves: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(rh.GetLeaves()) != 3 || !bytes.Equal(rh.GetLeaves()[2], bytes.Repeat([]byte{2}, 16)) || rh.GetPartitions() != 15 {
				t.Errorf("range_hashes answered %v", rh)
			}
			// store_batch and remove_batch are both answered by the Response's batchlog field.
			sb, err := Call[*replicapb.BatchlogResponse](ctx, p.s, tg.to, &replicapb.StoreBatchRequest{})
			if err != nil || sb.GetStatus() != replicapb.Status_STATUS_OK {
				t.Errorf("store_batch answered %v, %v", sb, err)
			}
			rb, err := Call[*replicapb.BatchlogResponse](ctx, p.s, tg.to, &replicapb.RemoveBatchRequest{Id: []byte("b1")})
			if err != nil || rb.GetError().GetMessage() != "b1" {
				t.Errorf("remove_batch answered %v, %v", rb, err)
			}
			// The untyped method answers the same.
			m, err := p.s.Call(ctx, tg.to, &replicapb.ViewRequest{})
			if v, ok := m.(*replicapb.ViewResponse); err != nil || !ok || v.GetId() != string(tg.to) {
				t.Errorf("view answered %v, %v; want the view of %s", m, err, tg.to)
			}
			if got := p.h1.calls.Load() + p.h2.calls.Load() - before; got != 7 {
				t.Errorf("handlers ran %d times for 7 calls", got)
			}
		})
	}
	if p.h1.calls.Load() != 7 || p.h2.calls.Load() != 7 {
		t.Errorf("n1 ran %d handlers, n2 %d; want 7 each (local calls stay on n1)", p.h1.calls.Load(), p.h2.calls.Load())
	}
}

// TestCallErrors checks that a call fails alike to the node itself and over the network.
func TestCallErrors(t *testing.T) {
	p := newPair(t)
	ctx := ctxT(t)
	mutate := func(table uint64) *replicapb.MutateRequest {
		return &replicapb.MutateRequest{Mutation: &replicapb.Mutation{TableId: table}}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	for _, tg := range targets {
		cases := []struct {
			name string
			call func() error
			code codes.Code
			msg  string // the error names it
		}{
			{"no handler", func() error {
				_, err := p.s.Call(ctx, tg.to, &replicapb.TopPartitionsRequest{})
				return err
			}, codes.Unimplemented, "serves no top_partitions requests"},
			{"stream kind by Call", func() error {
				_, err := p.s.Call(ctx, tg.to, &replicapb.PullRequest{})
				return err
			}, codes.Unimplemented, "pull requests are answered by Stream"},
			{"unary kind by Stream", func() error {
				return p.s.Stream(ctx, tg.to, &replicapb.ViewRequest{}, func(proto.Message) error { return nil })
			}, codes.Unimplemented, "view requests are answered by Call"},
			{"unexpected answer", func() error {
				_, err := Call[*replicapb.ReadResponse](ctx, p.s, tg.to, mutate(mutateOK))
				return err
			}, codes.Internal, "answered with MutateResponse, want ReadResponse"},
			{"plain handler error", func() error {
				_, err := p.s.Call(ctx, tg.to, mutate(mutatePlain))
				return err
			}, codes.Unknown, "disk full"},
			{"status handler error", func() error {
				_, err := p.s.Call(ctx, tg.to, mutate(mutateStatus))
				return err
			}, codes.NotFound, "no such table"},
			{"handler's own deadline", func() error {
				_, err := p.s.Call(ctx, tg.to, mutate(mutateExpire))
				return err
			}, codes.DeadlineExceeded, "context deadline exceeded"},
			{"no response", func() error {
				_, err := p.s.Call(ctx, tg.to, mutate(mutateNothing))
				return err
			}, codes.Internal, "the mutate handler returned no response"},
			{"context canceled before", func() error {
				_, err := p.s.Call(canceled, tg.to, mutate(mutateOK))
				return err
			}, codes.Canceled, "mutate to node " + string(tg.to)},
			{"deadline while the handler waits", func() error {
				_, err := p.s.Call(short, tg.to, mutate(mutateBlock))
				return err
			}, codes.DeadlineExceeded, "mutate to node " + string(tg.to)},
		}
		for _, c := range cases {
			t.Run(tg.name+"/"+c.name, func(t *testing.T) {
				err := c.call()
				if status.Code(err) != c.code || !strings.Contains(err.Error(), c.msg) {
					t.Errorf("error %v (code %v), want code %v naming %q", err, status.Code(err), c.code, c.msg)
				}
				if !strings.Contains(err.Error(), "to node "+string(tg.to)) {
					t.Errorf("error %v does not name node %s", err, tg.to)
				}
			})
		}
	}
}

func TestCallBadRequests(t *testing.T) {
	p := newPair(t)
	ctx := ctxT(t)
	for _, c := range []struct {
		name string
		req  proto.Message
		msg  string
	}{
		{"nil", nil, "no request message"},
		{"typed nil", (*replicapb.MutateRequest)(nil), "mutate request is a nil"},
		{"not a request", &replicapb.Mutation{}, "*replicapb.Mutation is not an internode request message"},
		{"a response", &replicapb.MutateResponse{}, "*replicapb.MutateResponse is not an internode request message"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := p.s.Call(ctx, "n2", c.req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("Call(%v) = %v, want InvalidArgument naming %q", c.req, err, c.msg)
			}
		})
	}
	if got := p.h2.calls.Load(); got != 0 {
		t.Errorf("n2 ran %d handlers for bad requests, want 0", got)
	}
}

// TestServerRejectsMalformedRequests sends the Internode service requests a Sender never
// makes: an empty Request, and one of a kind a newer release would add.
func TestServerRejectsMalformedRequests(t *testing.T) {
	m, _ := newTestMux("n2")
	api := replicapb.NewInternodeClient(dial(t, serve(t, m)))
	ctx := ctxT(t)
	if _, err := api.Call(ctx, &replicapb.Request{}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "request carries no message") {
		t.Errorf("empty request: %v, want InvalidArgument", err)
	}
	newer := &replicapb.Request{}
	newer.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 999, protowire.BytesType), nil))
	if _, err := api.Call(ctx, newer); status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "request kind number 999 is unknown") {
		t.Errorf("request of an unknown kind: %v, want Unimplemented naming 999", err)
	}
	st, err := api.Stream(ctx, &replicapb.Request{})
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("empty stream request: %v, want InvalidArgument", err)
	}
}

func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestStream(t *testing.T) {
	p := newPair(t)
	ctx := ctxT(t)
	handlers := map[NodeID]*testHandlers{"n1": p.h1, "n2": p.h2}
	for _, tg := range targets {
		h := handlers[tg.to]
		t.Run(tg.name+"/chunks", func(t *testing.T) {
			var keys []byte
			err := Stream(ctx, p.s, tg.to, &replicapb.PullRequest{Requester: "chunks:5"}, func(c *replicapb.PullChunk) error {
				e := c.GetEntries()[0]
				if string(e.GetValue()) != string(tg.to) {
					t.Errorf("chunk from %q, want %q", e.GetValue(), tg.to)
				}
				keys = append(keys, e.GetKey()...)
				return nil
			})
			if err != nil || !bytes.Equal(keys, []byte{0, 1, 2, 3, 4}) {
				t.Errorf("Stream = %v after chunks %v, want nil after 0 1 2 3 4", err, keys)
			}
			if err := <-h.ended; err != nil {
				t.Errorf("the handler's context ended (%v) on a complete stream", err)
			}
		})
		t.Run(tg.name+"/receiver stops", func(t *testing.T) {
			stop := errors.New("enough")
			n := 0
			err := Stream(ctx, p.s, tg.to, &replicapb.PullRequest{Requester: "forever"}, func(c *replicapb.PullChunk) error {
				if n++; n == 3 {
					return stop
				}
				return nil
			})
			if err != stop || n != 3 {
				t.Errorf("Stream = %v after %d chunks, want the receiver's error after 3", err, n)
			}
			// The handler sees the stream end: its context is canceled, and it returns.
			if err := <-h.ended; !errors.Is(err, context.Canceled) {
				t.Errorf("the handler ended with context error %v, want Canceled", err)
			}
		})
		t.Run(tg.name+"/caller cancels", func(t *testing.T) {
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			n := 0
			err := Stream(cctx, p.s, tg.to, &replicapb.PullRequest{Requester: "forever"}, func(c *replicapb.PullChunk) error {
				if n++; n == 2 {
					cancel()
				}
				return nil
			})
			if status.Code(err) != codes.Canceled || !strings.Contains(err.Error(), "pull to node "+string(tg.to)) {
				t.Errorf("Stream = %v, want Canceled naming the kind and node", err)
			}
			if err := <-h.ended; !errors.Is(err, context.Canceled) {
				t.Errorf("the handler ended with context error %v, want Canceled", err)
			}
		})
		t.Run(tg.name+"/error mid-stream", func(t *testing.T) {
			n := 0
			err := p.s.Stream(ctx, tg.to, &replicapb.PullRequest{Requester: "fail:2"}, func(proto.Message) error {
				n++
				return nil
			})
			if n != 2 || status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "pull failed after 2 chunks") {
				t.Errorf("Stream = %v after %d chunks, want FailedPrecondition after 2", err, n)
			}
			<-h.ended
		})
		t.Run(tg.name+"/unexpected answer", func(t *testing.T) {
			err := Stream(ctx, p.s, tg.to, &replicapb.PullRequest{Requester: "chunks:1"}, func(*replicapb.ViewResponse) error { return nil })
			if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "answered with PullChunk, want ViewResponse") {
				t.Errorf("Stream = %v, want Internal naming both messages", err)
			}
			<-h.ended
		})
	}
}

func TestAddressChangeRedials(t *testing.T) {
	mA, _ := newTestMux("A")
	mB, _ := newTestMux("B")
	book := &addrBook{}
	addrA := serve(t, mA)
	book.set("n2", addrA)
	s := newSender(t, Options{Self: "n1", Addresses: book})
	ctx := ctxT(t)
	view := func() string {
		v, err := Call[*replicapb.ViewResponse](ctx, s, "n2", &replicapb.ViewRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return v.GetId()
	}
	if got := view(); got != "A" {
		t.Fatalf("n2 answered as %s, want A", got)
	}
	addrB := serve(t, mB)
	book.set("n2", addrB)
	if got := view(); got != "B" {
		t.Errorf("after n2 moved, it answered as %s, want B", got)
	}
	s.mu.RLock()
	if len(s.conns) != 1 || s.conns["n2"].addr != addrB {
		t.Errorf("the sender holds %d connections, want one, to n2's new address", len(s.conns))
	}
	s.mu.RUnlock()

	// At overrides the address book, for a node it does not know yet, and for one it does.
	v, err := Call[*replicapb.ViewResponse](ctx, s, "n5", &replicapb.ViewRequest{}, At(addrB))
	if err != nil || v.GetId() != "B" {
		t.Errorf("a call At n5's address: %v, %v; want B's answer", v, err)
	}
	v, err = Call[*replicapb.ViewResponse](ctx, s, "n2", &replicapb.ViewRequest{}, WaitForReady(), At(addrA))
	if err != nil || v.GetId() != "A" {
		t.Errorf("a call At n2's old address: %v, %v; want A's answer", v, err)
	}
}

// TestPeerRestart checks that calls reach a peer again once it is back at its address.
func TestPeerRestart(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	m, _ := newTestMux("n2")
	srv := grpc.NewServer()
	m.Register(srv)
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	book := &addrBook{}
	book.set("n2", addr)
	s := newSender(t, Options{Self: "n1", Addresses: book})
	ctx := ctxT(t)
	if _, err := s.Call(ctx, "n2", &replicapb.ViewRequest{}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	<-done
	if _, err := s.Call(ctx, "n2", &replicapb.ViewRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("a call to a stopped peer: %v, want Unavailable", err)
	}
	lis, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	serveOn(t, lis, m)
	err = poll.Until(ctx, 10*time.Second, "calls to the restarted peer succeed", func() error {
		_, err := s.Call(ctx, "n2", &replicapb.ViewRequest{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUnreachablePeer(t *testing.T) {
	// A port nothing listens on any more: the connection is refused.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := lis.Addr().String()
	lis.Close()
	// A port that accepts connections and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		silent.Close()
		<-accepted
		for _, c := range held {
			c.Close()
		}
	})
	book := &addrBook{}
	book.set("n8", refused)
	book.set("n9", silent.Addr().String())
	s := newSender(t, Options{Self: "n1", Addresses: book})
	ctx := ctxT(t)

	// Refused: fails at once (Unavailable), not when the context ends, twice.
	for range 2 {
		_, err := s.Call(ctx, "n8", &replicapb.MutateRequest{})
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "mutate to node n8") {
			t.Errorf("call to a refusing peer: %v, want Unavailable naming mutate and n8", err)
		}
	}
	// Silent: bounded by the context.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = s.Call(short, "n9", &replicapb.MutateRequest{})
	if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "mutate to node n9") {
		t.Errorf("call to a silent peer: %v, want DeadlineExceeded naming mutate and n9", err)
	}
	// Refused, waiting for the peer: bounded by the context.
	short2, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	_, err = s.Call(short2, "n8", &replicapb.MutateRequest{}, WaitForReady())
	if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "mutate to node n8") {
		t.Errorf("call waiting for a refusing peer: %v, want DeadlineExceeded naming mutate and n8", err)
	}
	// Unknown: no address.
	_, err = s.Call(ctx, "n7", &replicapb.ReadRequest{})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "read to node n7") || !strings.Contains(err.Error(), "no internode address known") {
		t.Errorf("call to a node without an address: %v, want Unavailable naming n7", err)
	}
}

func TestMessageSizeLimit(t *testing.T) {
	const limit = 64 << 10
	m, h := newTestMux("n2")
	book := &addrBook{}
	book.set("n2", serve(t, m, grpc.MaxRecvMsgSize(limit)))
	small := newSender(t, Options{Self: "n1", Addresses: book, MaxMessageBytes: limit})
	large := newSender(t, Options{Self: "n1", Addresses: book, MaxMessageBytes: 4 * limit})
	ctx := ctxT(t)
	big := &replicapb.MutateRequest{Mutation: &replicapb.Mutation{TableId: mutateOK, Rows: []*replicapb.Row{{Cells: []*replicapb.Cell{{Value: make([]byte, 2*limit)}}}}}}

	_, err := small.Call(ctx, "n2", big)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "mutate to node n2") || !strings.Contains(err.Error(), "larger than max") {
		t.Errorf("sending over the sender's limit: %v, want ResourceExhausted naming the node and the limit", err)
	}
	_, err = large.Call(ctx, "n2", big)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "larger than max") {
		t.Errorf("sending over the server's limit: %v, want ResourceExhausted", err)
	}
	_, err = small.Call(ctx, "n2", &replicapb.ReadRequest{PageBytes: 2 * limit})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "read to node n2") || !strings.Contains(err.Error(), "larger than max") {
		t.Errorf("receiving over the sender's limit: %v, want ResourceExhausted", err)
	}
	if got := h.calls.Load(); got != 1 {
		t.Errorf("n2 ran %d handlers, want 1 (the read; no oversized mutation reaches it)", got)
	}
	if _, err := small.Call(ctx, "n2", &replicapb.ReadRequest{PageBytes: limit / 2}); err != nil {
		t.Errorf("a read within the limit: %v", err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	m1, _ := newTestMux("n1")
	book := &addrBook{}
	book.set("n1", serve(t, m1))
	for _, id := range []NodeID{"n2", "n3"} {
		m, _ := newTestMux(id)
		book.set(id, serve(t, m))
	}
	s := newSender(t, Options{Self: "n1", Local: m1, Addresses: book})
	ctx := ctxT(t)
	const workers, calls = 16, 40
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				to := NodeID(fmt.Sprintf("n%d", 1+(w+i)%3))
				limit := uint32(w*calls + i)
				resp, err := Call[*replicapb.ReadResponse](ctx, s, to, &replicapb.ReadRequest{Limit: limit})
				if err != nil {
					errs <- err
					return
				}
				if got := string(resp.GetRows()[0].GetClustering()[0]); got != string(to) || resp.GetTombstones() != limit {
					errs <- fmt.Errorf("read %d to %s answered by %s for read %d", limit, to, got, resp.GetTombstones())
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// rawCodec sends a []byte as it is, as the proto codec's content type.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = data; return nil }
func (rawCodec) Name() string                       { return "proto" }

func TestGarbageDoesNotCrashTheServer(t *testing.T) {
	m, _ := newTestMux("n2")
	addr := serve(t, m)
	ctx := ctxT(t)
	// Bytes that are not HTTP/2: the server closes the connection.
	for _, junk := range [][]byte{[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), bytes.Repeat([]byte{0xff, 0x00, 0x13}, 4096)} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write(junk)
		buf := make([]byte, 1024)
		for {
			if _, err := c.Read(buf); err != nil {
				break // closed by the server (or the deadline: the server still runs)
			}
		}
		c.Close()
	}
	// A gRPC call whose payload is not a Request.
	conn := dial(t, addr)
	var out []byte
	err := conn.Invoke(ctx, replicapb.Internode_Call_FullMethodName, []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2}, &out, grpc.ForceCodec(rawCodec{}))
	if status.Code(err) != codes.Internal {
		t.Errorf("a malformed Request: %v, want Internal (cannot unmarshal)", err)
	}
	// The server still serves.
	book := &addrBook{}
	book.set("n2", addr)
	s := newSender(t, Options{Self: "n1", Addresses: book})
	if _, err := s.Call(ctx, "n2", &replicapb.ViewRequest{}); err != nil {
		t.Errorf("after garbage, a call fails: %v", err)
	}
}

func TestClose(t *testing.T) {
	p := newPair(t)
	ctx := ctxT(t)
	if _, err := p.s.Call(ctx, "n2", &replicapb.ViewRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := p.s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if _, err := p.s.Call(ctx, tg.to, &replicapb.ViewRequest{}); !errors.Is(err, ErrClosed) {
			t.Errorf("%s call after Close: %v, want ErrClosed", tg.name, err)
		}
	}
}

func TestWiringErrorsPanic(t *testing.T) {
	m := NewMux()
	view := func(context.Context, *replicapb.ViewRequest) (*replicapb.ViewResponse, error) { return nil, nil }
	Handle(m, view)
	for _, c := range []struct {
		name string
		f    func()
		msg  string
	}{
		{"twice", func() { Handle(m, view) }, "a handler of view requests is already registered"},
		{"not a request", func() {
			Handle(m, func(context.Context, *replicapb.Mutation) (*replicapb.MutateResponse, error) { return nil, nil })
		}, "*replicapb.Mutation is not a message of replicapb.Request's oneof"},
		{"not a response", func() {
			Handle(m, func(context.Context, *replicapb.ReadRequest) (*replicapb.Row, error) { return nil, nil })
		}, "*replicapb.Row is not a message of replicapb.Response's oneof"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, c.msg) {
					t.Errorf("panic %v, want one naming %q", r, c.msg)
				}
			}()
			c.f()
		})
	}
}

// TestKinds checks the map read from internode.proto, and Kind.
func TestKinds(t *testing.T) {
	k := newKinds()
	if len(k.byReq) != len(k.req) || len(k.req) < 16 || len(k.byResp) < 15 {
		t.Errorf("%d request kinds for %d fields, %d answers", len(k.byReq), len(k.req), len(k.byResp))
	}
	i, err := k.kindOf(&replicapb.FetchPartitionsRequest{})
	if err != nil || k.name(i) != "fetch_partitions" {
		t.Errorf("kindOf(FetchPartitionsRequest) = %q, %v; want fetch_partitions", k.name(i), err)
	}
	r, err := k.wrap(i, &replicapb.FetchPartitionsRequest{TableId: 9})
	if err != nil || Kind(r) != "fetch_partitions" || r.GetFetchPartitions().GetTableId() != 9 {
		t.Errorf("wrap = %v, %v; Kind %q", r, err, Kind(r))
	}
	if got := Kind(&replicapb.Request{}); got != "" {
		t.Errorf("Kind(empty) = %q, want \"\"", got)
	}
}

// TestWireSwitchesCoverEveryKind checks wire.go's switches against internode.proto: each puts
// every message of the Request and Response oneofs in its own field and takes it out again.
func TestWireSwitchesCoverEveryKind(t *testing.T) {
	check := func(parent protoreflect.Message, wrap func(proto.Message) (protoreflect.Message, bool), get func() proto.Message) {
		o := parent.Descriptor().Oneofs().ByName("msg")
		fields := parent.Descriptor().Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			// Through protoreflect, the reference: the field holds msg.
			msg := parent.NewField(fd).Message()
			parent.Set(fd, protoreflect.ValueOfMessage(msg))
			if got := get(); got != msg.Interface() {
				t.Errorf("%s: wire.go takes out %v, want the %s message put in", fd.FullName(), got, fd.Message().Name())
			}
			w, ok := wrap(msg.Interface())
			if !ok {
				t.Errorf("%s: wire.go does not wrap %s", fd.FullName(), fd.Message().Name())
				continue
			}
			if got := w.WhichOneof(o); got != fd {
				t.Errorf("wire.go wraps %s in %v, want %s", fd.Message().Name(), got, fd.FullName())
			}
		}
	}
	req := &replicapb.Request{}
	check(req.ProtoReflect(), func(m proto.Message) (protoreflect.Message, bool) {
		r, ok := wrapRequest(m)
		return r.ProtoReflect(), ok
	}, func() proto.Message { return requestMsg(req) })
	resp := &replicapb.Response{}
	check(resp.ProtoReflect(), func(m proto.Message) (protoreflect.Message, bool) {
		r, ok := wrapResponse(m)
		return r.ProtoReflect(), ok
	}, func() proto.Message { return responseMsg(resp) })
}

func TestOptions(t *testing.T) {
	if _, err := NewSender(Options{}); err == nil || !strings.Contains(err.Error(), "Addresses is required") {
		t.Errorf("NewSender without Addresses: %v", err)
	}
	if _, err := NewSender(Options{Addresses: &addrBook{}, MaxMessageBytes: -1}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("NewSender with a negative limit: %v", err)
	}
	if _, err := NewSender(Options{Addresses: &addrBook{}, Local: NewMux()}); err == nil || !strings.Contains(err.Error(), "needs Options.Self") {
		t.Errorf("NewSender with Local and no Self: %v", err)
	}
	o := (*Options)(nil).EnsureDefaults()
	if o.MaxMessageBytes != DefaultMaxMessageBytes || o.Credentials == nil {
		t.Errorf("EnsureDefaults = %+v", o)
	}
}
