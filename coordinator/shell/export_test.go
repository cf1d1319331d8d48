package shell

import "time"

// WaitIdle waits until every replica call the executor started has returned: writes keep going
// to the replicas that have not acknowledged them after the client has its answer, and tests
// that read one replica's storage want them landed. Call it only while no Execute is running.
func (e *Executor) WaitIdle() { e.wg.Wait() }

// SetMonoClock replaces the monotonic clock the replicas' scores and the tables' read
// latencies run on, so that a test decides when penalties decay. Call it before the first
// Execute.
func (e *Executor) SetMonoClock(now func() time.Duration) { e.mono = now }
