package native

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
)

// fakeExecutor is the domain API for wire-level tests: each method calls its function, or
// answers Void (and a fixed prepared statement) when it is nil.
type fakeExecutor struct {
	execute func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error)
	prepare func(ctx context.Context, text, keyspace string) (*coordinator.Prepared, error)
	batch   func(ctx context.Context, b coordinator.BatchStatement) (coordinator.Result, error)
}

func (f *fakeExecutor) Execute(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
	if f.execute == nil {
		return coordinator.Result{}, nil
	}
	return f.execute(ctx, st)
}

func (f *fakeExecutor) Prepare(ctx context.Context, text, keyspace string) (*coordinator.Prepared, error) {
	if f.prepare == nil {
		return &coordinator.Prepared{ID: [16]byte{1, 2, 3}, Text: text, Keyspace: keyspace}, nil
	}
	return f.prepare(ctx, text, keyspace)
}

func (f *fakeExecutor) ExecuteBatch(ctx context.Context, b coordinator.BatchStatement) (coordinator.Result, error) {
	if f.batch == nil {
		return coordinator.Result{}, nil
	}
	return f.batch(ctx, b)
}

// startServer serves cfg (with exec when cfg.Executor is nil) on a loopback port.
func startServer(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	return startServerOn(t, cfg, nil)
}

// startServerOn is startServer on the loopback listener as wrap returns it (nil: as it is).
func startServerOn(t testing.TB, cfg Config, wrap func(net.Listener) net.Listener) (*Server, string) {
	t.Helper()
	if cfg.Executor == nil {
		cfg.Executor = &fakeExecutor{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	if wrap != nil {
		lis = wrap(lis)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Close()
		<-done
	})
	return s, addr
}

// testClient speaks the protocol from the client's side, one frame at a time.
type testClient struct {
	t       testing.TB
	nc      net.Conn
	fr      *cqlwire.FrameReader
	comp    cqlwire.Compression
	scratch []byte
	buf     []byte
}

// timeout bounds every wait of a test; it is never waited out when the test passes.
const timeout = 20 * time.Second

func dial(t testing.TB, addr string) *testClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return newTestClient(t, nc)
}

func newTestClient(t testing.TB, nc net.Conn) *testClient {
	return &testClient{t: t, nc: nc, fr: cqlwire.NewFrameReader(bufio.NewReader(nc), cqlwire.ReaderOptions{Responses: true})}
}

// send writes a request frame.
func (c *testClient) send(stream int16, m cqlwire.Message) {
	c.t.Helper()
	opts := cqlwire.FrameOptions{}
	if c.comp != nil {
		opts.Compression, opts.Scratch = c.comp, &c.scratch
	}
	c.buf = cqlwire.AppendFrame(c.buf[:0], stream, m, opts)
	c.write(c.buf)
}

func (c *testClient) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// recv reads a response frame.
func (c *testClient) recv() cqlwire.Frame {
	c.t.Helper()
	f, err := c.tryRecv()
	if err != nil {
		c.t.Fatalf("read a response: %v", err)
	}
	return f
}

func (c *testClient) tryRecv() (cqlwire.Frame, error) {
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	h, body, err := c.fr.ReadFrame()
	if err != nil {
		return cqlwire.Frame{}, err
	}
	return cqlwire.DecodeFrame(h, body)
}

// roundTrip sends m on stream 1 and returns the answer's message.
func (c *testClient) roundTrip(m cqlwire.Message) cqlwire.Message {
	c.t.Helper()
	c.send(1, m)
	f := c.recv()
	if f.Header.Stream != 1 {
		c.t.Fatalf("answer on stream %d, want 1", f.Header.Stream)
	}
	return f.Message
}

// startup sends STARTUP with opts (CQL_VERSION added) and expects READY.
func (c *testClient) startup(opts map[string]string) {
	c.t.Helper()
	all := map[string]string{"CQL_VERSION": "3.0.0"}
	for k, v := range opts {
		all[k] = v
	}
	if m := c.roundTrip(&cqlwire.Startup{Options: all}); m.Opcode() != cqlwire.OpReady {
		c.t.Fatalf("STARTUP answered %#v, want READY", m)
	}
	if name := all["COMPRESSION"]; name != "" {
		c.comp = cqlwire.CompressionByName(name)
		c.fr.SetCompression(c.comp)
	}
}

// expectClosed reads until the server closes the connection, failing on any frame.
func (c *testClient) expectClosed() {
	c.t.Helper()
	if f, err := c.tryRecv(); err == nil {
		c.t.Fatalf("read %v on stream %d, want the connection closed", f.Header.Opcode, f.Header.Stream)
	}
}

// expectProtocolError reads a PROTOCOL_ERROR on stream whose message contains want, then the
// connection's end.
func (c *testClient) expectProtocolError(stream int16, want string) {
	c.t.Helper()
	f := c.recv()
	e, ok := f.Message.(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrProtocol || f.Header.Stream != stream {
		c.t.Fatalf("got %#v on stream %d, want a PROTOCOL_ERROR on stream %d", f.Message, f.Header.Stream, stream)
	}
	if !contains(e.Message, want) {
		c.t.Errorf("protocol error %q does not say %q", e.Message, want)
	}
	c.expectClosed()
}

func contains(s, sub string) bool {
	return strings.Contains(s, sub)
}

// gate blocks the executor's calls until released, counting them.
type gate struct {
	mu      sync.Mutex
	calls   int
	arrived chan struct{} // one send per call
	release chan struct{}
}

func newGate() *gate {
	return &gate{arrived: make(chan struct{}, 1024), release: make(chan struct{})}
}

func (g *gate) execute(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	g.arrived <- struct{}{}
	select {
	case <-g.release:
		return coordinator.Result{}, nil
	case <-ctx.Done():
		return coordinator.Result{}, ctx.Err()
	}
}

func (g *gate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

func deadline() time.Time { return time.Now().Add(timeout) }

func timeoutCh() <-chan time.Time { return time.After(timeout) }
