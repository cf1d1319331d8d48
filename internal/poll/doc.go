// Package poll waits for a condition that another goroutine, process or node makes true: it
// checks the condition at a short interval until it holds, and gives up with an error naming
// what was awaited and the last state seen once a deadline passes. It is the one polling helper
// of kvnode's tests, test launchers (node/localcluster, test/proc), the perf driver
// and the demo; it imports only the standard library (not even testing), so any package and any
// package's tests may use it.
//
// Deadlines are generous ceilings, never waited out on success: a condition that holds is
// noticed within one Interval.
//
// It imports nothing of kvnode (the standard library only), so any test can use it.
package poll
