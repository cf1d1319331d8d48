package model

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
)

// TestModelAcrossDataCenters runs a seeded history across two in-process data centers of two
// nodes each (NetworkTopologyStrategy {'dc1': 2, 'dc2': 2}; every partition coordinated in its
// home data center at LOCAL_ONE or LOCAL_QUORUM, so each write's copies for the other data
// center go through a forwarder there), with a node of dc2 stopped for a quarter of it and
// restarted: every read is checked against the model, and at the end every partition is read at
// ALL through every node.
func TestModelAcrossDataCenters(t *testing.T) {
	ctx := context.Background()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	f := ProbeFeatures()
	w := NewWorkload(seed, f)
	if err := w.SetDataCenters(DataCenters{Names: []string{"dc1", "dc2"}, Nodes: [][]int{{0, 1}, {2, 3}}, RF: 2}); err != nil {
		t.Fatal(err)
	}
	ops := *opsFlag / 2
	p := NewPool(w, *workersFlag)
	p.SetReplay(fmt.Sprintf("go test ./test/model/ -run 'TestModelAcrossDataCenters$' -v -model.ops %d -model.workers %d -model.seed %d", 2*ops, *workersFlag, seed))
	tc, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: w.Nodes, Adjust: func(i int, cfg *node.Config) {
		cfg.Cluster.DataCenter = []string{"dc1", "dc2"}[i/2]
		cfg.Cluster.Rack = fmt.Sprintf("r%d", i%2+1)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	if err := p.Setup(ctx, tc.Node(0).Client()); err != nil {
		t.Fatal(err)
	}
	// Through the client alone: the Executor path pairs writes of different partitions into
	// BATCHes through one node, which would coordinate a partition outside its home data center.
	target := clientsOnly{tc}
	run := func(ops []*Op) {
		t.Helper()
		err := p.Run(ctx, ops, target)
		var v *Violation
		if errors.As(err, &v) {
			t.Fatalf("%v", v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	const down = 3 // in dc2
	t.Logf("seed %d: 2 data centers of 2 nodes, %d operations; node %d is stopped for the third quarter", seed, ops, down+1)
	run(p.Next(ops / 2))
	if err := tc.Stop(down); err != nil {
		t.Fatal(err)
	}
	if err := tc.WaitSeenDown(ctx, down); err != nil {
		t.Fatal(err)
	}
	run(p.Next(ops / 4))
	if err := tc.Restart(ctx, down); err != nil {
		t.Fatal(err)
	}
	run(p.Next(ops - ops/2 - ops/4))
	final := w.FinalReads(client.All)
	run(final)
	for _, op := range final {
		if op.Outcome.Err != nil {
			t.Errorf("final read at ALL with every node up failed: %s", op.Describe())
		}
	}
	t.Logf("seed %d: %s", seed, p.Stats())
}

// clientsOnly is a Target over an in-process cluster that sends every operation through the
// node's gRPC client (no ExecutorTarget).
type clientsOnly struct{ tc *localcluster.Cluster }

func (p clientsOnly) Client(i int) *client.Client { return p.tc.Node(i).Client() }
