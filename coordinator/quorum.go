package coordinator

import (
	"fmt"
	"strings"
)

// Consistency is a consistency level: how many replicas must answer before the coordinator
// answers the client. The zero Consistency is invalid, so a forgotten level is caught by
// NewRequest instead of silently meaning ONE.
type Consistency uint8

// The consistency levels. kvnode has one datacenter, so LOCAL_ONE and LOCAL_QUORUM are parsed as
// aliases of ONE and QUORUM and have no constants of their own.
const (
	One Consistency = iota + 1
	Quorum
	All
	// Serial is SERIAL (and LOCAL_SERIAL, one datacenter): a read that runs a Paxos prepare on
	// its partition, completing any lightweight transaction in progress, before it answers. It
	// is not Valid as a plain read or write level.
	Serial
)

// String returns the CQL name of c: ONE, QUORUM or ALL.
func (c Consistency) String() string {
	switch c {
	case One:
		return "ONE"
	case Quorum:
		return "QUORUM"
	case All:
		return "ALL"
	case Serial:
		return "SERIAL"
	}
	return fmt.Sprintf("Consistency(%d)", uint8(c))
}

// Valid reports whether c is ONE, QUORUM or ALL.
func (c Consistency) Valid() bool { return c >= One && c <= All }

// ParseConsistency returns the level named s, case-insensitively: ONE, QUORUM, ALL, or the
// aliases LOCAL_ONE (ONE) and LOCAL_QUORUM (QUORUM).
func ParseConsistency(s string) (Consistency, error) {
	switch strings.ToUpper(s) {
	case "ONE", "LOCAL_ONE":
		return One, nil
	case "QUORUM", "LOCAL_QUORUM":
		return Quorum, nil
	case "ALL":
		return All, nil
	}
	return 0, fmt.Errorf("coordinator: unknown consistency level %q (valid: ONE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM)", s)
}

// BlockFor returns how many replicas must succeed for level cl with replication factor rf:
// 1 for ONE, rf/2+1 for QUORUM, rf for ALL. It is never less than 1, so a request always needs
// at least one replica, and never more than rf unless rf < 1. An invalid cl (which NewRequest
// rejects) is treated as ALL, the strictest level.
func BlockFor(cl Consistency, rf int) int {
	var n int
	switch cl {
	case One:
		n = 1
	case Quorum:
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
