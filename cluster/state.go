package cluster

import (
	"fmt"
	"strconv"
)

// NodeState is where a node is in its life as a ring member. A node gossips its own state in its
// metadata; every node derives the ring, its pending ranges and the replicas of each token from
// the states it sees.
//
//   - StateJoining: the node bootstraps. It owns nothing yet; the ranges it will own are pending:
//     writes to them also go to it (without counting toward the consistency level) while it
//     streams them from their current owners.
//   - StateNormal: the node owns its ranges and serves reads.
//   - StateLeaving: the node is being decommissioned. It still owns its ranges while it streams
//     them to their next owners, which get the writes to them as pending replicas.
//   - StateLeft: the node has streamed its ranges away and is out of the ring; once it stops, every
//     node forgets it for good.
//
// The zero value is StateNormal, the state of nodes that gossip metadata older than version 3 and
// of peer records persisted before states existed.
type NodeState uint8

// Node states.
const (
	StateNormal NodeState = iota
	StateJoining
	StateLeaving
	StateLeft

	maxNodeState = StateLeft
)

// String returns the state's name: normal, joining, leaving or left.
func (s NodeState) String() string {
	switch s {
	case StateNormal:
		return "normal"
	case StateJoining:
		return "joining"
	case StateLeaving:
		return "leaving"
	case StateLeft:
		return "left"
	}
	return "NodeState(" + strconv.Itoa(int(s)) + ")"
}

// Letter returns the state's letter in nodetool's status column: N, J, L, or X for left.
func (s NodeState) Letter() string {
	switch s {
	case StateNormal:
		return "N"
	case StateJoining:
		return "J"
	case StateLeaving:
		return "L"
	}
	return "X"
}

// ParseNodeState returns the state named s.
func ParseNodeState(s string) (NodeState, error) {
	for st := StateNormal; st <= maxNodeState; st++ {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("cluster: unknown node state %q (want normal, joining, leaving or left)", s)
}

// MarshalText returns the state's name, so peer records persist it readably.
func (s NodeState) MarshalText() ([]byte, error) {
	if s > maxNodeState {
		return nil, fmt.Errorf("cluster: unknown node state %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText sets s to the state named text.
func (s *NodeState) UnmarshalText(text []byte) error {
	st, err := ParseNodeState(string(text))
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// owns reports whether a node in state s owns ranges in the current ring (a leaving node keeps
// them until it has streamed them away).
func (s NodeState) owns() bool { return s == StateNormal || s == StateLeaving }

// willOwn reports whether a node in state s owns ranges once every transition in progress has
// finished.
func (s NodeState) willOwn() bool { return s == StateNormal || s == StateJoining }
