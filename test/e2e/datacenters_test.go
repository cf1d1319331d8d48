package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/test/proc"
)

// TestNetworkTopologyPlacesPerDataCenter runs four processes in two data centers (n1, n2 in dc1
// on racks r1, r2; n3, n4 in dc2) and a keyspace with NetworkTopologyStrategy {'dc1': 1, 'dc2':
// 1}: every row has one replica in each data center. With dc2's nodes stopped, a write at ALL
// of every key is Unavailable (its dc2 replica is down) and a read at ONE through n1 finds
// every row (its dc1 replica is up), while a SimpleStrategy keyspace of factor 2 on the same
// ring has keys with both replicas in dc1, whose writes at ALL still succeed.
func TestNetworkTopologyPlacesPerDataCenter(t *testing.T) {
	tc := &testCluster{t: t, pc: &proc.Cluster{}}
	root := t.TempDir()
	t.Cleanup(tc.stopAll)
	extra := [][]string{{"--dc", "dc1", "--rack", "r1"}, {"--dc", "dc1", "--rack", "r2"}, {"--dc", "dc2", "--rack", "r1"}, {"--dc", "dc2", "--rack", "r2"}}
	pc, err := proc.Start(proc.Options{Binary: kvnodeBinary, Dir: root, Nodes: 4, ExtraArgs: extra})
	if pc != nil {
		tc.pc, tc.nodes = pc, pc.Nodes
	}
	if err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())
	n1 := tc.nodes[0].Client()
	for _, ddl := range []string{
		"CREATE KEYSPACE nts WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1, 'dc2': 1}",
		"CREATE TABLE nts.t (k int PRIMARY KEY, v int)",
		"CREATE KEYSPACE simple WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE simple.t (k int PRIMARY KEY, v int)",
	} {
		// A schema change is agreed by all four nodes, which a loaded machine can make slower than
		// one statement's rpcTimeout.
		ctx, cancel := context.WithTimeout(context.Background(), joinTimeout)
		_, err := n1.Execute(ctx, client.One, ddl)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	res := execute(t, n1, client.One, "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = 'nts'")
	if got := fmt.Sprint(res.Rows); !strings.Contains(got, "NetworkTopologyStrategy") || !strings.Contains(got, "dc1") {
		t.Errorf("system_schema.keyspaces has replication %s for nts", got)
	}
	_, err = n1.Execute(context.Background(), client.One, "CREATE KEYSPACE bad WITH replication = {'class': 'NetworkTopologyStrategy', 'dc9': 1}")
	if err == nil || !strings.Contains(err.Error(), "unrecognized strategy option {dc9}") {
		t.Errorf("a keyspace in data center dc9, which no node is in: %v", err)
	}
	const keys = 40
	for k := range keys {
		execute(t, n1, client.All, fmt.Sprintf("INSERT INTO nts.t (k, v) VALUES (%d, %d)", k, k))
		execute(t, n1, client.All, fmt.Sprintf("INSERT INTO simple.t (k, v) VALUES (%d, %d)", k, k))
	}
	n3, n4 := tc.nodes[2], tc.nodes[3]
	for _, n := range []*node{n3, n4} {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	tc.waitStates(joinTimeout, tc.nodes[:2], map[string]string{tc.nodes[0].ID: "UP", tc.nodes[1].ID: "UP", n3.ID: "DOWN", n4.ID: "DOWN"})
	simpleInDC1 := 0
	for k := range keys {
		ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
		_, err := n1.Execute(ctx, client.All, fmt.Sprintf("INSERT INTO nts.t (k, v) VALUES (%d, 0)", k))
		var un *client.UnavailableError
		if !errors.As(err, &un) {
			t.Errorf("key %d: a write at ALL with dc2 down answered %v, want Unavailable (a replica in dc2)", k, err)
		}
		if _, err := n1.Execute(ctx, client.All, fmt.Sprintf("INSERT INTO simple.t (k, v) VALUES (%d, 0)", k)); err == nil {
			simpleInDC1++
		}
		res, err := n1.Execute(ctx, client.One, fmt.Sprintf("SELECT v FROM nts.t WHERE k = %d", k))
		cancel()
		if err != nil || len(res.Rows) != 1 {
			t.Errorf("key %d: a read at ONE with dc2 down: %v, %v; want its row from its dc1 replica", k, res, err)
		}
	}
	if simpleInDC1 == 0 {
		t.Errorf("no key of the SimpleStrategy keyspace has both replicas in dc1: the contrast shows nothing")
	}
	t.Logf("SimpleStrategy RF 2: %d of %d keys have both replicas in dc1; NetworkTopologyStrategy: none", simpleInDC1, keys)
}
