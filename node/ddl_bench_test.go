package node_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
)

// BenchmarkCreateTable measures CREATE TABLE through one node of a three-node cluster on
// loopback, from the client's request to its answer: agreement among the nodes, the push, and
// the wait until every live node gossips the new schema digest.
func BenchmarkCreateTable(b *testing.B) {
	var nodes []*node.Node
	defer func() {
		for _, nd := range nodes {
			nd.Close()
		}
	}()
	for i := range 3 {
		var seeds []string
		if i > 0 {
			seeds = []string{nodes[0].GossipAddr()}
		}
		nd, err := node.Start(context.Background(), nodeConfig(filepath.Join(b.TempDir(), fmt.Sprint(i)), seeds))
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, nd)
	}
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		changed := nodes[0].Cluster().Changed()
		live := 0
		for _, m := range nodes[0].Cluster().Members() {
			if m.Live {
				live++
			}
		}
		if live == 3 {
			break
		}
		select {
		case <-changed:
		case <-timeout.C:
			b.Fatal("the three nodes did not see each other")
		}
	}
	ctx := context.Background()
	c, err := client.Dial(ctx, nodes[0].Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Execute(ctx, client.One, "CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		res, err := c.Execute(ctx, client.One, fmt.Sprintf("CREATE TABLE r.t%d (k text PRIMARY KEY, v int)", i))
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Warnings) > 0 {
			b.Fatalf("CREATE TABLE warned %v: agreement not reached", res.Warnings)
		}
	}
}
