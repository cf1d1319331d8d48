package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/test/proc"
)

// repairResult is `kvnode repair --json`'s output.
type repairResult struct {
	Tables []struct {
		Keyspace, Table    string
		Ranges             int      `json:"ranges"`
		RangesFailed       int      `json:"ranges_failed"`
		LeavesMismatched   int      `json:"leaves_mismatched"`
		PartitionsStreamed int      `json:"partitions_streamed"`
		Errors             []string `json:"errors"`
	} `json:"tables"`
}

func runRepair(t *testing.T, n *node, target string) repairResult {
	t.Helper()
	stdout, stderr, err := runTool(t, joinTimeout*2, "repair", "--addr", n.Addr, "--json", target)
	if err != nil {
		t.Fatalf("kvnode repair --addr %s %s: %v\nstdout:\n%s\nstderr:\n%s", n.Addr, target, err, stdout, stderr)
	}
	var res repairResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("kvnode repair --json printed %q: %v", stdout, err)
	}
	if len(res.Tables) != 1 || res.Tables[0].RangesFailed != 0 || res.Tables[0].Ranges == 0 {
		t.Fatalf("kvnode repair %s: %+v, want one table with every range repaired", target, res)
	}
	return res
}

// TestRepairConvergesADivergentReplica writes and deletes rows at ONE while a node is down and
// hints are not kept (--max-hint-window 1ms), restarts it, runs `kvnode repair` on it and then
// reads every row at ONE through every node, with the node that took the writes stopped: every
// row reads as written and every deleted row stays deleted.
func TestRepairConvergesADivergentReplica(t *testing.T) {
	skipShort(t)
	tc := startNoHintCluster(t)
	n1, n2, n3 := tc.nodes[0], tc.nodes[1], tc.nodes[2]

	execute(t, n1.Client(), client.Quorum, "CREATE KEYSPACE rk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	execute(t, n1.Client(), client.Quorum, "CREATE TABLE rk.t (k int PRIMARY KEY, v int)")
	const deleted = 20 // rows 0..19 are written everywhere, then deleted while n2 is down
	for k := range deleted {
		execute(t, n1.Client(), client.All, fmt.Sprintf("INSERT INTO rk.t (k, v) VALUES (%d, %d)", k, k))
	}

	if err := n2.Kill(); err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, []*node{n1, n3}, map[string]string{n1.ID: "UP", n2.ID: "DOWN", n3.ID: "UP"})
	for k := range hintRows {
		c := []*node{n1, n3}[k%2].Client()
		if k < deleted {
			execute(t, c, client.One, fmt.Sprintf("DELETE FROM rk.t WHERE k = %d", k))
		} else {
			execute(t, c, client.One, fmt.Sprintf("INSERT INTO rk.t (k, v) VALUES (%d, %d)", k, 10*k))
		}
	}
	if err := n2.Start(); err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())

	res := runRepair(t, n2, "rk.t")
	if res.Tables[0].PartitionsStreamed == 0 || res.Tables[0].LeavesMismatched == 0 {
		t.Errorf("the first repair streamed nothing (%+v): n2 missed writes and deletes", res.Tables[0])
	}
	again := runRepair(t, n2, "rk")
	if again.Tables[0].PartitionsStreamed != 0 {
		t.Errorf("a second repair streamed %d partitions, want none: the first left replicas different", again.Tables[0].PartitionsStreamed)
	}
	t.Logf("repair: %+v; again: %+v", res.Tables[0], again.Tables[0])

	// n1, which took half the writes, stops: n2 and n3 answer alone, each row from one replica.
	if err := n1.Kill(); err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, []*node{n2, n3}, map[string]string{n1.ID: "DOWN", n2.ID: "UP", n3.ID: "UP"})
	for _, through := range []*node{n2, n3} {
		var wrong []string
		for k := range hintRows {
			v, present, served := readAlone(t, through, "rk.t", k)
			switch {
			case !served:
				wrong = append(wrong, fmt.Sprintf("%d unavailable", k))
			case k < deleted && present:
				wrong = append(wrong, fmt.Sprintf("%d deleted but read as %d", k, v))
			case k >= deleted && (!present || v != 10*k):
				wrong = append(wrong, fmt.Sprintf("%d missing", k))
			}
		}
		if len(wrong) > 0 {
			t.Errorf("through %s at ONE: %d rows wrong: %v", through.Name, len(wrong), wrong)
		}
	}
}

// startNoHintCluster starts 3 nodes that keep no hints for a node that is down
// (--max-hint-window 1ms), so that a node that was down misses the writes it was down for.
func startNoHintCluster(t *testing.T) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, pc: &proc.Cluster{}}
	root := t.TempDir()
	t.Cleanup(tc.stopAll)
	noHints := []string{"--max-hint-window", "1ms"}
	pc, err := proc.Start(proc.Options{Binary: kvnodeBinary, Dir: root, Nodes: 3, ExtraArgs: [][]string{noHints, noHints, noHints}})
	if pc != nil {
		tc.pc, tc.nodes = pc, pc.Nodes
	}
	if err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())
	return tc
}

// TestDeletedRowsStayDeletedWithoutRepair deletes rows at ONE, with gc_grace_seconds = 0, while
// a replica is down and no hints are kept, then runs a repair that fails (the replica is down):
// the other replicas must keep the tombstones, so that once the replica is back the rows read as
// deleted at ALL, and after a successful repair too.
func TestDeletedRowsStayDeletedWithoutRepair(t *testing.T) {
	skipShort(t)
	tc := startNoHintCluster(t)
	n1, n2, n3 := tc.nodes[0], tc.nodes[1], tc.nodes[2]
	execute(t, n1.Client(), client.Quorum, "CREATE KEYSPACE gk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	execute(t, n1.Client(), client.Quorum, "CREATE TABLE gk.t (k int PRIMARY KEY, v int) WITH gc_grace_seconds = 0")
	const rows = 30
	for k := range rows {
		execute(t, n1.Client(), client.All, fmt.Sprintf("INSERT INTO gk.t (k, v) VALUES (%d, %d)", k, k))
	}
	if err := n2.Kill(); err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, []*node{n1, n3}, map[string]string{n1.ID: "UP", n2.ID: "DOWN", n3.ID: "UP"})
	for k := range rows {
		execute(t, []*node{n1, n3}[k%2].Client(), client.One, fmt.Sprintf("DELETE FROM gk.t WHERE k = %d", k))
	}
	// A repair with a replica down fails, and so records nothing and purges no tombstone.
	for _, n := range []*node{n1, n3} {
		stdout, _, err := runTool(t, joinTimeout*2, "repair", "--addr", n.Addr, "gk.t")
		if err == nil || !strings.Contains(stdout, "failed: range") {
			t.Fatalf("kvnode repair on %s with %s down: %v, printed:\n%s\nwant failed ranges", n.Name, n2.Name, err, stdout)
		}
	}
	if err := n2.Start(); err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())
	check := func(when string) {
		t.Helper()
		var back []int
		for k := range rows {
			ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
			_, got, err := n2.Client().Query(ctx, client.All, fmt.Sprintf("SELECT v FROM gk.t WHERE k = %d", k))
			cancel()
			if err != nil {
				t.Fatalf("%s: reading row %d at ALL: %v", when, k, err)
			}
			if len(got) > 0 {
				back = append(back, k)
			}
		}
		if len(back) > 0 {
			t.Errorf("%s: deleted rows came back at ALL: %v", when, back)
		}
	}
	check("after the failed repair")
	for _, n := range tc.nodes {
		runRepair(t, n, "gk.t")
	}
	check("after a repair of every node (which purges the tombstones)")
}
