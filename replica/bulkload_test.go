package replica

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// bulkOpts are the options of the bulk load tests' stores, on fs.
func bulkOpts(fs vfs.FS) Options { return Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 1 << 20} }

// TestBulkLoadReadsBackAndMergesByTimestamp loads rows by ingestion into a store that already
// holds a newer version of one of them, then writes a newer version of another: reads see
// the loaded rows, and last-write-wins decides between loaded and written ones whatever
// their order, in both ingestion shapes (sorted chunks in one ingestion, overlapping chunks
// one after another).
func TestBulkLoadReadsBackAndMergesByTimestamp(t *testing.T) {
	for _, sorted := range []bool{true, false} {
		t.Run(fmt.Sprintf("sorted=%v", sorted), func(t *testing.T) {
			fs := vfs.NewMem()
			tbl := testTable(t)
			s, err := Open("db", bulkOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			// Written before the load, newer than the loaded version.
			if err := s.Apply(tbl, mut("p0", row(1, "a", "marker@200", "v=99@200"))); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			const parts = 300
			keys := make([]string, parts)
			for i := range keys {
				keys[i] = fmt.Sprintf("p%d", i)
			}
			if sorted { // by token, then key: the storage order of partitions
				slices.SortFunc(keys, func(a, b string) int {
					return cmp.Or(cmp.Compare(tokenOf(a), tokenOf(b)), cmp.Compare(a, b))
				})
			}
			l, err := NewBulkLoader("db", tbl, bulkOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			l.chunk = 8 << 10 // several files
			for _, k := range keys {
				if err := l.Add(mut(k, row(1, "a", "marker@100", "v=1@100"), row(2, "b", "w=x@100"))); err != nil {
					t.Fatal(err)
				}
				if k == "p1" { // the same key twice in one chunk: merged by timestamp before it is written
					if err := l.Add(mut(k, row(2, "b", "w=y@101"))); err != nil {
						t.Fatal(err)
					}
				}
			}
			st, err := l.Ingest(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if st.Files < 2 || st.Mutations != parts+1 || st.Entries != 3*parts {
				t.Fatalf("stats %+v: want several files, %d mutations, %d entries", st, parts+1, 3*parts)
			}
			if wantIngests := map[bool]int{true: 1, false: st.Files}[sorted]; st.Ingests != wantIngests {
				t.Errorf("%d ingestions of %d files, want %d", st.Ingests, st.Files, wantIngests)
			}
			if names, _ := fs.List("db.bulkload"); len(names) != 0 {
				t.Errorf("the sstables' directory is left with %v", names)
			}

			s, err = Open("db", bulkOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Written after the load, newer than the loaded version.
			if err := s.Apply(tbl, mut("p2", row(2, "b", "w=z@150"))); err != nil {
				t.Fatal(err)
			}
			for i, k := range []string{"p0", "p1", "p2", "p3", fmt.Sprintf("p%d", parts-1)} {
				want := []string{
					"(1,a) marker@200 [v=99@200]; (2,b) [w=x@100]",
					"(1,a) marker@100 [v=1@100]; (2,b) [w=y@101]",
					"(1,a) marker@100 [v=1@100]; (2,b) [w=z@150]",
					"(1,a) marker@100 [v=1@100]; (2,b) [w=x@100]",
					"(1,a) marker@100 [v=1@100]; (2,b) [w=x@100]",
				}[i]
				if got := readAs(t, s, tbl, k); got != want {
					t.Errorf("partition %s reads %s, want %s", k, got, want)
				}
			}
		})
	}
}

// TestBulkLoadRefuses checks that a loader refuses what it does not encode, naming it, and adds
// nothing of a refused mutation.
func TestBulkLoadRefuses(t *testing.T) {
	fs := vfs.NewMem()
	tbl := testTable(t)
	l, err := NewBulkLoader("db", tbl, bulkOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Abort()
	if _, err := NewBulkLoader("db", tbl, bulkOpts(fs)); err == nil {
		t.Error("a second loader of the same store started while the first one runs")
	}
	bad := mut("b", row(1, "a", "marker@5"))
	bad.Token++
	for name, m := range map[string]*replicapb.Mutation{
		"token":           bad,
		"column \"nope\"": mut("c", row(1, "a", "marker@5", "nope=1@5")),
		"writes nothing":  mut("d"),
	} {
		if err := l.Add(m); !errors.Is(err, ErrBadRequest) {
			t.Errorf("Add of a mutation with %s: %v, want ErrBadRequest", name, err)
		}
	}
	if len(l.entries) != 0 || l.stats.Mutations != 0 {
		t.Errorf("refused mutations left %d entries, %d mutations", len(l.entries), l.stats.Mutations)
	}
}

// TestBulkLoadTakesRangeTombstones: the loader encodes as Apply does, range tombstones too: a
// loaded one deletes the older rows the store held before the load and the loaded rows it covers,
// and not a newer row.
func TestBulkLoadTakesRangeTombstones(t *testing.T) {
	fs := vfs.NewMem()
	tbl := testTable(t)
	s, err := Open("db", bulkOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(tbl, mut("p", row(1, "a", "marker@100"), row(3, "c", "marker@300"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := NewBulkLoader("db", tbl, bulkOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	rt := mut("p", row(2, "b", "marker@100"))
	rt.RangeTombstones = []*replicapb.RangeTombstone{{Timestamp: 200}}
	if err := l.Add(rt); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Ingest(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err = Open("db", bulkOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := readAs(t, s, tbl, "p"), "(3,c) marker@300"; got != want {
		t.Errorf("partition p reads %s, want %s (the range tombstone at 200 covers the rows at 100)", got, want)
	}
}
