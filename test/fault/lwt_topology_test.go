//go:build linux

package fault

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestLWTTopology runs the lightweight transactions' kinds (CAS registers checked with
// porcupine, and racing INSERT ... IF NOT EXISTS) on four nodes at replication factor 3 through
// topology changes: a decommission, and a kill -9 followed by removenode, each followed by the
// node joining again as a new node, while the workload runs. Paxos quorums count the pending
// replicas, and the Paxos state of every moving range goes with its rows; the histories must
// come out linearizable and every race with at most one winner. Long form only (-fault.long):
// each case takes a cluster of its own for about a minute.
func TestLWTTopology(t *testing.T) {
	if !*long {
		t.Skip("fault: topology changes run in the long form (-fault.long)")
	}
	ctx := prepare(t)
	cases := []struct {
		name  string
		steps []Step
	}{
		{"decommission", []Step{{Nemesis: &Decommission{Node: 3}, For: 10 * time.Second}, {Nemesis: &Decommission{Node: 2}, For: 10 * time.Second}}},
		{"removenode", []Step{{Nemesis: &RemoveNode{Node: 3, Via: 0}, For: 10 * time.Second}, {Nemesis: &RemoveNode{Node: 1, Via: 2}, For: 10 * time.Second}}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(ctx, t, Options{Nodes: 4}, "")
			ks, weights := lwtKinds()
			rep := RunScenario(ctx, t, c, Scenario{
				Kinds: ks, Weights: weights, Seed: uint64(100 + i),
				Settle:      5 * time.Second,
				Steps:       tc.steps,
				Replication: "{'class': 'SimpleStrategy', 'replication_factor': 3}",
			})
			rep.Log(t)
			for _, p := range problems(rep, fault{}) {
				t.Error(p)
			}
			for _, st := range tc.steps {
				if !bootstrapped(c, st.Nemesis) {
					t.Errorf("%s: the node's last run logged no bootstrap stream: it did not join as a new node", st.Nemesis.Name())
				}
			}
			for _, v := range rep.Verdicts {
				if v.Writes+v.Reads < 100 {
					t.Errorf("%s: only %d operations judged; the run proves little", v.Kind, v.Writes+v.Reads)
				}
			}
		})
	}
}

// bootstrapped reports whether the node a topology nemesis took out logged, in its last run, that
// it streamed its ranges as a joining node.
func bootstrapped(c *Cluster, nem Nemesis) bool {
	i := -1
	switch n := nem.(type) {
	case *Decommission:
		i = n.Node
	case *RemoveNode:
		i = n.Node
	}
	if i < 0 {
		return false
	}
	files := c.Node(i).Stderrs()
	if len(files) < 2 {
		return false
	}
	data, _ := os.ReadFile(files[len(files)-1])
	return strings.Contains(string(data), "bootstrap streamed")
}
