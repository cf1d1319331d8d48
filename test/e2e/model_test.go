package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/test/model"
)

var (
	modelSeed    = flag.Uint64("model.seed", 0, "seed of TestModelAcrossSIGKILL's history (0: from the clock)")
	modelOps     = flag.Int("model.ops", 300, "operations per phase of TestModelAcrossSIGKILL")
	modelWorkers = flag.Int("model.workers", 4, "operations in flight at once in TestModelAcrossSIGKILL, on distinct partitions")
)

// processes is a model.Target over a process cluster.
type processes struct{ tc *testCluster }

func (p processes) Client(i int) *client.Client { return p.tc.nodes[i].Client() }

// TestModelAcrossSIGKILL runs the model-checked workload of package model against real kvnode
// processes (writes synced to disk) in four phases: all nodes up; one node SIGKILLed (the phase
// starts before the others notice, so some writes time out); the node restarted; another node SIGKILLed and restarted at once. Every read is checked
// against the model as it runs, and at the end every partition is read through every node at
// QUORUM (every write acknowledged at QUORUM must be there) and at ALL (every acknowledged
// write must be there).
func TestModelAcrossSIGKILL(t *testing.T) {
	skipShort(t)
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	f := model.ProbeFeatures()
	w := model.NewWorkload(seed, f)
	t.Logf("seed %d (replay with -model.seed %d): %d nodes, %d operations per phase; features: %s", seed, seed, w.Nodes, *modelOps, f)
	tc := startCluster(t, w.Nodes, true)
	p := model.NewPool(w, *modelWorkers)
	p.SetReplay(fmt.Sprintf("go test ./test/e2e/ -run TestModelAcrossSIGKILL -v -model.ops %d -model.workers %d -model.seed %d", *modelOps, *modelWorkers, seed))
	ctx := context.Background()
	if err := p.Setup(ctx, tc.nodes[0].Client()); err != nil {
		t.Fatal(err)
	}
	target := processes{tc}
	run := func(ops []*model.Op) {
		t.Helper()
		if err := p.Run(ctx, ops, target); err != nil {
			var v *model.Violation
			if errors.As(err, &v) {
				t.Fatalf("%v", v)
			}
			t.Fatal(err)
		}
	}
	phase := func(what string) {
		t.Helper()
		before := p.Stats()
		run(p.Next(*modelOps))
		after := p.Stats()
		t.Logf("%s: %d operations, %d acknowledged writes, %d reads checked", what, after.Ops-before.Ops, after.Acked-before.Acked, after.ReadsChecked-before.ReadsChecked)
	}
	others := func(i int) []*node {
		var out []*node
		for j, n := range tc.nodes {
			if j != i {
				out = append(out, n)
			}
		}
		return out
	}

	phase("all nodes up")
	first := int(seed % uint64(w.Nodes))
	victim := tc.nodes[first]
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	// The phase starts at once, before the others see the node down: writes at ALL (and reads
	// waiting for it) time out meanwhile, and those writes may or may not have been applied.
	phase(victim.Name + " SIGKILLed")
	down := tc.allUp()
	down[victim.ID] = "DOWN"
	tc.waitStates(joinTimeout, others(first), down)
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())
	phase(victim.Name + " restarted")
	second := (first + 1) % w.Nodes
	if err := tc.nodes[second].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := tc.nodes[second].Start(); err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())
	t.Logf("%s SIGKILLed and restarted", tc.nodes[second].Name)

	for _, cl := range []client.Consistency{client.Quorum, client.All} {
		failed := 0
		final := w.FinalReads(cl)
		run(final)
		for _, op := range final {
			if op.Outcome.Err != nil {
				failed++
				t.Errorf("final read with every node up failed: %s", op.Describe())
			}
		}
		t.Logf("final reads at %v of every partition through every node: %d failed", cl, failed)
	}
	s := p.Stats()
	t.Logf("seed %d: %s", seed, s)
	for k, e := range s.ErrorSamples {
		t.Logf("first %s failure: %s", k, e)
	}
}
