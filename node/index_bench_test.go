package node_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
)

// BenchmarkIndexQueryVsPrimaryKey compares, in the same run, a query by a secondary index that
// returns one row (WHERE v = ?, v unique) with a read of that row by its primary key, at QUORUM
// on three in-process nodes (RF 3, 16 vnodes each) through one coordinator, over a table of 2,000
// rows; each iteration does one of each, alternated. It reports both latencies and their ratio.
//
//	go test ./node -run '^$' -bench BenchmarkIndexQueryVsPrimaryKey -benchtime 300x
func BenchmarkIndexQueryVsPrimaryKey(b *testing.B) {
	ctx := context.Background()
	tc, err := localcluster.Start(ctx, localcluster.Options{Dir: b.TempDir(), Nodes: 3, Adjust: func(_ int, cfg *node.Config) {
		cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tc.Close() })
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.ib (k int PRIMARY KEY, v int, w text)",
		"CREATE INDEX ON ks.ib (v)",
	} {
		if _, err := tc.Node(0).Client().Execute(ctx, 1, stmt); err != nil {
			b.Fatal(err)
		}
	}
	s := gocqlTo(b, tc.Node(0).Node().CQLAddr(), false)
	const rows = 2000
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for k := w; k < rows; k += 8 {
				if err := s.Query("INSERT INTO ib (k, v, w) VALUES (?, ?, ?)", k, k+1_000_000, fmt.Sprintf("row %d", k)).Exec(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	poll.Must(b, 30*time.Second, "the index built", func() error {
		return s.Query("SELECT k FROM ib WHERE v = 1000000").Exec()
	})
	rng := rand.New(rand.NewPCG(1, 2))
	var pk, ix time.Duration
	b.ResetTimer()
	for i := range b.N {
		k := rng.IntN(rows)
		var got int
		for j := range 2 {
			start := time.Now()
			var err error
			if (i+j)%2 == 0 {
				err = s.Query("SELECT k FROM ib WHERE k = ?", k).Scan(&got)
				pk += time.Since(start)
			} else {
				err = s.Query("SELECT k FROM ib WHERE v = ?", k+1_000_000).Scan(&got)
				ix += time.Since(start)
			}
			if err != nil || got != k {
				b.Fatalf("read of row %d: got %d, %v", k, got, err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(pk.Microseconds())/float64(b.N), "µs/pk-read")
	b.ReportMetric(float64(ix.Microseconds())/float64(b.N), "µs/index-query")
	b.ReportMetric(float64(ix)/float64(pk), "index/pk")
}
