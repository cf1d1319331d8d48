package coordinator

import (
	"math"
	"reflect"
	"testing"
)

func TestBatcherDrainsInOrderAndSaturates(t *testing.T) {
	var b Batcher
	if b.Pending() || b.Drain(func(NodeID) bool { return true }) != nil {
		t.Fatal("a zero Batcher has something to drain")
	}
	b.Add([]NodeID{"n3", "n1"}, 2, 5, OpWrite)
	b.Add([]NodeID{"n1"}, 1, 9, OpRead)
	b.Add([]NodeID{"n1"}, 1, 9, OpRead)
	b.Add([]NodeID{"n2"}, 1, 1, OpWrite) // n2 is down when drained: dropped
	b.pending["n3"][deltaKey{2, 5, OpWrite}] = math.MaxUint32 - 1
	b.Add([]NodeID{"n3"}, 2, 5, OpWrite)
	b.Add([]NodeID{"n3"}, 2, 5, OpWrite) // saturates
	got := b.Drain(func(id NodeID) bool { return id != "n2" })
	want := []Batch{
		{To: "n1", Deltas: []Delta{{Table: 1, Token: 9, Op: OpRead, Count: 2}, {Table: 2, Token: 5, Op: OpWrite, Count: 1}}},
		{To: "n3", Deltas: []Delta{{Table: 2, Token: 5, Op: OpWrite, Count: math.MaxUint32}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Drain = %+v, want %+v", got, want)
	}
	if b.Pending() || b.Drain(func(NodeID) bool { return true }) != nil {
		t.Error("a drained Batcher still has deltas")
	}
}
