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
	req, err := coordinator.NewRequest(coordinator.Params{
		Op:          coordinator.OpWrite,
		Consistency: coordinator.All,
		Self:        e.localID,
		Replicas:    replicas,
		Exempt:      true,
		Deadline:    dl,
	})
	if err != nil {
		return err
	}
	step := req.Start(e.now())
	o := step.Outcome
	if o == nil {
		var te *coordinator.TimeoutError
		o, err = e.await(ctx, req, step.Sends, x, dl, false)
		switch {
		case errors.As(err, &te): // the client's deadline passed
			o = coordinator.Timeout{}
		case err != nil:
			return err
		}
	}
	upToDate := contacted - len(ids) + req.Tally().OK
	required := coordinator.BlockFor(spec.cl, spec.rf)
	var result string
	switch o := o.(type) {
	case coordinator.Success:
		result = "ok"
		err = nil
	case coordinator.Timeout:
		result = "timeout"
		err = &coordinator.TimeoutError{Op: coordinator.OpRead, Consistency: spec.cl, Received: upToDate, Required: required}
	case coordinator.Failed:
		result = "failed"
		err = &coordinator.FailureError{Op: coordinator.OpRead, Consistency: spec.cl, Received: upToDate, Required: required, Failures: o.Failures, Err: o.Cause}
		e.logger.Debug("read repair failed", "table", spec.table.QualifiedName(), "replicas", len(ids), "err", o.Cause)
	default: // exempt requests are never rate limited; Unavailable needs a down replica
		result = "failed"
		err = o.Err(spec.table.Keyspace, spec.table.Name)
	}
	if e.observer != nil {
		e.observer.OnReadRepair(spec.table.Keyspace, spec.table.Name, len(ids), result)
	}
	return err
}

// repairExchange sends each stale replica its own repair mutation, exempt from the limiter.
type repairExchange struct {
	t Transport
	m map[coordinator.NodeID]*replicapb.Mutation
}

func (x repairExchange) call(ctx context.Context, s coordinator.Send) coordinator.Response {
	return mutateExchange{x.t, x.m[s.To]}.call(ctx, s)
}
