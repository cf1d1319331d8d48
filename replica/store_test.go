package replica

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

const testTableID = 7

// newTable builds the table a CREATE TABLE statement defines, with id
// testTableID, in keyspace ks.
func newTable(t testing.TB, create string) *schema.Table {
	t.Helper()
	st, err := cql.ParseStatement(create)
	if err != nil {
		t.Fatalf("parsing %q: %v", create, err)
	}
	tbl, err := schema.NewTable(st.(*cql.CreateTableStmt), "ks", testTableID, schema.Version{Timestamp: 1, Node: "n1"})
	if err != nil {
		t.Fatalf("NewTable(%q): %v", create, err)
	}
	return tbl
}

const testTableDDL = "CREATE TABLE ks.t (k text, c1 int, c2 text, v int, w text, b blob, PRIMARY KEY ((k), c1, c2))"

// testTable is ks.t (k text, c1 int, c2 text, v int, w text, b blob,
// PRIMARY KEY ((k), c1, c2)).
func testTable(t testing.TB) *schema.Table { return newTable(t, testTableDDL) }

func openMem(t testing.TB) (*Store, vfs.FS) {
	t.Helper()
	fs := vfs.NewMem()
	s, err := Open("db", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, fs
}

func tokenOf(pk ...string) int64 {
	comps := make([][]byte, len(pk))
	for i, p := range pk {
		comps[i] = []byte(p)
	}
	return partitioner.Token(partitioner.AppendKey(nil, comps))
}

func ts(t int64) *int64 { return &t }

// mut builds a mutation of partition pk of the test table.
func mut(pk string, rows ...*replicapb.Row) *replicapb.Mutation {
	return &replicapb.Mutation{TableId: testTableID, PartitionKey: [][]byte{[]byte(pk)}, Token: tokenOf(pk), Rows: rows}
}

// row builds a row of the test table; cells are "column=value@ts",
// "column=null@ts" (a tombstone), or the special "marker@ts" and "deleted@ts".
func row(c1 int32, c2 string, cells ...string) *replicapb.Row {
	r := &replicapb.Row{Clustering: [][]byte{schema.EncodeInt(c1), []byte(c2)}}
	for _, c := range cells {
		var name, value string
		var at int64
		if n, _ := fmt.Sscanf(strings.Replace(c, "@", " ", 1), "%s %d", &name, &at); n != 2 {
			panic("bad test cell " + c)
		}
		name, value, _ = strings.Cut(name, "=")
		switch {
		case name == "marker":
			r.Marker = ts(at)
		case name == "deleted":
			r.Deletion = ts(at)
		case value == "null":
			r.Cells = append(r.Cells, &replicapb.Cell{Column: name, Timestamp: at, Tombstone: true})
		case name == "v":
			var i int32
			fmt.Sscanf(value, "%d", &i)
			r.Cells = append(r.Cells, &replicapb.Cell{Column: name, Value: schema.EncodeInt(i), Timestamp: at})
		default:
			r.Cells = append(r.Cells, &replicapb.Cell{Column: name, Value: []byte(value), Timestamp: at})
		}
	}
	return r
}

// readReq builds a read of partition pk of the test table.
func readReq(pk string) *replicapb.ReadRequest {
	return &replicapb.ReadRequest{TableId: testTableID, PartitionKey: [][]byte{[]byte(pk)}, Token: tokenOf(pk)}
}

// format renders a read response compactly:
// "partition deleted@3; (1,a) marker@5 [v=7@5 w=null@6]; ...".
func format(l *schema.Table, resp *replicapb.ReadResponse) string {
	var parts []string
	if resp.PartitionDeletion != nil {
		parts = append(parts, fmt.Sprintf("partition deleted@%d", *resp.PartitionDeletion))
	}
	for _, r := range resp.Rows {
		var b strings.Builder
		b.WriteString("(")
		for i, c := range r.Clustering {
			if i > 0 {
				b.WriteString(",")
			}
			v, _ := l.Clustering[i].Type.Decode(c)
			fmt.Fprint(&b, v)
		}
		b.WriteString(")")
		if r.Deletion != nil {
			fmt.Fprintf(&b, " deleted@%d", *r.Deletion)
		}
		if r.Marker != nil {
			fmt.Fprintf(&b, " marker@%d", *r.Marker)
		}
		var cells []string
		for _, c := range r.Cells {
			if c.Tombstone {
				cells = append(cells, fmt.Sprintf("%s=null@%d", c.Column, c.Timestamp))
				continue
			}
			col, _ := l.Column(c.Column)
			v, _ := col.Type.Decode(c.Value)
			cells = append(cells, fmt.Sprintf("%s=%v@%d", c.Column, v, c.Timestamp))
		}
		if len(cells) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(cells, " "))
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "; ")
}

func mustApply(t *testing.T, s *Store, l *schema.Table, muts ...*replicapb.Mutation) {
	t.Helper()
	for _, m := range muts {
		if err := s.Apply(l, m); err != nil {
			t.Fatalf("apply(%v): %v", m, err)
		}
	}
}

func TestStoreReconcilesWrites(t *testing.T) {
	tests := []struct {
		name string
		muts []*replicapb.Mutation
		want string
	}{
		{
			name: "an INSERT writes a marker and cells",
			muts: []*replicapb.Mutation{mut("p", row(1, "a", "marker@5", "v=7@5", "w=x@5"))},
			want: "(1,a) marker@5 [v=7@5 w=x@5]",
		},
		{
			name: "a newer write wins whatever the arrival order",
			muts: []*replicapb.Mutation{mut("p", row(1, "a", "v=2@20")), mut("p", row(1, "a", "v=1@10"))},
			want: "(1,a) [v=2@20]",
		},
		{
			name: "on a timestamp tie the greater value wins",
			muts: []*replicapb.Mutation{mut("p", row(1, "a", "w=b@10")), mut("p", row(1, "a", "w=a@10"))},
			want: "(1,a) [w=b@10]",
		},
		{
			name: "on a timestamp tie a tombstone wins",
			muts: []*replicapb.Mutation{mut("p", row(1, "a", "w=null@10")), mut("p", row(1, "a", "w=zzz@10"))},
			want: "(1,a) [w=null@10]",
		},
		{
			name: "a cell tombstone is returned, and an INSERTed row stays through its marker",
			muts: []*replicapb.Mutation{mut("p", row(1, "a", "marker@5", "v=7@5")), mut("p", row(1, "a", "v=null@6"))},
			want: "(1,a) marker@5 [v=null@6]",
		},
		{
			name: "a row tombstone shadows older cells and marker but not newer cells",
			muts: []*replicapb.Mutation{
				mut("p", row(1, "a", "marker@5", "v=7@5", "w=x@12")),
				mut("p", row(1, "a", "deleted@10")),
			},
			want: "(1,a) deleted@10 [w=x@12]",
		},
		{
			name: "a partition tombstone shadows older rows and is returned",
			muts: []*replicapb.Mutation{
				mut("p", row(1, "a", "marker@5", "v=1@5"), row(2, "b", "v=2@15")),
				{TableId: testTableID, PartitionKey: [][]byte{[]byte("p")}, Token: tokenOf("p"), PartitionDeletion: ts(10)},
			},
			want: "partition deleted@10; (2,b) [v=2@15]",
		},
		{
			name: "rows come back in clustering order, negative ints first",
			muts: []*replicapb.Mutation{
				mut("p", row(5, "a", "v=5@1"), row(-3, "b", "v=-3@1"), row(5, "", "v=50@1"), row(0, "z", "v=0@1")),
			},
			want: "(-3,b) [v=-3@1]; (0,z) [v=0@1]; (5,) [v=50@1]; (5,a) [v=5@1]",
		},
		{
			name: "partitions do not see each other's rows",
			muts: []*replicapb.Mutation{mut("p", row(1, "a", "v=1@1")), mut("p\x00", row(2, "a", "v=2@1")), mut("q", row(3, "a", "v=3@1"))},
			want: "(1,a) [v=1@1]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openMem(t)
			l := testTable(t)
			mustApply(t, s, l, tt.muts...)
			resp, err := s.ReadPartition(l, readReq("p"))
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if got := format(l, resp); got != tt.want {
				t.Errorf("reading partition p after the mutations returned\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

func TestStoreReadRestrictions(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	mustApply(t, s, l, mut("p",
		row(1, "a", "v=10@1"), row(1, "b", "v=11@1"), row(1, "c", "v=12@1"),
		row(2, "a", "v=20@1"), row(2, "b", "v=21@1"),
		row(3, "a", "v=30@1", "w=x@1"),
		row(4, "a", "v=null@2"), // an UPDATEd row whose only cell is deleted: not live
		row(5, "a", "v=50@1"),
	))
	i := func(v int32) []byte { return schema.EncodeInt(v) }
	bound := func(v []byte, inclusive bool) *replicapb.Bound {
		return &replicapb.Bound{Value: v, Inclusive: inclusive}
	}
	tests := []struct {
		name    string
		filter  *replicapb.ClusteringFilter
		limit   uint32
		columns []string
		want    string
	}{
		{name: "c1 = 1", filter: &replicapb.ClusteringFilter{Equal: [][]byte{i(1)}},
			want: "(1,a) [v=10@1]; (1,b) [v=11@1]; (1,c) [v=12@1]"},
		{name: "c1 = 1 and c2 = b", filter: &replicapb.ClusteringFilter{Equal: [][]byte{i(1), []byte("b")}},
			want: "(1,b) [v=11@1]"},
		{name: "c1 = 1 and c2 > a", filter: &replicapb.ClusteringFilter{Equal: [][]byte{i(1)}, Lower: bound([]byte("a"), false)},
			want: "(1,b) [v=11@1]; (1,c) [v=12@1]"},
		{name: "c1 = 1 and c2 >= b and c2 < c", filter: &replicapb.ClusteringFilter{Equal: [][]byte{i(1)}, Lower: bound([]byte("b"), true), Upper: bound([]byte("c"), false)},
			want: "(1,b) [v=11@1]"},
		{name: "c1 = 1 and c2 <= b", filter: &replicapb.ClusteringFilter{Equal: [][]byte{i(1)}, Upper: bound([]byte("b"), true)},
			want: "(1,a) [v=10@1]; (1,b) [v=11@1]"},
		{name: "c1 > 1 and c1 <= 3", filter: &replicapb.ClusteringFilter{Lower: bound(i(1), false), Upper: bound(i(3), true)},
			want: "(2,a) [v=20@1]; (2,b) [v=21@1]; (3,a) [v=30@1 w=x@1]"},
		{name: "c1 >= 3", filter: &replicapb.ClusteringFilter{Lower: bound(i(3), true)},
			want: "(3,a) [v=30@1 w=x@1]; (4,a) [v=null@2]; (5,a) [v=50@1]"},
		{name: "c1 < 2", filter: &replicapb.ClusteringFilter{Upper: bound(i(2), false)},
			want: "(1,a) [v=10@1]; (1,b) [v=11@1]; (1,c) [v=12@1]"},
		{name: "c1 > 3 and c1 < 3 is empty", filter: &replicapb.ClusteringFilter{Lower: bound(i(3), false), Upper: bound(i(3), false)},
			want: ""},
		{name: "c1 = 9 matches nothing", filter: &replicapb.ClusteringFilter{Equal: [][]byte{i(9)}},
			want: ""},
		{name: "limit 2", limit: 2,
			want: "(1,a) [v=10@1]; (1,b) [v=11@1]"},
		{name: "limit 2 counts live rows only", filter: &replicapb.ClusteringFilter{Lower: bound(i(3), true)}, limit: 2,
			want: "(3,a) [v=30@1 w=x@1]; (4,a) [v=null@2]; (5,a) [v=50@1]"},
		{name: "c1 = 1 limit 1", filter: &replicapb.ClusteringFilter{Equal: [][]byte{i(1)}}, limit: 1,
			want: "(1,a) [v=10@1]"},
		{name: "selected columns only", filter: &replicapb.ClusteringFilter{Equal: [][]byte{i(3)}}, columns: []string{"w"},
			want: "(3,a) [w=x@1]"},
		{name: "a row stays live through unselected columns", filter: &replicapb.ClusteringFilter{Equal: [][]byte{i(2)}}, columns: []string{"w"},
			want: "(2,a); (2,b)"},
	}
	for _, tt := range tests {
		req := readReq("p")
		req.Filter, req.Limit, req.Columns = tt.filter, tt.limit, tt.columns
		resp, err := s.ReadPartition(l, req)
		if err != nil {
			t.Errorf("%s: read: %v", tt.name, err)
			continue
		}
		if got := format(l, resp); got != tt.want {
			t.Errorf("%s: read returned\n  %s\nwant\n  %s", tt.name, got, tt.want)
		}
	}
}

// keyCount returns the number of keys in the store.
func keyCount(t *testing.T, s *Store) int {
	t.Helper()
	it, err := s.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		n++
	}
	return n
}

func TestStoreRejectsBadMutationsAndWritesNothing(t *testing.T) {
	l := testTable(t)
	good := func() *replicapb.Mutation { return mut("p", row(1, "a", "marker@1", "v=1@1"), row(2, "b", "w=x@1")) }
	tests := []struct {
		name   string
		edit   func(m *replicapb.Mutation)
		errHas string
	}{
		{"wrong table id", func(m *replicapb.Mutation) { m.TableId = 99 }, "table id 99"},
		{"too many partition key components", func(m *replicapb.Mutation) { m.PartitionKey = append(m.PartitionKey, []byte("x")) }, "partition key has 2 components, want 1 (k)"},
		{"no partition key", func(m *replicapb.Mutation) { m.PartitionKey = nil }, "partition key has 0 components, want 1 (k)"},
		{"an empty partition key", func(m *replicapb.Mutation) { m.PartitionKey = [][]byte{{}}; m.Token = partitioner.MinToken }, "partition key is empty"},
		{"a partition key that is not UTF-8", func(m *replicapb.Mutation) { m.PartitionKey = [][]byte{{0xFF}} }, `partition key column "k": invalid text value`},
		{"a token that is not the key's", func(m *replicapb.Mutation) { m.Token++ }, "is not the partition key's token"},
		{"a missing clustering component in the second row", func(m *replicapb.Mutation) { m.Rows[1].Clustering = m.Rows[1].Clustering[:1] }, "row 1 has 1 clustering components, want 2 (c1, c2)"},
		{"a clustering component of the wrong type", func(m *replicapb.Mutation) { m.Rows[1].Clustering[0] = []byte{1, 2} }, `row 1: clustering column "c1": invalid int value: 2 bytes, want 4`},
		{"an unknown column", func(m *replicapb.Mutation) { m.Rows[1].Cells[0].Column = "nope" }, `unknown column "nope"`},
		{"a key column written as a cell", func(m *replicapb.Mutation) { m.Rows[1].Cells[0].Column = "c1" }, `column "c1" is a clustering column`},
		{"a value of the wrong type", func(m *replicapb.Mutation) { m.Rows[0].Cells[0].Value = []byte("abc") }, `row 0 column "v": invalid int value: 3 bytes, want 4`},
		{"an empty int value", func(m *replicapb.Mutation) { m.Rows[0].Cells[0].Value = nil }, `row 0 column "v": invalid int value: 0 bytes, want 4`},
		{"a text value that is not UTF-8", func(m *replicapb.Mutation) { m.Rows[1].Cells[0].Value = []byte{0xC0} }, `row 1 column "w": invalid text value`},
		{"the reserved timestamp", func(m *replicapb.Mutation) { m.Rows[1].Cells[0].Timestamp = -1 << 63 }, "is reserved"},
		{"an empty row", func(m *replicapb.Mutation) { m.Rows[1] = &replicapb.Row{Clustering: m.Rows[1].Clustering} }, "row 1 writes nothing"},
		{"an empty mutation", func(m *replicapb.Mutation) { m.Rows = nil }, "mutation writes nothing"},
	}
	for _, tt := range tests {
		s, _ := openMem(t)
		m := good()
		tt.edit(m)
		err := s.Apply(l, m)
		if !errors.Is(err, ErrBadRequest) {
			t.Errorf("applying a mutation with %s returned %v, want an error wrapping ErrBadRequest", tt.name, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.errHas) || !strings.Contains(err.Error(), "ks.t") {
			t.Errorf("applying a mutation with %s returned %q, want it to name the table and contain %q", tt.name, err, tt.errHas)
		}
		if n := keyCount(t, s); n != 0 {
			t.Errorf("applying a mutation with %s left %d keys in the store, want none", tt.name, n)
		}
	}
	// And the unedited mutation is fine.
	s, _ := openMem(t)
	mustApply(t, s, l, good())
}

func TestStoreRejectsBadReads(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	tests := []struct {
		name   string
		edit   func(r *replicapb.ReadRequest)
		errHas string
	}{
		{"wrong table id", func(r *replicapb.ReadRequest) { r.TableId = 99 }, "table id 99"},
		{"a missing partition key", func(r *replicapb.ReadRequest) { r.PartitionKey = nil }, "partition key has 0 components"},
		{"a wrong token", func(r *replicapb.ReadRequest) { r.Token = 0 }, "is not the partition key's token"},
		{"an unknown column", func(r *replicapb.ReadRequest) { r.Columns = []string{"v", "nope"} }, `unknown column "nope"`},
		{"a partition key column selected", func(r *replicapb.ReadRequest) { r.Columns = []string{"k"} }, `column "k" is a partition key column`},
		{"too many equality components", func(r *replicapb.ReadRequest) {
			r.Filter = &replicapb.ClusteringFilter{Equal: [][]byte{schema.EncodeInt(1), []byte("a"), []byte("b")}}
		}, "filter: 3 clustering components, the table has 2"},
		{"a range after a full key", func(r *replicapb.ReadRequest) {
			r.Filter = &replicapb.ClusteringFilter{Equal: [][]byte{schema.EncodeInt(1), []byte("a")}, Lower: &replicapb.Bound{Value: []byte("b")}}
		}, "and one more by range, the table has 2"},
		{"an equality value of the wrong type", func(r *replicapb.ReadRequest) {
			r.Filter = &replicapb.ClusteringFilter{Equal: [][]byte{[]byte("x")}}
		}, `filter: clustering column "c1": invalid int value`},
		{"a bound of the wrong type", func(r *replicapb.ReadRequest) {
			r.Filter = &replicapb.ClusteringFilter{Upper: &replicapb.Bound{Value: []byte("x")}}
		}, `filter upper bound on clustering column "c1": invalid int value`},
	}
	for _, tt := range tests {
		r := readReq("p")
		tt.edit(r)
		_, err := s.ReadPartition(l, r)
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tt.errHas) {
			t.Errorf("a read with %s returned %v, want a bad request containing %q", tt.name, err, tt.errHas)
		}
	}
}

func TestStoreSkipsDroppedColumns(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	mustApply(t, s, l, mut("p", row(1, "a", "v=1@1", "w=x@1"), row(2, "a", "w=y@1")))
	l = newTable(t, "CREATE TABLE ks.t (k text, c1 int, c2 text, v int, b blob, PRIMARY KEY ((k), c1, c2))")
	resp, err := s.ReadPartition(l, readReq("p"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := format(l, resp), "(1,a) [v=1@1]"; got != want {
		t.Errorf("after dropping column w, reading returned %q, want %q (row 2 lived only through w)", got, want)
	}
}

func TestStoreSurvivesReopen(t *testing.T) {
	fs := vfs.NewMem()
	l := testTable(t)
	s, err := Open("db", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, l, mut("p", row(1, "a", "v=1@1")), mut("p", row(1, "a", "v=2@2")))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open("db", Options{FS: fs})
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	defer s.Close()
	resp, err := s.ReadPartition(l, readReq("p"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := format(l, resp), "(1,a) [v=2@2]"; got != want {
		t.Errorf("after reopening, reading returned %q, want %q", got, want)
	}
}

func TestStoreMergesAcrossFlushes(t *testing.T) {
	// Versions of a cell in different sstables and the memtable still
	// reconcile by timestamp, not by write order.
	s, _ := openMem(t)
	l := testTable(t)
	mustApply(t, s, l, mut("p", row(1, "a", "v=3@30")))
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, l, mut("p", row(1, "a", "v=1@10")))
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, l, mut("p", row(1, "a", "v=2@20")))
	if err := s.db.Compact(t.Context(), []byte{0}, []byte{0xFF}, true); err != nil {
		t.Fatal(err)
	}
	resp, err := s.ReadPartition(l, readReq("p"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := format(l, resp), "(1,a) [v=3@30]"; got != want {
		t.Errorf("after writes across flushes and a compaction, reading returned %q, want %q", got, want)
	}
}

func TestOptions(t *testing.T) {
	var o Options
	o.EnsureDefaults()
	if o.CacheSize != DefaultCacheSize || o.MemTableSize != DefaultMemTableSize || o.FS == nil ||
		o.TombstoneFailureThreshold != DefaultTombstoneFailureThreshold {
		t.Errorf("EnsureDefaults on zero Options = %+v, want the default sizes and a filesystem", o)
	}
	if twice := o; *twice.EnsureDefaults() != o {
		t.Errorf("EnsureDefaults twice = %+v, want once = %+v", twice, o)
	}
	if set := (Options{CacheSize: 1, MemTableSize: 2048, TombstoneFailureThreshold: 3}); set.EnsureDefaults().CacheSize != 1 ||
		set.MemTableSize != 2048 || set.TombstoneFailureThreshold != 3 {
		t.Errorf("EnsureDefaults changed set fields: %+v", set)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate of the defaults: %v", err)
	}
	for _, tc := range []struct {
		bad  Options
		want string
	}{
		{Options{CacheSize: -1}, "Options.CacheSize (cache_size) is -1, want ≥ 0 bytes"},
		{Options{MemTableSize: 10}, "Options.MemTableSize (memtable_size) is 10, want 1024 to 4294967295 bytes"},
		{Options{MemTableSize: 4 << 30}, "Options.MemTableSize (memtable_size) is 4294967296"},
	} {
		if err := tc.bad.EnsureDefaults().Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Options%+v.Validate() = %v, want an error containing %q", tc.bad, err, tc.want)
		}
	}
	if _, err := Open("db", Options{FS: vfs.NewMem(), MemTableSize: 10}); err == nil || !strings.Contains(err.Error(), "memtable_size") {
		t.Errorf("Open with a 10-byte memtable: %v, want an error naming memtable_size", err)
	}
}

func TestServiceConfig(t *testing.T) {
	var c Config
	c.EnsureDefaults()
	if c.Now == nil || c.MaxStampSkew != partitionlimit.DefaultMaxStampSkew || c.MaxBatchlogEntry != DefaultMaxBatchlogEntry {
		t.Errorf("EnsureDefaults on zero Config: clock set %v, max stamp skew %v, max batchlog entry %d; want set, %v, %d",
			c.Now != nil, c.MaxStampSkew, c.MaxBatchlogEntry, partitionlimit.DefaultMaxStampSkew, DefaultMaxBatchlogEntry)
	}
	if set := (Config{MaxStampSkew: time.Second, MaxBatchlogEntry: 5}); set.EnsureDefaults().MaxStampSkew != time.Second || set.MaxBatchlogEntry != 5 {
		t.Errorf("EnsureDefaults changed set fields: %+v", set)
	}
	store, err := Open("db", Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Store = nil }, "Config.Store is nil"},
		{func(c *Config) { c.Schema = nil }, "Config.Schema is nil"},
		{func(c *Config) { c.MaxStampSkew = -time.Second }, "Config.MaxStampSkew is -1s, want a positive duration"},
		{func(c *Config) { c.MaxBatchlogEntry = -1 }, "Config.MaxBatchlogEntry is -1, want a positive number of bytes"},
	} {
		c := Config{Store: store, Schema: tables{}}
		tc.set(&c)
		if _, err := NewService(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewService() = %v, want an error containing %q", err, tc.want)
		}
	}
}
