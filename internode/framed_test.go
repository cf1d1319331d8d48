package internode

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/internal/lockedbuf"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/internal/tlsconfig"
	"github.com/kvnode/kvnode/internal/tlsconfig/tlstest"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// callMany sends n concurrent mutates to n2 through s and fails t on any error.
func callMany(t *testing.T, ctx context.Context, s *Sender, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			r, err := Call[*replicapb.MutateResponse](ctx, s, "n2", mutateOf(1))
			if err == nil && !r.GetWouldReject() {
				err = status.Error(codes.Internal, "a mutate got another answer")
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
}

// TestFramedCarriesPipes checks that a peer of this release gets the data path's calls on a
// framed connection: no gRPC stream and no unary call reaches it.
func TestFramedCarriesPipes(t *testing.T) {
	p, s := pipeSender(t, peerFramed)
	callMany(t, ctxT(t), s, 300)
	if u, st := p.unary.Load(), p.streams.Load(); u != 0 || st != 0 {
		t.Errorf("%d unary calls and %d gRPC streams reached the peer, want none: all framed", u, st)
	}
}

// TestFramedFallsBackToGRPCPipe sends data-path calls to a peer of the release before, which
// serves Pipe but not the framed protocol: they go on one gRPC Pipe stream.
func TestFramedFallsBackToGRPCPipe(t *testing.T) {
	p, s := pipeSender(t, peerPipe)
	callMany(t, ctxT(t), s, 50)
	if u, st := p.unary.Load(), p.streams.Load(); u != 0 || st != 1 {
		t.Errorf("%d unary calls and %d gRPC streams reached the peer, want one Pipe stream", u, st)
	}
}

// TestFramedTLS runs the framed protocol under the internode mutual TLS: a peer with a
// certificate of the cluster's CA is served, one without (another CA) is refused, and gRPC
// calls share the port.
func TestFramedTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "cluster")
	reloader := func(name string, ca *tlstest.CA) *tlsconfig.Reloader {
		f := ca.Issue(t, dir, name)
		r, err := tlsconfig.New(tlsconfig.Files{Cert: f.Cert, Key: f.Key, CA: f.CA})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	server, client := reloader("n2", ca), reloader("n1", ca)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := newPipePeerOn(t, lis, peerFramed, FramedServerOptions{Credentials: credentials.NewTLS(server.InternodeServerConfig())})
	book := &addrBook{}
	book.set("n2", p.addr)
	s := newSender(t, Options{Self: "n1", Addresses: book, Credentials: credentials.NewTLS(client.InternodeClientConfig())})
	ctx := ctxT(t)
	callMany(t, ctx, s, 50)
	if _, err := s.Call(ctx, "n2", &replicapb.ViewRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("a unary call over TLS on the shared port: %v, want the peer's Unimplemented", err)
	}
	if u, st := p.unary.Load(), p.streams.Load(); u != 1 || st != 0 {
		t.Errorf("%d unary calls and %d gRPC streams, want the view's one call and no stream", u, st)
	}

	stranger := reloader("n9", tlstest.NewCA(t, dir, "other"))
	s2 := newSender(t, Options{Self: "n9", Addresses: book, Credentials: credentials.NewTLS(stranger.InternodeClientConfig())})
	if _, err := s2.Call(ctx, "n2", mutateOf(1)); status.Code(err) != codes.Unavailable {
		t.Errorf("a call with a certificate of another CA: %v, want Unavailable", err)
	}
}

// framedRaw opens a framed connection to addr by hand, in plaintext, and returns it after the
// server's answer to the magic.
func framedRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, framedMagic); err != nil {
		t.Fatal(err)
	}
	var ack [len(framedMagic)]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil || string(ack[:]) != framedMagic {
		t.Fatalf("the server answered the magic %q, %v", ack, err)
	}
	return c
}

// TestFramedRefusesBadInput sends a framed server what no client of it sends: a frame longer
// than the limit, a frame that is not a message, and a wrong magic. Each closes its connection
// (the server allocates nothing for the long frame), is logged naming what was wrong, and the
// server goes on serving.
func TestFramedRefusesBadInput(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logged lockedbuf.Buffer
	p := newPipePeerOn(t, lis, peerFramed, FramedServerOptions{Log: slog.New(slog.NewTextHandler(&logged, nil))})
	closed := func(c net.Conn) {
		t.Helper()
		if n, err := c.Read(make([]byte, 64)); err == nil {
			t.Fatalf("the connection answered %d bytes, want it closed", n)
		}
	}
	for _, tc := range []struct {
		name, log string
		frame     []byte
	}{
		{"oversize", "frame too large: 4294967295 bytes", []byte{0xff, 0xff, 0xff, 0xff}},
		{"just over the limit", "frame too large", binary.BigEndian.AppendUint32(nil, framedMaxFrame+1)},
		{"garbage", "frame not a message", append(binary.BigEndian.AppendUint32(nil, 6), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)},
	} {
		c := framedRaw(t, p.addr)
		if _, err := c.Write(tc.frame); err != nil {
			t.Fatal(err)
		}
		closed(c)
		poll.Must(t, 10*time.Second, tc.name+" logged", func() error {
			if !strings.Contains(logged.String(), tc.log) {
				return status.Errorf(codes.NotFound, "log %q lacks %q", logged.String(), tc.log)
			}
			return nil
		})
	}
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "KVNF/0 something else..."); err != nil {
		t.Fatal(err)
	}
	closed(c)
	if !strings.Contains(logged.String(), "neither gRPC nor the framed protocol") {
		t.Errorf("a wrong magic was not logged: %q", logged.String())
	}
	book := &addrBook{}
	book.set("n2", p.addr)
	callMany(t, ctxT(t), newSender(t, Options{Self: "n1", Addresses: book}), 10)
}

// TestFramedPeerRestart restarts the peer on its address: the calls in flight fail, and the
// next ones reach the new process on a new framed connection.
func TestFramedPeerRestart(t *testing.T) {
	p, s := pipeSender(t, peerFramed)
	ctx := ctxT(t)
	callMany(t, ctx, s, 10)
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "n2", mutateOf(2))
		done <- err
	}()
	<-p.entered
	p.stop()
	if err := <-done; status.Code(err) != codes.Unavailable {
		t.Errorf("a call in flight when the peer stopped: %v, want Unavailable", err)
	}
	<-p.ended
	lis, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p2 := newPipePeerOn(t, lis, peerFramed, FramedServerOptions{})
	callMany(t, ctx, s, 10)
	if u, st := p2.unary.Load(), p2.streams.Load(); u != 0 || st != 0 {
		t.Errorf("%d unary calls and %d gRPC streams reached the restarted peer, want all framed", u, st)
	}
}

// TestFramedNoLeak checks that a Sender's close and a server's stop leave none of their
// goroutines behind, calls in flight included.
func TestFramedNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := newPipePeerOn(t, lis, peerFramed, FramedServerOptions{})
		book := &addrBook{}
		book.set("n2", p.addr)
		s, err := NewSender(Options{Self: "n1", Addresses: book})
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		callMany(t, ctx, s, 20)
		done := make(chan error, 1)
		go func() {
			_, err := s.Call(ctx, "n2", mutateOf(2))
			done <- err
		}()
		<-p.entered
		s.Close()
		if err := <-done; err == nil {
			t.Error("a call in flight when the Sender closed succeeded")
		}
		<-p.ended
		p.stop()
	}()
	poll.Must(t, 20*time.Second, "the goroutines ended", func() error {
		if n := runtime.NumGoroutine(); n > before {
			return status.Errorf(codes.Internal, "%d goroutines, %d before", n, before)
		}
		return nil
	})
}
