// The conversions between the domain's types and those generated for the internode protocol,
// once for both of the protocol's ends (the coordinator's shell, which sends replica requests,
// and the replica, which answers them): the generated package imports nothing of the project,
// and the two ends may not import each other.

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
