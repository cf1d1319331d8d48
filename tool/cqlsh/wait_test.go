package cqlsh

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/poll"
)

// syncBuffer is a bytes.Buffer that a test reads while Run writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// freeAddr returns a loopback address nothing listens on (a port just released).
func freeAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// gate is a node's port before the node serves it: it listens on addr and accepts connections
// but answers none (a kvnode node binds its CQL port before it joins the ring, and serves it
// after) until open is called; from then on it relays the connections it holds, and every later
// one, to upstream, a real node.
type gate struct {
	lis      net.Listener
	upstream string

	mu     sync.Mutex
	opened bool
	conns  []net.Conn // every connection accepted, closed at cleanup
	held   []net.Conn // accepted before open, not yet relayed
	wg     sync.WaitGroup
}

// startGate listens on addr; cleanup closes the listener and every connection and waits for
// the gate's goroutines.
func startGate(t *testing.T, addr, upstream string) *gate {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s, just released: %v", addr, err)
	}
	g := &gate{lis: lis, upstream: upstream}
	g.wg.Add(1)
	go func() { // owned by g: ends when cleanup closes the listener
		defer g.wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			g.mu.Lock()
			g.conns = append(g.conns, c)
			if g.opened {
				g.relay(c)
			} else {
				g.held = append(g.held, c)
			}
			g.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		g.mu.Lock()
		for _, c := range g.conns {
			c.Close()
		}
		g.mu.Unlock()
		g.wg.Wait()
	})
	return g
}

// holding returns how many connections the gate holds unanswered.
func (g *gate) holding() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.held)
}

// open relays the held connections and every later one to upstream.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.opened = true
	for _, c := range g.held {
		g.relay(c)
	}
	g.held = nil
}

// relay copies c to and from a new connection to upstream; g.mu is held.
func (g *gate) relay(c net.Conn) {
	up, err := net.Dial("tcp", g.upstream)
	if err != nil {
		c.Close()
		return
	}
	g.conns = append(g.conns, up)
	g.wg.Add(2)
	go func() { defer g.wg.Done(); io.Copy(up, c); up.Close() }() // owned by g: ends when c or up closes
	go func() { defer g.wg.Done(); io.Copy(c, up); c.Close() }()  // owned by g: ends when c or up closes
}

// TestWaitsForANodeThatIsStarting runs the shell against a port that first refuses connections
// (the node's process has not bound it yet), then accepts them without answering (the node has
// bound it but does not serve it yet), then serves it: the shell waits through both, says once
// on stderr that it waits, and runs the statement.
func TestWaitsForANodeThatIsStarting(t *testing.T) {
	_, cqlAddr := startRealNode(t)
	addr := freeAddr(t)
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() { // owned by the test: Run ends by the statement's result or ctx
		done <- Run(ctx, []string{"--addr", addr, "--wait", "60s", "-e", "SELECT key FROM system.local"}, strings.NewReader(""), &stdout, &stderr)
	}()
	waiting := "waiting for " + addr + " …\n"
	poll.Must(t, 30*time.Second, "the shell says it waits", poll.Bool(func() bool { return stderr.String() == waiting }))
	g := startGate(t, addr, cqlAddr)
	poll.Must(t, 30*time.Second, "the shell connects to the bound port", poll.Bool(func() bool { return g.holding() > 0 }))
	g.open()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v after the node came up; stderr %q", err, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("Run did not end once the node served its port")
	}
	if !strings.Contains(stdout.String(), "local") {
		t.Errorf("SELECT key FROM system.local printed %q, want its row", stdout.String())
	}
	if stderr.String() != waiting {
		t.Errorf("stderr is %q, want the one line %q", stderr.String(), waiting)
	}
}

// serveEach listens on a loopback port, calls handle with each connection and closes it; it
// returns the address. Cleanup closes the listener and waits for its goroutine.
func serveEach(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned by the test: ends when the cleanup closes the listener
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			handle(c)
			c.Close()
		}
	}()
	t.Cleanup(func() { lis.Close(); wg.Wait() })
	return lis.Addr().String()
}

// TestConnectFailuresSayWhatHappened checks the error for each way a node may not answer, with
// and without waiting: it names what happened, never "does not answer the CQL native protocol"
// for a port that is merely not open or not served yet.
func TestConnectFailuresSayWhatHappened(t *testing.T) {
	refused := freeAddr(t)
	silent := startGate(t, "127.0.0.1:0", "").lis.Addr().String() // accepts, never answers
	// A port that answers in another protocol (an HTTP server), and one that closes every
	// connection at once (a node stopping, a port that wants TLS).
	other := serveEach(t, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n") })
	closer := serveEach(t, func(c net.Conn) {
		c.Read(make([]byte, 4096)) // the STARTUP frame: closed unread, it would be a reset
	})

	for _, tc := range []struct {
		name       string
		args       []string
		want       string // the whole error, after "cql: cannot connect to kvnode at ADDR: "
		wantPrefix bool   // want is only the start of it
		waited     bool   // stderr says it waits
	}{
		{"refused, no wait", []string{"--addr", refused, "--wait", "0"}, "connect: connection refused", false, false},
		{"refused, waited", []string{"--addr", refused, "--wait", "300ms"}, "connect: connection refused (still, after waiting ", true, true},
		{"refused over gRPC, waited", []string{"--protocol", "grpc", "--addr", refused, "--wait", "300ms"}, "connect: connection refused (still, after waiting ", true, true},
		{"not served, no wait", []string{"--addr", silent, "--wait", "0", "--timeout", "300ms"}, "no answer within 300ms (the port accepts connections, but the node has not answered: it may still be starting)", false, false},
		{"not served, waited", []string{"--addr", silent, "--wait", "500ms", "--timeout", "200ms"}, "timed out after ", true, true},
		{"another protocol", []string{"--addr", other}, "", true, false},
		{"closed at once", []string{"--addr", closer}, "unexpected EOF: the connection was closed during the handshake (for a node with TLS add --tls-ca; for the gRPC port add --protocol grpc)", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.args[slices.Index(tc.args, "--addr")+1]
			var stdout, stderr bytes.Buffer
			err := Run(context.Background(), append(tc.args, "-e", "SELECT 1"), strings.NewReader(""), &stdout, &stderr)
			prefix := "cql: cannot connect to kvnode at " + addr + ": "
			switch {
			case err == nil:
				t.Fatal("Run succeeded, want a connection failure")
			case tc.wantPrefix && !strings.HasPrefix(err.Error(), prefix+tc.want),
				!tc.wantPrefix && err.Error() != prefix+tc.want:
				t.Errorf("Run = %q, want %q", err, prefix+tc.want+map[bool]string{true: "…"}[tc.wantPrefix])
			}
			isOther := tc.name == "another protocol"
			if strings.Contains(err.Error(), "does not answer the CQL native protocol") != isOther {
				t.Errorf("Run = %q: the protocol hint belongs to a port that answers in another protocol, and only there", err)
			}
			if errors.Is(err, ErrStatementFailed) || stdout.Len() > 0 {
				t.Errorf("a connection failure must be returned, not printed: err %v, stdout %q", err, stdout.String())
			}
			if want := map[bool]string{true: "waiting for " + addr + " …\n"}[tc.waited]; stderr.String() != want {
				t.Errorf("stderr is %q, want %q", stderr.String(), want)
			}
		})
	}
}
