package coordinator

import (
	"cmp"
	"math"
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

// Cassandra 4.1's default Paxos contention strategy (ContentionStrategy.java), the bounds of
// ContentionWait: the wait is drawn between a floor of two thirds of the median LWT latency and
// a ceiling of the 95th percentile times 1.8^attempt, held within [10 ms, 100 ms], at least a
// delta of half the median (and 5 ms) apart.
const (
	contentionCeilingMin = 10 * time.Millisecond
	contentionCeilingMax = 100 * time.Millisecond
	contentionDeltaMin   = 5 * time.Millisecond
)

// ContentionWait returns how long a proposer waits before its next round after attempt rounds
// lost to contention (attempt ≥ 1), given p50 and p95, the recent latencies of lightweight
// transactions that succeeded (zero when none are known), and two random draws u1, u2 in
// [0, 1). It is Cassandra 4.1's default strategy: min = 0.66·p50, max = p95·1.8^attempt
// bounded to [10 ms, 100 ms], max − min at least max(5 ms, 0.5·p50), drawn by its quantized
// exponential randomizer qexp(1.5): the range is cut into attempt buckets and later buckets
// (longer waits) are likelier, so that a proposer that keeps losing steps further back, and
// contending proposers spread over more than one round's time instead of meeting again.
func ContentionWait(attempt int, p50, p95 time.Duration, u1, u2 float64) time.Duration {
	attempt = max(attempt, 1)
	lo := time.Duration(0.66 * float64(p50))
	hi := float64(p95) * math.Pow(1.8, float64(attempt))
	hi = min(max(hi, float64(contentionCeilingMin)), float64(contentionCeilingMax))
	ceiling := time.Duration(hi)
	delta := max(p50/2, contentionDeltaMin)
	if lo+delta > ceiling {
		ceiling = lo + delta
		if ceiling > contentionCeilingMax {
			ceiling = contentionCeilingMax
			lo = max(ceiling-delta, 0)
		}
	}
	span := ceiling - lo
	quanta := span / time.Duration(attempt)
	if attempt == 1 || quanta == 0 {
		return lo + time.Duration(u1*float64(span))
	}
	base := min(int(float64(attempt)*math.Pow(u1, 1.5)), attempt-1)
	return ceiling - quanta*time.Duration(base) - time.Duration(u2*float64(quanta))
}
