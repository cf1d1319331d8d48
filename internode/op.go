// Package internode converts between the domain's types and those generated for the internode
// protocol (proto/replicapb), once for both of the protocol's ends: the coordinator's shell,
// which sends replica requests, and the replica, which answers them (and node, which gathers
// the replicas' hot partitions).
//
// The generated package imports nothing of the project, and the two ends may not import each
// other, so the conversions they share live here. It imports only proto/replicapb and the
// domain's leaf packages.
package internode

import (
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// WireOp returns the internode protocol's op for the domain's: OP_UNSPECIFIED for an op that
// is neither a read nor a write.
func WireOp(op schema.Op) replicapb.Op {
	switch op {
	case schema.OpRead:
		return replicapb.Op_OP_READ
	case schema.OpWrite:
		return replicapb.Op_OP_WRITE
	}
	return replicapb.Op_OP_UNSPECIFIED
}

// DomainOp returns the domain's op for o; false for OP_UNSPECIFIED and values no version of
// the protocol defines.
func DomainOp(o replicapb.Op) (schema.Op, bool) {
	switch o {
	case replicapb.Op_OP_READ:
		return schema.OpRead, true
	case replicapb.Op_OP_WRITE:
		return schema.OpWrite, true
	}
	return 0, false
}
