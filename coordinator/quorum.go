package coordinator

import (
	"fmt"
	"strings"
)

// Consistency is a consistency level: how many replicas must answer before the coordinator
// answers the client. The zero Consistency is invalid, so a forgotten level is caught by
// NewRequest instead of silently meaning ONE.
type Consistency uint8

// The consistency levels, Cassandra's meanings. The LOCAL ones count only the replicas in the
// coordinator's data center (Replica.DC 0); EACH_QUORUM a quorum in every data center.
const (
	One Consistency = iota + 1
	Quorum
	All
	Two
	Three
	LocalOne
	LocalQuorum
	EachQuorum
	// Serial is SERIAL: a read that runs a Paxos prepare on its partition, completing any
	// lightweight transaction in progress, before it answers; and the Paxos level of a
	// conditional statement. It is not Valid as a plain read or write level.
	Serial
	// LocalSerial is LOCAL_SERIAL: SERIAL with Paxos over the coordinator's data center's
	// replicas alone when the keyspace places replicas per data center
	// (NetworkTopologyStrategy), else SERIAL.
	LocalSerial
	// Any is ANY, for writes alone: the write succeeds once any replica acknowledged it or,
	// when every replica is down, once the coordinator stored a hint for each (hinted
	// handoff). It is not Valid as a request's level: the shell runs it as ONE when a replica
	// is up and stores hints itself otherwise; a read at ANY is refused.
	Any
)

// String returns the CQL name of c, such as ONE or LOCAL_QUORUM.
func (c Consistency) String() string {
	switch c {
	case One:
		return "ONE"
	case Quorum:
		return "QUORUM"
	case All:
		return "ALL"
	case Two:
		return "TWO"
	case Three:
		return "THREE"
	case LocalOne:
		return "LOCAL_ONE"
	case LocalQuorum:
		return "LOCAL_QUORUM"
	case EachQuorum:
		return "EACH_QUORUM"
	case Serial:
		return "SERIAL"
	case LocalSerial:
		return "LOCAL_SERIAL"
	case Any:
		return "ANY"
	}
	return fmt.Sprintf("Consistency(%d)", uint8(c))
}

// Valid reports whether c is one of the levels.
func (c Consistency) Valid() bool { return c >= One && c <= EachQuorum }

// IsSerial reports whether c is SERIAL or LOCAL_SERIAL.
func (c Consistency) IsSerial() bool { return c == Serial || c == LocalSerial }

// Local reports whether c counts only the coordinator's data center: LOCAL_ONE, LOCAL_QUORUM.
func (c Consistency) Local() bool { return c == LocalOne || c == LocalQuorum }

// ParseConsistency returns the level named s, case-insensitively.
func ParseConsistency(s string) (Consistency, error) {
	for c := One; c.Valid(); c++ {
		if strings.EqualFold(s, c.String()) {
			return c, nil
		}
	}
	return 0, fmt.Errorf("coordinator: unknown consistency level %q (valid: ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM)", s)
}

// BlockFor returns how many of rf replicas must succeed for level cl: 1 for ONE and LOCAL_ONE, 2
// for TWO, 3 for THREE, rf/2+1 for QUORUM, LOCAL_QUORUM and EACH_QUORUM (rf being the replicas
// the level counts: the local data center's for LOCAL_QUORUM, each data center's for
// EACH_QUORUM), rf for ALL. It is never less than 1, so a request always needs at least one
// replica. An invalid cl (which NewRequest rejects) is treated as ALL, the strictest level.
func BlockFor(cl Consistency, rf int) int {
	var n int
	switch cl {
	case One, LocalOne:
		n = 1
	case Two:
		n = 2
	case Three:
		n = 3
	case Quorum, LocalQuorum, EachQuorum:
		n = rf/2 + 1
	default:
		n = rf
	}
	return max(n, 1)
}

// QuorumResult says whether a request can still reach its consistency level.
type QuorumResult uint8

// The results of Tally.Result.
const (
	// QuorumPending: not enough successes yet, but the outstanding replicas could still provide them.
	QuorumPending QuorumResult = iota
	// QuorumReached: at least the required number of replicas succeeded.
	QuorumReached
	// QuorumRejected: rate-limit rejections alone make the level unreachable; the operation
	// fails with the rate-limit error (rejected by replicas).
	QuorumRejected
	// QuorumLost: failures (possibly together with rejections) make the level unreachable.
	QuorumLost
)

// String returns "pending", "reached", "rejected" or "lost".
func (q QuorumResult) String() string {
	switch q {
	case QuorumPending:
		return "pending"
	case QuorumReached:
		return "reached"
	case QuorumRejected:
		return "rejected"
	case QuorumLost:
		return "lost"
	}
	return fmt.Sprintf("QuorumResult(%d)", uint8(q))
}

// Tally counts the answers to one request. Contacted is how many replicas were sent the operation;
// every contacted replica is outstanding until it answered OK, rejected or failed.
type Tally struct {
	Contacted, OK, Rejected, Failed int
}

// Outstanding returns how many contacted replicas have not answered.
func (t Tally) Outstanding() int { return t.Contacted - t.OK - t.Rejected - t.Failed }

// Result returns whether required successes are reached, still possible, or out of reach, and
// if out of reach, whether rate-limit rejections alone put them there. Success wins over
// everything: once OK ≥ required, later rejections do not matter. The attribution depends only on
// the counts, not on the order the answers arrived in: the level is lost to rate limiting exactly
// when some replica rejected and Contacted−Rejected < required, that is, when the request would
// fail even if every failed replica had succeeded.
func (t Tally) Result(required int) QuorumResult {
	switch {
	case t.OK >= required:
		return QuorumReached
	case t.OK+t.Outstanding() >= required:
		return QuorumPending
	case t.Rejected > 0 && t.Contacted-t.Rejected < required:
		return QuorumRejected
	default:
		return QuorumLost
	}
}
