//go:build linux

package fault

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/test/model"
	"github.com/kvnode/kvnode/test/proc"
)

// dcPlaces are the data centers of TestDataCenterCut: n1, n2 in dc1 and n3, n4 in dc2, each on
// a rack of its own.
var dcPlaces = []Place{{"dc1", "r1"}, {"dc1", "r2"}, {"dc2", "r1"}, {"dc2", "r2"}}

// Bounds of TestDataCenterCut.
const (
	wanDelay    = 25 * time.Millisecond // each way between the data centers
	cutFor      = 12 * time.Second      // how long the data centers stay cut
	seenDownMax = 30 * time.Second      // for each side to see the other down (profile local; lifeguard may stretch suspicion to 18 s)
	hintsMax    = 60 * time.Second      // for each side to hold the other's writes after the heal
)

// dcKinds returns the workload of each data center at LOCAL_QUORUM through its own nodes, on
// tables of its own: unique inserts, registers and deletes.
func dcKinds(c *Cluster) []Kind {
	ts := NewTimestamps()
	var ks []Kind
	for _, dc := range []string{"dc1", "dc2"} {
		nodes := c.InDC(dc)
		ks = append(ks,
			Local{NewInserts(Keyspace, "ins_"+dc, gocql.LocalQuorum, ts), dc, nodes},
			Local{NewRegisters(Keyspace, "reg_"+dc, gocql.LocalQuorum, ts, 16), dc, nodes},
			Local{NewDeletes(Keyspace, "del_"+dc, gocql.LocalQuorum, ts), dc, nodes})
	}
	return ks
}

// sideFailures sums an availability's failed and total operations over nodes.
func sideFailures(a Availability, nodes []int) (failed, total int) {
	for _, i := range nodes {
		failed += a.Failed[i]
		total += a.Total[i]
	}
	return failed, total
}

// TestDataCenterCut runs two data centers of two nodes each (NetworkTopologyStrategy
// {'dc1': 2, 'dc2': 2}, a WAN delay between them for internode and gossip traffic) and cuts them from each
// other while each runs its workload at LOCAL_QUORUM through its own nodes: no LOCAL_QUORUM
// operation fails on either side, and once each side sees the other down an EACH_QUORUM write
// through either side is Unavailable. After the heal, each side holds the writes acknowledged on
// the other during the cut (hints replayed: a LOCAL_QUORUM read-back through the other data
// center), and the checker, reading every row back at ALL and QUORUM through every node, finds
// nothing lost, resurrected or stale. It runs under -fault.long (about a minute).
func TestDataCenterCut(t *testing.T) {
	if !*long {
		t.Skip("fault: the data-center cut runs under -fault.long (go test ./test/fault -run TestDataCenterCut -fault.long -v)")
	}
	ctx := prepare(t)
	c := startCluster(ctx, t, Options{Nodes: len(dcPlaces), Profile: "local", Places: dcPlaces, WANDelay: wanDelay, WANGossipDelay: wanDelay}, "")
	dc1, dc2 := c.InDC("dc1"), c.InDC("dc2")
	ks := dcKinds(c)

	var seenDown time.Duration
	var seenErr error
	eachQuorum := map[string]error{} // coordinator → what an EACH_QUORUM write answered during the cut
	during := func(ctx context.Context) {
		cutAt := time.Now()
		if seenErr = awaitSidesDown(ctx, c); seenErr != nil {
			return
		}
		seenDown = time.Since(cutAt)
		for _, i := range []int{dc1[0], dc2[0]} {
			s, err := c.Session(i)
			if err != nil {
				eachQuorum[c.Node(i).Name] = err
				continue
			}
			// A delete of a row no kind writes, at timestamp 1: whatever it leaves, no read sees.
			eachQuorum[c.Node(i).Name] = s.Query(fmt.Sprintf("DELETE FROM %s.ins_dc1 USING TIMESTAMP 1 WHERE p = 0 AND k = -1", Keyspace)).
				Consistency(gocql.EachQuorum).WithContext(ctx).Exec()
			s.Close()
		}
	}

	var converged, reconnected time.Duration
	var convergeErr, reconnectErr error
	healed := func(ctx context.Context) {
		began := time.Now()
		reconnectErr = awaitEachQuorum(ctx, c, []int{dc1[0], dc2[0]})
		reconnected = time.Since(began)
		convergeErr = awaitCrossDC(ctx, c)
		converged = time.Since(began)
	}

	rep := RunScenario(ctx, t, c, Scenario{
		Kinds: ks, Seed: 7, Settle: 2 * time.Second, Rate: 120,
		Replication: "{'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}",
		Steps:       []Step{{Nemesis: DCLink{A: "dc1", B: "dc2", Percent: 100}, For: cutFor, During: during, Healed: healed}},
	})
	rep.Log(t)

	for _, v := range rep.Verdicts {
		if !v.Clean() {
			t.Errorf("%s: %d lost, %d resurrected, %d stale, %d unexpected: %v", v.Kind, v.Lost, v.Resurrected, v.Stale, v.Unexpected, v.Examples)
		}
		if v.Writes == 0 || v.Reads == 0 {
			t.Errorf("%s made %d writes and %d reads: the workload did not run", v.Kind, v.Writes, v.Reads)
		}
	}
	for _, e := range rep.ReadBackErrors {
		t.Errorf("read-back: %s", e)
	}
	for _, w := range rep.Windows {
		if w.Err != nil {
			t.Errorf("%s: %v", w.Name, w.Err)
		}
	}
	cutWin := rep.Availability[0]
	for _, side := range []struct {
		name  string
		nodes []int
	}{{"dc1", dc1}, {"dc2", dc2}} {
		failed, total := sideFailures(cutWin, side.nodes)
		t.Logf("during the cut, %s: %d of %d LOCAL_QUORUM operations failed", side.name, failed, total)
		if total == 0 || failed > 0 {
			t.Errorf("during the cut, %d of %d LOCAL_QUORUM operations through %s failed, want none of some", failed, total, side.name)
		}
	}
	if seenErr != nil {
		t.Errorf("the data centers did not see each other down within %v of the cut: %v", seenDownMax, seenErr)
	} else {
		t.Logf("both data centers saw the other down %v after the cut", seenDown.Round(100*time.Millisecond))
		for node, err := range eachQuorum {
			var un *gocql.RequestErrUnavailable
			if !errors.As(err, &un) {
				t.Errorf("an EACH_QUORUM write through %s during the cut answered %v, want Unavailable", node, err)
			} else {
				t.Logf("EACH_QUORUM through %s during the cut: %v", node, err)
			}
		}
	}
	if reconnectErr != nil {
		t.Errorf("after the heal, EACH_QUORUM writes did not succeed through both data centers within %v: %v", reconnectMax, reconnectErr)
	} else {
		t.Logf("EACH_QUORUM writes succeeded through both data centers %v after all nodes saw each other up (%v after the heal)",
			reconnected.Round(100*time.Millisecond), (rep.Windows[0].Recovered + reconnected).Round(100*time.Millisecond))
	}
	if convergeErr != nil {
		t.Errorf("after the heal, the writes acknowledged during the cut did not reach the other data center: %v", convergeErr)
	} else {
		t.Logf("every side held the other's writes (LOCAL_QUORUM read-back) %v after all nodes saw each other up (%v after the heal)",
			converged.Round(100*time.Millisecond), (rep.Windows[0].Recovered + converged).Round(100*time.Millisecond))
	}
}

// reconnectMax bounds how long after the heal TestDataCenterCut waits for an EACH_QUORUM write
// to succeed through each data center: the internode connections across the WAN must carry
// requests again.
const reconnectMax = 30 * time.Second

// awaitEachQuorum waits, up to reconnectMax, until an EACH_QUORUM write through each of nodes
// succeeds: once every node sees every other up, this needs the internode connections between
// the data centers to work again, which a connection the cut left dead delays until it is
// detected (keepalive) or TCP gives up on it.
func awaitEachQuorum(ctx context.Context, c *Cluster, nodes []int) error {
	for _, i := range nodes {
		s, err := c.Session(i)
		if err != nil {
			return err
		}
		defer s.Close()
		// A delete of a row no kind writes, at timestamp 1: whatever it leaves, no read sees.
		q := fmt.Sprintf("DELETE FROM %s.ins_dc1 USING TIMESTAMP 1 WHERE p = 0 AND k = -1", Keyspace)
		if err := poll.Until(ctx, reconnectMax, fmt.Sprintf("an EACH_QUORUM write through n%d", i+1), func() error {
			return s.Query(q).Consistency(gocql.EachQuorum).WithContext(ctx).Exec()
		}); err != nil {
			return err
		}
	}
	return nil
}

// awaitCrossDC waits, up to hintsMax, until the rows of each data center's inserts and
// registers, as its own nodes read them at LOCAL_QUORUM now, are held by the other data center:
// a LOCAL_QUORUM read through a node of the other data center, which asks only that data
// center's replicas, returns every such insert, and every register at that timestamp or a later
// one. Only hints (or a repair) bring them there: the workload reads each table through its own
// data center alone.
func awaitCrossDC(ctx context.Context, c *Cluster) error {
	for _, dc := range []string{"dc1", "dc2"} {
		own, other := c.InDC(dc)[0], -1
		for i, p := range c.Places {
			if p.DC != dc {
				other = i
				break
			}
		}
		ownS, err := c.Session(own)
		if err != nil {
			return err
		}
		defer ownS.Close()
		otherS, err := c.Session(other)
		if err != nil {
			return err
		}
		defer otherS.Close()
		for _, name := range []string{"ins_" + dc, "reg_" + dc} {
			tb := table{ks: Keyspace, name: name}
			var want map[int64]int64
			if err := poll.Until(ctx, readBackRetry, fmt.Sprintf("%s at LOCAL_QUORUM through n%d", name, own+1), func() error {
				want, err = readBack(ctx, tb, ownS, gocql.LocalQuorum)
				return err
			}); err != nil {
				return err
			}
			if err := poll.Until(ctx, hintsMax, fmt.Sprintf("n%d (%s) holds the %d rows of %s that n%d reads", other+1, c.Places[other].DC, len(want), name, own+1), func() error {
				got, err := readBack(ctx, tb, otherS, gocql.LocalQuorum)
				if err != nil {
					return err
				}
				var missing []string
				for k, v := range want {
					if g, ok := got[k]; !ok || g < v {
						missing = append(missing, fmt.Sprint(k))
					}
				}
				if len(missing) > 0 {
					if len(missing) > 5 {
						missing = append(missing[:5], "...")
					}
					return fmt.Errorf("%d rows missing or older: %s", len(missing), strings.Join(missing, ", "))
				}
				return nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// awaitSidesDown waits, up to seenDownMax, until the nodes of each data center see each other
// up and every node of the other data center down.
func awaitSidesDown(ctx context.Context, c *Cluster) error {
	dc1, dc2 := c.InDC("dc1"), c.InDC("dc2")
	for _, side := range [][2][]int{{dc1, dc2}, {dc2, dc1}} {
		want := map[string]string{}
		for _, i := range side[0] {
			want[c.Node(i).ID] = "UP"
		}
		for _, i := range side[1] {
			want[c.Node(i).ID] = "DOWN"
		}
		var observers []*proc.Node
		for _, i := range side[0] {
			observers = append(observers, c.Node(i))
		}
		if err := c.Proc.WaitStates(ctx, seenDownMax, observers, want); err != nil {
			return err
		}
	}
	return nil
}

// modelTarget is a model.Target over the cluster's processes.
type modelTarget struct{ c *Cluster }

func (m modelTarget) Client(i int) *client.Client {
	if !m.c.Node(i).Running() {
		return nil
	}
	return m.c.Node(i).Client()
}

// Bounds of TestModelAcrossDataCenterCut: the length of each phase, and how long a final read
// that failed is tried again.
const (
	modelOpsPerPhase = 400
	finalRetry       = 30 * time.Second
)

// TestModelAcrossDataCenterCut runs the model-checked workload (package model, SetDataCenters:
// every partition coordinated by the nodes of its home data center at LOCAL_ONE or
// LOCAL_QUORUM, NetworkTopologyStrategy {'dc1': 2, 'dc2': 2}) against two data centers of two
// processes each, in phases: all up; cut from each other (at once, then once each side sees the
// other down); healed. Every read is checked against the model as it runs; no operation may
// fail during the cut on either side (its home data center holds all its replicas it needs);
// at the end every partition is read through every node at QUORUM and ALL. Under -fault.long.
func TestModelAcrossDataCenterCut(t *testing.T) {
	if !*long {
		t.Skip("fault: the model across a data-center cut runs under -fault.long (go test ./test/fault -run TestModelAcrossDataCenterCut -fault.long -v)")
	}
	ctx := prepare(t)
	seed := uint64(time.Now().UnixNano())
	f := model.ProbeFeatures()
	w := model.NewWorkload(seed, f)
	c := startCluster(ctx, t, Options{Nodes: len(dcPlaces), Profile: "local", Places: dcPlaces, WANDelay: wanDelay, WANGossipDelay: wanDelay}, "")
	if err := w.SetDataCenters(model.DataCenters{Names: []string{"dc1", "dc2"}, Nodes: [][]int{c.InDC("dc1"), c.InDC("dc2")}, RF: 2}); err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d, %d operations per phase; features: %s", seed, modelOpsPerPhase, f)
	p := model.NewPool(w, 4)
	p.SetReplay(fmt.Sprintf("seed %d (the outcomes depend on the cluster: TestModelAcrossDataCenterCut)", seed))
	if err := p.Setup(ctx, c.Node(0).Client()); err != nil {
		t.Fatal(err)
	}
	target := modelTarget{c}
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
	phase := func(what string, failuresAllowed bool) {
		t.Helper()
		ops := p.Next(modelOpsPerPhase)
		run(ops)
		failed, total := map[string]int{}, map[string]int{}
		var sample []string
		for _, op := range ops {
			dc := c.Places[op.Node].DC
			total[dc]++
			if op.Outcome.Err != nil || !op.Outcome.Sent {
				failed[dc]++
				if len(sample) < 3 {
					sample = append(sample, op.Describe())
				}
			}
		}
		t.Logf("%s: dc1 %d of %d operations failed, dc2 %d of %d", what, failed["dc1"], total["dc1"], failed["dc2"], total["dc2"])
		if !failuresAllowed && (failed["dc1"] > 0 || failed["dc2"] > 0) {
			t.Errorf("%s: operations at LOCAL_* levels failed, want none: %s", what, strings.Join(sample, "; "))
		}
	}
	phase("all up", false)
	cut := DCLink{A: "dc1", B: "dc2", Percent: 100}
	t.Cleanup(func() { cut.Heal(context.Background(), c) })
	if err := cut.Start(ctx, c); err != nil {
		t.Fatal(err)
	}
	phase("cut, before the sides see each other down", false)
	if err := awaitSidesDown(ctx, c); err != nil {
		t.Fatal(err)
	}
	phase("cut, each side seeing the other down", false)
	if err := cut.Heal(ctx, c); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	if err := c.Proc.WaitStates(ctx, 60*time.Second, c.Proc.Nodes, c.Proc.AllUp()); err != nil {
		t.Fatal(err)
	}
	t.Logf("all nodes saw each other up %v after the heal", time.Since(healed).Round(100*time.Millisecond))
	phase("healed", false)
	// Right after the heal, a read may time out waiting for a replica across the WAN while the
	// internode connection that the cut stalled recovers (TCP retransmits on its own backoff):
	// each failed final read is tried again, and checked again, for up to finalRetry.
	for _, cl := range []client.Consistency{client.Quorum, client.All} {
		began := time.Now()
		final := w.FinalReads(cl)
		run(final)
		key := func(op *model.Op) string { return fmt.Sprint(op.Node, op.Stmt) }
		failed := map[string]string{}
		for _, op := range final {
			if op.Outcome.Err != nil {
				failed[key(op)] = op.Describe()
			}
		}
		first := len(failed)
		for len(failed) > 0 && time.Since(began) < finalRetry {
			var again []*model.Op
			for _, op := range w.FinalReads(cl) {
				if _, ok := failed[key(op)]; ok {
					again = append(again, op)
				}
			}
			run(again)
			for _, op := range again {
				if op.Outcome.Err == nil {
					delete(failed, key(op))
				} else {
					failed[key(op)] = op.Describe()
				}
			}
		}
		for _, d := range failed {
			t.Errorf("final read with every node up kept failing for %v: %s", finalRetry, d)
		}
		t.Logf("final reads at %v of every partition through every node: %d of %d failed at first; all done %v after they began",
			cl, first, len(final), time.Since(began).Round(100*time.Millisecond))
	}
	t.Logf("seed %d: %s", seed, p.Stats())
}
