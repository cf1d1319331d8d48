package internode

import (
	"testing"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

func TestOpRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		op   schema.Op
		wire replicapb.Op
	}{
		{schema.OpRead, replicapb.Op_OP_READ},
		{schema.OpWrite, replicapb.Op_OP_WRITE},
	} {
		if got := WireOp(tt.op); got != tt.wire {
			t.Errorf("WireOp(%v) = %v, want %v", tt.op, got, tt.wire)
		}
		if got, ok := DomainOp(tt.wire); !ok || got != tt.op {
			t.Errorf("DomainOp(%v) = %v, %v; want %v, true", tt.wire, got, ok, tt.op)
		}
	}
	if got := WireOp(0); got != replicapb.Op_OP_UNSPECIFIED {
		t.Errorf("WireOp(0) = %v, want OP_UNSPECIFIED", got)
	}
	for _, o := range []replicapb.Op{replicapb.Op_OP_UNSPECIFIED, 3, -1} {
		if got, ok := DomainOp(o); ok {
			t.Errorf("DomainOp(%v) = %v, true; want false: no domain op", o, got)
		}
	}
}
