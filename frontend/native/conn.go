package native

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/cqlwire"
)

// conn is one client connection. Its reader goroutine (serve) reads and decodes frames, answers
// the handshake messages itself, answers a prepared write its executor rejects from the
// partition key alone (admitExecute) and starts a goroutine per other statement, or, when the
// node's execution slots are taken, leaves it in the admission queue, to run on the goroutine
// of the statement whose slot it takes (conn.statement); its writer goroutine encodes the
// answers queued on out and writes them, batching whatever is queued into one write. While the
// writer is idle, the reader writes its own answers and a statement's goroutine the answer to
// the only request in flight, themselves (writeDirect). An in-flight token (tokens) is held from
// the moment a request is read until its answer is written: at MaxInFlight tokens the reader
// stops reading.
type conn struct {
	srv *Server
	nc  net.Conn
	// ctx is the requests' context, canceled when the connection closes.
	ctx    context.Context
	cancel context.CancelFunc

	// tokens counts the in-flight tokens taken, at most maxTokens; room wakes the reader when
	// it waits for one (waiting). A counter rather than a channel of tokens: two channel
	// operations per request were a tenth of a pipelined OPTIONS' cost.
	tokens    atomic.Int32
	maxTokens int32
	waiting   atomic.Bool
	room      chan struct{}
	bytes     *budget       // request and answer bytes held (and srv.bytes)
	out       chan outFrame // answers to write
	events    chan outFrame // events to write; full means the client is too slow
	done      chan struct{} // closed by close
	once      sync.Once

	// streams marks the stream ids in flight; guarded by mu.
	mu       sync.Mutex
	streams  [maxStreams / 64]uint64
	nstreams int // the streams marked
	// writing counts the writes of answers under way: their streams are freed just before
	// (once the client reads an answer it may reuse its stream), so this is what tells a
	// graceful shutdown that the connection still has answers to deliver.
	writing atomic.Int32

	// Set by the reader during the handshake, read by request goroutines after it.
	started   atomic.Bool
	rateLimit atomic.Bool // the client opted in to SCYLLA_RATE_LIMIT_ERROR
	keyspace  atomic.Pointer[string]

	// fastKey holds the partition key values admitExecute reads; the reader's own.
	fastKey [maxFastKey][]byte
	// held are the answers the reader made itself (OPTIONS, REGISTER, early rejections), kept
	// until no whole frame is left to read at once, then written together, by the reader
	// itself when the writer is idle (writeDirect), else queued for the writer. The reader's own.
	held []outFrame
	// queued counts the frames given to the writer (send) and not yet written: writeDirect
	// writes only when none is, so that an answer never overtakes one queued before it (READY,
	// with the compression the frames after it use).
	queued atomic.Int32

	login loginState // SASL PLAIN between STARTUP and AUTH_SUCCESS (auth.go)
	// host is the client's host; preLogin is set while the connection counts among the host's
	// connections not started (Server.preLogin), guarded by srv.mu.
	host     netip.Prefix
	preLogin bool

	// The writing side, guarded by wmu: the writer goroutine holds it while it encodes and
	// writes a batch, and a statement's goroutine (answerSized) or the reader (flushHeld) takes it
	// to write answers itself (writeDirect). raw is the socket's descriptor for those
	// non-blocking writes (nil without one, as under TLS); comp compresses the frames after
	// the answer to STARTUP; pending holds the bytes of answers writeDirect could only partly
	// write, which the writer writes before anything else (kick wakes it), pendingBytes their
	// size in the byte budgets and pendingTokens the in-flight tokens they hold; wclosed is set
	// once the writer stops.
	wmu           sync.Mutex
	raw           *rawWriter
	comp          cqlwire.Compression
	scratch       []byte
	nowBuf        []byte
	pending       []byte
	pendingBytes  int64
	pendingTokens int
	hasPending    bool
	wclosed       bool
	kick          chan struct{}
}

// maxHeld bounds the answers the reader holds before queuing them.
const maxHeld = 64

// hold keeps the answer to the request on stream for flushHeld.
func (c *conn) hold(stream int16, msg cqlwire.Message) {
	switch e := msg.(type) {
	case *cqlwire.Error:
		c.srv.metrics.errorCount(e.Code).Inc()
	case *rateLimitFrame:
		c.srv.metrics.errorCount(e.code).Inc()
	}
	c.held = append(c.held, outFrame{stream: stream, msg: msg, request: true})
	if len(c.held) >= maxHeld {
		c.flushHeld()
	}
}

// flushHeld answers the held answers: the reader writes them itself when the writer is idle,
// which spares waking the writer goroutine for them (for a client with one request at a time
// to a hot partition, that wake-up was as costly as the rejection); else the writer gets them
// to write with what it has queued.
func (c *conn) flushHeld() {
	if len(c.held) == 0 {
		return
	}
	if !c.writeDirect(c.held, false) {
		for _, f := range c.held {
			c.send(f)
		}
	}
	clear(c.held)
	c.held = c.held[:0]
}

// frameBuffered reports whether br holds a whole frame, which the reader can read without
// waiting for the client.
func frameBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n < cqlwire.HeaderSize {
		return false
	}
	hdr, err := br.Peek(cqlwire.HeaderSize)
	return err == nil && n-cqlwire.HeaderSize >= int(binary.BigEndian.Uint32(hdr[5:9]))
}

// outFrame is one frame for the writer: a message on a stream with its warnings. A request's
// answer holds an in-flight token, released once written; compress, when set, is the
// compression the writer uses from the next frame on (the answer to STARTUP is sent before it).
type outFrame struct {
	stream   int16
	msg      cqlwire.Message
	warnings []string
	request  bool
	closeErr bool  // close the connection once written (a protocol error)
	bytes    int64 // the answer's size taken from the budgets, given back once written
	last     bool  // no frame: the reader has stopped, write what is queued and stop
	compress cqlwire.Compression
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv:       s,
		nc:        nc,
		room:      make(chan struct{}, 1),
		maxTokens: int32(s.cfg.MaxInFlight),
		bytes:     newBudget(s.cfg.MaxConnectionBytes),
		out:       make(chan outFrame, s.cfg.MaxInFlight+1),
		events:    make(chan outFrame, s.cfg.EventQueue),
		done:      make(chan struct{}),
		kick:      make(chan struct{}, 1),
		raw:       newRawWriter(nc),
	}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		// Service levels attach to client addresses too (anonymous clients): the requests'
		// context carries the connection's.
		c.ctx = auth.WithClient(c.ctx, a.AddrPort().Addr().Unmap())
	}
	if s.cfg.Admission != nil {
		context.AfterFunc(c.ctx, c.cancelQueued)
	}
	empty := ""
	c.keyspace.Store(&empty)
	return c
}

// close closes the connection; the reader and writer return.
func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.cancel()
		c.nc.Close()
		c.bytes.wake() // waiters for the budgets see done
		c.srv.bytes.wake()
	})
}

// inFlight returns the number of requests read and not yet answered.
func (c *conn) inFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nstreams
}

// busy reports whether the connection has requests in flight or answers being written.
func (c *conn) busy() bool {
	return c.inFlight() > 0 || c.writing.Load() > 0
}

// serve runs the connection until it is closed, by either side or after a protocol error.
func (c *conn) serve() {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.write()
	}()
	c.read()
	// The request goroutines have returned and queued their answers (and a protocol error may
	// be queued): let the writer write them, within a bound for a client that does not read.
	c.nc.SetWriteDeadline(time.Now().Add(closeWriteTimeout))
	c.send(outFrame{last: true})
	wg.Wait()
	c.close()
	// Answers the writer did not take still hold their bytes of the server's budget.
	for {
		select {
		case f := <-c.out:
			releaseBoth(c.bytes, c.srv.bytes, f.bytes)
			continue
		default:
		}
		break
	}
}

// closeWriteTimeout bounds the writing of a closing connection's last answers.
const closeWriteTimeout = 5 * time.Second

// read is the reader loop.
func (c *conn) read() {
	defer c.recoverReader()
	s := c.srv
	br := bufio.NewReaderSize(c.nc, 16<<10)
	// Until the connection is started, a frame's size is an unauthenticated client's choice:
	// bounded tighter, and refused from its header.
	fr := cqlwire.NewFrameReader(br, cqlwire.ReaderOptions{MaxFrameSize: s.cfg.MaxPreLoginFrameSize})
	if s.cfg.HandshakeTimeout > 0 {
		c.nc.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	}
	var reqs sync.WaitGroup
	defer reqs.Wait() // the request goroutines use the connection's channels until they return
	defer c.flushHeld()
	for {
		// Backpressure: take the token before reading, so a connection at its limit is not read.
		if !c.takeToken() {
			return
		}
		if len(c.held) > 0 && !frameBuffered(br) {
			c.flushHeld() // reading on may wait for the client: answer what is done first
		}
		h, body, err := fr.ReadFrame()
		if err != nil {
			c.readFailed(err)
			return
		}
		s.metrics.request(h.Opcode)
		if h.Stream < 0 {
			c.protocolError(h.Stream, fmt.Sprintf("stream %d, %v: a request's stream id must not be negative (negative ids are the server's)", h.Stream, h.Opcode))
			return
		}
		if !c.claim(h.Stream) {
			c.protocolError(h.Stream, fmt.Sprintf("stream %d, %v: the stream id is already in use by a request in flight", h.Stream, h.Opcode))
			return
		}
		// OPTIONS, started or not, is answered here from the SUPPORTED encoded once: nothing
		// to copy, decode or take bytes of the budgets for (an OPTIONS with a body or with
		// header flags a request must not use goes on to be refused as malformed).
		if h.Opcode == cqlwire.OpOptions && len(body) == 0 && h.Flags&(cqlwire.FlagWarning|cqlwire.FlagCustomPayload) == 0 {
			c.hold(h.Stream, s.supported)
			continue
		}
		// A prepared write to a partition this node rejects is answered here, from the
		// frame reader's buffer: no copy, no decoding beyond the partition key, no goroutine.
		var adm AdmittedWrite
		if h.Opcode == cqlwire.OpExecute && c.started.Load() {
			var answered bool
			if answered, adm = c.admitExecute(h, body); answered {
				continue
			}
		}
		// A statement takes an execution slot of the node's admission control, or a place in
		// its queue; a node with neither free refuses it here, before copying or decoding it.
		var tk ticket
		if c.started.Load() && isStatement(h.Opcode) {
			if err := tk.take(s.cfg.Admission, c); err != nil {
				abandon(adm)
				c.hold(h.Stream, s.errorMessage(c, err, request{}))
				continue
			}
		}
		// Statements run concurrently with the reading of the next frame, and the frame
		// reader reuses its buffer: decode from a copy the request owns, once the byte budgets
		// have room for it (else the connection is not read until they do).
		n := int64(len(body))
		if !acquireBoth(c.bytes, s.bytes, n, c.done) {
			abandon(adm)
			tk.drop(s.cfg.Admission)
			return
		}
		f, err := cqlwire.DecodeFrame(h, append([]byte(nil), body...))
		if err != nil {
			abandon(adm)
			tk.drop(s.cfg.Admission)
			releaseBoth(c.bytes, s.bytes, n)
			c.protocolError(h.Stream, err.Error())
			return
		}
		if !c.started.Load() {
			ok := c.handshake(fr, f)
			releaseBoth(c.bytes, s.bytes, n)
			if !ok {
				return
			}
			continue
		}
		switch f.Message.(type) {
		case cqlwire.Options, *cqlwire.Startup, *cqlwire.Register, *cqlwire.AuthResponse:
			releaseBoth(c.bytes, s.bytes, n) // answered here, from nothing the body holds
		}
		switch m := f.Message.(type) {
		case cqlwire.Options:
			c.hold(h.Stream, s.supported)
		case *cqlwire.Startup:
			c.protocolError(h.Stream, fmt.Sprintf("stream %d, STARTUP: the connection is already started", h.Stream))
			return
		case *cqlwire.Register:
			c.hold(h.Stream, c.register(m))
		case *cqlwire.AuthResponse:
			c.authResponse(fr, h.Stream, m) // a protocol error once started
			return
		default:
			reqs.Add(1)
			stream := h.Stream
			tk.start(s.cfg.Admission, s.statements, func(err error) bool {
				defer reqs.Done()
				return c.statement(stream, f, adm, n, err)
			})
			if c.ctx.Err() != nil {
				// Closing: refuse what is queued now (cancelQueued may have run before).
				s.cfg.Admission.Cancel(c, context.Canceled)
			}
		}
	}
}

// recoverReader ends the connection instead of the process when its reader panics, which is a
// bug of the node's (the reader answers OPTIONS, STARTUP and early rate-limit rejections
// itself): the panic is counted and logged with its stack, and read returns, which closes the
// connection once its requests have been answered.
func (c *conn) recoverReader() {
	if r := recover(); r != nil {
		c.srv.metrics.panics.Inc()
		c.srv.log.Error("native: a connection's reader panicked; closing the connection", "panic", r,
			"remote", c.nc.RemoteAddr(), "stack", string(debug.Stack()))
	}
}

// statement runs the statement f (its body's n bytes taken from the byte budgets) and queues
// its answer, or answers err, the admission controller's refusal. It is an admission.Job:
// with err nil it holds an execution slot, and reports whether it still does, for the caller
// to give on to the next statement in turn (admission.Controller.Run) on this goroutine.
func (c *conn) statement(stream int16, f cqlwire.Frame, adm AdmittedWrite, n int64, err error) (holdsSlot bool) {
	s := c.srv
	var (
		msg      cqlwire.Message
		warnings []string
	)
	if err != nil {
		abandon(adm)
		msg = s.errorMessage(c, err, request{})
	} else {
		msg, warnings = s.executeRecovering(c, f, adm)
		holdsSlot = s.cfg.Admission != nil
	}
	releaseBoth(c.bytes, s.bytes, n)
	size := answerSize(msg)
	if !tryAcquireBoth(c.bytes, s.bytes, size) {
		if holdsSlot {
			s.cfg.Admission.Release() // do not hold the slot while the answer waits for room
			holdsSlot = false
		}
		if !acquireBoth(c.bytes, s.bytes, size, c.done) {
			c.finish(stream) // the connection is closing: nobody will read it
			return false
		}
	}
	c.answerSized(stream, msg, warnings, size)
	return holdsSlot
}

// cancelQueued refuses the connection's statements waiting in the admission queue, once the
// connection's context ends: nobody will read their answers.
func (c *conn) cancelQueued() {
	c.srv.cfg.Admission.Cancel(c, context.Canceled)
}

// handshake handles a frame before STARTUP: OPTIONS and STARTUP are answered, anything else
// is a protocol error that closes the connection. It reports whether to go on reading.
func (c *conn) handshake(fr *cqlwire.FrameReader, f cqlwire.Frame) bool {
	stream := f.Header.Stream
	switch m := f.Message.(type) {
	case cqlwire.Options: // with a custom payload; read answers the others
		c.hold(stream, c.srv.supported)
		return true
	case *cqlwire.Startup:
		comp, rateLimit, err := startupOptions(m.Options)
		if err != nil {
			c.protocolError(stream, fmt.Sprintf("stream %d, STARTUP: %v", stream, err))
			return false
		}
		c.rateLimit.Store(rateLimit)
		if c.srv.cfg.Authenticator != nil {
			return c.startAuth(fr, stream, comp)
		}
		c.start(fr)
		fr.SetCompression(comp)
		c.send(outFrame{stream: stream, msg: cqlwire.Ready{}, request: true, compress: comp})
		return true
	case *cqlwire.AuthResponse:
		return c.authResponse(fr, stream, m)
	}
	c.protocolError(stream, fmt.Sprintf("stream %d, %v: the connection is not started: send STARTUP first (OPTIONS is allowed before it)", stream, f.Header.Opcode))
	return false
}

// start marks the connection started (READY, or AUTH_SUCCESS after a login), before its
// answer is sent: the handshake timeout no longer applies, frames may be as large as
// MaxFrameSize, and the connection leaves its host's connections not started.
func (c *conn) start(fr *cqlwire.FrameReader) {
	c.started.Store(true)
	c.nc.SetReadDeadline(time.Time{})
	fr.SetMaxFrameSize(c.srv.cfg.MaxFrameSize)
	c.srv.leavePreLogin(c)
}

// readFailed answers what made ReadFrame fail, when there is someone to answer.
func (c *conn) readFailed(err error) {
	c.flushHeld()
	var (
		ve *cqlwire.VersionError
		pe *cqlwire.ProtocolError
	)
	switch {
	case errors.As(err, &ve):
		// The answer is in the client's header layout: write it directly, past the writer.
		c.srv.metrics.errors.WithLabelValues(errorCodeName(cqlwire.ErrProtocol)).Inc()
		c.send(outFrame{stream: ve.Stream, msg: rawFrame(ve.AppendFrame(nil)), closeErr: true})
	case errors.As(err, &pe) && errors.Is(err, cqlwire.ErrFrameTooLarge) && !c.started.Load():
		c.protocolError(pe.Stream, fmt.Sprintf("%v: before the connection is started (READY or AUTH_SUCCESS), frames are at most %d bytes", pe, c.srv.cfg.MaxPreLoginFrameSize))
	case errors.As(err, &pe):
		c.protocolError(pe.Stream, pe.Error())
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, io.ErrUnexpectedEOF):
		// The client is gone: nobody will read the answers of its running statements, so
		// cancel them rather than let each run to its own timeout holding the connection.
		c.cancel()
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && !c.started.Load() {
			c.srv.log.Debug("native: closing a connection that sent no STARTUP in time", "remote", c.nc.RemoteAddr(), "timeout", c.srv.cfg.HandshakeTimeout)
			return
		}
		c.srv.log.Debug("native: connection read failed", "remote", c.nc.RemoteAddr(), "err", err)
	}
}

// protocolError answers a malformed or unexpected frame with a PROTOCOL_ERROR on its stream and
// closes the connection once that is written: after it, the byte stream cannot be trusted.
func (c *conn) protocolError(stream int16, msg string) {
	c.flushHeld() // answered before the connection closes
	c.srv.metrics.errors.WithLabelValues(errorCodeName(cqlwire.ErrProtocol)).Inc()
	c.send(outFrame{stream: stream, msg: &cqlwire.Error{Code: cqlwire.ErrProtocol, Message: msg}, closeErr: true})
}

// answer queues the answer to the request on stream.
func (c *conn) answer(stream int16, msg cqlwire.Message, warnings []string) {
	if e, ok := msg.(*cqlwire.Error); ok {
		c.srv.metrics.errorCount(e.Code).Inc()
	}
	c.send(outFrame{stream: stream, msg: msg, warnings: warnings, request: true})
}

// answerSized is answer for an answer whose size was taken from the byte budgets.
func (c *conn) answerSized(stream int16, msg cqlwire.Message, warnings []string, size int64) {
	if e, ok := msg.(*cqlwire.Error); ok {
		c.srv.metrics.errorCount(e.Code).Inc()
	}
	f := [1]outFrame{{stream: stream, msg: msg, warnings: warnings, request: true, bytes: size}}
	// The answer to the connection's only request in flight has nothing to be batched with,
	// and handing it to the writer goroutine only made it wait for that goroutine to be
	// scheduled (on a busy node, a client with one request at a time spent more time there
	// than anywhere else in the node).
	if !c.writeDirect(f[:], true) {
		c.send(f[0])
	}
}

// writeDirect writes the answers fs on the caller's goroutine when the writer has nothing
// queued and nothing left to write (and, if alone, when fs is the connection's only request in
// flight). The write does not block: what the socket does not take at once is left to the
// writer, which writes it before anything else. It reports whether it took fs.
func (c *conn) writeDirect(fs []outFrame, alone bool) bool {
	if c.raw == nil || !c.wmu.TryLock() {
		return false
	}
	defer c.wmu.Unlock()
	if c.wclosed || c.hasPending || c.queued.Load() > 0 || len(c.events) > 0 {
		return false
	}
	if alone {
		c.mu.Lock()
		n := c.nstreams
		c.mu.Unlock()
		if n != len(fs) {
			return false
		}
	}
	var size int64
	c.nowBuf = c.nowBuf[:0]
	for _, f := range fs {
		opts := cqlwire.FrameOptions{Warnings: f.warnings}
		if c.comp != nil {
			opts.Compression, opts.Scratch = c.comp, &c.scratch
		}
		c.nowBuf = cqlwire.AppendFrame(c.nowBuf, f.stream, f.msg, opts)
		size += f.bytes
	}
	c.writing.Add(1)
	c.mu.Lock()
	for _, f := range fs {
		c.unmarkLocked(f.stream) // before the write: once the client reads it, it may reuse the stream
	}
	c.mu.Unlock()
	n, err := c.raw.writeSome(c.nowBuf)
	if err == nil && n < len(c.nowBuf) {
		// Still being written (writing stays counted, the tokens held), by the writer.
		c.pending = append(c.pending[:0], c.nowBuf[n:]...)
		c.pendingBytes, c.pendingTokens, c.hasPending = size, len(fs), true
		select {
		case c.kick <- struct{}{}:
		default:
		}
	} else {
		c.writing.Add(-1)
		c.releaseTokens(len(fs))
		releaseBoth(c.bytes, c.srv.bytes, size)
	}
	if cap(c.nowBuf) > 4*flushAt {
		c.nowBuf = nil // do not pin a large result's buffer for the connection's life
	}
	if err != nil {
		if !errors.Is(err, net.ErrClosed) {
			c.srv.log.Debug("native: connection write failed", "remote", c.nc.RemoteAddr(), "err", err)
		}
		c.wclosed = true
		c.close()
	}
	return true
}

// send queues f for the writer. out has room for every request in flight and the one protocol
// error that ends the connection, so this never blocks for long.
func (c *conn) send(f outFrame) {
	c.queued.Add(1)
	select {
	case c.out <- f:
	case <-c.done:
		c.queued.Add(-1)
		releaseBoth(c.bytes, c.srv.bytes, f.bytes)
		if f.request {
			c.finish(f.stream)
		}
	}
}

// pushEvent queues an event without blocking; a connection too slow to take its events is closed.
func (c *conn) pushEvent(ev *cqlwire.Event) {
	select {
	case c.events <- outFrame{stream: -1, msg: ev}:
	case <-c.done:
	default:
		c.srv.log.Warn("native: closing a connection that does not read its events", "remote", c.nc.RemoteAddr(), "queued", cap(c.events))
		c.close()
	}
}

// claim marks stream in flight; false if it already is.
func (c *conn) claim(stream int16) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, b := stream/64, uint64(1)<<(stream%64)
	if c.streams[w]&b != 0 {
		return false
	}
	c.streams[w] |= b
	c.nstreams++
	return true
}

// finish frees stream and its in-flight token once its answer is written (or cannot be).
func (c *conn) finish(stream int16) {
	c.mu.Lock()
	c.unmarkLocked(stream)
	c.mu.Unlock()
	c.release()
}

// unmarkLocked frees stream; c.mu is held.
func (c *conn) unmarkLocked(stream int16) {
	if stream < 0 {
		return
	}
	w, b := stream/64, uint64(1)<<(stream%64)
	if c.streams[w]&b != 0 {
		c.streams[w] &^= b
		c.nstreams--
	}
}

// takeToken takes an in-flight token for the next request, waiting while all are taken; false
// if the connection closes meanwhile. Only the reader takes tokens.
func (c *conn) takeToken() bool {
	for {
		if c.tokens.Load() < c.maxTokens {
			c.tokens.Add(1)
			return true
		}
		c.flushHeld() // the held answers hold tokens: let them be written
		c.waiting.Store(true)
		// Checked again after waiting is set: a release before it did not see waiting set.
		if c.tokens.Load() < c.maxTokens {
			c.waiting.Store(false)
			continue
		}
		select {
		case <-c.room:
		case <-c.done:
			c.waiting.Store(false)
			return false
		}
		c.waiting.Store(false)
	}
}

// release frees an in-flight token.
func (c *conn) release() { c.releaseTokens(1) }

// releaseTokens frees n in-flight tokens, waking the reader if it waits for one.
func (c *conn) releaseTokens(n int) {
	if n <= 0 {
		return
	}
	for { // never below zero, should more be released than were taken
		v := c.tokens.Load()
		if c.tokens.CompareAndSwap(v, max(v-int32(n), 0)) {
			break
		}
	}
	if c.waiting.Load() {
		select {
		case c.room <- struct{}{}:
		default:
		}
	}
}

// flushAt is the size at which the writer writes what it has encoded without draining more.
const flushAt = 64 << 10

// write is the writer loop: it encodes every queued frame into one buffer and writes it when
// the queue is empty (or the buffer is large), then frees the streams it answered.
func (c *conn) write() {
	var (
		buf         []byte
		answered    []int16
		heldBytes   int64 // the queued answers' sizes, given back once written
		taken       int32 // the frames taken from out, for queued once written
		closing     bool
		protocolErr bool
	)
	defer func() {
		c.wmu.Lock()
		c.wclosed = true
		if c.hasPending { // never written: give back what it holds
			c.hasPending = false
			c.writing.Add(-1)
			c.releaseTokens(c.pendingTokens)
			releaseBoth(c.bytes, c.srv.bytes, c.pendingBytes)
		}
		c.wmu.Unlock()
	}()
	add := func(f outFrame) { // c.wmu is held
		taken++
		if f.last {
			closing = true
			return
		}
		if raw, ok := f.msg.(rawFrame); ok {
			buf = append(buf, raw...)
		} else {
			opts := cqlwire.FrameOptions{Warnings: f.warnings}
			if c.comp != nil {
				opts.Compression, opts.Scratch = c.comp, &c.scratch
			}
			buf = cqlwire.AppendFrame(buf, f.stream, f.msg, opts)
		}
		if f.compress != nil {
			c.comp = f.compress
		}
		if f.request || f.closeErr {
			answered = append(answered, f.stream)
		}
		heldBytes += f.bytes
		closing = closing || f.closeErr
		protocolErr = protocolErr || f.closeErr
	}
	for {
		var (
			f       outFrame
			woken   bool // by kick, for pending: no frame
			pending bool // this batch writes the rest of writeDirect's answers
		)
		select {
		case f = <-c.out:
		case f = <-c.events:
			taken-- // not from out: add counts it
		case <-c.kick:
			woken = true
		case <-c.done:
			return
		}
		c.wmu.Lock()
		if c.hasPending { // the rest of answers writeDirect began: on the wire first
			pending = true
			buf = append(buf, c.pending...)
			for range c.pendingTokens {
				answered = append(answered, -1) // their streams are free already; their tokens are not
			}
			heldBytes += c.pendingBytes
			c.pending, c.hasPending = c.pending[:0], false
		}
		if !woken {
			add(f)
		}
	drain:
		for len(buf) < flushAt && !closing {
			select {
			case f := <-c.out:
				add(f)
			case f := <-c.events:
				taken--
				add(f)
			default:
				break drain
			}
		}
		// Free the streams before the write: once the client reads an answer it may reuse
		// the stream. The in-flight tokens are freed after it, so a client that does not
		// read its answers stops being read itself.
		c.writing.Add(1)
		c.mu.Lock()
		for _, st := range answered {
			c.unmarkLocked(st)
		}
		c.mu.Unlock()
		var err error
		if len(buf) > 0 { // empty after a kick whose pending bytes an earlier batch wrote
			_, err = c.nc.Write(buf)
		}
		c.writing.Add(-1)
		if pending {
			c.writing.Add(-1) // writeDirect's count, kept until its rest was written
		}
		c.releaseTokens(len(answered))
		answered = answered[:0]
		releaseBoth(c.bytes, c.srv.bytes, heldBytes)
		heldBytes = 0
		c.queued.Add(-taken) // written: writeDirect may write again
		taken = 0
		if cap(buf) > 4*flushAt {
			buf = nil // do not pin a large result's buffer for the connection's life
		} else {
			buf = buf[:0]
		}
		if cap(c.pending) > 4*flushAt {
			c.pending = nil
		}
		c.wclosed = err != nil || closing
		c.wmu.Unlock()
		if err != nil || closing {
			if err != nil && !errors.Is(err, net.ErrClosed) {
				c.srv.log.Debug("native: connection write failed", "remote", c.nc.RemoteAddr(), "err", err)
			}
			if protocolErr && err == nil {
				c.linger()
			}
			c.close()
			return
		}
	}
}

// Bounds of linger.
const (
	lingerTimeout = 250 * time.Millisecond
	lingerBytes   = 1 << 20
)

// linger lets the client read the protocol error just written before the connection goes
// away: it closes the sending side, then reads and discards what the client sent after the
// bad frame, briefly (closing a socket with unread data resets the connection, and a reset can
// discard the error before the client reads it). The reader has stopped by now.
func (c *conn) linger() {
	if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
	c.nc.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.CopyN(io.Discard, c.nc, lingerBytes)
}

// rawFrame is a frame encoded already (the version error, in the client's header layout).
type rawFrame []byte

func (rawFrame) Opcode() cqlwire.Opcode         { return cqlwire.OpError }
func (f rawFrame) AppendBody(dst []byte) []byte { return append(dst, f...) }
