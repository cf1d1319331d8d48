package internode

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// The data path's Call requests (pipeKinds) travel on pipes: long-lived Pipe streams, a few per
// peer, on the peer's one gRPC connection (the same mTLS). A pipe carries many requests at once,
// each named by an id and answered by it; what callers queue while the previous write is under
// way goes out as one PipeRequests message, one socket write, and the peer answers likewise. A
// unary call pays gRPC's per-call costs (a new HTTP/2 stream, headers both ways, its context and
// goroutines); on a pipe a request costs its bytes and two hand-offs between goroutines.
//
// Each request carries its deadline (as the time left) and the peer's handler honours it; a
// caller whose context ends stops waiting at once and tells the peer (a cancellation). A pipe
// holds at most PipeMaxInFlight requests: a caller beyond waits for a slot until its context
// ends, so neither end's memory grows without bound. A pipe that breaks (the peer closed,
// restarted, or the connection failed) fails its requests in flight with the stream's status, as
// unary calls in flight fail, and the next request opens a new one. A peer without the Pipe
// method (an older release answers Unimplemented) gets unary calls, and is asked again after
// pipeRetryUnsupported.
const (
	// PipesPerPeer is how many pipes a Sender keeps to each peer, requests going to them in
	// turn: one, measured cheaper than two (more requests coalesce per write).
	PipesPerPeer = 1
	// PipeMaxInFlight bounds the requests in flight on one pipe, at each end.
	PipeMaxInFlight = 2048
	// pipeMaxBatchBytes bounds one PipeRequests or PipeResponses message; a request or answer
	// larger than pipeMaxSingleBytes does not go on a pipe (a request goes by Call, an answer
	// asks for it by use_call).
	pipeMaxBatchBytes  = 1 << 20
	pipeMaxSingleBytes = pipeMaxBatchBytes / 4
	// pipeRetryUnsupported is how long a Sender sends unary calls to a peer that answered a
	// pipe Unimplemented before trying a pipe again (the peer may have been upgraded).
	pipeRetryUnsupported = time.Minute
)

// pipeKindNames are the kinds that travel on pipes: the data path's, whose requests and answers
// are small and many: writes, reads, accounts, counter updates and the rounds of lightweight
// transactions (a prepare whose read answers more than a pipe's message holds goes by Call).
var pipeKindNames = [...]string{"mutate", "read", "account_delta", "counter_update", "paxos_prepare", "paxos_propose", "paxos_commit"}

// errUseCall is a pipe request's error when it must be sent by Call instead: the peer does not
// serve pipes, or the answer is too large for one. Sender.call retries such a request unary.
var errUseCall = errors.New("internode: send by Call")

// pipes are a Sender's pipes to one peer, part of its peerConn.
type pipes struct {
	mu   sync.Mutex
	open [PipesPerPeer]*pipe
	next atomic.Uint32
	// unsupportedUntil is when a pipe may be tried again (UnixNano) after the peer answered
	// Unimplemented; 0 when it serves pipes.
	unsupportedUntil atomic.Int64
	// framedUnsupportedUntil is when a framed connection may be tried again (UnixNano) after
	// the peer did not speak the framed protocol; 0 when it does.
	framedUnsupportedUntil atomic.Int64
}

// pipe is one Pipe stream to a peer. Its goroutine (run) opens the stream and reads the
// answers; the callers write their requests themselves: the one that finds no write under way
// writes what all have queued (flush), so a request costs no hand-off to a writer goroutine.
type pipe struct {
	slots chan struct{} // one token per request in flight
	ctx   context.Context
	stop  context.CancelFunc // ends the stream
	// noYield makes flush write at once, never yielding first (benchmarks compare).
	noYield bool

	// sendMu is held by the caller writing on the stream; batch is its message.
	sendMu sync.Mutex
	batch  replicapb.PipeRequests

	mu      sync.Mutex
	st      pipeStream // nil until open
	err     error      // why the pipe broke; nil while it works
	closing bool       // the peer asked for no more requests
	ended   bool       // this end closed the stream
	nextID  uint64
	pending map[uint64]*pipeCall
	queue   []queuedRequest
}

// pipeStream is a pipe's stream, the caller's end: a framed connection (framed.go), or a
// gRPC Pipe stream to a peer without one.
type pipeStream interface {
	Send(*replicapb.PipeRequests) error
	Recv() (*replicapb.PipeResponses, error)
	CloseSend() error
}

// queuedRequest is a request waiting to be written, with its size in bytes, about.
type queuedRequest struct {
	r    *replicapb.PipeRequest
	size int
}

// pipeCall is one request waiting for its answer: a caller waiting on done (call), or an
// asynchronous call's function (start).
type pipeCall struct {
	done chan pipeResult // capacity 1; nil for an asynchronous call
	fn   func(pipeResult)
	stop func() bool // ends fn's watch of its context (nil when it has none)
}

// answer hands res to c's caller; whoever took c from pending calls it, once.
func (c *pipeCall) answer(res pipeResult) {
	if c.fn == nil {
		c.done <- res
		return
	}
	if c.stop != nil {
		c.stop()
	}
	c.fn(res)
}

type pipeResult struct {
	resp *replicapb.Response
	err  error
}

// pipeFor returns the pipe of peer pc to send the next request on, opening it when there is none
// yet or it broke; nil when the peer does not serve pipes.
func (s *Sender) pipeFor(pc *peerConn) *pipe {
	ps := &pc.pipes
	if u := ps.unsupportedUntil.Load(); u != 0 && time.Now().UnixNano() < u {
		return nil
	}
	n := ps.next.Add(1) % PipesPerPeer
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.open[n]; p != nil && p.usable() {
		return p
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil
	}
	ctx, stop := context.WithCancel(s.ctx)
	p := &pipe{slots: make(chan struct{}, PipeMaxInFlight), ctx: ctx, stop: stop, noYield: s.pipeNoYield,
		pending: map[uint64]*pipeCall{}}
	ps.open[n] = p
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		p.run(s, pc)
	}()
	return p
}

// usable reports whether p takes new requests.
func (p *pipe) usable() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err == nil && !p.closing
}

// call sends request r on p and waits for its answer, or for ctx to end.
func (p *pipe) call(ctx context.Context, r *replicapb.Request, size int) (*replicapb.Response, error) {
	c := &pipeCall{done: make(chan pipeResult, 1)}
	id, err := p.enqueue(ctx, r, size, c)
	if err != nil {
		return nil, err
	}
	p.flush()

	select {
	case res := <-c.done: // the reader freed the slot
		return res.resp, res.err
	case <-ctx.Done():
		if !p.withdraw(id, c) { // answered meanwhile: the reader frees the slot
			res := <-c.done
			return res.resp, res.err
		}
		<-p.slots
		p.flush()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// start sends request r on p and returns: done gets the answer, or ctx's error once ctx ends
// first, exactly once, on the pipe's reader or on a goroutine of ctx's, and must not block. The
// error is errUseCall, and done is not called, when r was not sent.
func (p *pipe) start(ctx context.Context, r *replicapb.Request, size int, done func(pipeResult)) error {
	c := &pipeCall{fn: done}
	if _, err := p.enqueue(ctx, r, size, c); err != nil {
		return err
	}
	p.flush()
	return nil
}

// enqueue takes a slot on p (waiting for one until ctx ends) and queues r as call c's request,
// returning its id. For an asynchronous call (c.fn), ctx's end withdraws it and answers c with
// ctx's error. The error is errUseCall when r was not queued because the pipe ended, or ctx's
// status.
func (p *pipe) enqueue(ctx context.Context, r *replicapb.Request, size int, c *pipeCall) (uint64, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return 0, status.FromContextError(ctx.Err()).Err()
	case <-p.ctx.Done():
		return 0, errUseCall // the pipe ended: not sent
	}
	item := &replicapb.PipeRequest{Request: r}
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		if left <= 0 {
			<-p.slots
			return 0, status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
		}
		item.TimeoutMicros = max(1, left.Microseconds())
	}
	p.mu.Lock()
	if p.err != nil || p.closing {
		p.mu.Unlock()
		<-p.slots
		return 0, errUseCall // the pipe broke or closes since pipeFor: not sent
	}
	p.nextID++
	id := p.nextID
	item.Id = id
	if c.fn != nil && ctx.Done() != nil {
		// Set before c is pending (the reader reads it after taking c from pending): the
		// function runs on its own goroutine and takes p.mu after this unlocks.
		c.stop = context.AfterFunc(ctx, func() {
			if p.withdraw(id, c) {
				<-p.slots
				p.flush()
				c.fn(pipeResult{err: status.FromContextError(ctx.Err()).Err()})
			}
		})
	}
	p.pending[id] = c
	p.queue = append(p.queue, queuedRequest{item, size + 16})
	p.mu.Unlock()
	return id, nil
}

// withdraw takes call c (request id) from p's pending calls and queues its cancellation for the
// peer; it reports false when c was no longer pending (answered, or failed with the pipe), in
// which case whoever took it answers c and frees its slot.
func (p *pipe) withdraw(id uint64, c *pipeCall) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending[id] != c {
		return false
	}
	delete(p.pending, id)
	if p.err == nil && len(p.queue) < 2*PipeMaxInFlight {
		p.queue = append(p.queue, queuedRequest{&replicapb.PipeRequest{Id: id, Cancel: true}, 16})
	} // else the peer's handler ends at its deadline, or with the broken stream
	return true
}

// flush writes what p's callers queued unless another caller is writing, which then writes it;
// once the peer asked to close, it ends the stream when nothing waits. A caller may wait in a
// write while the peer's HTTP/2 window is full: the pipe's one form of flow control.
//
// A caller that is to write while other requests are in flight on p yields its processor once
// first (runtime.Gosched): the goroutines ready beside it, under load those of other requests
// to the same peer, queue theirs meanwhile, and one write carries them all instead of one write
// each (on loopback a write costs its sender the receiver's part of the TCP work too). With
// nothing else in flight, as when idle, it writes at once.
func (p *pipe) flush() {
	yield := !p.noYield
	for {
		if !p.sendMu.TryLock() {
			return // the writer looks at the queue again once it is done
		}
		if yield {
			yield = false
			p.mu.Lock()
			busy := len(p.pending) > 1
			p.mu.Unlock()
			if busy {
				runtime.Gosched()
			}
		}
		p.flushLocked()
		p.sendMu.Unlock()
		p.mu.Lock()
		more := p.st != nil && p.err == nil && !p.ended && (len(p.queue) > 0 || p.closing && len(p.pending) == 0)
		p.mu.Unlock()
		if !more {
			return
		}
	}
}

// flushLocked writes p's queue, batched, holding sendMu.
func (p *pipe) flushLocked() {
	for {
		p.mu.Lock()
		st := p.st
		if st == nil || p.err != nil || p.ended {
			p.mu.Unlock()
			return
		}
		if p.closing && len(p.pending) == 0 {
			p.ended = true
			p.queue = nil
			p.mu.Unlock()
			st.CloseSend()
			p.stop() // the reader ends with Canceled; no request is waiting
			return
		}
		n, size := 0, 0
		p.batch.Requests = p.batch.Requests[:0]
		for n < len(p.queue) && (n == 0 || size < pipeMaxBatchBytes) {
			size += p.queue[n].size
			p.batch.Requests = append(p.batch.Requests, p.queue[n].r)
			n++
		}
		p.queue = p.queue[n:]
		if len(p.queue) == 0 {
			p.queue = nil
		}
		p.mu.Unlock()
		if n == 0 {
			return
		}
		if err := st.Send(&p.batch); err != nil {
			return // the reader learns the stream's status from Recv and fails the pipe with it
		}
	}
}

// fail breaks p with err: its requests in flight fail with it, and new ones open another pipe.
func (p *pipe) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	err = p.err
	pending := p.pending
	p.pending = map[uint64]*pipeCall{}
	p.queue = nil
	p.mu.Unlock()
	for _, c := range pending {
		<-p.slots
		c.answer(pipeResult{err: err})
	}
	p.stop()
}

// run opens p's stream to pc, writes what was queued meanwhile, and reads the answers until the
// stream ends.
func (p *pipe) run(s *Sender, pc *peerConn) {
	defer p.stop()
	st, err := p.open(s, pc)
	if err != nil {
		p.fail(err)
		return
	}
	p.mu.Lock()
	p.st = st
	p.mu.Unlock()
	p.flush()
	p.read(pc, st.Recv)
}

// read reads p's answers with recv and hands each to its caller, until the stream ends.
func (p *pipe) read(pc *peerConn, recv func() (*replicapb.PipeResponses, error)) {
	for {
		m, err := recv()
		if err != nil {
			if status.Code(err) == codes.Unimplemented {
				pc.pipes.unsupportedUntil.Store(time.Now().Add(pipeRetryUnsupported).UnixNano())
				err = errUseCall // the peer handled none of them
			}
			p.fail(err)
			return
		}
		for _, r := range m.GetResponses() {
			p.mu.Lock()
			c := p.pending[r.GetId()]
			delete(p.pending, r.GetId())
			p.mu.Unlock()
			if c == nil {
				continue // canceled meanwhile: its slot is free already
			}
			<-p.slots
			var res pipeResult
			switch {
			case r.GetUseCall():
				res.err = errUseCall
			case r.GetCode() != 0:
				res.err = status.Error(codes.Code(r.GetCode()), r.GetMessage())
			default:
				res.resp = r.GetResponse()
			}
			c.answer(res)
		}
		p.mu.Lock()
		p.closing = p.closing || m.GetClosing()
		end := p.closing && len(p.pending) == 0
		p.mu.Unlock()
		if end {
			// Ends the stream. Only once nothing waits: a write here (the stream's end, or
			// cancellations queued meanwhile) may wait for the peer's window, and this
			// goroutine hands out the answers. The callers that withdraw a request flush
			// themselves, and end the stream when theirs was the last.
			p.flush()
		}
	}
}

// open opens p's stream to pc: a framed connection, or a gRPC Pipe stream when the peer does
// not speak the framed protocol (an older release; asked again after pipeRetryUnsupported).
func (p *pipe) open(s *Sender, pc *peerConn) (pipeStream, error) {
	ps := &pc.pipes
	if u := ps.framedUnsupportedUntil.Load(); u != 0 && time.Now().UnixNano() < u {
		return pc.api.Pipe(p.ctx)
	}
	fc, unsupported, err := dialFramed(p.ctx, pc.addr, s.creds)
	switch {
	case err == nil:
		ps.framedUnsupportedUntil.Store(0)
		return fc, nil
	case p.ctx.Err() != nil:
		return nil, status.FromContextError(p.ctx.Err()).Err()
	case unsupported:
		ps.framedUnsupportedUntil.Store(time.Now().Add(pipeRetryUnsupported).UnixNano())
		return pc.api.Pipe(p.ctx)
	}
	return nil, status.Errorf(codes.Unavailable, "framed connection to %s: %v", pc.addr, err)
}
