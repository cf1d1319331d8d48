package shell

// BreakLWTCompletion makes the executor's proposers skip completing a proposal in progress (a
// bug), so that the linearizability check can show it catches one.
func (e *Executor) BreakLWTCompletion() { e.lwt.skipCompletion = true }
