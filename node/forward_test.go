package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
)

// TestWriteCrossesTheWANOnce: six nodes, three in dc1 and three in dc2, a keyspace with three
// replicas in each. Writes through a node of dc1 at EACH_QUORUM send dc2 one forward_mutate
// request each and not one mutate (kvnode_internode_cross_dc_requests_total), and the forwarders
// of dc2 send each write on to the other two replicas there
// (kvnode_internode_forwarded_mutations_total).
func TestWriteCrossesTheWANOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 6, Adjust: func(i int, cfg *node.Config) {
		cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout
		cfg.Cluster.DataCenter = []string{"dc1", "dc2"}[i/3]
		cfg.Cluster.Rack = fmt.Sprintf("r%d", i%3+1)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ex := c.Node(0).Node().Executor()
	for _, ddl := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 3}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
	} {
		if _, err := ex.Execute(ctx, coordinator.Statement{Text: ddl}); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	reg := c.Node(0).Node().Registry()
	const name = "kvnode_internode_cross_dc_requests_total"
	forwards, mutates := metricValue(t, reg, name, "kind", "forward_mutate"), metricValue(t, reg, name, "kind", "mutate")
	const writes = 10
	for k := range writes {
		stmt := coordinator.Statement{Text: fmt.Sprintf("INSERT INTO ks.t (k, v) VALUES (%d, 1)", k), Keyspace: "ks", Consistency: coordinator.EachQuorum}
		if _, err := ex.Execute(ctx, stmt); err != nil {
			t.Fatalf("a write at EACH_QUORUM through n1: %v", err)
		}
	}
	if n := metricValue(t, reg, name, "kind", "forward_mutate") - forwards; n != writes {
		t.Errorf("n1 sent dc2 %v forward_mutate requests for %d writes, want one each", n, writes)
	}
	if n := metricValue(t, reg, name, "kind", "mutate") - mutates; n != 0 {
		t.Errorf("n1 sent dc2 %v mutate requests for %d writes, want none (forwarded)", n, writes)
	}
	poll.Must(t, 10*time.Second, "dc2's forwarders to send each write on to two replicas", func() error {
		relayed := 0.0
		for i := 3; i < 6; i++ {
			relayed += metricValue(t, c.Node(i).Node().Registry(), "kvnode_internode_forwarded_mutations_total")
		}
		if relayed != 2*writes {
			return fmt.Errorf("%v sent on", relayed)
		}
		return nil
	})
}
