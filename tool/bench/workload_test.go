package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// testDDL defines tables that use every column type in every role the workload fills.
const testDDL = `
CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
CREATE TABLE ks.kv (k text PRIMARY KEY, v blob) WITH per_partition_rate_limit = {'max_writes_per_second': 10};
CREATE TABLE ks.every_text (k text, c1 text, c2 int, c3 bigint, c4 double, c5 boolean, c6 blob, c7 timestamp,
    v1 text, v2 int, v3 bigint, v4 double, v5 boolean, v6 blob, v7 timestamp, "Odd_Name" text, "select" int,
    PRIMARY KEY (k, c1, c2, c3, c4, c5, c6, c7));
CREATE TABLE ks.every_bigint (k bigint PRIMARY KEY, v1 text, v2 int, v3 bigint, v4 double, v5 boolean, v6 blob, v7 timestamp);
CREATE TABLE ks."QuotedTable" ("Key" text PRIMARY KEY, "Value" varchar);
CREATE TABLE ks.int_key (k int PRIMARY KEY, v text);
CREATE TABLE ks.double_key (k double PRIMARY KEY, v text);
CREATE TABLE ks.composite_key (a text, b bigint, v text, PRIMARY KEY ((a, b)));
`

func testSchema(t *testing.T) *schema.Schema {
	t.Helper()
	s, err := schema.Build(testDDL)
	if err != nil {
		t.Fatalf("schema.Build(testDDL): %v", err)
	}
	return s
}

func testTable(t *testing.T, s *schema.Schema, name string) *schema.Table {
	t.Helper()
	tbl, ok := s.Table("ks", name)
	if !ok {
		t.Fatalf("table ks.%s is not in testDDL", name)
	}
	return tbl
}

var coldTextKey = regexp.MustCompile(`^cold-(\d+)$`)

// TestGeneratedStatementsAreValid checks every generated statement against the schema the server
// uses: it must parse, fit the column types, and name a hot or cold partition key.
func TestGeneratedStatementsAreValid(t *testing.T) {
	s := testSchema(t)
	for _, name := range []string{"kv", "every_text", "every_bigint", "QuotedTable"} {
		tbl := testTable(t, s, name)
		cfg := Config{Protocol: ProtocolGRPC, Partitions: 7, Hot: 0.2, Writes: 0.5}
		w, err := newWorkload(tbl, cfg)
		if err != nil {
			t.Fatalf("newWorkload(%s) failed: %v", tbl.QualifiedName(), err)
		}
		r := rand.New(rand.NewPCG(3, 0))
		var writes, reads int
		for range 500 {
			o := w.next(r)
			stmt, err := cql.ParseStatement(o.stmt)
			if err != nil {
				t.Fatalf("generated statement %q does not parse: %v", o.stmt, err)
			}
			var key []byte
			if o.write {
				writes++
				pw, err := s.PrepareWrite(stmt, "")
				if err != nil {
					t.Fatalf("generated write %q does not fit %s: %v", o.stmt, tbl.QualifiedName(), err)
				}
				if len(pw.Cells) != len(tbl.Regular) {
					t.Fatalf("generated write %q sets %d cells, want every regular column (%d)", o.stmt, len(pw.Cells), len(tbl.Regular))
				}
				checkFloatLiterals(t, stmt.(*cql.InsertStmt), tbl)
				key = pw.PartitionKey[0]
			} else {
				reads++
				pr, err := s.PrepareRead(stmt.(*cql.SelectStmt), "")
				if err != nil {
					t.Fatalf("generated read %q does not fit %s: %v", o.stmt, tbl.QualifiedName(), err)
				}
				if len(pr.Clustering.Prefix) != 0 || pr.Limit != 0 {
					t.Fatalf("generated read %q is not a whole-partition read", o.stmt)
				}
				key = pr.PartitionKey[0]
			}
			checkKey(t, tbl, key, o.hot, cfg.Partitions, o.stmt)
		}
		if writes == 0 || reads == 0 {
			t.Errorf("500 operations on %s at --writes 0.5 gave %d writes and %d reads; want both", name, writes, reads)
		}
	}
}

// checkFloatLiterals checks that double columns get float literals, not integers.
func checkFloatLiterals(t *testing.T, st *cql.InsertStmt, tbl *schema.Table) {
	t.Helper()
	for i, col := range st.Columns {
		c, _ := tbl.Column(col.Name)
		if c.Type != schema.TypeDouble {
			continue
		}
		if lit := st.Values[i].(*cql.Literal); lit.Kind != cql.LitFloat {
			t.Fatalf("double column %s got a %s literal %s, want a float literal", col.Name, lit.Kind, lit.Value)
		}
	}
}

func checkKey(t *testing.T, tbl *schema.Table, key []byte, hot bool, partitions int, stmt string) {
	t.Helper()
	v, err := tbl.PartitionKey[0].Type.Decode(key)
	if err != nil {
		t.Fatalf("statement %q: partition key does not decode: %v", stmt, err)
	}
	switch v := v.(type) {
	case string:
		if hot != (v == HotTextKey) {
			t.Fatalf("statement %q has key %q but hot = %v", stmt, v, hot)
		}
		if m := coldTextKey.FindStringSubmatch(v); !hot {
			if i, _ := strconv.Atoi(m[1]); m == nil || i >= partitions {
				t.Fatalf("statement %q has cold key %q, want cold-<i> with i < %d", stmt, v, partitions)
			}
		}
	case int64:
		if hot != (v == HotBigIntKey) {
			t.Fatalf("statement %q has key %d but hot = %v", stmt, v, hot)
		}
		if !hot && (v < 1 || v > int64(partitions)) {
			t.Fatalf("statement %q has cold key %d, want 1..%d", stmt, v, partitions)
		}
	}
}

func TestFormatDoubleReadsBackAsTheSameFloat(t *testing.T) {
	for _, f := range []float64{0, 5, -0.5, 1e21, 1e-7, -123456789012345678, math.MaxFloat64, math.SmallestNonzeroFloat64, 1234.5678} {
		s := formatDouble(f)
		st, err := cql.ParseStatement("INSERT INTO ks.t (v) VALUES (" + s + ")")
		if err != nil {
			t.Errorf("formatDouble(%v) = %q, which does not parse: %v", f, s, err)
			continue
		}
		lit := st.(*cql.InsertStmt).Values[0].(*cql.Literal)
		back, err := strconv.ParseFloat(lit.Value, 64)
		if lit.Kind != cql.LitFloat || err != nil || back != f {
			t.Errorf("formatDouble(%v) = %q parses as %s literal %q (%v), want the float %v", f, s, lit.Kind, lit.Value, back, f)
		}
	}
}

func TestWorkloadFollowsHotAndWriteShares(t *testing.T) {
	s := testSchema(t)
	for _, tc := range []struct{ hot, writes float64 }{{0.3, 0.5}, {0, 1}, {1, 0}, {0.9, 0.1}} {
		w, err := newWorkload(testTable(t, s, "every_bigint"), Config{Protocol: ProtocolGRPC, Partitions: 10, Hot: tc.hot, Writes: tc.writes})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(7, 0))
		const n = 20000
		var hot, writes, coldReads int
		cold := map[string]int{} // cold reads per key
		for range n {
			o := w.next(r)
			if o.hot {
				hot++
			}
			if o.write {
				writes++
			} else if !o.hot {
				coldReads++
				cold[o.stmt[strings.LastIndex(o.stmt, " ")+1:]]++
			}
		}
		// 0.02 is more than 4 standard deviations of a share over 20000 draws.
		if got := float64(hot) / n; math.Abs(got-tc.hot) > 0.02 {
			t.Errorf("--hot %v: %.3f of %d operations went to the hot partition", tc.hot, got, n)
		}
		if got := float64(writes) / n; math.Abs(got-tc.writes) > 0.02 {
			t.Errorf("--writes %v: %.3f of %d operations were writes", tc.writes, got, n)
		}
		if coldReads == 0 {
			continue
		}
		perKey := float64(coldReads) / 10
		for k, c := range cold {
			if math.Abs(float64(c)-perKey) > 5*math.Sqrt(perKey) {
				t.Errorf("--hot %v --writes %v: cold key %s got %d of %d cold reads, want about %.0f (uniform over 10)", tc.hot, tc.writes, k, c, coldReads, perKey)
			}
		}
		if len(cold) != 10 {
			t.Errorf("--partitions 10: cold reads used %d distinct keys, want 10", len(cold))
		}
	}
}

func TestWorkloadIsDeterministicPerSeed(t *testing.T) {
	s := testSchema(t)
	w, err := newWorkload(testTable(t, s, "every_text"), Config{Protocol: ProtocolGRPC, Partitions: 100, Hot: 0.5, Writes: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	gen := func(seed, stream uint64) []string {
		r := rand.New(rand.NewPCG(seed, stream))
		out := make([]string, 50)
		for i := range out {
			out[i] = w.next(r).stmt
		}
		return out
	}
	a, b := gen(9, 0), gen(9, 0)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("two streams seeded (9, 0) generated different statements")
	}
	if strings.Join(a, "\n") == strings.Join(gen(10, 0), "\n") || strings.Join(a, "\n") == strings.Join(gen(9, 1), "\n") {
		t.Errorf("streams with a different seed or worker generated the same statements as (9, 0)")
	}
}

func TestUnsupportedPartitionKeysAreRejected(t *testing.T) {
	s := testSchema(t)
	for _, name := range []string{"int_key", "double_key", "composite_key"} {
		_, err := newWorkload(testTable(t, s, name), DefaultConfig())
		if err == nil || !strings.Contains(err.Error(), "ks."+name) || !strings.Contains(err.Error(), "exactly one text or bigint") {
			t.Errorf("newWorkload(ks.%s) error = %v, want one naming the table and the supported keys", name, err)
		}
	}
}

func TestTableFromDescriptionRoundTrips(t *testing.T) {
	s := testSchema(t)
	for _, name := range []string{"kv", "every_text", "QuotedTable", "composite_key"} {
		want := testTable(t, s, name)
		got, err := tableFromDescription(want.CreateStatement()+"\n", "")
		if err != nil {
			t.Fatalf("tableFromDescription(%q) failed: %v", want.CreateStatement(), err)
		}
		if got.QualifiedName() != want.QualifiedName() || len(got.Columns) != len(want.Columns) {
			t.Fatalf("tableFromDescription gave %s with %d columns, want %s with %d", got.QualifiedName(), len(got.Columns), want.QualifiedName(), len(want.Columns))
		}
		for i := range want.Columns {
			if got.Columns[i].Name != want.Columns[i].Name || got.Columns[i].Type != want.Columns[i].Type || got.Columns[i].Kind != want.Columns[i].Kind {
				t.Errorf("column %d of %s read back as %+v, want %+v", i, name, got.Columns[i], want.Columns[i])
			}
		}
	}
	for _, bad := range []string{"", "DESCRIBE TABLE ks.t", "CREATE TABLE ks.t (k text)", "CREATE TABLE ks.t (k list<int> PRIMARY KEY)"} {
		if _, err := tableFromDescription(bad, "ks"); err == nil {
			t.Errorf("tableFromDescription(%q) succeeded, want an error", bad)
		}
	}
}

// BenchmarkNext measures generating one operation, the load generator's own cost per operation.
func BenchmarkNext(b *testing.B) {
	s, err := schema.Build(testDDL)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		table  string
		writes float64
	}{{"kv", 0}, {"kv", 1}, {"every_text", 1}} {
		tbl, _ := s.Table("ks", tc.table)
		w, err := newWorkload(tbl, Config{Protocol: ProtocolGRPC, Partitions: 1000, Hot: 0.1, Writes: tc.writes})
		if err != nil {
			b.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 0))
		b.Run(fmt.Sprintf("%s/writes=%v", tc.table, tc.writes), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w.next(r)
			}
		})
	}
}
