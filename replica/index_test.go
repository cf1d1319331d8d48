package replica

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// indexedTable returns ks.t of testDDL's shape with w text indexed, in a schema of its own.
func indexedTable(t *testing.T) (*schema.Schema, *schema.Table) {
	t.Helper()
	s, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};" +
		"CREATE TABLE ks.t (k text, c1 int, c2 text, v int, w text, PRIMARY KEY ((k), c1, c2));" +
		"CREATE INDEX wi ON ks.t (w);")
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := s.Table("ks", "t")
	return s, tbl
}

func idxMut(tbl *schema.Table, pk string, rows ...*replicapb.Row) *replicapb.Mutation {
	m := mut(pk, rows...)
	m.TableId = uint64(tbl.ID)
	return m
}

// indexKeys asks s's index of tbl for value v over the whole ring and returns the partition
// keys it answers, in order.
func indexKeys(t *testing.T, s *Store, tbl *schema.Table, v string, limit uint32) ([]string, bool) {
	t.Helper()
	ix := tbl.Indexes()[0]
	resp, err := s.ReadRange(tbl, &replicapb.RangeReadRequest{TableId: uint64(tbl.ID), StartToken: math.MinInt64, EndToken: math.MaxInt64,
		IndexId: uint64(ix.ID), IndexValue: []byte(v), Limit: limit})
	if err != nil {
		t.Fatalf("index read of %q: %v", v, err)
	}
	var keys []string
	for _, p := range resp.Partitions {
		keys = append(keys, string(p.PartitionKey[0]))
	}
	return keys, resp.Stopped
}

func TestIndexEntriesFollowTheRows(t *testing.T) {
	s, _ := openMem(t)
	clock := &fakeClock{t: time.Unix(1000, 0)}
	s.now = clock.now
	_, tbl := indexedTable(t)
	ix := tbl.Indexes()[0]
	if _, err := s.ReadRange(tbl, &replicapb.RangeReadRequest{TableId: uint64(tbl.ID), StartToken: math.MinInt64, EndToken: math.MaxInt64, IndexId: uint64(ix.ID), IndexValue: []byte("a")}); err == nil || !strings.Contains(err.Error(), ErrIndexNotBuilt.Error()) {
		t.Fatalf("index read before the build: %v, want %v", err, ErrIndexNotBuilt)
	}
	mustApply(t, s, tbl,
		idxMut(tbl, "p1", row(1, "a", "w=red@5"), row(2, "b", "w=blue@5")),
		idxMut(tbl, "p2", row(1, "a", "w=red@5")),
	)
	// The build indexes the rows written before it (the writes above indexed themselves too).
	if err := s.BuildIndex(context.Background(), tbl, &ix, nil); err != nil {
		t.Fatal(err)
	}
	sortedKeys := func(v string) []string {
		keys, _ := indexKeys(t, s, tbl, v, 0)
		slices.Sort(keys)
		return keys
	}
	if got := sortedKeys("red"); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Fatalf("red = %v, want p1 p2", got)
	}
	// An overwrite leaves a stale entry, which the read skips; an older write (out of order)
	// leaves its entry stale at once.
	mustApply(t, s, tbl, idxMut(tbl, "p2", row(1, "a", "w=green@6")), idxMut(tbl, "p1", row(2, "b", "w=red@4")))
	if got := sortedKeys("red"); !slices.Equal(got, []string{"p1", "p2"}[:1]) {
		t.Errorf("red after overwriting p2 = %v, want p1", got)
	}
	if got := sortedKeys("green"); !slices.Equal(got, []string{"p2"}) {
		t.Errorf("green = %v, want p2", got)
	}
	// Deletes: a row tombstone, a cell tombstone, a partition deletion.
	mustApply(t, s, tbl, idxMut(tbl, "p1", row(1, "a", "deleted@7")))
	if got := sortedKeys("red"); len(got) != 0 {
		t.Errorf("red after deleting p1's row = %v, want none", got)
	}
	mustApply(t, s, tbl, idxMut(tbl, "p1", row(2, "b", "w=null@8")))
	if got := sortedKeys("blue"); len(got) != 0 {
		t.Errorf("blue after deleting the cell = %v, want none", got)
	}
	pd := int64(9)
	m := idxMut(tbl, "p2")
	m.PartitionDeletion = &pd
	mustApply(t, s, tbl, m)
	if got := sortedKeys("green"); len(got) != 0 {
		t.Errorf("green after deleting p2 = %v, want none", got)
	}
	// An expiring value is found until it expires.
	r := row(3, "c", "w=brief@10")
	r.Cells[0].Ttl, r.Cells[0].Expires = 5, 1005
	mustApply(t, s, tbl, idxMut(tbl, "p3", r))
	if got := sortedKeys("brief"); !slices.Equal(got, []string{"p3"}) {
		t.Errorf("brief before expiry = %v", got)
	}
	clock.t = time.Unix(1006, 0)
	if got := sortedKeys("brief"); len(got) != 0 {
		t.Errorf("brief after expiry = %v, want none", got)
	}
	// Limits and resumption: one partition a page, then after it.
	for _, pk := range []string{"a", "b", "c", "d"} {
		mustApply(t, s, tbl, idxMut(tbl, pk, row(1, "x", "w=many@20"), row(2, "y", "w=many@20")))
	}
	var pages []string
	req := &replicapb.RangeReadRequest{TableId: uint64(tbl.ID), StartToken: math.MinInt64, EndToken: math.MaxInt64, IndexId: uint64(ix.ID), IndexValue: []byte("many"), Limit: 1}
	for range 10 {
		resp, err := s.ReadRange(tbl, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Partitions) == 0 {
			break
		}
		last := resp.Partitions[len(resp.Partitions)-1]
		pages = append(pages, string(last.PartitionKey[0]))
		if !resp.Stopped {
			break
		}
		req.StartToken, req.StartPartitionKey = last.Token, last.PartitionKey
	}
	all := sortedKeys("many")
	if len(pages) != 4 || len(all) != 4 {
		t.Errorf("paged index read = %v, unpaged %v, want each of a b c d once", pages, all)
	}

	// DROP INDEX and DROP TABLE delete the entries.
	if err := s.DropIndex(tbl.ID, ix.ID); err != nil {
		t.Fatal(err)
	}
	if built, rec, _ := s.IndexState(tbl.ID, ix.ID); built || rec {
		t.Errorf("after DropIndex: built %v, recorded %v", built, rec)
	}
	if n := countPrefix(t, s, indexPrefix); n != 0 {
		t.Errorf("%d index entries after DropIndex", n)
	}
	if err := s.BuildIndex(context.Background(), tbl, &ix, nil); err != nil {
		t.Fatal(err)
	}
	if n := countPrefix(t, s, indexPrefix); n == 0 {
		t.Fatal("no index entries after the build")
	}
	if err := s.DropTable(tbl.ID); err != nil {
		t.Fatal(err)
	}
	if n := countPrefix(t, s, indexPrefix) + countPrefix(t, s, indexStatePrefix); n != 0 {
		t.Errorf("%d index keys after DropTable", n)
	}
}

func countPrefix(t *testing.T, s *Store, p string) int {
	t.Helper()
	it, err := s.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for valid := it.SeekGE([]byte(p)); valid && strings.HasPrefix(string(it.Key()), p); valid = it.Next() {
		n++
	}
	return n
}

// Streamed rows index themselves on the receiver, as writes do.
func TestStreamedRowsAreIndexed(t *testing.T) {
	src, _ := openMem(t)
	dst, _ := openMem(t)
	sch, tbl := indexedTable(t)
	ix := tbl.Indexes()[0]
	mustApply(t, src, tbl, idxMut(tbl, "p1", row(1, "a", "w=red@5")), idxMut(tbl, "p2", row(1, "a", "w=blue@5")))
	var entries []StreamEntry
	if err := src.ScanTokens(tbl.ID, math.MinInt64, math.MaxInt64, func(k, v []byte) error {
		entries = append(entries, StreamEntry{Key: append([]byte(nil), k...), Value: append([]byte(nil), v...)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := dst.ApplyStreamed(entries, func(schema.TableID, int64) error { return nil }, sch); err != nil {
		t.Fatal(err)
	}
	if err := dst.setIndexState(tbl.ID, ix.ID, indexBuilt); err != nil {
		t.Fatal(err)
	}
	if got, _ := indexKeys(t, dst, tbl, "red", 0); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("red on the receiver = %v, want p1", got)
	}
}

// The builder builds a new index, reports it, and deletes a dropped one's entries.
func TestIndexBuilder(t *testing.T) {
	s, _ := openMem(t)
	sch, tbl := indexedTable(t)
	mustApply(t, s, tbl, idxMut(tbl, "p1", row(1, "a", "w=red@5")))
	var cur atomicSchema
	cur.set(sch)
	b := StartIndexBuilder(s, cur.get, nil)
	defer b.Stop()
	waitFor(t, func() bool { st := b.Status(); return len(st) == 1 && st[0].Built })
	if got, _ := indexKeys(t, s, tbl, "red", 0); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("red = %v, want p1", got)
	}
	drop, err := cql.ParseStatement("DROP INDEX ks.wi")
	if err != nil {
		t.Fatal(err)
	}
	sch.ResolveDropIndex(drop.(*cql.DropIndexStmt), "")
	next, err := sch.Apply(drop, "", schema.Change{Version: schema.Version{Timestamp: 100, Node: "n"}})
	if err != nil {
		t.Fatal(err)
	}
	cur.set(next)
	waitFor(t, func() bool { return countPrefix(t, s, indexPrefix)+countPrefix(t, s, indexStatePrefix) == 0 })
}

type atomicSchema struct{ p atomic.Pointer[schema.Schema] }

func (a *atomicSchema) set(s *schema.Schema) { a.p.Store(s) }
func (a *atomicSchema) get() *schema.Schema  { return a.p.Load() }

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	poll.Must(t, 10*time.Second, "the index builder's work", poll.Bool(cond))
}

// A static column's entries have no clustering key; the read checks them against the static row.
func TestStaticColumnIndex(t *testing.T) {
	s, _ := openMem(t)
	sch, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};" +
		"CREATE TABLE ks.t (k text, c1 int, c2 text, v int, s text STATIC, PRIMARY KEY ((k), c1, c2));" +
		"CREATE INDEX si ON ks.t (s);")
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := sch.Table("ks", "t")
	ix := tbl.Indexes()[0]
	st := func(pk string, cell string, rows ...*replicapb.Row) *replicapb.Mutation {
		m := staticMut(pk, staticRow(cell), rows...)
		m.TableId = uint64(tbl.ID)
		return m
	}
	mustApply(t, s, tbl, st("p1", "s=blue@5", row(1, "a", "v=1@5")), st("p2", "s=blue@5"), st("p3", "s=red@5"))
	if err := s.BuildIndex(context.Background(), tbl, &ix, nil); err != nil {
		t.Fatal(err)
	}
	keys := func(v string) []string {
		got, _ := indexKeys(t, s, tbl, v, 0)
		slices.Sort(got)
		return got
	}
	if got := keys("blue"); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Errorf("blue = %v, want p1 p2", got)
	}
	mustApply(t, s, tbl, st("p2", "s=red@6"))
	if got := keys("blue"); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("blue after p2 turned red = %v, want p1", got)
	}
	if got := keys("red"); !slices.Equal(got, []string{"p2", "p3"}) {
		t.Errorf("red = %v, want p2 p3", got)
	}
}

// A collection's elements are indexed one by one, streamed ones too; a removed element's entry
// is stale.
func TestCollectionElementIndex(t *testing.T) {
	src, _ := openMem(t)
	dst, _ := openMem(t)
	sch, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};" +
		"CREATE TABLE ks.t (k text PRIMARY KEY, tags set<text>);" +
		"CREATE INDEX ti ON ks.t (tags);")
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := sch.Table("ks", "t")
	ix := tbl.Indexes()[0]
	elem := func(pk, tag string, ts int64, del bool) *replicapb.Mutation {
		return &replicapb.Mutation{TableId: uint64(tbl.ID), PartitionKey: [][]byte{[]byte(pk)}, Token: tokenOf(pk),
			Rows: []*replicapb.Row{{Cells: []*replicapb.Cell{{Column: "tags", Path: []byte(tag), Value: []byte{}, Timestamp: ts, Tombstone: del}}}}}
	}
	mustApply(t, src, tbl, elem("p1", "go", 5, false), elem("p1", "db", 5, false), elem("p2", "go", 5, false))
	if err := src.setIndexState(tbl.ID, ix.ID, indexBuilt); err != nil {
		t.Fatal(err)
	}
	keys := func(s *Store, v string) []string {
		got, _ := indexKeys(t, s, tbl, v, 0)
		slices.Sort(got)
		return got
	}
	if got := keys(src, "go"); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Errorf("go = %v, want p1 p2", got)
	}
	mustApply(t, src, tbl, elem("p1", "go", 6, true))
	if got := keys(src, "go"); !slices.Equal(got, []string{"p2"}) {
		t.Errorf("go after removing p1's = %v, want p2", got)
	}
	var entries []StreamEntry
	if err := src.ScanTokens(tbl.ID, math.MinInt64, math.MaxInt64, func(k, v []byte) error {
		entries = append(entries, StreamEntry{Key: append([]byte(nil), k...), Value: append([]byte(nil), v...)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := dst.ApplyStreamed(entries, func(schema.TableID, int64) error { return nil }, sch); err != nil {
		t.Fatal(err)
	}
	if err := dst.setIndexState(tbl.ID, ix.ID, indexBuilt); err != nil {
		t.Fatal(err)
	}
	if got := keys(dst, "db"); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("db on the receiver = %v, want p1", got)
	}
	if got := keys(dst, "go"); !slices.Equal(got, []string{"p2"}) {
		t.Errorf("go on the receiver = %v, want p2", got)
	}
}
