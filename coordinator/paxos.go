package coordinator

import (
	"cmp"
	"time"
)

// The pure logic of lightweight transactions (Paxos per partition); the shell runs the rounds
// (coordinator/shell/lwt.go).

// Ballot is a Paxos ballot of a lightweight transaction: a hybrid clock reading in microseconds
// since the Unix epoch, unique per proposer by Node. Ballots order by Micros, then Node. A
// committed proposal's cells are written at its ballot's Micros, so last-write-wins order
// follows the order in which Paxos chose them.
type Ballot struct {
	Micros int64
	Node   string
}

// Compare orders b and o: by Micros, then Node. The zero Ballot is below every other.
func (b Ballot) Compare(o Ballot) int {
	if c := cmp.Compare(b.Micros, o.Micros); c != 0 {
		return c
	}
	return cmp.Compare(b.Node, o.Node)
}

// IsZero reports whether b is the zero Ballot (no ballot).
func (b Ballot) IsZero() bool { return b.Micros == 0 && b.Node == "" }

// NextBallotMicros returns the counter of a proposer's next ballot: its clock now (in
// microseconds), but above last, the counter of its previous ballot, and above seen, the highest
// ballot counter a replica answered with: a hybrid clock, monotonic per node, that catches up
// with the highest ballot in the cluster so that a proposer behind in time is not outvoted forever.
func NextBallotMicros(now, last, seen int64) int64 {
	return max(now, last+1, seen+1)
}

// Promise is one replica's promise to a prepare: the proposal it accepted last (Accepted zero:
// none) and the ballot it committed last.
type Promise struct {
	From      NodeID
	Accepted  Ballot
	Committed Ballot
}

// InProgress returns the index in promises of the proposal the next proposer must complete
// before its own: the newest accepted proposal, when it is newer than every committed ballot the
// promises report (a newer commit supersedes it: its proposer completed or outvoted it). ok is
// false when nothing is in progress.
func InProgress(promises []Promise) (idx int, ok bool) {
	var committed Ballot
	idx = -1
	for i, p := range promises {
		if p.Committed.Compare(committed) > 0 {
			committed = p.Committed
		}
		if !p.Accepted.IsZero() && (idx < 0 || p.Accepted.Compare(promises[idx].Accepted) > 0) {
			idx = i
		}
	}
	if idx < 0 || promises[idx].Accepted.Compare(committed) <= 0 {
		return -1, false
	}
	return idx, true
}

// ContentionBackoff returns how long a proposer waits before its next round after attempt
// rounds lost to contention (attempt ≥ 1): a random share (draw in [0, 1)) of an exponentially
// growing window, from 1 ms to at most 100 ms, so that contending proposers spread out.
func ContentionBackoff(attempt int, draw float64) time.Duration {
	window := time.Millisecond << min(max(attempt-1, 0), 7)
	window = min(window, 100*time.Millisecond)
	return time.Duration(draw*float64(window)) + time.Millisecond/2
}
