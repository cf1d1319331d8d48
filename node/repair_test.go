package node

import (
	"math"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/repair"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// TestRepairRing: the node's ring adapter gives repair the cluster ring's tokens and replicas,
// so that repair.LocalRanges finds the ranges a node replicates (repair's own tests cover
// LocalRanges over every case).
func TestRepairRing(t *testing.T) {
	ring := cluster.NewRing([]cluster.RingNode{
		{ID: "a", Tokens: []int64{-100, 100}},
		{ID: "b", Tokens: []int64{0}},
		{ID: "c", Tokens: []int64{50}},
	})
	// At RF 2, b replicates its own (-100, 0] with c, and a's ranges followed (after a's own
	// tokens) by b's token 0: (min, -100], (50, 100] and the wrapping range.
	want := []repair.Range{
		{Range: replica.TokenRange{Start: math.MinInt64, End: -100}, Replicas: []coordinator.NodeID{"a", "b"}},
		{Range: replica.TokenRange{Start: -100, End: 0}, Replicas: []coordinator.NodeID{"b", "c"}},
		{Range: replica.TokenRange{Start: 50, End: 100}, Replicas: []coordinator.NodeID{"a", "b"}},
		{Range: replica.TokenRange{Start: 100, End: math.MaxInt64}, Replicas: []coordinator.NodeID{"a", "b"}},
	}
	got := repair.LocalRanges(repairRing{ring}, "b", schema.Simple(2))
	if !slices.EqualFunc(got, want, func(x, y repair.Range) bool { return x.Range == y.Range && slices.Equal(x.Replicas, y.Replicas) }) {
		t.Errorf("b's ranges at RF 2 over the cluster ring: %v, want %v", got, want)
	}
}
