package native

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/internal/tlsconfig/tlstest"
)

// TestInFlightLimitStopsReading checks backpressure: a connection with MaxInFlight requests
// being executed is not read until one of them is answered.
func TestInFlightLimitStopsReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		s, err := New(Config{Executor: &fakeExecutor{execute: g.execute}, Options: Options{MaxInFlight: 2}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		srvEnd, cliEnd := net.Pipe()
		s.accept(srvEnd)
		defer cliEnd.Close()

		// The client reads its answers in the background (net.Pipe writes wait for the reader).
		answers := make(chan cqlwire.Frame, 16)
		go func() {
			fr := cqlwire.NewFrameReader(bufio.NewReader(cliEnd), cqlwire.ReaderOptions{Responses: true})
			for {
				h, body, err := fr.ReadFrame()
				if err != nil {
					close(answers)
					return
				}
				f, _ := cqlwire.DecodeFrame(h, body)
				answers <- f
			}
		}()
		write := func(stream int16, m cqlwire.Message) {
			if _, err := cliEnd.Write(cqlwire.AppendFrame(nil, stream, m, cqlwire.FrameOptions{})); err != nil {
				t.Errorf("write stream %d: %v", stream, err)
			}
		}
		write(0, &cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}})
		if f := <-answers; f.Header.Opcode != cqlwire.OpReady {
			t.Fatalf("STARTUP answered %v", f.Header.Opcode)
		}
		q := &cqlwire.Query{Query: "x", Params: cqlwire.QueryParams{Consistency: cqlwire.One}}
		write(1, q)
		write(2, q)
		third := make(chan struct{})
		go func() {
			write(3, q) // blocks until the server reads it
			close(third)
		}()
		synctest.Wait()
		if n := g.count(); n != 2 {
			t.Fatalf("executor called %d times with 2 requests allowed in flight, want 2", n)
		}
		select {
		case <-third:
			t.Fatal("the server read a third request while 2 were in flight (limit 2)")
		default:
		}
		g.release <- struct{}{} // answer one
		synctest.Wait()
		<-third
		if n := g.count(); n != 3 {
			t.Fatalf("executor called %d times after one answer, want 3", n)
		}
		if f := <-answers; f.Header.Opcode != cqlwire.OpResult {
			t.Fatalf("answer %v, want RESULT", f.Header.Opcode)
		}
		g.release <- struct{}{}
		g.release <- struct{}{}
		<-answers
		<-answers
	})
}

// TestHandshakeTimeout checks that a connection that sends no STARTUP is closed after
// HandshakeTimeout, and that one that started is not.
func TestHandshakeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Executor: &fakeExecutor{}, HandshakeTimeout: 3 * time.Second, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		idleSrv, idle := net.Pipe()
		s.accept(idleSrv)
		startedSrv, started := net.Pipe()
		s.accept(startedSrv)
		c := newTestClient(t, started)
		go func() {
			// net.Pipe: the writes need a reader; the reads see the idle connection close.
			idle.Read(make([]byte, 1))
			idle.Close()
		}()
		c.startup(nil)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := connCount(s); n != 2 {
			t.Fatalf("%d connections open before the handshake timeout, want 2", n)
		}
		time.Sleep(2 * time.Second) // past the timeout (fake clock)
		synctest.Wait()
		if n := connCount(s); n != 1 {
			t.Fatalf("%d connections open after the handshake timeout, want 1 (the started one)", n)
		}
		if _, ok := c.roundTrip(cqlwire.Options{}).(*cqlwire.Supported); !ok {
			t.Fatal("the started connection stopped answering")
		}
		started.Close()
	})
}

func connCount(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// TestConnectionLimit checks that a connection over MaxConnections is answered Overloaded and
// closed, and that a slot freed is usable again.
func TestConnectionLimit(t *testing.T) {
	s, addr := startServer(t, Config{Options: Options{MaxConnections: 2}})
	c1, c2 := dial(t, addr), dial(t, addr)
	c1.startup(nil)
	c2.startup(nil)
	c3 := dial(t, addr)
	f := c3.recv()
	if e, ok := f.Message.(*cqlwire.Error); !ok || e.Code != cqlwire.ErrOverloaded || !contains(e.Message, "at most 2") {
		t.Fatalf("third connection got %#v, want Overloaded naming the limit", f.Message)
	}
	c3.expectClosed()
	c1.nc.Close()
	waitFor(t, func() bool { return connCount(s) == 1 })
	c4 := dial(t, addr)
	c4.startup(nil)
}

// TestCloseEndsRequests checks that Close cancels running requests and closes connections.
func TestCloseEndsRequests(t *testing.T) {
	g := newGate()
	s, addr := startServer(t, Config{Executor: &fakeExecutor{execute: g.execute}})
	c := dial(t, addr)
	c.startup(nil)
	c.send(1, &cqlwire.Query{Query: "x", Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
	waitArrived(t, g)
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-timeoutCh():
		t.Fatal("Close did not return with a request running")
	}
	for {
		if _, err := c.tryRecv(); err != nil {
			break // answered Overloaded (canceled) or closed: either way the connection ends
		}
	}
}

// TestShutdownWaitsForRequests checks that Shutdown lets a running request finish.
func TestShutdownWaitsForRequests(t *testing.T) {
	g := newGate()
	s, addr := startServer(t, Config{Executor: &fakeExecutor{execute: g.execute}})
	c := dial(t, addr)
	c.startup(nil)
	c.send(1, &cqlwire.Query{Query: "x", Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
	waitArrived(t, g)
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	g.release <- struct{}{}
	if _, ok := c.recv().Message.(cqlwire.VoidResult); !ok {
		t.Fatal("the running request was not answered")
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	c.expectClosed()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	poll.Must(t, timeout, "condition", poll.Bool(cond))
}

// TestDisconnectCancelsStatements: a client that goes away while its statements run gets them
// canceled (nobody will read their answers), and its connection stops counting against the
// node's limit, rather than each statement running to its own timeout.
func TestDisconnectCancelsStatements(t *testing.T) {
	g := newGate()
	s, addr := startServer(t, Config{Executor: &fakeExecutor{execute: g.execute}})
	c := dial(t, addr)
	c.startup(nil)
	c.send(2, &cqlwire.Query{Query: "SELECT * FROM ks.t", Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
	<-g.arrived
	c.nc.Close()
	poll.Must(t, timeout, "the connection of a client that closed it to be dropped", poll.Bool(func() bool { return connCount(s) == 0 }))
}

// TestServeReturnsErrServerClosedAfterShutdown: a graceful Shutdown with a request in flight
// makes Serve return ErrServerClosed (which the node does not log as an error), not the
// listener's "use of closed network connection".
func TestServeReturnsErrServerClosedAfterShutdown(t *testing.T) {
	g := newGate()
	s, err := New(Config{Executor: &fakeExecutor{execute: g.execute}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	c := dial(t, lis.Addr().String())
	c.startup(nil)
	c.send(2, &cqlwire.Query{Query: "x", Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
	<-g.arrived
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if err := <-done; !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve during Shutdown returned %v, want ErrServerClosed", err)
	}
	close(g.release) // let the request finish so that Shutdown completes
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestConnectionLimitOverTLS: on a TLS listener, a connection over MaxConnections whose client
// never starts its handshake does not hold up the server's accept loop: a later connection over
// the limit is still answered Overloaded (over TLS), and one under it is served.
func TestConnectionLimitOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "native")
	files := ca.Issue(t, dir, "node")
	cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	pem, err := os.ReadFile(ca.CertFile)
	if err != nil || !roots.AppendCertsFromPEM(pem) {
		t.Fatalf("read the CA certificate: %v", err)
	}
	s, addr := startServerOn(t, Config{Options: Options{MaxConnections: 1}}, func(l net.Listener) net.Listener {
		return tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}})
	})
	dialTLS := func() *testClient {
		t.Helper()
		nc, err := tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return newTestClient(t, nc)
	}
	c1 := dialTLS()
	c1.startup(nil)
	dial(t, addr) // over the limit, and silent: no ClientHello
	c2 := dialTLS()
	f := c2.recv()
	if e, ok := f.Message.(*cqlwire.Error); !ok || e.Code != cqlwire.ErrOverloaded || !contains(e.Message, "at most 1") {
		t.Fatalf("a connection over the limit, behind a silent one, got %#v, want Overloaded naming the limit", f.Message)
	}
	c2.expectClosed()
	c1.nc.Close()
	waitFor(t, func() bool { return connCount(s) == 0 })
	c3 := dialTLS()
	c3.startup(nil)
}
