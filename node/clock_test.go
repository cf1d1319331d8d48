package node_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
)

// gaugeOf returns the value of gauge name with the given labels in g, and whether it exists.
func gaugeOf(t *testing.T, g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == len(labels)/2 && hasLabels(m, labels) {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// TestClockSkewMetrics gives the third of three in-process nodes a clock 2 s ahead and checks
// that every node exports the offsets it measures through gossip and the cluster's skew, and
// that the series of a node that left go away.
func TestClockSkewMetrics(t *testing.T) {
	const skew, tol = 2.0, 0.25 // seconds; the tolerance covers scheduling on a loaded machine
	i := 0
	tc := startClusterWith(t, 3, func(cfg *node.Config) {
		if i == 2 {
			cfg.Testing = &node.TestingKnobs{Now: func() time.Time { return time.Now().Add(skew * time.Second) }}
		}
		i++
	})
	near := func(got, want float64) bool { return math.Abs(got-want) <= tol }
	// want[observer][peer] is the offset observer should export for peer.
	want := [3][3]float64{{0, 0, skew}, {0, 0, skew}, {-skew, -skew, 0}}
	for obs := range 3 {
		reg := tc.nodes[obs].Registry()
		poll.Must(t, 20*time.Second, fmt.Sprintf("node %d exports its peers' clock offsets and a skew of %vs", obs, skew), poll.Bool(func() bool {
			for peer := range 3 {
				got, ok := gaugeOf(t, reg, "kvnode_cluster_clock_offset_seconds", "peer", tc.nodeID(peer))
				if peer == obs {
					if ok {
						t.Fatalf("node %d exports a clock offset for itself: %v", obs, got)
					}
					continue
				}
				if !ok || !near(got, want[obs][peer]) {
					return false
				}
			}
			got, ok := gaugeOf(t, reg, "kvnode_cluster_clock_skew_seconds")
			return ok && near(got, skew)
		}))
	}

	// The skewed node leaves: its series disappear and the skew falls back to what is left.
	tc.stop(2)
	for obs := range 2 {
		reg := tc.nodes[obs].Registry()
		poll.Must(t, 10*time.Second, fmt.Sprintf("node %d drops node 2's clock offset and reports no skew", obs), poll.Bool(func() bool {
			_, ok := gaugeOf(t, reg, "kvnode_cluster_clock_offset_seconds", "peer", tc.nodeID(2))
			got, _ := gaugeOf(t, reg, "kvnode_cluster_clock_skew_seconds")
			return !ok && near(got, 0)
		}))
	}
}
