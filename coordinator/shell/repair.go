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
// Waiting makes reads at QUORUM monotonic: once a read returned a value, every replica it
// contacted holds it, so a later QUORUM read, whose replicas overlap those, sees it too. A read
// whose repairs did not all succeed therefore fails, as in Cassandra: with a *TimeoutError when
// the deadline passed, with a *FailureError when a replica failed; in both Received counts the
// contacted replicas known to hold the result. contacted is how many replicas answered the read.
func (e *Executor) repair(ctx context.Context, spec readSpec, rec coordinator.Reconciled, contacted int, dl time.Time) error {
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
	o, err := e.exemptAtAll(ctx, spec, coordinator.OpWrite, replicas, x, contacted, dl)
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
	}
	if e.observer != nil {
		e.observer.OnReadRepair(spec.table.Keyspace, spec.table.Name, len(ids), result)
	}
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
	required := coordinator.BlockFor(spec.cl, spec.rf)
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
