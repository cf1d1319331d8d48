package model

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
	"github.com/kvnode/kvnode/partitioner"
)

var (
	seedFlag      = flag.Uint64("model.seed", 0, "seed of the first history (0: from the clock); a failure prints the seed that replays it")
	opsFlag       = flag.Int("model.ops", 3000, "operations per history")
	historiesFlag = flag.Int("model.histories", 2, "histories to run, with successive seeds (see -model.duration)")
	workersFlag   = flag.Int("model.workers", 4, "operations in flight at once, on distinct partitions (each partition's operations run one at a time, in order)")
	durationFlag  = flag.Duration("model.duration", 0, "run histories with successive seeds until this much time has passed, however many that is (0: -model.histories)")
)

func logFeatures(t *testing.T, f Features) {
	t.Helper()
	t.Logf("features: %s", f)
}

// inProcess is a Target over an in-process cluster.
type inProcess struct{ tc *localcluster.Cluster }

func (p inProcess) Client(i int) *client.Client { return p.tc.Node(i).Client() }

// Executor returns node i's coordinator, nil while it is stopped: every third operation goes
// through it, prepared and paged (ExecutorTarget).
func (p inProcess) Executor(i int) *shell.Executor {
	if n := p.tc.Node(i).Node(); n != nil {
		return n.Executor()
	}
	return nil
}

// ReplicasDown reports whether op's coordinator sees every replica of op's partition down
// (ReplicasTarget): a write at ANY is then only hinted.
func (p inProcess) ReplicasDown(op *Op) bool {
	ln := p.tc.Node(op.Node)
	n := ln.Node()
	if n == nil {
		return false
	}
	enc := make([][]byte, len(op.PK))
	for i, v := range op.PK {
		enc[i] = v.Enc
	}
	c := n.Cluster()
	for _, id := range c.Ring().Replicas(partitioner.Token(partitioner.AppendKey(nil, enc)), op.Table.RF) {
		if string(id) == ln.ID || c.IsLive(id) {
			return false
		}
	}
	return true
}

// hintOnlyWrites returns up to n writes at ANY, each to a partition whose every replica its
// (running) coordinator sees down: the next operations of p's workload that are such, the
// others skipped (not run, so not in the history). With a node stopped, these are the RF 1
// partitions it holds, which only hints can take.
func hintOnlyWrites(p *Pool, target inProcess, n int) []*Op {
	var out []*Op
	for range 200 * n {
		if len(out) == n {
			break
		}
		op := p.W.Next()
		if op.Any && op.Kind != Scan && target.tc.Node(op.Node).Running() && target.ReplicasDown(op) {
			out = append(out, op)
		}
	}
	return out
}

// settleAny waits until every node of tc is up in every node's view and no node holds a hint,
// then marks every acknowledged write at ANY of p's models delivered (Model.SettleAny), so that
// the final reads at ALL must see each one that no later write overwrote.
func settleAny(ctx context.Context, t *testing.T, tc *localcluster.Cluster, p *Pool) {
	t.Helper()
	start := time.Now()
	if err := tc.WaitLive(ctx, tc.Running(), len(tc.Running())); err != nil {
		t.Fatal(err)
	}
	poll.Must(t, 2*time.Minute, "every node's hints replayed", func() error {
		for _, n := range tc.Running() {
			if v := gauge(n.Node().Registry(), "kvnode_hints_pending"); v > 0 {
				return fmt.Errorf("%s holds %v hints", n.Name, v)
			}
		}
		return nil
	})
	settled := 0
	for _, r := range p.runners {
		settled += r.M.SettleAny()
	}
	t.Logf("every hint replayed %v after the last operation: %d acknowledged writes at ANY must now read back at ALL", time.Since(start).Round(time.Millisecond), settled)
}

// gauge returns the value of the metric named name in g (summed over its label sets), 0 when
// absent.
func gauge(g prometheus.Gatherer, name string) float64 {
	mfs, err := g.Gather()
	if err != nil {
		return math.Inf(1)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			} else {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// TestModel runs seeded random histories through random coordinators at random consistency
// levels against in-process clusters of 3 to 5 nodes, with one node stopped for a quarter of
// the history and restarted, and checks every read against the reference model; at the end,
// every partition is read at ALL through every node. A failure prints the seed (replay it with
// -model.seed) and the partition's history.
func TestModel(t *testing.T) {
	f := ProbeFeatures()
	logFeatures(t, f)
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	start := time.Now()
	var total Stats
	histories := 0
	for ; ; seed++ {
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runInProcess(t, seed, f, *opsFlag, &total)
		})
		histories++
		done := histories >= *historiesFlag
		if *durationFlag > 0 {
			done = time.Since(start) >= *durationFlag
		}
		if !ok || done {
			break
		}
	}
	t.Logf("%d histories in %v: %s", histories, time.Since(start).Round(time.Second), total)
	if !t.Failed() && total.Ops >= 1000 && total.Features[shortPagesFeature] == 0 {
		t.Errorf("no scan resumed from a short page in %d operations: the histories do not cover short pages", total.Ops)
	}
}

// runInProcess runs the history of seed against a new in-process cluster and adds what it ran
// to total; a violation fails t.
func runInProcess(t *testing.T, seed uint64, f Features, ops int, total *Stats) {
	ctx := context.Background()
	w := NewWorkload(seed, f)
	p := NewPool(w, *workersFlag)
	defer func() { total.Add(p.Stats()) }() // also when the history fails
	p.SetReplay(fmt.Sprintf("go test ./test/model/ -run 'TestModel$' -v -model.histories 1 -model.ops %d -model.workers %d -model.seed %d", ops, *workersFlag, seed))
	tc, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: w.Nodes, Adjust: func(i int, cfg *node.Config) {
		if i%2 == 0 {
			// Every page of a paged scan through this node ends after its first range read
			// that found rows: the scans resume from short pages' paging states.
			cfg.Coordinator.ScanPageTime = time.Nanosecond
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	target := inProcess{tc}
	if err := p.Setup(ctx, tc.Node(0).Client()); err != nil {
		t.Fatal(err)
	}
	down := int(seed % uint64(w.Nodes))
	t.Logf("seed %d: %d nodes, %d workers; node %d is stopped for the third quarter of %d operations", seed, w.Nodes, *workersFlag, down+1, ops)
	run := func(ops []*Op) {
		t.Helper()
		err := p.Run(ctx, ops, target)
		if err == nil {
			return
		}
		var v *Violation
		if errors.As(err, &v) {
			t.Errorf("%v", v)
			t.Fatalf("%s", shrink(t, v, w.Nodes))
		}
		t.Fatal(err)
	}
	run(p.Next(ops / 2))
	evolve(t, p, tc.Node(int(seed%uint64(w.Nodes))).Client(), seed)
	if err := tc.Stop(down); err != nil {
		t.Fatal(err)
	}
	if err := tc.WaitSeenDown(ctx, down); err != nil {
		t.Fatal(err)
	}
	run(p.Next(ops / 4))
	run(hintOnlyWrites(p, target, 40))
	if err := tc.Restart(ctx, down); err != nil {
		t.Fatal(err)
	}
	run(p.Next(ops - ops/2 - ops/4))
	settleAny(ctx, t, tc, p)
	final := w.FinalReads(client.All)
	run(final)
	for _, op := range final {
		if op.Outcome.Err != nil {
			t.Errorf("final read at ALL with every node up failed: %s", op.Describe())
		}
	}
	scans := w.FinalScans(client.Quorum)
	run(scans)
	for _, op := range scans {
		if op.Outcome.Err != nil {
			t.Errorf("final scan at QUORUM with every node up failed: %s", op.Describe())
		}
	}
	s := p.Stats()
	t.Logf("seed %d: %s", seed, s)
	for k, e := range s.ErrorSamples {
		t.Logf("first %s failure: %s", k, e)
	}
}

// evolve changes the schema at a barrier, every node up: TRUNCATE of one table, and a column
// of another dropped and added again (see Pool.Truncate and Pool.DropAndAddColumn).
func evolve(t *testing.T, p *Pool, c *client.Client, seed uint64) {
	t.Helper()
	ctx := context.Background()
	// Counter tables refuse TRUNCATE and re-adding a dropped counter (docs/cql.md, Counters).
	tables := slices.DeleteFunc(slices.Clone(p.W.Tables), func(t *Table) bool { return t.Counter })
	tr := tables[int(seed%uint64(len(tables)))]
	if err := p.Truncate(ctx, c, tr); err != nil {
		t.Fatal(err)
	}
	for i := range tables {
		alt := tables[(int(seed)+1+i)%len(tables)]
		if len(alt.Regular) == 0 {
			continue
		}
		col := int(seed/7) % len(alt.Regular)
		if err := p.DropAndAddColumn(ctx, c, alt, col); err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: truncated %s, dropped and added %s.%s", seed, tr.QName(), alt.QName(), alt.Regular[col].Name)
		return
	}
	t.Logf("seed %d: truncated %s", seed, tr.QName())
}
