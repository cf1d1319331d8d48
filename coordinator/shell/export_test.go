package shell

// WaitIdle waits until every replica call the executor started has returned: writes keep going
// to the replicas that have not acknowledged them after the client has its answer, and tests
// that read one replica's storage want them landed. Call it only while no Execute is running.
func (e *Executor) WaitIdle() { e.wg.Wait() }
