package shell

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// repair writes to each stale replica what it lacks (rec.Repairs) and waits until every one of
// them acknowledged, or dl passes. Repairs are exempt from the rate limiter (mode NONE).
//
// Waiting makes reads at QUORUM monotonic: once a read returned a value, the replicas it
// contacted, enough of them for its consistency level, hold it, so a later QUORUM read, whose
// replicas overlap those, sees it too. When a stale replica refuses its repair (its disk is full,
// say) and fewer than that hold the result, the result as a whole (rec.Full) goes to as many of
// the live replicas the read did not ask as make up the difference, as Cassandra's blocking read
// repair sends additional writes: the read succeeds once enough replicas hold it. A read whose
// result is not on enough replicas fails, as in Cassandra: with a *TimeoutError when the
// deadline passed, with a *FailureError when a replica failed; in both Received counts the
// replicas known to hold the result. answered are the replicas that answered the read.
func (e *Executor) repair(ctx context.Context, spec readSpec, rec coordinator.Reconciled, answered []coordinator.Response, dl time.Time) error {
	ids := make([]coordinator.NodeID, 0, len(rec.Repairs))
	for id := range rec.Repairs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	x := repairExchange{t: e.transport, m: make(map[coordinator.NodeID]*replicapb.Mutation, len(ids))}
	replicas := make([]coordinator.Replica, len(ids))
	for i, id := range ids {
		x.m[id] = repairMutation(spec.table, spec.pk, spec.token, rec.Repairs[id], rec.PartitionDeletion)
		replicas[i] = coordinator.Replica{ID: id}
	}
	o, err := e.exemptAtAll(ctx, spec, coordinator.OpWrite, replicas, x, len(answered), dl)
	if o == nil {
		return err
	}
	result := "failed"
	switch o := o.(type) {
	case coordinator.Success:
		result = "ok"
	case coordinator.Timeout:
		result = "timeout"
	case coordinator.Failed:
		e.logger.Debug("read repair failed", "table", spec.table.QualifiedName(), "replicas", len(ids), "err", o.Cause)
		var fe *coordinator.FailureError
		if errors.As(err, &fe) && rec.Full != nil {
			if err2 := e.repairElsewhere(ctx, spec, rec, answered, fe.Received, dl); err2 == nil {
				result, err = "additional", nil
			}
		}
	}
	if e.observer != nil {
		e.observer.OnReadRepair(spec.table.Keyspace, spec.table.Name, len(ids), result)
	}
	return err
}

// repairElsewhere writes the read's whole result (rec.Full) to live replicas the read did not
// ask, as many as it takes for the result to be on enough replicas for the read's consistency
// level, given that holding of them do, and waits for each to acknowledge. It returns nil once
// enough do, else the read's error.
func (e *Executor) repairElsewhere(ctx context.Context, spec readSpec, rec coordinator.Reconciled, answered []coordinator.Response, holding int, dl time.Time) error {
	need := coordinator.BlockFor(spec.cl, spec.rf.Total()) - holding
	if need <= 0 {
		return nil
	}
	var buf [8]coordinator.Replica
	var extra []coordinator.Replica
	for _, r := range e.replicaSet(buf[:0], spec.token, spec.rf) {
		if !r.Down && !slices.ContainsFunc(answered, func(a coordinator.Response) bool { return a.From == r.ID }) && len(extra) < need {
			extra = append(extra, coordinator.Replica{ID: r.ID})
		}
	}
	if len(extra) < need {
		return errors.New("coordinator: too few live replicas left to repair")
	}
	x := repairExchange{t: e.transport, m: make(map[coordinator.NodeID]*replicapb.Mutation, len(extra))}
	for _, r := range extra {
		x.m[r.ID] = repairMutation(spec.table, spec.pk, spec.token, rec.Full, rec.PartitionDeletion)
	}
	_, err := e.exemptAtAll(ctx, spec, coordinator.OpWrite, extra, x, holding+len(extra), dl)
	return err
}

// exemptAtAll sends x's calls (one per replica of replicas) as op at ALL, exempt from the limiter,
// for read spec, and waits for every answer or dl; the client's deadline passing counts as a
// Timeout. It returns the outcome (nil when none was reached) and the read's error for it: nil
// on Success; a *TimeoutError or *FailureError whose Received counts the contacted replicas (of
// the read's first page, contacted) known to hold what the read needs: those not asked again
// and those that acknowledged now.
func (e *Executor) exemptAtAll(ctx context.Context, spec readSpec, op coordinator.Op, replicas []coordinator.Replica, x exchange, contacted int, dl time.Time) (coordinator.Outcome, error) {
	req, err := coordinator.NewRequest(coordinator.Params{Op: op, Consistency: coordinator.All, Self: e.localID, Replicas: replicas, Exempt: true, Deadline: dl})
	if err != nil {
		return nil, err
	}
	step := req.Start(e.now())
	o := step.Outcome
	if o == nil {
		var te *coordinator.TimeoutError
		o, err = e.await(ctx, req, step.Sends, x, dl, false, nil)
		switch {
		case errors.As(err, &te): // the client's deadline passed
			o = coordinator.Timeout{}
		case err != nil:
			return nil, err
		}
	}
	received := contacted - len(replicas) + req.Tally().OK
	required := coordinator.BlockFor(spec.cl, spec.rf.Total())
	switch o := o.(type) {
	case coordinator.Success:
		return o, nil
	case coordinator.Timeout:
		return o, &coordinator.TimeoutError{Op: coordinator.OpRead, Consistency: spec.cl, Received: received, Required: required}
	case coordinator.Failed:
		return o, &coordinator.FailureError{Op: coordinator.OpRead, Consistency: spec.cl, Received: received, Required: required, Failures: o.Failures, Err: o.Cause}
	default: // exempt requests are never rate limited; Unavailable needs a down replica
		return o, o.Err(spec.table.Keyspace, spec.table.Name)
	}
}

// repairExchange sends each stale replica its own repair mutation, exempt from the limiter.
type repairExchange struct {
	t Transport
	m map[coordinator.NodeID]*replicapb.Mutation
}

func (x repairExchange) call(ctx context.Context, s coordinator.Send) coordinator.Response {
	return mutateExchange{x.t, x.m[s.To]}.call(ctx, s)
}
