package internode

import (
	"context"
	"math"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/internal/gopool"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// pipeServers are a Mux's Pipe streams being served, so that Drain can ask their callers to end
// them.
type pipeServers struct {
	mu       sync.Mutex
	draining bool
	open     map[*pipeServer]struct{}
}

// pipeServer serves one Pipe stream: the stream's goroutine reads the requests and runs each
// request on a pooled goroutine; each queues its answer, and the one that finds no write under way
// writes what all have queued, batched (flush).
type pipeServer struct {
	ss    pipeServerStream
	slots chan struct{} // one token per request in flight, freed once its answer is written

	// sendMu is held by the goroutine writing on the stream; batch and sent are its.
	sendMu sync.Mutex
	batch  replicapb.PipeResponses
	sent   []queuedAnswer

	mu       sync.Mutex
	inFlight map[uint64]*handlerCtx
	running  int  // handlers running, which will answer
	delayed  bool // answers wait for the handlers running, at most pipeAnswerDelay (delay)
	delay    *time.Timer
	queue    []queuedAnswer
	unheld   int  // answers queued that hold no slot (pipeMaxUnheld bounds them)
	closing  bool // a closing message is to be sent
	stopped  bool // the handler returned: nothing more is written
	broken   bool // a write failed
}

// Drain asks the callers of m's pipes to send no more requests on them and end them once their
// requests in flight are answered: a node calls it before it stops its internode server, whose
// graceful stop waits for every stream to end. Pipes opened later are asked at once.
//
// Telling a caller may wait while its connection's flow-control window is full: until the
// caller reads, or its connection's keepalive closes it.
func (m *Mux) Drain() {
	m.pipes.mu.Lock()
	m.pipes.draining = true
	open := make([]*pipeServer, 0, len(m.pipes.open))
	for ps := range m.pipes.open {
		open = append(open, ps)
	}
	m.pipes.mu.Unlock()
	for _, ps := range open {
		ps.sayClosing()
	}
}

// pipeServerStream is a pipe's stream, the server's end: a gRPC Pipe stream, or a framed
// connection (framed.go). Recv's error is Canceled once the caller ended the pipe.
type pipeServerStream interface {
	Recv() (*replicapb.PipeRequests, error)
	Send(*replicapb.PipeResponses) error
}

// Pipe implements replicapb.InternodeServer: it serves the Call requests of a pipe (see pipe.go)
// until the caller ends it.
func (m *Mux) Pipe(ss grpc.BidiStreamingServer[replicapb.PipeRequests, replicapb.PipeResponses]) error {
	return m.servePipe(ss.Context(), ss)
}

// servePipe serves the pipe of stream ss, whose context is sctx, until its caller ends it or
// sctx ends.
func (m *Mux) servePipe(sctx context.Context, ss pipeServerStream) error {
	ps := &pipeServer{ss: ss, slots: make(chan struct{}, PipeMaxInFlight), inFlight: map[uint64]*handlerCtx{}}
	m.pipes.mu.Lock()
	if m.pipes.open == nil {
		m.pipes.open = map[*pipeServer]struct{}{}
	}
	m.pipes.open[ps] = struct{}{}
	draining := m.pipes.draining
	m.pipes.mu.Unlock()
	if draining {
		ps.sayClosing()
	}
	defer func() {
		m.pipes.mu.Lock()
		delete(m.pipes.open, ps)
		m.pipes.mu.Unlock()
	}()

	ctx, cancel := context.WithCancel(sctx)
	// The handlers run on reused goroutines, whose stacks, grown by a replica's call chain,
	// serve request after request (internal/gopool says why).
	pool := gopool.New(gopool.IdleTimeout)
	defer pool.Close()
	var handlers sync.WaitGroup
	err := ps.read(ctx, m, pool, &handlers)
	cancel()
	handlers.Wait()
	ps.mu.Lock()
	if ps.delay != nil {
		ps.delay.Stop()
	}
	ps.mu.Unlock()
	ps.sendMu.Lock()
	ps.flushLocked()
	ps.mu.Lock()
	ps.stopped = true
	ps.mu.Unlock()
	ps.sendMu.Unlock()
	return err
}

// read reads ps's requests and starts their handlers until the stream ends.
func (ps *pipeServer) read(ctx context.Context, m *Mux, pool *gopool.Pool, handlers *sync.WaitGroup) error {
	for {
		batch, err := ps.ss.Recv()
		if err != nil {
			if status.Code(err) == codes.Canceled || ctx.Err() != nil {
				return nil // the caller ended the pipe
			}
			return err
		}
		hold := len(batch.GetRequests()) > 1
		if hold {
			ps.mu.Lock()
			ps.running++ // until every handler of the batch started (handled)
			ps.mu.Unlock()
		}
		for _, r := range batch.GetRequests() {
			id := r.GetId()
			if r.GetCancel() {
				ps.mu.Lock()
				if hc := ps.inFlight[id]; hc != nil {
					hc.cancel()
				}
				ps.mu.Unlock()
				continue
			}
			select {
			case ps.slots <- struct{}{}:
			default:
				if ps.tooManyUnheld() {
					return status.Errorf(codes.ResourceExhausted, "internode: the caller sent over %d requests beyond a pipe's bound without reading their answers", pipeMaxUnheld)
				}
				ps.answer(&replicapb.PipeResponse{Id: id, Code: uint32(codes.ResourceExhausted),
					Message: "internode: more requests in flight on a pipe than it allows"}, false, 0)
				continue
			}
			switch {
			case id == 0:
				ps.answer(&replicapb.PipeResponse{Code: uint32(codes.InvalidArgument), Message: "internode: pipe request without an id"}, true, 0)
				continue
			case r.GetTimeoutMicros() < 0:
				ps.answer(&replicapb.PipeResponse{Id: id, Code: uint32(codes.InvalidArgument), Message: "internode: negative timeout"}, true, 0)
				continue
			}
			var deadline time.Time
			if t := r.GetTimeoutMicros(); t > 0 && t <= pipeMaxTimeoutMicros {
				deadline = time.Now().Add(time.Duration(t) * time.Microsecond)
			}
			rctx := newHandlerCtx(ctx, deadline)
			ps.mu.Lock()
			if old := ps.inFlight[id]; old != nil {
				ps.mu.Unlock()
				ps.answer(&replicapb.PipeResponse{Id: id, Code: uint32(codes.InvalidArgument), Message: "internode: pipe request id already in flight"}, true, 0)
				continue
			}
			ps.inFlight[id] = rctx
			ps.running++
			ps.mu.Unlock()
			handlers.Add(1)
			req := r.GetRequest()
			pool.Go(func() {
				defer handlers.Done()
				resp, err := m.callRecovering(rctx, req)
				if err == nil && rctx.Err() != nil {
					err = status.FromContextError(rctx.Err()).Err() // the deadline came first
				}
				ps.mu.Lock()
				delete(ps.inFlight, id)
				ps.mu.Unlock()
				rctx.release()
				a := &replicapb.PipeResponse{Id: id}
				size := 0
				if err == nil {
					size = proto.Size(resp)
				}
				switch {
				case err != nil:
					st := status.Convert(asStatus(err))
					a.Code, a.Message = uint32(st.Code()), st.Message()
				case size > pipeMaxSingleBytes:
					a.UseCall, size = true, 0
				default:
					a.Response = resp
				}
				ps.handled(a, size)
			})
		}
		if hold {
			ps.handled(nil, 0) // the batch's handlers all started
		}
	}
}

// queuedAnswer is an answer waiting for the writer; holding says it holds a slot, freed once it
// is written. An answer that holds none, to a request beyond the bound, is bounded too: an
// honest caller has at most PipeMaxInFlight requests in flight, and the pipe of one that has
// pipeMaxUnheld such answers queued (it sends without reading) ends.
type queuedAnswer struct {
	a       *replicapb.PipeResponse
	holding bool
	size    int // bytes, about
}

// pipeMaxTimeoutMicros is the longest timeout a pipe's request has as a deadline, the longest
// time.Duration: a longer one would overflow it, and means no deadline.
const pipeMaxTimeoutMicros = int64(math.MaxInt64 / time.Microsecond)

// pipeMaxUnheld bounds the answers queued on a pipe that hold no slot.
const pipeMaxUnheld = PipeMaxInFlight

// tooManyUnheld reports whether pipeMaxUnheld answers that hold no slot are queued.
func (ps *pipeServer) tooManyUnheld() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.unheld >= pipeMaxUnheld
}

// answer queues a, of size bytes (0: a short error).
func (ps *pipeServer) answer(a *replicapb.PipeResponse, holding bool, size int) {
	ps.mu.Lock()
	ps.queue = append(ps.queue, queuedAnswer{a, holding, size + len(a.GetMessage()) + 16})
	if !holding {
		ps.unheld++
	}
	ps.mu.Unlock()
	ps.flush()
}

// pipeAnswerDelay bounds how long a handler's answer may wait for those of the other handlers
// running on its pipe, to go out in the same write (handled).
const pipeAnswerDelay = 100 * time.Microsecond

// handled queues a handler's answer a, of size bytes. The last of the handlers running writes
// the answers: one write for the answers of requests that ran together, instead of one each
// (on loopback, a write costs its sender the receiver's part of the work too). An answer waits
// at most pipeAnswerDelay for the others, so a slow handler does not hold up the fast ones.
//
// A nil a queues nothing: the reader's end of its hold on a batch (read), which counts as a
// handler running while it starts the batch's handlers, so that the answers of a batch's
// requests go out together even when the first ones are done before the last ones start.
func (ps *pipeServer) handled(a *replicapb.PipeResponse, size int) {
	ps.mu.Lock()
	if a != nil {
		ps.queue = append(ps.queue, queuedAnswer{a, true, size + len(a.GetMessage()) + 16})
	}
	ps.running--
	wait := ps.running > 0
	arm := wait && !ps.delayed && len(ps.queue) > 0
	if arm {
		ps.delayed = true
		if ps.delay == nil {
			ps.delay = time.AfterFunc(pipeAnswerDelay, ps.flushDelayed)
		} else {
			ps.delay.Reset(pipeAnswerDelay)
		}
	}
	ps.mu.Unlock()
	if !wait && (a != nil || !ps.queueEmpty()) {
		ps.flush()
	}
}

// queueEmpty reports whether no answer waits to be written.
func (ps *pipeServer) queueEmpty() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.queue) == 0
}

// flushDelayed writes the answers that waited pipeAnswerDelay.
func (ps *pipeServer) flushDelayed() {
	ps.mu.Lock()
	ps.delayed = false
	ps.mu.Unlock()
	ps.flush()
}

// sayClosing queues a closing message.
func (ps *pipeServer) sayClosing() {
	ps.mu.Lock()
	ps.closing = true
	ps.mu.Unlock()
	ps.flush()
}

// flush writes ps's queued answers unless another goroutine is writing, which then writes them.
func (ps *pipeServer) flush() {
	for {
		if !ps.sendMu.TryLock() {
			return // the writer looks at the queue again once it is done
		}
		ps.flushLocked()
		ps.sendMu.Unlock()
		ps.mu.Lock()
		more := !ps.stopped && (len(ps.queue) > 0 || ps.closing)
		ps.mu.Unlock()
		if !more {
			return
		}
	}
}

// flushLocked writes ps's queue, batched, holding sendMu; once the stream is broken or ps
// stopped, the answers are dropped. Either way they free their slots.
func (ps *pipeServer) flushLocked() {
	for {
		ps.mu.Lock()
		n, size := 0, 0
		for n < len(ps.queue) && (n == 0 || size < pipeMaxBatchBytes) {
			size += ps.queue[n].size
			n++
		}
		ps.sent = append(ps.sent[:0], ps.queue[:n]...)
		ps.queue = ps.queue[n:]
		if len(ps.queue) == 0 {
			ps.queue = nil
		}
		if ps.delayed && len(ps.queue) == 0 {
			ps.delayed = false
			ps.delay.Stop() // what it waited for goes now
		}
		ps.batch.Closing = ps.closing
		ps.closing = false
		write := !ps.stopped && !ps.broken
		ps.mu.Unlock()
		if n == 0 && !ps.batch.Closing {
			return
		}
		ps.batch.Responses = ps.batch.Responses[:0]
		for _, q := range ps.sent {
			ps.batch.Responses = append(ps.batch.Responses, q.a)
		}
		if write && ps.ss.Send(&ps.batch) != nil {
			ps.mu.Lock()
			ps.broken = true // the reader ends too
			ps.mu.Unlock()
		}
		unheld := 0
		for _, q := range ps.sent {
			if q.holding {
				<-ps.slots
			} else {
				unheld++
			}
		}
		if unheld > 0 {
			ps.mu.Lock()
			ps.unheld -= unheld
			ps.mu.Unlock()
		}
	}
}

// callRecovering serves req as Call does, turning a panic of its handler into its error by the
// recovery SetRecover gave; without one, the panic goes on.
func (m *Mux) callRecovering(ctx context.Context, req *replicapb.Request) (resp *replicapb.Response, err error) {
	if f := m.recovered.Load(); f != nil {
		defer func() {
			if r := recover(); r != nil {
				resp, err = nil, (*f)(r, req)
			}
		}()
	}
	return m.Call(ctx, req)
}
