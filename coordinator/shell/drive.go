package shell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/schema"
)

// This file drives the core's Request over the Transport: the local check, one goroutine per
// Send, the deadline timer, and the hand-back of answers.

// exchange carries out the Sends of one request: call sends the operation to s.To with s's
// limiter mode and returns the replica's answer as a Response (Seq and From set). It must return
// once ctx is canceled.
type exchange interface {
	call(ctx context.Context, s coordinator.Send) coordinator.Response
}

// asyncExchange is an exchange that can also start a call without a goroutine waiting for it:
// start reports false, having sent nothing, when it cannot (the caller then calls call);
// otherwise done gets the answer exactly once, possibly before start returns, on a goroutine
// that must not block. A panic while handling the answer is handed to fail instead (done may
// then not be called).
type asyncExchange interface {
	exchange
	start(ctx context.Context, s coordinator.Send, done func(coordinator.Response), fail func(any)) bool
}

// partitionKey is what the local limiter check needs to know about an operation.
type partitionKey struct {
	table schema.TableID
	token int64
}

// replicaSet looks up the replicas of token for a keyspace placed by rf, in ring
// order, marking those the failure detector considers down. It appends to dst.
func (e *Executor) replicaSet(dst []coordinator.Replica, token int64, rf schema.Replication) []coordinator.Replica {
	var buf [8]coordinator.NodeID
	return e.replicaSetWith(dst, buf[:0], token, rf)
}

// replicaSetWith is replicaSet with ids as the scratch space for the ring's answer (the ring is
// an interface, so a buffer of the caller's own escapes to the heap).
func (e *Executor) replicaSetWith(dst []coordinator.Replica, ids []coordinator.NodeID, token int64, rf schema.Replication) []coordinator.Replica {
	ids = e.ring.AppendReplicas(ids[:0], token, rf)
	return e.appendReplicas(dst, ids)
}

// appendReplicas appends the replicas ids to dst, marking the down ones and numbering their
// data centers as the core wants them (Replica.DC): 0 for this node's, 1, 2, … for the others in
// the order the ids first meet them.
func (e *Executor) appendReplicas(dst []coordinator.Replica, ids []coordinator.NodeID) []coordinator.Replica {
	local := e.ring.DataCenter(e.localID)
	var dcBuf [coordinator.MaxDataCenters]string
	dcs := append(dcBuf[:0], local)
	for _, id := range ids {
		r := coordinator.Replica{ID: id, Down: id != e.localID && !e.ring.IsLive(id)}
		if dc := e.ring.DataCenter(id); dc != local {
			i := slices.Index(dcs, dc)
			if i < 0 {
				i = len(dcs)
				dcs = append(dcs, dc)
			}
			r.DC = uint8(min(i, coordinator.MaxDataCenters-1))
		}
		dst = append(dst, r)
	}
	return dst
}

// self returns the Params.Self of a request: the local node, unless the executor has no local
// limiter to run the local check with, in which case the replicas enforce.
func (e *Executor) self() coordinator.NodeID {
	if e.local == nil {
		return ""
	}
	return e.localID
}

// requestPool holds core requests to reuse. Only a request that finished on the spot and was
// never seen by a goroutine, a flight or a hint goes back to it (a hot partition's local
// rejection in AdmitPrepared: the path that must cost least); every other request is left to the
// garbage collector, so that nothing can still hold one that is reused.
var requestPool = sync.Pool{New: func() any { return new(coordinator.Request) }}

// newRequest builds a core request. Replica sets can be empty when the ring has no members; the
// request is then unavailable.
func (e *Executor) newRequest(p coordinator.Params) (*coordinator.Request, error) {
	if len(p.Replicas) == 0 {
		return nil, &coordinator.UnavailableError{Consistency: p.Consistency, Live: 0, Required: coordinator.BlockFor(p.Consistency, 1)}
	}
	if p.Consistency == coordinator.EachQuorum && !p.PerDC { // Cassandra's words
		return nil, &coordinator.InvalidError{Err: errors.New("consistency level EACH_QUORUM not compatible with replication strategy (org.apache.cassandra.locator.SimpleStrategy)")}
	}
	if e.local == nil && p.Op == coordinator.OpRead && len(p.ReadOrder) == 0 {
		// Without a local limiter Self is empty; still prefer reading locally.
		for _, r := range p.Replicas {
			if r.ID == e.localID {
				p.ReadOrder = []coordinator.NodeID{e.localID}
				break
			}
		}
	}
	if p.Limit > 0 && !p.Exempt && p.Stamp.IsZero() {
		// Every replica that counts the operation accounts it at this coordinator's time
		// (docs/architecture.md, the limiter: decide on the coordinator's clock).
		p.Stamp = e.now()
	}
	req := requestPool.Get().(*coordinator.Request)
	if err := req.Reset(p); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	return req, nil
}

// begin starts req at now and runs the local limiter check if the request asks for one. The
// returned step carries either the Outcome (the request ended before anything was sent: a local
// rejection, unavailable, or already past its deadline) or the Sends. It starts no goroutine and
// contacts no replica, so a rejection costs only the local check.
func (e *Executor) begin(req *coordinator.Request, now time.Time, op coordinator.Op, key partitionKey, draw float64) (coordinator.Step, error) {
	step := req.Start(now)
	if !step.LocalCheck {
		return step, nil
	}
	p := req.Params()
	if !p.Stamp.IsZero() {
		now = p.Stamp // the local counter accounts at the stamp the other replicas get
	}
	if p.Learned {
		// Not a replica (learnedHot): the partition's learned copy decides.
		d := e.learn.decide(key, op, p.Limit, draw, now)
		return req.OnLocalCheck(coordinator.CheckResult{Admitted: d.Admitted, Count: d.Count, RetryAfter: d.RetryAfter}), nil
	}
	d, err := e.local.Check(key.table, key.token, op, draw, now)
	if err != nil {
		return coordinator.Step{}, fmt.Errorf("coordinator: local limiter check: %w", err)
	}
	return req.OnLocalCheck(coordinator.CheckResult{Admitted: d.Admitted, Count: d.Count, RetryAfter: d.RetryAfter, WouldReject: d.WouldReject, Born: d.Born}), nil
}

// propagate hands the replicas that did not count a finished, limited operation to the
// propagator (see propagator), and keeps what the replicas' rejections taught this coordinator
// when it is not one of them (see learner). Unaccounted is empty for unlimited and exempt
// operations.
func (e *Executor) propagate(req *coordinator.Request, op coordinator.Op, key partitionKey) {
	if e.prop != nil && req.Done() {
		e.prop.add(req.Unaccounted(), key.table, key.token, op)
		if req.Urgent() {
			e.prop.urge()
		}
		if l, ok := req.Learn(); ok && e.learn != nil {
			e.learn.learn(key, op, l)
		}
	}
}

// isLive reports whether id is up; the local node always is.
func (e *Executor) isLive(id coordinator.NodeID) bool { return id == e.localID || e.ring.IsLive(id) }

// answer is a replica call's Response; abandoned when the call failed because its context
// had ended.
type answer struct {
	coordinator.Response
	abandoned bool
}

// flight is the set of replica calls of one request still running.
type flight struct {
	cancel  context.CancelFunc
	pending atomic.Int32
}

// await sends sends through x, one goroutine each, and feeds the answers to req until it has
// an outcome, the deadline passes (the timer ticks req at deadline) or ctx ends. Sends the core
// asks for later (a read replacing a failed replica) are launched the same way.
//
// The goroutines write into a channel with room for an answer from every replica, so none ever
// blocks, and each ends when its call returns. With detach false their context is canceled when
// await returns: unlimited reads do not need the answers of slow replicas (limited ones are
// detached, so that every replica sent the read counts it). With detach true (writes) the
// calls continue after await returns, until the replica answers or deadline passes: a write at ONE
// must still reach every live replica, and canceling it would leave the others without the data.
// A detached call is bounded by deadline and by Close, never by the client's context.
//
// A read passes its speculation (writes and repairs nil): when its Params ask for
// SpeculateDelayed, a timer calls req.Speculate after the delay and the speculative reads are
// launched the same way; and the replicas that did not answer before the read ended are
// penalized in their scores (see noteMisses).
func (e *Executor) await(ctx context.Context, req *coordinator.Request, sends []coordinator.Send, x exchange, deadline time.Time, detach bool, spec *speculation) (coordinator.Outcome, error) {
	// Deadlines come from the configured clock; timers and contexts run on the real one.
	remaining := deadline.Sub(e.now())
	if p := req.Params(); !detach && p.Limit > 0 && !p.Exempt {
		// A limited read's calls run to their end too: the core counts every replica it sent
		// the read to as having counted it (only the others get propagated deltas), and a call
		// canceled before it reaches its replica would leave that counter short, so that
		// replicas rejecting first would make the others admit more (up to 1.17·L for reads at
		// QUORUM on real processes).
		detach = true
	}
	var (
		rpcCtx context.Context
		cancel context.CancelFunc
	)
	if detach {
		rpcCtx, cancel = context.WithTimeout(context.WithoutCancel(ctx), remaining)
	} else {
		rpcCtx, cancel = context.WithCancel(ctx)
	}
	f := &flight{cancel: cancel}
	// await holds one count on the flight while it runs, so the flight cannot end (and cancel
	// rpcCtx) between a call's failure and the replacement the core sends for it.
	f.pending.Store(1)
	if !e.register(f) {
		cancel()
		return nil, coordinator.ErrClosed
	}
	defer e.release(f)
	answers := make(chan answer, max(len(sends), len(req.Params().Replicas)))
	launch := func(s coordinator.Send) bool {
		if !e.extend(f) {
			return false
		}
		if ax, ok := x.(asyncExchange); ok && e.startAsync(rpcCtx, ax, s, f, answers) {
			return true
		}
		e.calls.Go(func() {
			defer e.wg.Done()
			r := e.callRecovering(rpcCtx, x, s)
			// Judge before the flight can end: the last call to return cancels rpcCtx.
			answers <- answer{r, r.Status == coordinator.StatusFailed && rpcCtx.Err() != nil}
			e.release(f)
		})
		return true
	}
	for _, s := range sends {
		if !launch(s) {
			return nil, coordinator.ErrClosed
		}
	}
	if !detach {
		defer cancel()
	}

	timer := time.NewTimer(remaining)
	defer timer.Stop()
	var (
		specC    <-chan time.Time
		launched []coordinator.Send // a read's sends, to tell which did not answer
		answered []bool             // by Seq-1
	)
	if spec != nil {
		n := len(req.Params().Replicas)
		launched, answered = append(make([]coordinator.Send, 0, n), sends...), make([]bool, n)
		if req.Params().Speculation == coordinator.SpeculateDelayed {
			st := time.NewTimer(spec.delay)
			defer st.Stop()
			specC = st.C
		}
	}
	for {
		var step coordinator.Step
		select {
		case a := <-answers:
			if spec != nil && !a.abandoned && a.Seq >= 1 && a.Seq <= len(answered) {
				answered[a.Seq-1] = true
			}
			if a.abandoned {
				// The call failed because its context ended (the deadline, the client's
				// context, or Close): not the replica's fault. The timer or ctx decides the
				// outcome, unless the executor is closing.
				if e.isClosed() {
					return nil, coordinator.ErrClosed
				}
				continue
			}
			step = req.OnResponse(a.Response)
		case <-timer.C:
			// The timer measured the remaining time; tick at the deadline itself so that a
			// clock that stands still (tests) cannot keep the request alive.
			step = req.Tick(deadline)
		case <-specC:
			specC = nil
			step = req.Speculate()
		case <-ctx.Done():
			if spec != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// The client's deadline passed first: as the read's own timeout.
				e.noteMisses(req, launched, answered, len(sends), coordinator.Timeout{})
			}
			return nil, contextError(ctx, req)
		}
		if step.Outcome != nil {
			if spec != nil {
				e.noteMisses(req, launched, answered, len(sends), step.Outcome)
			}
			return step.Outcome, nil
		}
		for _, s := range step.Sends {
			if !launch(s) {
				return nil, coordinator.ErrClosed
			}
			if spec != nil {
				launched = append(launched, s)
			}
		}
	}
}

// speculation is how one read speculates (see Executor.speculation): after delay, when its
// Params.Speculation is SpeculateDelayed.
type speculation struct {
	delay time.Duration
}

// noteMisses penalizes the scores of the replicas a read sent to that had not answered when it
// ended with outcome o: on success, those among the first sends (initial of launched), which
// were slower than the speculative delay and a spare's answer, unless the read asked one more
// than it needed from the start (ALWAYS: one of them is expected to be late); on a timeout,
// every one.
func (e *Executor) noteMisses(req *coordinator.Request, launched []coordinator.Send, answered []bool, initial int, o coordinator.Outcome) {
	var all bool
	switch o.(type) {
	case coordinator.Success:
		if req.Params().Speculation == coordinator.SpeculateAlways {
			return
		}
	case coordinator.Timeout:
		all = true
	default:
		return // rejected or failed: the answers decided early, the others owe nothing
	}
	now := e.mono()
	for i, s := range launched {
		if !answered[s.Seq-1] && (all || i < initial) {
			e.scores.of(s.To).penalize(now)
		}
	}
}

// startAsync starts the call of s through x without a goroutine of its own, when x can: the
// answer goes to answers as a call's on its goroutine would (see await), and ends the call's
// count on flight f. A panic while handling the answer, which is a bug of the node's, is logged
// with its stack and answered as that replica's failure, as callRecovering does.
func (e *Executor) startAsync(ctx context.Context, x asyncExchange, s coordinator.Send, f *flight, answers chan<- answer) bool {
	var once atomic.Bool
	finish := func(r coordinator.Response) {
		if once.Swap(true) {
			return
		}
		// Judge before the flight can end: the last call to return cancels ctx.
		answers <- answer{r, r.Status == coordinator.StatusFailed && ctx.Err() != nil}
		e.release(f)
		e.wg.Done()
	}
	return x.start(ctx, s, finish, func(p any) {
		var err error
		func() {
			defer recovered(e.logger, "a replica call", s.To, &err)
			panic(p) // recovered logs it with the stack of the panic, which is still this one
		}()
		finish(coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusFailed, Err: err})
	})
}

// callRecovering is x.call, except that a panic in it, which is a bug of the node's, is logged
// with its stack and answered as that replica's failure, as a failed call is: the request goes
// on with the other replicas, and the process with every other request.
func (e *Executor) callRecovering(ctx context.Context, x exchange, s coordinator.Send) (r coordinator.Response) {
	var err error
	defer func() {
		if err != nil {
			r = coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusFailed, Err: err}
		}
	}()
	defer recovered(e.logger, "a replica call", s.To, &err)
	return x.call(ctx, s)
}

// recovered is deferred by the calls a coordinator makes to other nodes (replica calls, writes
// to pending replicas, batchlog stores and removals, propagated accounts): a panic in one, which
// is a bug of the node's, is logged with its stack and, when err is not nil, made *err, so that
// the call counts as failed, as it would with an error, and the process goes on with every other
// request.
func recovered(logger *slog.Logger, what string, to coordinator.NodeID, err *error) {
	p := recover()
	if p == nil {
		return
	}
	logger.Error(what+" panicked; it counts as failed", "node", to, "panic", p, "stack", string(debug.Stack()))
	if err != nil {
		*err = fmt.Errorf("internal error: %s to %s hit a bug in this node, which logged it", what, to)
	}
}

// register records a flight; it reports false once the executor is closed.
func (e *Executor) register(f *flight) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.inflight[f] = struct{}{}
	return true
}

// extend adds one call to flight f; it reports false once the executor is closed.
func (e *Executor) extend(f *flight) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.wg.Add(1)
	f.pending.Add(1)
	return true
}

// release drops one count on flight f; the last one forgets the flight and releases its context.
func (e *Executor) release(f *flight) {
	if f.pending.Add(-1) == 0 {
		e.unregister(f)
	}
}

func (e *Executor) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// unregister forgets a flight whose calls have all returned, releasing its context.
func (e *Executor) unregister(f *flight) {
	f.cancel()
	e.mu.Lock()
	delete(e.inflight, f)
	e.mu.Unlock()
}

// contextError is the error for a request abandoned because its context ended: a
// *TimeoutError when the client's deadline passed (the replicas had not reached the
// consistency level by then), the context's error otherwise.
func contextError(ctx context.Context, req *coordinator.Request) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		t := req.Tally()
		return &coordinator.TimeoutError{Op: req.Params().Op, Consistency: req.Params().Consistency, Received: t.OK, Required: req.Required()}
	}
	return err
}
