package shell

import (
	"context"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/scopelimit"
)

// WaitIdle waits until every replica call the executor started has returned: writes keep going
// to the replicas that have not acknowledged them after the client has its answer, and tests
// that read one replica's storage want them landed. Call it only while no Execute is running.
// The hints those calls queued are in the HintSink by then.
func (e *Executor) WaitIdle() {
	e.wg.Wait()
	if e.hintq != nil {
		e.hintq.waitIdle()
	}
}

// SetHintQueueLimit bounds the executor's hint queue to n hints (hintqueue.go). Call it before
// the first Execute.
func (e *Executor) SetHintQueueLimit(n int) { e.hintq.maxHints = n }

// SetMonoClock replaces the monotonic clock the replicas' scores and the tables' read
// latencies run on, so that a test decides when penalties decay. Call it before the first
// Execute.
func (e *Executor) SetMonoClock(now func() time.Duration) { e.mono = now }

// FlushScopes sends the budgets' counts to the peers now, as the propagation loop does every
// ScopeInterval.
func (e *Executor) FlushScopes() { e.scopes.prop.flush(context.Background()) }

// PeekScope returns the executor's counter of a budget for op, at its clock.
func (e *Executor) PeekScope(k scopelimit.Kind, name string, op coordinator.Op) uint32 {
	return e.scopes.lim.Peek(scopelimit.BudgetID(k, name), scopeLabel(k, op), e.now())
}

// ScopeLabel is the label of a budget of kind k for op.
func ScopeLabel(k scopelimit.Kind, op coordinator.Op) uint32 { return scopeLabel(k, op) }

// PeekScopeID returns the executor's counter of a budget id and label, at its clock.
func (e *Executor) PeekScopeID(id int64, label uint32) uint32 {
	return e.scopes.lim.Peek(id, label, e.now())
}
