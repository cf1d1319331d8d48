package node

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/catalog"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// TestPullNegotiatesSSTables: a pull that says which sstable format it ingests gets the rows as
// sstables, which a receiver ingests to the source's entries byte for byte; one that does not
// (a peer of an older release) gets them as entries, as before.
func TestPullNegotiatesSSTables(t *testing.T) {
	dir := t.TempDir()
	sc, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};" +
		"CREATE TABLE ks.t (k text PRIMARY KEY, v text)")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "schema.bin"), sc.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	holder, err := catalog.Open(catalog.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := sc.Table("ks", "t")
	open := func(name string) *replica.Store {
		s, err := replica.Open(filepath.Join(dir, name), replica.Options{CacheSize: 1 << 20, MemTableSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	src, dst := open("src"), open("dst")
	for i := range 200 {
		pk := []byte(fmt.Sprintf("k%d", i))
		m := &replicapb.Mutation{TableId: uint64(tbl.ID), PartitionKey: [][]byte{pk}, Token: partitioner.Token(partitioner.AppendKey(nil, [][]byte{pk})),
			Rows: []*replicapb.Row{{Marker: new(int64(5)), Cells: []*replicapb.Cell{{Column: "v", Value: []byte("value"), Timestamp: 5}}}}}
		if err := src.Apply(tbl, m); err != nil {
			t.Fatal(err)
		}
	}
	tp := newTopology(&Node{cfg: Config{StreamThroughput: math.MaxInt32}, schema: holder, store: src})
	pull := func(format uint32) (entries int, parts []*replicapb.SSTablePart) {
		req := &replicapb.PullRequest{Ranges: []*replicapb.TokenRange{{Start: 0, End: 0}}, TableIds: []uint64{uint64(tbl.ID)}, SstableFormat: format}
		if err := tp.Pull(context.Background(), req, func(c *replicapb.PullChunk) error {
			entries += len(c.GetEntries())
			if c.GetSstable() != nil {
				parts = append(parts, c.GetSstable())
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return entries, parts
	}
	if n, parts := pull(0); n != 400 || len(parts) != 0 {
		t.Errorf("a pull without sstable_format got %d entries and %d sstable parts, want 400 entries (200 rows' markers and cells)", n, len(parts))
	}
	n, parts := pull(replica.SSTableFormat())
	if n != 0 || len(parts) == 0 {
		t.Fatalf("a pull with sstable_format got %d entries and %d sstable parts, want sstables only", n, len(parts))
	}
	g := dst.NewSSTIngest(func(schema.TableID, int64, int64) error { return nil }, holder)
	for _, p := range parts {
		if err := g.Add(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	scan := func(s *replica.Store) (out []string) {
		s.ScanTokens(tbl.ID, math.MinInt64, math.MaxInt64, func(k, v []byte) error {
			out = append(out, fmt.Sprintf("%x=%x", k, v))
			return nil
		})
		return out
	}
	if got, want := scan(dst), scan(src); len(want) != 400 || !slices.Equal(got, want) {
		t.Errorf("the receiver holds %d entries after ingesting the pulled sstables, the source %d, unequal", len(got), len(want))
	}
}
