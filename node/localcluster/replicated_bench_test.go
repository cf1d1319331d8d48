package localcluster_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node/localcluster"
)

// BenchmarkReplicatedWrite writes single-row partitions through the three nodes of one process
// (gRPC on loopback, pebble on disk), 16 writers at once: rf3 at QUORUM to a keyspace of RF 3,
// rf1 at ONE to one of RF 1. Profiled (-cpuprofile), it shows what a replicated write costs
// beyond its replicas' writes: the internode path.
func BenchmarkReplicatedWrite(b *testing.B) {
	ctx := context.Background()
	tc, err := localcluster.Start(ctx, localcluster.Options{Dir: b.TempDir(), Nodes: 3})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tc.Close() })
	c := tc.Node(0).Client()
	for _, s := range []string{
		"CREATE KEYSPACE rf3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE rf3.t (k int PRIMARY KEY, v text)",
		"CREATE KEYSPACE rf1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE rf1.t (k int PRIMARY KEY, v text)",
	} {
		if _, err := c.Execute(ctx, client.All, s); err != nil {
			b.Fatalf("%s: %v", s, err)
		}
	}
	for _, ks := range []struct {
		name string
		cl   client.Consistency
	}{{"rf3", client.Quorum}, {"rf1", client.One}} {
		b.Run(ks.name, func(b *testing.B) {
			var n atomic.Int64
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k := n.Add(1) % 1000
					c := tc.Node(int(k % 3)).Client()
					s := fmt.Sprintf("INSERT INTO %s.t (k, v) VALUES (%d, 'value')", ks.name, k)
					if _, err := c.Execute(ctx, ks.cl, s); err != nil {
						b.Fatalf("%s: %v", s, err)
					}
				}
			})
		})
	}
}
