package native

import (
	"bytes"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/internal/poll"
)

// connPair returns a server connection (no reader or writer goroutine running) over loopback
// TCP, and the client's side of it.
func connPair(t *testing.T) (*conn, *testClient) {
	t.Helper()
	s, err := New(Config{Executor: &fakeExecutor{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	cl := dial(t, lis.Addr().String())
	nc, err := lis.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c := newConn(s, nc)
	t.Cleanup(c.close)
	return c, cl
}

// takeForTest makes stream a request in flight on c, as the reader does when it reads one.
func (c *conn) takeForTest(t *testing.T, stream int16) {
	t.Helper()
	c.tokens.Add(1)
	if !c.claim(stream) {
		t.Fatalf("stream %d is in flight already", stream)
	}
}

// TestAloneAnswerIsWrittenAtOnce: the answer to a connection's only request in flight is
// written by the goroutine that made it, without waiting for the writer goroutine (none runs
// here), and the stream and its in-flight token are free once it is.
func TestAloneAnswerIsWrittenAtOnce(t *testing.T) {
	c, cl := connPair(t)
	c.takeForTest(t, 5)
	c.answerSized(5, cqlwire.VoidResult{}, nil, 0)
	cl.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	h, _, err := cl.fr.ReadFrame()
	if err != nil {
		t.Fatalf("the answer to the only request in flight was not written without the writer goroutine: %v", err)
	}
	if h.Stream != 5 || h.Opcode != cqlwire.OpResult {
		t.Errorf("the answer came on stream %d as %v, want stream 5, RESULT", h.Stream, h.Opcode)
	}
	if c.inFlight() != 0 || int(c.tokens.Load()) != 0 {
		t.Errorf("after the answer %d streams and %d tokens in flight, want 0 and 0", c.inFlight(), int(c.tokens.Load()))
	}
}

// TestAloneAnswerLeavesTheRestToTheWriter: an answer larger than the socket takes at once is
// written partly without blocking (the client reads nothing yet), and the writer goroutine
// writes the rest first; the client reads it whole, then the next answer.
func TestAloneAnswerLeavesTheRestToTheWriter(t *testing.T) {
	c, cl := connPair(t)
	body := make([]byte, 8<<20) // more than loopback's socket buffers hold
	for i := range body {
		body[i] = byte(i % 251)
	}
	c.takeForTest(t, 7)
	c.answerSized(7, &encoded{op: cqlwire.OpResult, body: body}, nil, 0) // returns: it does not block
	c.wmu.Lock()
	partial := c.hasPending
	c.wmu.Unlock()
	if !partial {
		t.Fatal("an 8 MiB answer the client does not read was written whole, want the rest left to the writer")
	}
	if c.inFlight() != 0 || !c.busy() {
		t.Errorf("with the rest of an answer unwritten: %d streams in flight, busy %v; want 0 (the client may reuse it once read) and busy (a graceful shutdown waits)", c.inFlight(), c.busy())
	}
	go c.write()
	c.takeForTest(t, 8)
	c.answer(8, cqlwire.VoidResult{}, nil) // queued behind the rest
	h, got, err := cl.fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	if h.Stream != 7 || !bytes.Equal(got, body) {
		t.Fatalf("the first answer came on stream %d with %d bytes, want stream 7 with the 8 MiB body intact", h.Stream, len(got))
	}
	if f := cl.recv(); f.Header.Stream != 8 {
		t.Errorf("the second answer came on stream %d, want 8", f.Header.Stream)
	}
	poll.Must(t, timeout, "the streams and tokens to be free", poll.Bool(func() bool { return !c.busy() && int(c.tokens.Load()) == 0 }))
}

// TestAnswerWithOthersInFlightGoesToTheWriter: with other requests of the connection in
// flight, an answer is left to the writer, which batches it with theirs.
func TestAnswerWithOthersInFlightGoesToTheWriter(t *testing.T) {
	c, _ := connPair(t)
	c.takeForTest(t, 1)
	c.takeForTest(t, 2)
	c.answerSized(1, cqlwire.VoidResult{}, nil, 0)
	if len(c.out) != 1 {
		t.Errorf("with another request in flight the answer was not queued for the writer (%d queued)", len(c.out))
	}
}

// TestNoRawWritesUnderTLS: a TLS connection's answers always go through the writer (its bytes
// on the wire are not the frames').
func TestNoRawWritesUnderTLS(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if rc := rawConn(tls.Server(a, &tls.Config{})); rc != nil {
		t.Errorf("rawConn of a TLS connection = %v, want nil", rc)
	}
}

// TestHeldAnswersAreWrittenByTheReader: the answers the reader made itself (early rejections,
// OPTIONS) are written by the reader when the writer is idle, in one write and in the order
// held, with other requests in flight; their streams and tokens are free once written.
func TestHeldAnswersAreWrittenByTheReader(t *testing.T) {
	c, cl := connPair(t)
	c.takeForTest(t, 9) // another request in flight does not keep the reader from writing
	for _, st := range []int16{3, 4} {
		c.takeForTest(t, st)
		c.hold(st, c.srv.supported)
	}
	c.flushHeld() // no writer goroutine runs: the reader's own write or nothing
	cl.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	for _, want := range []int16{3, 4} {
		h, _, err := cl.fr.ReadFrame()
		if err != nil {
			t.Fatalf("the held answer on stream %d was not written without the writer goroutine: %v", want, err)
		}
		if h.Stream != want || h.Opcode != cqlwire.OpSupported {
			t.Errorf("an answer came on stream %d as %v, want stream %d, SUPPORTED", h.Stream, h.Opcode, want)
		}
	}
	if c.inFlight() != 1 || int(c.tokens.Load()) != 1 || len(c.held) != 0 {
		t.Errorf("after the held answers: %d streams, %d tokens in flight and %d held; want 1, 1 and 0", c.inFlight(), int(c.tokens.Load()), len(c.held))
	}
}

// TestHeldAnswersDoNotOvertakeTheWriter: while a frame given to the writer is not yet written
// (READY, say, which the frames after it follow in their compression), the reader's answers
// are queued behind it rather than written first.
func TestHeldAnswersDoNotOvertakeTheWriter(t *testing.T) {
	c, cl := connPair(t)
	c.takeForTest(t, 1)
	c.answer(1, cqlwire.Ready{}, nil) // queued: no writer goroutine runs yet
	c.takeForTest(t, 2)
	c.hold(2, c.srv.supported)
	c.flushHeld()
	if len(c.out) != 2 {
		t.Fatalf("with READY queued the reader's answer was not queued behind it (%d queued, want 2)", len(c.out))
	}
	go c.write()
	for _, want := range []int16{1, 2} {
		if f := cl.recv(); f.Header.Stream != want {
			t.Fatalf("an answer came on stream %d, want %d (READY first)", f.Header.Stream, want)
		}
	}
	poll.Must(t, timeout, "the streams, tokens and queue to be free", poll.Bool(func() bool {
		return !c.busy() && int(c.tokens.Load()) == 0 && c.queued.Load() == 0
	}))
	c.takeForTest(t, 3)
	c.hold(3, c.srv.supported)
	c.flushHeld()
	if len(c.out) != 0 {
		t.Errorf("with the writer idle again the reader's answer was queued (%d), want it written by the reader", len(c.out))
	}
	if f := cl.recv(); f.Header.Stream != 3 {
		t.Errorf("the answer came on stream %d, want 3", f.Header.Stream)
	}
}

// TestReaderAnswersOptionsItself: OPTIONS, before STARTUP as after, is answered by the reader
// without the writer goroutine (none runs here), each answer on its request's stream.
func TestReaderAnswersOptionsItself(t *testing.T) {
	c, cl := connPair(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.read()
	}()
	defer func() {
		c.close()
		<-done
	}()
	cl.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b []byte
	for _, st := range []int16{4, 9} {
		b = cqlwire.AppendFrame(b, st, cqlwire.Options{}, cqlwire.FrameOptions{})
	}
	cl.write(b)
	for _, st := range []int16{4, 9} {
		h, _, err := cl.fr.ReadFrame()
		if err != nil {
			t.Fatalf("OPTIONS on stream %d was not answered without the writer goroutine: %v", st, err)
		}
		if h.Stream != st || h.Opcode != cqlwire.OpSupported {
			t.Errorf("OPTIONS on stream %d answered on stream %d with %v, want SUPPORTED", st, h.Stream, h.Opcode)
		}
	}
	// The reader holds one token, taken before it reads the next frame.
	poll.Must(t, 5*time.Second, "the streams and tokens to be free", poll.Bool(func() bool { return !c.busy() && int(c.tokens.Load()) == 1 }))
}

// TestPipelinedBeyondInFlightLimit: more OPTIONS pipelined than MaxInFlight are all answered,
// in order: the reader, out of tokens, has its held answers written and waits for their
// tokens, whether it wrote them itself or the writer did.
func TestPipelinedBeyondInFlightLimit(t *testing.T) {
	_, addr := startServer(t, Config{Options: Options{MaxInFlight: 2}})
	c := dial(t, addr)
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	const n = 50
	var b []byte
	b = cqlwire.AppendFrame(b, 0, &cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}, cqlwire.FrameOptions{})
	for i := range n {
		b = cqlwire.AppendFrame(b, int16(1+i%3), cqlwire.Options{}, cqlwire.FrameOptions{})
	}
	c.write(b)
	if h, _, err := c.fr.ReadFrame(); err != nil || h.Opcode != cqlwire.OpReady {
		t.Fatalf("STARTUP answered %v (%v), want READY", h.Opcode, err)
	}
	for i := range n {
		h, _, err := c.fr.ReadFrame()
		if err != nil {
			t.Fatalf("OPTIONS %d of %d not answered: %v", i+1, n, err)
		}
		if h.Opcode != cqlwire.OpSupported || h.Stream != int16(1+i%3) {
			t.Fatalf("OPTIONS %d answered %v on stream %d, want SUPPORTED on %d", i+1, h.Opcode, h.Stream, 1+i%3)
		}
	}
}
