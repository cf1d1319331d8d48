package shell

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Counter updates replicate through a leader replica (Cassandra's and ScyllaDB's scheme): the
// coordinator picks one live replica of the partition, itself when it is one, and sends it the
// increments (counter_update); the leader adds them to its own shards under the partition's
// lock and answers with the shards it wrote, which this coordinator then sends to the other
// replicas as a plain mutation of counter cells, waiting for the consistency level as for any
// write (the leader's answer counts as its acknowledgement). Hints, pending replicas and read
// repair carry those shards, never increments, so a replay cannot count an increment twice.
//
// For the rate limiter an update is one write of its partition, decided once before the leader
// applies it: by this coordinator when it is a replica (it is then the leader), otherwise by the
// leader with the request's draw. The other replicas only account the replicated shards and never
// reject them, so an applied increment never comes back rate limited. When the leader rejects
// the update, the other replicas are not contacted and answer with the leader's rejection; they
// count it all the same, by propagation (the core takes every replica it sent the update to as
// having counted it), or they would see only the applied share of the partition's rate and
// admit more of the updates they decide as coordinators.

// CounterTransport sends counter updates to their leader (package node's transport
// implements it, over internode's counter_update).
type CounterTransport interface {
	CounterUpdate(ctx context.Context, to coordinator.NodeID, req *replicapb.CounterUpdateRequest) (*replicapb.CounterUpdateResponse, error)
}

// isCounterUpdate reports whether m carries counter increments (fillMutation marks them).
func isCounterUpdate(m *replicapb.Mutation) bool {
	for _, r := range m.GetRows() {
		for _, c := range r.GetCells() {
			if c.GetCounter() {
				return true
			}
		}
	}
	return false
}

// counterLeader picks the leader of a counter update among the replicas sends go to: this
// node when it is one, else the first in this node's data center, else the first.
func counterLeader(self coordinator.NodeID, replicas []coordinator.Replica, sends []coordinator.Send) (coordinator.NodeID, bool) {
	if len(sends) == 0 {
		return "", false
	}
	for _, s := range sends {
		if s.To == self {
			return self, true
		}
	}
	for _, s := range sends {
		for _, r := range replicas {
			if r.ID == s.To && r.DC == 0 {
				return s.To, true
			}
		}
	}
	return sends[0].To, true
}

// counterExchange sends a counter update's increments to its leader and, once the leader
// applied them, the shards it wrote to every other replica.
type counterExchange struct {
	t      Transport
	ct     CounterTransport
	m      *replicapb.Mutation // the increments
	leader coordinator.NodeID
	hints  *hintWatch // when set, hints carry the applied shards
	// uncounted, when set, counts the update for a replica that was sent it with a counting
	// mode but is not contacted, the leader not having applied it (propagation).
	uncounted func(coordinator.NodeID)

	done    chan struct{} // closed once the leader answered
	once    sync.Once
	applied *replicapb.Mutation // the leader's shards, set before done closes when it applied them
	answer  coordinator.Response
}

func (x *counterExchange) call(ctx context.Context, s coordinator.Send) coordinator.Response {
	if s.To == x.leader {
		r := x.lead(ctx, s)
		x.once.Do(func() { close(x.done) })
		return r
	}
	select {
	case <-x.done:
	case <-ctx.Done():
		x.count(s)
		return coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusFailed, Err: ctx.Err()}
	}
	if x.applied == nil {
		x.count(s)
		// The leader did not apply the update: nothing to replicate. Its rejection is this
		// replica's too (the update was decided once, by the leader).
		r := x.answer
		r.Seq, r.From = s.Seq, s.To
		if r.Status != coordinator.StatusRateLimited {
			r.Status = coordinator.StatusFailed
			r.Err = fmt.Errorf("counter update not applied by its leader %s: %w", x.leader, errOr(x.answer.Err))
		}
		return r
	}
	if s.Mode == coordinator.ModeAccountAndEnforce {
		s.Mode, s.Draw = coordinator.ModeAccountOnly, 0 // followers never reject
	}
	return mutateExchange{x.t, x.applied}.call(ctx, s)
}

// count has the update counted for s's replica, which is not contacted, when s asked it to.
func (x *counterExchange) count(s coordinator.Send) {
	if x.uncounted != nil && s.Mode != coordinator.ModeNone {
		x.uncounted(s.To)
	}
}

// lead sends the increments to the leader and keeps its answer.
func (x *counterExchange) lead(ctx context.Context, s coordinator.Send) coordinator.Response {
	req := &replicapb.CounterUpdateRequest{
		Limiter:  &replicapb.Limiter{Mode: limiterMode(s.Mode), Draw: s.Draw, StampUnixNanos: stampNanos(s.Stamp)},
		Mutation: x.m,
	}
	resp, err := x.ct.CounterUpdate(ctx, s.To, req)
	var r coordinator.Response
	if err != nil {
		r = coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusFailed, Err: transportError(s.To, err)}
	} else {
		r = response(s, resp.GetStatus(), resp.GetRateLimited(), resp.GetError(), nil)
		r.WouldReject = resp.GetWouldReject()
		if r.Status == coordinator.StatusOK {
			if resp.GetApplied() == nil {
				r.Status, r.Err = coordinator.StatusFailed, &coordinator.ReplicaError{Replica: s.To, Code: coordinator.ReplicaErrorInternal, Message: "counter leader answered without the shards it wrote"}
			} else {
				x.applied = resp.GetApplied()
				if x.hints != nil {
					x.hints.m = x.applied
				}
			}
		}
	}
	x.answer = r
	return r
}

func errOr(err error) error {
	if err == nil {
		return errors.New("no answer")
	}
	return err
}

// finishCounter is finishWrite for a counter update m (step carries no outcome yet).
func (e *Executor) finishCounter(ctx context.Context, t *schema.Table, replicas []coordinator.Replica, pending []coordinator.NodeID, token int64, m *replicapb.Mutation, req *coordinator.Request, step coordinator.Step, dl time.Time) (coordinator.Outcome, error) {
	ct, ok := e.transport.(CounterTransport)
	if !ok {
		return nil, fmt.Errorf("coordinator: counter update of %s: this node's transport does not carry counter updates", t.QualifiedName())
	}
	leader, ok := counterLeader(e.self(), replicas, step.Sends)
	if !ok {
		return nil, fmt.Errorf("coordinator: counter update of %s: no replica to lead it", t.QualifiedName())
	}
	x := &counterExchange{t: e.transport, ct: ct, m: m, leader: leader, done: make(chan struct{})}
	if e.prop != nil {
		x.uncounted = func(id coordinator.NodeID) { e.prop.add([]coordinator.NodeID{id}, t.ID, token, coordinator.OpWrite) }
	}
	hx, hw := e.hinted(x, nil, replicas, step.Sends)
	x.hints = hw
	o, err := e.await(ctx, req, step.Sends, hx, dl, true, nil)
	hw.settle(o)
	if err != nil {
		return nil, err
	}
	select {
	case <-x.done: // the leader answered (applied is set before done closes)
		if x.applied != nil {
			e.writePending(ctx, token, pending, x.applied, o, dl)
		}
	default: // the outcome came first (a timeout): pending replicas get what repair sends them
	}
	return o, nil
}

// counterValue returns the value a read returns of cell c of column col: for a counter, the
// sum of its shards as a bigint (nil when they do not decode); else c's value.
func counterValue(col *schema.Column, c cell.Cell) []byte {
	if col.Type != schema.TypeCounter || !c.Counter {
		return c.Value
	}
	n, err := cell.CounterValue(c)
	if err != nil {
		return nil
	}
	return schema.EncodeBigInt(n)
}

// counterTimeout marks err, a counter update's error, as a counter update's when it is a
// timeout (the native protocol's COUNTER write type).
func counterTimeout(err error) error {
	if to, ok := errors.AsType[*coordinator.TimeoutError](err); ok {
		to.Counter = true
	}
	return err
}
