package snapshot_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/snapshot"
)

// letters are the values' characters: text, little to compress.
const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

var benchMiB = flag.Int("snapshot.mib", 64, "MiB of data BenchmarkTake loads before it snapshots")

// BenchmarkTake measures a snapshot of one table holding -snapshot.mib MiB (1 KiB values, 16 rows
// a partition) in a store of production sizes (64 MiB memtable, 256 MiB cache), another table
// beside it of the same size: before each snapshot 4 MiB more are written, so each one flushes
// them. It reports the snapshot's size on disk and its true size (what the live store does not
// share), and the data directory's size.
//
//	go test -run '^$' -bench BenchmarkTake -benchtime 5x ./snapshot/ -snapshot.mib 1024
func BenchmarkTake(b *testing.B) {
	dir := b.TempDir()
	store, err := replica.Open(filepath.Join(dir, "data"), replica.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	f := &fixture{dir: dir, store: store}
	f.s = newFixture(b, snapshot.Options{}).s // the schema only
	m, err := snapshot.New(snapshot.Config{Dir: filepath.Join(dir, "snapshots"), Store: store, StoreDir: filepath.Join(dir, "data")})
	if err != nil {
		b.Fatal(err)
	}
	tb, other := f.table(b, "ks", "t"), f.table(b, "ks", "u")
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 1024)
	next := 0
	load := func(mib int) {
		for range mib * 1024 / 16 {
			pk := intBytes(next)
			next++
			ts := time.Now().UnixMicro()
			mu := &replicapb.Mutation{TableId: uint64(tb.ID), PartitionKey: [][]byte{pk}, Token: partitioner.Token(pk)}
			for c := range 16 {
				for i := range value {
					value[i] = letters[rng.IntN(len(letters))]
				}
				mu.Rows = append(mu.Rows, &replicapb.Row{Clustering: [][]byte{intBytes(c)},
					Cells: []*replicapb.Cell{{Column: "v", Value: append([]byte(nil), value...), Timestamp: ts}}})
			}
			if err := store.Apply(tb, mu); err != nil {
				b.Fatal(err)
			}
		}
	}
	start := time.Now()
	load(*benchMiB)
	// The other table: data a table snapshot leaves out.
	for k := range *benchMiB * 1024 {
		pk := intBytes(k)
		for i := range value {
			value[i] = letters[rng.IntN(len(letters))]
		}
		ts := time.Now().UnixMicro()
		mu := &replicapb.Mutation{TableId: uint64(other.ID), PartitionKey: [][]byte{pk}, Token: partitioner.Token(pk),
			Rows: []*replicapb.Row{{Cells: []*replicapb.Cell{{Column: "v", Value: value, Timestamp: ts}}}}}
		if err := store.Apply(other, mu); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("loaded 2 × %d MiB in %v", *benchMiB, time.Since(start).Round(time.Millisecond))
	var bytes, trueBytes int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		load(4)
		b.StartTimer()
		if _, err := m.Take(f.s, snapshot.Request{Tag: fmt.Sprint("b", i), Keyspace: "ks", Table: "t"}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		list, err := m.List()
		if err != nil || len(list) != 1 {
			b.Fatal(list, err)
		}
		bytes, trueBytes = list[0].Bytes, list[0].TrueBytes
		if _, err := m.Clear(""); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(bytes)/(1<<20), "snapshot-MiB")
	b.ReportMetric(float64(trueBytes)/(1<<10), "true-KiB")
	b.ReportMetric(float64(dirSize(b, filepath.Join(dir, "data")))/(1<<20), "store-MiB")
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkRestore measures Restore of a table of -snapshot.mib MiB into its recreated table in
// the same store (the Writer applies locally: no network, no replication), 8 partitions at once.
//
//	go test -run '^$' -bench BenchmarkRestore -benchtime 1x ./snapshot/ -snapshot.mib 256
func BenchmarkRestore(b *testing.B) {
	f := newFixture(b, snapshot.Options{})
	tb := f.table(b, "ks", "t")
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 1024)
	for k := range *benchMiB * 1024 / 16 {
		pk := intBytes(k)
		ts := time.Now().UnixMicro()
		mu := &replicapb.Mutation{TableId: uint64(tb.ID), PartitionKey: [][]byte{pk}, Token: partitioner.Token(pk)}
		for c := range 16 {
			for i := range value {
				value[i] = letters[rng.IntN(len(letters))]
			}
			mu.Rows = append(mu.Rows, &replicapb.Row{Clustering: [][]byte{intBytes(c)},
				Cells: []*replicapb.Cell{{Column: "v", Value: append([]byte(nil), value...), Timestamp: ts}}})
		}
		if err := f.store.Apply(tb, mu); err != nil {
			b.Fatal(err)
		}
	}
	man, err := f.m.Take(f.s, snapshot.Request{Tag: "r", Keyspace: "ks", Table: "t"})
	if err != nil {
		b.Fatal(err)
	}
	var bytes uint64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		f.ddl(b, "DROP TABLE ks.t")
		f.ddl(b, man.Tables[0].CQL)
		b.StartTimer()
		got, err := f.m.Restore(context.Background(), f.s, "r", "ks", "t", storeWriter{f.store})
		if err != nil || len(got) != 1 {
			b.Fatal(got, err)
		}
		bytes += got[0].Bytes
	}
	b.ReportMetric(float64(bytes)/(1<<20)/b.Elapsed().Seconds(), "MiB/s")
}
