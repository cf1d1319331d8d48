package schema

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

// orderDDL has a table of every clustering shape the order tests need:
// one DESC column, two with mixed orders, and all ASC.
const orderDDL = ksDDL + `
CREATE TABLE ks.one (k int, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC);
CREATE TABLE ks.mixed (k int, c1 int, c2 text, v text, PRIMARY KEY (k, c1, c2))
    WITH per_partition_rate_limit = {'max_reads_per_second': 5} AND CLUSTERING ORDER BY (c1 ASC, c2 DESC);
CREATE TABLE ks.up (k int, c1 int, c2 text, v text, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c1 ASC, c2 ASC);
`

func table(t *testing.T, s *Schema, name string) *Table {
	t.Helper()
	tb, ok := s.Table("ks", name)
	if !ok {
		t.Fatalf("table ks.%s is missing", name)
	}
	return tb
}

func TestClusteringOrderOfColumns(t *testing.T) {
	s := mustBuild(t, orderDDL)
	tests := []struct {
		table string
		desc  []bool
	}{
		{"one", []bool{true}},
		{"mixed", []bool{false, true}},
		{"up", []bool{false, false}},
	}
	for _, tt := range tests {
		tb := table(t, s, tt.table)
		for i, c := range tb.Clustering {
			if c.Descending != tt.desc[i] || tb.Columns[c.Index].Descending != tt.desc[i] {
				t.Errorf("ks.%s clustering column %s: Descending = %t, want %t", tt.table, c.Name, c.Descending, tt.desc[i])
			}
		}
		for _, c := range append(tb.PartitionKey, tb.Regular...) {
			if c.Descending {
				t.Errorf("ks.%s %s column %s is Descending", tt.table, c.Kind, c.Name)
			}
		}
	}
}

func TestCompareClustering(t *testing.T) {
	s := mustBuild(t, orderDDL)
	i32 := func(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
	key := func(vs ...[]byte) [][]byte { return vs }
	tests := []struct {
		table string
		a, b  [][]byte
		want  int
	}{
		{"one", key(i32(1)), key(i32(2)), +1},
		{"one", key(i32(-5)), key(i32(3)), +1},
		{"one", key(i32(7)), key(i32(7)), 0},
		{"mixed", key(i32(1), []byte("b")), key(i32(2), []byte("a")), -1}, // c1 ASC decides
		{"mixed", key(i32(1), []byte("b")), key(i32(1), []byte("a")), -1}, // c2 DESC: b first
		{"mixed", key(i32(1), []byte("a")), key(i32(1), []byte("ab")), +1},
		{"up", key(i32(1), []byte("a")), key(i32(1), []byte("ab")), -1},
		{"mixed", key(i32(1)), key(i32(1), []byte("a")), -1}, // a prefix sorts first
	}
	for _, tt := range tests {
		tb := table(t, s, tt.table)
		if got := tb.CompareClustering(tt.a, tt.b); got != tt.want {
			t.Errorf("ks.%s CompareClustering(%x, %x) = %d, want %d", tt.table, tt.a, tt.b, got, tt.want)
		}
		if got := tb.CompareClustering(tt.b, tt.a); got != -tt.want {
			t.Errorf("ks.%s CompareClustering(%x, %x) = %d, want %d", tt.table, tt.b, tt.a, got, -tt.want)
		}
	}
}

func TestClusteringOrderErrors(t *testing.T) {
	// The parser rejects these with positions; the schema checks statements
	// built in code too.
	ordering := func(name string, desc bool) cql.Ordering {
		return cql.Ordering{Column: cql.Ident{Name: name}, Descending: desc}
	}
	base := func() *cql.CreateTableStmt {
		st, err := cql.ParseStatement("CREATE TABLE t (k int, c1 int, c2 int, PRIMARY KEY (k, c1, c2))")
		if err != nil {
			t.Fatal(err)
		}
		return st.(*cql.CreateTableStmt)
	}
	tests := []struct {
		order []cql.Ordering
		want  string
	}{
		{[]cql.Ordering{ordering("c2", true), ordering("c1", false)}, "table ks.t: CLUSTERING ORDER BY (c2 DESC, c1 ASC) must list the clustering columns in PRIMARY KEY order (c1, c2)"},
		{[]cql.Ordering{ordering("c1", true)}, "table ks.t: CLUSTERING ORDER BY (c1 DESC) must list every clustering column in PRIMARY KEY order (c1, c2): c2 is missing"},
		{[]cql.Ordering{ordering("c1", true), ordering("c2", true), ordering("k", true)}, "table ks.t: CLUSTERING ORDER BY (c1 DESC, c2 DESC, k DESC) must list the clustering columns in PRIMARY KEY order (c1, c2)"},
	}
	for _, tt := range tests {
		st := base()
		st.ClusteringOrder = tt.order
		_, err := NewTable(st, "ks", 1, Version{})
		if err == nil || err.Error() != tt.want {
			t.Errorf("CLUSTERING ORDER BY %v: error %v, want %q", tt.order, err, tt.want)
		}
	}
	st, _ := cql.ParseStatement("CREATE TABLE t (k int PRIMARY KEY)")
	ct := st.(*cql.CreateTableStmt)
	ct.ClusteringOrder = []cql.Ordering{ordering("k", true)}
	if _, err := NewTable(ct, "ks", 1, Version{}); err == nil || err.Error() != "table ks.t: CLUSTERING ORDER BY is only allowed on a table with clustering columns; this table has none" {
		t.Errorf("CLUSTERING ORDER BY without clustering columns: error %v", err)
	}
}

func TestDescribeClusteringOrder(t *testing.T) {
	s := mustBuild(t, orderDDL)
	tests := []struct{ table, want string }{
		{"one", `CREATE TABLE ks.one (
    k int,
    c int,
    v text,
    PRIMARY KEY (k, c)
) WITH CLUSTERING ORDER BY (c DESC)
    AND gc_grace_seconds = 864000
    AND speculative_retry = '99p';
`},
		{"mixed", `CREATE TABLE ks.mixed (
    k int,
    c1 int,
    c2 text,
    v text,
    PRIMARY KEY (k, c1, c2)
) WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC)
    AND per_partition_rate_limit = {'max_reads_per_second': 5}
    AND gc_grace_seconds = 864000
    AND speculative_retry = '99p';
`},
		// All ASC is the default, which DESCRIBE leaves out, as Cassandra's does.
		{"up", `CREATE TABLE ks.up (
    k int,
    c1 int,
    c2 text,
    v text,
    PRIMARY KEY (k, c1, c2)
) WITH gc_grace_seconds = 864000
    AND speculative_retry = '99p';
`},
	}
	for _, tt := range tests {
		got, err := describe(t, s, "DESCRIBE TABLE ks."+tt.table, "")
		if err != nil || got != tt.want {
			t.Errorf("DESCRIBE TABLE ks.%s = %v\n%s\nwant\n%s", tt.table, err, got, tt.want)
		}
		// The output recreates the same order.
		again := mustBuild(t, ksDDL+got)
		for i, c := range table(t, again, tt.table).Clustering {
			if want := table(t, s, tt.table).Clustering[i]; c != want {
				t.Errorf("DESCRIBE TABLE ks.%s recreated clustering column %+v, want %+v", tt.table, c, want)
			}
		}
	}
}

func TestClusteringOrderEncoding(t *testing.T) {
	s := mustBuild(t, orderDDL)
	d, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range s.Tables("ks") {
		got := table(t, d, want.Name)
		for i, c := range got.Clustering {
			if c != want.Clustering[i] {
				t.Errorf("decoded ks.%s clustering column %+v, want %+v", want.Name, c, want.Clustering[i])
			}
		}
	}

	// The order is part of the encoding, so of the digest and of Merge's
	// tie-break: the same table created with another order is another schema.
	asc := mustBuild(t, ksDDL+"CREATE TABLE ks.one (k int, c int, v text, PRIMARY KEY (k, c))")
	desc := mustBuild(t, ksDDL+"CREATE TABLE ks.one (k int, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
	if asc.Digest() == desc.Digest() {
		t.Errorf("schemas differing only in clustering order have the same digest")
	}
	ad, da := asc.Merge(desc), desc.Merge(asc)
	if !bytes.Equal(ad.Encode(), da.Encode()) {
		t.Errorf("Merge of schemas differing only in clustering order is not commutative")
	}
	if tb := table(t, ad, "one"); !tb.Clustering[0].Descending {
		t.Errorf("Merge picked the ASC table; the tie-break by encoding should pick the DESC one (type byte 0x82 > 0x02)")
	}

	// Pinned: c DESC is its type byte with the high bit set.
	pinned := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int, c text, v blob, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
	const want = "01" + "01" + "026b73" + "02" + "00" + "00" + "03" +
		"01" + "026b73" + "0174" + "0000000000000002" + "0200" + "0400" + "00" +
		"01" + "01" + "03" + "016b02" + "016381" + "017606" + // c text DESC: 0x81
		"00" + "00"
	if got := hex.EncodeToString(pinned.Encode()); got != want {
		t.Errorf("encoding of a DESC column changed:\n got %s\nwant %s", got, want)
	}
}

func TestDecodeSchemaFromBeforeClusteringOrder(t *testing.T) {
	// An encoding written before clustering orders existed (the pinned one
	// of TestEncodingIsPinned) loads, with its clustering column ASC.
	old := hexBytes(t, "01"+"01"+"026b73"+"02"+"00"+"00"+"03"+
		"01"+"026b73"+"0174"+"0000000000000002"+"0200"+"0400"+"00"+
		"01"+"01"+"03"+"016b02"+"016301"+"017606"+"ac02"+"00")
	s, err := Decode(old)
	if err != nil {
		t.Fatalf("Decode of a schema from before clustering orders: %v", err)
	}
	tb := table(t, s, "t")
	if tb.Clustering[0].Descending || tb.CompareClustering([][]byte{[]byte("a")}, [][]byte{[]byte("b")}) >= 0 {
		t.Errorf("a clustering column from an old schema is not ASC")
	}
	if strings.Contains(tb.CreateStatement(), "CLUSTERING ORDER") {
		t.Errorf("an old table describes with a clustering order:\n%s", tb.CreateStatement())
	}

	// A DESC bit on a partition key column is corruption (on a regular column of a table
	// with clustering columns it marks a static column, format 11: see static_test.go).
	for _, bad := range []string{
		"016b82" + "016301" + "017606", // partition key k
	} {
		b := hexBytes(t, "01"+"01"+"026b73"+"02"+"00"+"00"+"03"+
			"01"+"026b73"+"0174"+"0000000000000002"+"0200"+"0400"+"00"+
			"01"+"01"+"03"+bad+"00"+"00")
		if _, err := Decode(b); err == nil || !strings.Contains(err.Error(), "bad column") {
			t.Errorf("Decode with a DESC bit on a non-clustering column (%s): error %v, want bad column", bad, err)
		}
	}
}

func TestPrepareReadOrderBy(t *testing.T) {
	s := mustBuild(t, orderDDL)
	tests := []struct {
		src      string
		reversed bool
	}{
		{"SELECT * FROM one WHERE k = 1", false},
		{"SELECT * FROM one WHERE k = 1 ORDER BY c DESC", false},
		{"SELECT * FROM one WHERE k = 1 ORDER BY c ASC", true},
		{"SELECT * FROM one WHERE k = 1 ORDER BY c", true},
		{"SELECT * FROM mixed WHERE k = 1 ORDER BY c1 ASC, c2 DESC", false},
		{"SELECT * FROM mixed WHERE k = 1 ORDER BY c1 DESC, c2 ASC", true},
		{"SELECT * FROM mixed WHERE k = 1 ORDER BY c1 DESC", true},
		{"SELECT * FROM mixed WHERE k = 1 AND c1 > 3 ORDER BY c1 DESC LIMIT 2", true},
		// A column restricted by = may be left out, or given either way.
		{"SELECT * FROM mixed WHERE k = 1 AND c1 = 3 ORDER BY c2 ASC", true},
		{"SELECT * FROM mixed WHERE k = 1 AND c1 = 3 AND c2 < 'x' ORDER BY c2 DESC", false},
		{"SELECT * FROM up WHERE k = 1 ORDER BY c1 DESC, c2 DESC", true},
	}
	for _, tt := range tests {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.PrepareRead(st.(*cql.SelectStmt), "ks")
		if err != nil {
			t.Errorf("PrepareRead(%s) failed: %v", tt.src, err)
			continue
		}
		if r.Reversed != tt.reversed {
			t.Errorf("PrepareRead(%s).Reversed = %t, want %t", tt.src, r.Reversed, tt.reversed)
		}
	}

	errTests := []struct{ src, want string }{
		{"SELECT * FROM one WHERE k = 1 ORDER BY v DESC", "ORDER BY v: only clustering columns (c) can be ordered by, not the regular column v"},
		{"SELECT * FROM one WHERE k = 1 ORDER BY k DESC", "ORDER BY k: only clustering columns (c) can be ordered by, not the partition key column k"},
		{"SELECT * FROM one WHERE k = 1 ORDER BY x DESC", "unknown column x in table ks.one"},
		{"SELECT * FROM mixed WHERE k = 1 ORDER BY c2 DESC", "ORDER BY c2 DESC: clustering column c1, which comes before c2, must be in ORDER BY or restricted by ="},
		{"SELECT * FROM mixed WHERE k = 1 AND c1 > 2 ORDER BY c2 DESC", "ORDER BY c2 DESC: clustering column c1, which comes before c2, must be in ORDER BY or restricted by ="},
		{"SELECT * FROM mixed WHERE k = 1 ORDER BY c2 DESC, c1 ASC", "ORDER BY c2 DESC, c1 ASC: clustering column c1, which comes before c2, must be in ORDER BY or restricted by ="},
		{"SELECT * FROM mixed WHERE k = 1 AND c1 = 3 ORDER BY c2 DESC, c1 ASC", "ORDER BY c2 DESC, c1 ASC: columns must be given in clustering order (c1, c2); c1 comes before c2"},
		{"SELECT * FROM mixed WHERE k = 1 ORDER BY c1 ASC, c2 ASC", "ORDER BY c1 ASC, c2 ASC is neither the clustering order of table ks.mixed (c1 ASC, c2 DESC) nor its reverse"},
		{"SELECT * FROM up WHERE k = 1 ORDER BY c1 DESC, c2 ASC", "ORDER BY c1 DESC, c2 ASC is neither the clustering order of table ks.up (c1 ASC, c2 ASC) nor its reverse"},
		{"SELECT * FROM kv WHERE k = 'a' ORDER BY v ASC", "ORDER BY v: table ks.kv has no clustering columns to order by"},
		{"SELECT * FROM one ORDER BY c ASC", "ORDER BY is only supported when the partition key is restricted by an EQ or an IN"},
	}
	s2 := mustBuild(t, orderDDL+"CREATE TABLE ks.kv (k text PRIMARY KEY, v int);")
	for _, tt := range errTests {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s2.PrepareRead(st.(*cql.SelectStmt), "ks"); err == nil || err.Error() != tt.want {
			t.Errorf("%s\n  gave error %v\n  want %q", tt.src, err, tt.want)
		}
	}
}
