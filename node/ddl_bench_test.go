package node_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
)

// BenchmarkCreateTable measures CREATE TABLE through one node of a three-node cluster on
// loopback, from the client's request to its answer: agreement among the nodes, the push, and
// the wait until every live node gossips the new schema digest.
func BenchmarkCreateTable(b *testing.B) {
	ctx := context.Background()
	tc, err := localcluster.Start(ctx, localcluster.Options{
		Dir:    b.TempDir(),
		Nodes:  3,
		Adjust: func(_ int, cfg *node.Config) { cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout },
	})
	if err != nil {
		b.Fatal(err)
	}
	defer tc.Close()
	c := tc.Node(0).Client()
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
