package replicapb

import "github.com/kvnode/kvnode/schema"

// OpOf returns the internode protocol's op for the domain's: the one conversion from schema.Op,
// used by the coordinator's shell (sending) and the replica (answering).
func OpOf(op schema.Op) Op {
	switch op {
	case schema.OpRead:
		return Op_OP_READ
	case schema.OpWrite:
		return Op_OP_WRITE
	}
	return Op_OP_UNSPECIFIED
}

// Domain returns the domain's op for o; false for OP_UNSPECIFIED and values no version defines.
func (o Op) Domain() (schema.Op, bool) {
	switch o {
	case Op_OP_READ:
		return schema.OpRead, true
	case Op_OP_WRITE:
		return schema.OpWrite, true
	}
	return 0, false
}
