package shell

import (
	"context"
	"sync/atomic"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// HintSink keeps hints: writes the coordinator acknowledged (or timed out on) without some of
// their replicas, to be replayed to those replicas when they are up again (hinted handoff).
// Package node implements it with an on-disk store and a replay loop.
type HintSink interface {
	// StoreHint keeps m for replica target. It may block while its storage does (a write's
	// coordinator then waits for it; hints decided on a transport's goroutine wait in the
	// executor's hint queue instead, hintqueue.go), and decides on its own bounds: a target down
	// longer than the hint window, or one with too many hints, gets none. Calls come from many
	// goroutines at once.
	StoreHint(target coordinator.NodeID, m *replicapb.Mutation)
}

// hintWatch follows the replica calls of one write so that, once they have all ended and the
// write's outcome is known, the replicas that did not acknowledge it get a hint: those down
// when it started (never sent to), those that failed and those that did not answer by the
// deadline. Hints are stored only when the write reached at least one replica, so that the
// others converge on it: its outcome is a success, a timeout or a failure (the client was told
// it may be applied). Nothing is hinted for a write that no replica applied, or that was rate
// limited (the client was told it was rejected: spreading it would apply it), and no replica
// that called the mutation malformed gets one (its replay would fail forever).
//
// The watch holds one count per call plus one for the outcome; whoever drops the last count
// stores the hints, so it does not matter whether the outcome or the last answer comes first.
// When that is a replica's answer, the hints go to the executor's hint queue (hintqueue.go):
// the answer may have come on a transport's goroutine that must not block (asyncExchange.start:
// a pipe's reader), and a replica call's goroutine has no client waiting on it. When it is the
// outcome, on the write's own goroutine, they go to the sink directly.
type hintWatch struct {
	x        exchange
	sink     HintSink
	queue    *hintQueue
	self     coordinator.NodeID
	m        *replicapb.Mutation
	replicas []coordinator.Replica
	buf      [8]coordinator.Replica // holds replicas for up to 8, so one allocation per write

	pending atomic.Int32
	acked   atomic.Uint64 // bit i: replicas[i] acknowledged the write
	refused atomic.Uint64 // bit i: replicas[i] called it malformed
	hint    atomic.Bool   // the outcome allows hints
}

// maxHintedReplicas is the most replicas a hintWatch tracks (bits of its masks); a larger
// replication factor is not hinted.
const maxHintedReplicas = 64

// hinted wraps x so that the replicas of the write m that do not acknowledge it get hints. It
// returns x unchanged and a nil watch when the executor keeps no hints.
func (e *Executor) hinted(x exchange, m *replicapb.Mutation, replicas []coordinator.Replica, sends []coordinator.Send) (exchange, *hintWatch) {
	if e.hints == nil || len(replicas) > maxHintedReplicas {
		return x, nil
	}
	h := &hintWatch{x: x, sink: e.hints, queue: e.hintq, self: e.localID, m: m}
	h.replicas = append(h.buf[:0], replicas...)
	h.pending.Store(int32(len(sends)) + 1)
	return h, h
}

func (h *hintWatch) call(ctx context.Context, s coordinator.Send) coordinator.Response {
	r := h.x.call(ctx, s)
	h.note(s, r)
	return r
}

func (h *hintWatch) start(ctx context.Context, s coordinator.Send, done func(coordinator.Response), fail func(any)) bool {
	ax, ok := h.x.(asyncExchange)
	return ok && ax.start(ctx, s, func(r coordinator.Response) {
		h.note(s, r) // on the transport's goroutine
		done(r)
	}, fail)
}

// note records r, replica s.To's answer, and drops its call's count.
func (h *hintWatch) note(s coordinator.Send, r coordinator.Response) {
	for i, rep := range h.replicas {
		if rep.ID != s.To {
			continue
		}
		switch {
		case r.Status == coordinator.StatusOK:
			h.acked.Or(1 << i)
		case r.Status == coordinator.StatusFailed && isBadRequest(r.Err):
			h.refused.Or(1 << i)
		}
		break
	}
	h.release(false)
}

// settle records the write's outcome (nil when it is unknown: the client's context ended, or
// the executor closed) and drops the outcome's count.
func (h *hintWatch) settle(o coordinator.Outcome) {
	if h == nil {
		return
	}
	if _, limited := o.(coordinator.RateLimited); !limited {
		h.hint.Store(true)
	}
	h.release(true)
}

// release drops one count; the last stores the hints: directly when direct (the write's own
// goroutine), else through the hint queue.
func (h *hintWatch) release(direct bool) {
	if h.pending.Add(-1) != 0 {
		return
	}
	acked, refused := h.acked.Load(), h.refused.Load()
	if acked == 0 || !h.hint.Load() {
		return
	}
	var buf [8]coordinator.NodeID
	targets := buf[:0]
	for i, rep := range h.replicas {
		if acked&(1<<i) == 0 && refused&(1<<i) == 0 && rep.ID != h.self {
			targets = append(targets, rep.ID)
		}
	}
	if !direct {
		h.queue.add(targets, h.m)
		return
	}
	for _, id := range targets {
		h.sink.StoreHint(id, h.m)
	}
}

func isBadRequest(err error) bool {
	re, ok := err.(*coordinator.ReplicaError)
	return ok && re.Code == coordinator.ReplicaErrorBadRequest
}
