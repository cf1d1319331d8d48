package localcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node/localcluster"
)

// BenchmarkSelectIn compares one SELECT ... WHERE k IN (10 keys) with the same 10 partitions
// read by 10 sequential single-partition SELECTs, at QUORUM through one node of three (RF 3,
// gRPC on loopback, pebble on disk). Both run in each iteration, alternated, and the
// benchmark reports each one's latency and their ratio (IN / sequential).
func BenchmarkSelectIn(b *testing.B) {
	ctx := context.Background()
	tc, err := localcluster.Start(ctx, localcluster.Options{Dir: b.TempDir(), Nodes: 3})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tc.Close() })
	c := tc.Node(0).Client()
	stmts := []string{
		"CREATE KEYSPACE bin WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE bin.t (k int, c int, v text, PRIMARY KEY (k, c))",
	}
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = fmt.Sprint(i)
		stmts = append(stmts, fmt.Sprintf("INSERT INTO bin.t (k, c, v) VALUES (%d, 1, 'value %d')", i, i))
	}
	for _, s := range stmts {
		if _, err := c.Execute(ctx, client.All, s); err != nil {
			b.Fatalf("%s: %v", s, err)
		}
	}
	in := "SELECT * FROM bin.t WHERE k IN (" + strings.Join(keys, ", ") + ")"
	var inTime, seqTime time.Duration
	for b.Loop() {
		start := time.Now()
		_, rows, err := c.Query(ctx, client.Quorum, in)
		if err != nil || len(rows) != 10 {
			b.Fatalf("%s: %d rows, %v", in, len(rows), err)
		}
		mid := time.Now()
		for _, k := range keys {
			if _, rows, err := c.Query(ctx, client.Quorum, "SELECT * FROM bin.t WHERE k = "+k); err != nil || len(rows) != 1 {
				b.Fatalf("k = %s: %d rows, %v", k, len(rows), err)
			}
		}
		inTime += mid.Sub(start)
		seqTime += time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(float64(inTime.Microseconds())/n, "µs-IN/op")
	b.ReportMetric(float64(seqTime.Microseconds())/n, "µs-10-sequential/op")
	b.ReportMetric(float64(inTime)/float64(seqTime), "IN/sequential")
}
