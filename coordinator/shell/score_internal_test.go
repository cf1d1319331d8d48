package shell

import (
	"slices"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

func TestReplicaOrder(t *testing.T) {
	replicas := []coordinator.Replica{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}}
	var r replicaScores
	order := func(local coordinator.NodeID, now time.Duration) []coordinator.NodeID {
		return r.order(nil, replicas, local, now)
	}
	// Healthy replicas with a few hundred microseconds between them: the default order.
	r.of("n1").answered(100 * time.Microsecond)
	r.of("n2").answered(600 * time.Microsecond)
	r.of("n3").answered(400 * time.Microsecond)
	if got := order("n2", 0); got != nil {
		t.Errorf("healthy replicas are ordered %v, want the default order (nil)", got)
	}
	// A replica that missed a read goes last; the others keep the default order, local first.
	r.of("n1").penalize(0)
	if got, want := order("n2", 0), []coordinator.NodeID{"n2", "n3", "n1"}; !slices.Equal(got, want) {
		t.Errorf("with n1 penalized, n2 reads in the order %v, want %v", got, want)
	}
	// The local replica loses its place too when it is far worse.
	if got, want := order("n1", 0), []coordinator.NodeID{"n2", "n3", "n1"}; !slices.Equal(got, want) {
		t.Errorf("with n1 penalized, n1 reads in the order %v, want %v", got, want)
	}
	// Far worse ones are ordered by score.
	r.of("n3").penalize(0)
	r.of("n3").penalize(0)
	if got, want := order("n3", 0), []coordinator.NodeID{"n2", "n1", "n3"}; !slices.Equal(got, want) {
		t.Errorf("with n1 penalized once and n3 twice, n3 reads in the order %v, want %v", got, want)
	}
	// Penalties halve every second: after 10 s they are gone and the default order is back.
	if got := order("n2", 10*time.Second); got != nil {
		t.Errorf("10 s after the misses the order is %v, want the default", got)
	}
	// Outstanding calls weigh a replica's latency: many on one replica make it far worse.
	r.of("n1").answered(time.Millisecond)
	if got := order("n3", 10*time.Second); got != nil {
		t.Errorf("a replica a little slower is ordered %v already", got)
	}
	r.of("n1").outstanding.Add(20)
	if got, want := order("n3", 10*time.Second), []coordinator.NodeID{"n3", "n2", "n1"}; !slices.Equal(got, want) {
		t.Errorf("with 20 calls outstanding on n1, n3 reads in the order %v, want %v", got, want)
	}
	// Down replicas are left to the core, which skips them.
	replicas[1].Down = true
	if got, want := order("n3", 10*time.Second), []coordinator.NodeID{"n3", "n1"}; !slices.Equal(got, want) {
		t.Errorf("with n2 down, n3 reads in the order %v, want %v", got, want)
	}
}

func TestReplicaPenaltyIsBounded(t *testing.T) {
	var s replicaScore
	for range 100 {
		s.penalize(0)
	}
	if got, want := s.score(0), float64(scorePenaltyCap)*scorePenaltyCost.Seconds(); got != want {
		t.Errorf("100 misses score %v, want the cap's %v", got, want)
	}
	if got := s.score(scorePenaltyHalfLife); got != float64(scorePenaltyCap)*scorePenaltyCost.Seconds()/2 {
		t.Errorf("after a half-life the score is %v, want half", got)
	}
}
