package model

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node/localcluster"
)

// concurrentFlag makes TestModelTopology run operations while the topology changes. Reads at ONE
// can then see a stale value in the moment ownership flips, while some coordinators already use
// the new ring and others the old one (docs/operations.md, "Adding and removing nodes").
var concurrentFlag = flag.Bool("model.topology.concurrent", false, "run TestModelTopology's operations while the topology changes, not between the changes")

// sameRing waits until every running node of tc has the same ring.
func sameRing(ctx context.Context, tc *localcluster.Cluster) error {
	return poll.Until(ctx, time.Minute, "every running node has the same ring", func() error {
		running := tc.Running()
		first := running[0].Node().Cluster().Ring()
		for _, n := range running[1:] {
			if r := n.Node().Cluster().Ring(); !r.Equal(first) || r.Transitioning() {
				return fmt.Errorf("%s's ring differs from %s's (or is in transition)", n.Name, running[0].Name)
			}
		}
		return nil
	})
}

// TestModelTopology runs a seeded history against an in-process cluster whose topology changes
// in the middle of it: a node joins (it bootstraps), a table is truncated and a column of
// another dropped and added again (evolve), a node is decommissioned, a node is killed
// (node.Node.Kill: its requests cut, no leave message, as SIGKILL does) and removed with
// removenode, and another node joins. Every read is checked against the same
// reference model as TestModel, and at the end every partition is read at ALL through every node
// still running. With -model.duration it runs histories with successive seeds until that much
// time has passed. Tables at RF=1 are left out: removing a dead node's only replica of a row loses
// the row by definition (removenode refuses it, and the model would rightly report it).
func TestModelTopology(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster through four topology changes")
	}
	f := ProbeFeatures()
	logFeatures(t, f)
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	start := time.Now()
	var total Stats
	histories, changes := 0, 0
	for ; ; seed++ {
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runTopology(t, seed, f, *opsFlag, &total)
		})
		histories++
		changes += 4
		done := *durationFlag == 0 || time.Since(start) >= *durationFlag
		if !ok || done {
			break
		}
	}
	t.Logf("%d histories with %d topology changes in %v: %s", histories, changes, time.Since(start).Round(time.Second), total)
}

// indexOpsPerPhase is how many operations of the index history (indexHistory) run after each
// topology change.
const indexOpsPerPhase = 40

// runTopology runs the history of seed through four topology changes and adds what it ran to
// total; a violation fails t.
func runTopology(t *testing.T, seed uint64, f Features, ops int, total *Stats) {
	ctx := context.Background()
	w := NewWorkload(seed, f)
	w.Tables = slices.DeleteFunc(w.Tables, func(t *Table) bool { return t.RF == 1 })
	p := NewPool(w, *workersFlag)
	defer func() { total.Add(p.Stats()) }()
	p.SetReplay(fmt.Sprintf("go test ./test/model/ -run 'TestModelTopology$' -v -model.ops %d -model.workers %d -model.seed %d", ops, *workersFlag, seed))
	tc, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: w.Nodes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	target := inProcess{tc}
	if err := p.Setup(ctx, tc.Node(0).Client()); err != nil {
		t.Fatal(err)
	}
	ih := newIndexHistory(seed)
	ih.setup(ctx, t, tc.Node(0).Client())
	// The node decommissioned and the node removed, two distinct nodes of the first ones.
	gone := int(seed % uint64(w.Nodes))
	dead := (gone + 1) % w.Nodes
	live := (gone + 2) % w.Nodes // a node that stays, to run removenode through
	t.Logf("seed %d: %d nodes, %d workers, %d operations; a node joins, node %d is decommissioned, node %d is killed and removed, a node joins",
		seed, w.Nodes, *workersFlag, ops, gone+1, dead+1)

	run := func(ops []*Op) error {
		err := p.Run(ctx, ops, target)
		var v *Violation
		if errors.As(err, &v) {
			t.Errorf("%v", v)
			t.Fatalf("%s", shrink(t, v, w.Nodes))
		}
		return err
	}
	// during makes a topology change and runs a sixth of the history: after the change, once
	// every running node has the same ring, or (with -model.topology.concurrent) while the change
	// runs. It fails the test if either fails.
	during := func(what string, change func() error) {
		t.Helper()
		start := time.Now()
		if !*concurrentFlag {
			if err := change(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if err := sameRing(ctx, tc); err != nil {
				t.Fatalf("after %s: %v", what, err)
			}
			t.Logf("%s in %v", what, time.Since(start).Round(time.Millisecond))
			if err := run(p.Next(ops / 6)); err != nil {
				t.Fatal(err)
			}
			ih.run(ctx, t, tc, indexOpsPerPhase, "after "+what)
			return
		}
		var wg sync.WaitGroup
		var changeErr error
		wg.Go(func() { changeErr = change() })
		err := run(p.Next(ops / 6))
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if changeErr != nil {
			t.Fatalf("%s: %v", what, changeErr)
		}
		t.Logf("%s while operations ran: %v", what, time.Since(start).Round(time.Millisecond))
		ih.run(ctx, t, tc, indexOpsPerPhase, "after "+what)
	}

	run(p.Next(ops / 6))
	ih.run(ctx, t, tc, indexOpsPerPhase, "before the first change")
	during("a node joined", func() error { _, err := tc.Add(ctx); return err })
	// Truncated and dropped data must stay gone through the decommission, removenode and
	// bootstrap that follow, which stream every range.
	evolve(t, p, tc.Node(live).Client(), seed)
	during(fmt.Sprintf("node %d decommissioned", gone+1), func() error {
		_, err := tc.Node(gone).Node().Decommission(ctx)
		return err
	})
	if err := tc.Stop(gone); err != nil {
		t.Fatal(err)
	}
	if err := tc.Kill(dead); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{gone, dead} {
		if err := tc.WaitSeenDown(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	during(fmt.Sprintf("node %d removed", dead+1), func() error {
		_, err := tc.Node(live).Node().RemoveNode(ctx, tc.Node(dead).ID)
		return err
	})
	during("another node joined", func() error { _, err := tc.Add(ctx); return err })
	if err := run(p.Next(ops - 5*(ops/6))); err != nil {
		t.Fatal(err)
	}
	final := w.FinalReads(client.All)
	if err := run(final); err != nil {
		t.Fatal(err)
	}
	for _, op := range final {
		if op.Outcome.Sent && op.Outcome.Err != nil {
			t.Errorf("final read at ALL with every remaining node up failed: %s", op.Describe())
		}
	}
	ih.final(ctx, t, tc)
	t.Logf("seed %d: index history: %d writes to the indexed column, %d index queries checked", seed, ih.nwrites, ih.reads)
	s := p.Stats()
	s.Features = maps.Clone(s.Features)
	if s.Features == nil {
		s.Features = map[string]int{}
	}
	s.Features["index write"] += ih.nwrites
	s.Features["index query checked"] += ih.reads
	total.Add(Stats{Features: map[string]int{"index write": ih.nwrites, "index query checked": ih.reads}})
	t.Logf("seed %d: %s", seed, s)
	for k, e := range s.ErrorSamples {
		t.Logf("first %s failure: %s", k, e)
	}
}
