package schema

import (
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

const indexDDL = ksDDL + `CREATE TABLE ks.t (k int, c int, v text, w int, s int STATIC, m map<int, int>, f frozen<list<int>>, d duration, PRIMARY KEY (k, c));
CREATE TABLE ks.p (k int PRIMARY KEY, v int);
CREATE TABLE ks.two (a int, b int, v int, PRIMARY KEY ((a, b)));
CREATE TABLE ks.cnt (k int PRIMARY KEY, n counter);
`

func TestCreateIndex(t *testing.T) {
	s := mustBuild(t, indexDDL)
	s, err := apply(s, "CREATE INDEX ON ks.t (v)", 100)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := s.Table("ks", "t")
	ix, ok := tb.IndexOn("v")
	if !ok || ix.Name != "t_v_idx" || ix.ID == 0 || ix.ID == tb.ID {
		t.Fatalf("IndexOn(v) = %+v, %v; want t_v_idx with an id of its own", ix, ok)
	}
	// A second unnamed index of that name takes the next free name; a named one keeps its name.
	if s, err = apply(s, "CREATE INDEX ON ks.t (full(f))", 101); err != nil {
		t.Fatal(err)
	}
	if s, err = apply(s, "CREATE INDEX t_v_idx_x ON t (w)", 102); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(s, "CREATE INDEX ON t (s)", 102); err != nil {
		t.Errorf("an index on a static column: %v", err)
	}
	if got, _ := s.Table("ks", "t"); len(got.Indexes()) != 3 || got.Indexes()[0].Name != "t_f_idx" {
		t.Fatalf("indexes = %+v, want t_f_idx, t_v_idx, t_v_idx_x", got.Indexes())
	}
	if s2, err := apply(s, "CREATE INDEX IF NOT EXISTS t_v_idx ON ks.p (v)", 103); err != nil || s2 != s {
		t.Errorf("IF NOT EXISTS on an existing name: %v, changed %v", err, s2 != s)
	}
	if s2, err := apply(s, "CREATE INDEX IF NOT EXISTS other ON ks.t (v)", 103); err != nil || s2 != s {
		t.Errorf("IF NOT EXISTS on a duplicate: %v, changed %v", err, s2 != s)
	}
	// Default names avoid taken ones, across the keyspace.
	if s2, err := apply(s, "CREATE INDEX p_v_idx ON ks.two (v)", 104); err != nil {
		t.Fatal(err)
	} else if s3, err := apply(s2, "CREATE INDEX ON ks.p (v)", 105); err != nil {
		t.Fatal(err)
	} else if ix, _ := s3.mustTable(t, "p").IndexOn("v"); ix.Name != "p_v_idx_1" {
		t.Errorf("unnamed index whose default name is taken: %q, want p_v_idx_1", ix.Name)
	}

	// DESCRIBE, system encoding and the data format.
	desc, err := s.Describe(&cql.DescribeStmt{Kind: cql.DescribeTable, Table: cql.TableName{Keyspace: cql.Ident{Name: "ks"}, Name: cql.Ident{Name: "t"}}}, "")
	if err != nil || !strings.Contains(desc, "CREATE INDEX t_v_idx ON ks.t (v);") || !strings.Contains(desc, "CREATE INDEX t_f_idx ON ks.t (full(f));") {
		t.Errorf("DESCRIBE TABLE = %q, %v; want its indexes", desc, err)
	}
	d, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	dt, _ := d.Table("ks", "t")
	if got, want := dt.Indexes(), tb.Indexes(); len(got) != 3 || got[1] != s.mustTable(t, "t").Indexes()[1] || len(want) != 1 {
		t.Errorf("decoded indexes = %+v", got)
	}
	if _, needs := s.FormatNeeds("ks", "t"); len(needs) == 0 || needs[len(needs)-1].Format != FormatIndexes {
		t.Errorf("FormatNeeds = %v, want one at FormatIndexes", needs)
	}
	// An indexed column cannot be dropped.
	if _, err := apply(s, "ALTER TABLE ks.t DROP v", 110); err == nil || !strings.Contains(err.Error(), "Cannot drop column v because it has dependent secondary indexes (t_v_idx)") {
		t.Errorf("dropping an indexed column: %v", err)
	}

	// DROP INDEX resolves its table, then removes the index.
	drop := func(s *Schema, src string, ts int64) (*Schema, error) {
		st, err := cql.ParseStatement(src)
		if err != nil {
			return nil, err
		}
		s.ResolveDropIndex(st.(*cql.DropIndexStmt), "ks")
		return s.Apply(st, "ks", Change{Version: Version{Timestamp: ts, Node: "n1"}})
	}
	s2, err := drop(s, "DROP INDEX ks.t_v_idx", 120)
	if err != nil {
		t.Fatal(err)
	}
	if tb2, _ := s2.Table("ks", "t"); len(tb2.Indexes()) != 2 {
		t.Errorf("after DROP INDEX: %+v", tb2.Indexes())
	}
	if _, err := drop(s2, "DROP INDEX t_v_idx", 121); err == nil || err.Error() != "Index 'ks.t_v_idx' doesn't exist" {
		t.Errorf("DROP INDEX of a missing index: %v", err)
	}
	if _, _, err := StatementTarget(mustParse(t, "DROP INDEX t_v_idx"), "ks"); err == nil {
		t.Error("StatementTarget of an unresolved DROP INDEX succeeded")
	}
	if s3, err := drop(s2, "DROP INDEX IF EXISTS t_v_idx", 122); err != nil || s3 != s2 {
		t.Errorf("DROP INDEX IF EXISTS of a missing index: %v, changed %v", err, s3 != s2)
	}
	// Created again, the index has a new id: entries of the old one are never its own.
	s3, err := apply(s2, "CREATE INDEX t_v_idx ON ks.t (v)", 130)
	if err != nil {
		t.Fatal(err)
	}
	if ix2, _ := s.mustTable(t, "t").IndexOn("v"); func() bool { n, _ := s3.mustTable(t, "t").IndexOn("v"); return n.ID == ix2.ID }() {
		t.Error("an index created again kept its id")
	}
}

func (s *Schema) mustTable(t *testing.T, name string) *Table {
	t.Helper()
	tb, ok := s.Table("ks", name)
	if !ok {
		t.Fatalf("no table ks.%s", name)
	}
	return tb
}

func TestCreateIndexRefusals(t *testing.T) {
	s := mustBuild(t, indexDDL+"CREATE INDEX vi ON ks.t (v);")
	for _, tc := range []struct{ stmt, want string }{
		{"CREATE INDEX ON ks.p (k)", "Cannot create secondary index on the only partition key column k"},
		{"CREATE INDEX ON ks.cnt (n)", "Secondary indexes on counter tables aren't supported"},
		{"CREATE INDEX ON ks.t (nope)", "Column 'nope' doesn't exist"},
		{"CREATE INDEX ON ks.t (d)", "Secondary indexes are not supported on duration columns"},
		{"CREATE INDEX vi ON ks.t (w)", "Index 'vi' already exists"},
		{"CREATE INDEX again ON ks.t (v)", "Index again is a duplicate of existing index vi"},
		{"CREATE INDEX ON ks.t (f)", "Cannot create values() index on frozen column f. Frozen collections are immutable and must be fully indexed by using the 'full(f)' modifier"},
		{"CREATE INDEX ON ks.t (full(v))", "full() indexes can only be created on frozen collections"},
		{"CREATE INDEX ON ks.t (keys(v))", "Cannot create keys() index on v. Non-collection columns only support simple indexes"},
		{"CREATE INDEX ON ks.t (keys(f))", "Cannot create keys() index on frozen column f"},
		{"CREATE INDEX ON ks.t (entries(f))", "Cannot create entries() index on frozen column f"},
		{"CREATE INDEX ON ks.t (c)", "indexes on primary key columns (c) are not supported yet"},
		{"CREATE INDEX ON ks.two (a)", "indexes on primary key columns (a) are not supported yet"},
		{"CREATE INDEX ON ks.nope (v)", "unknown table"},
		{"CREATE INDEX \"bad-name\" ON ks.t (w)", "may contain only letters, digits and underscores"},
	} {
		_, err := apply(s, tc.stmt, 100)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.stmt, err, tc.want)
		}
	}
}

func TestSelectByIndex(t *testing.T) {
	s := mustBuild(t, indexDDL+"CREATE INDEX vi ON ks.t (v);")
	bind := func(src string) (*Read, error) {
		st, err := cql.ParseStatement(src)
		if err != nil {
			t.Fatal(err)
		}
		return s.BindRead(st.(*cql.SelectStmt), "ks", nil)
	}
	r, err := bind("SELECT * FROM ks.t WHERE v = 'a'")
	if err != nil || !r.Scan || r.Index == nil || r.Index.Name != "vi" || string(r.IndexValue) != "a" || len(r.Filters) != 1 {
		t.Fatalf("index query: %+v, %v", r, err)
	}
	r, err = bind("SELECT * FROM ks.t WHERE v = 'a' AND token(k) > 0")
	if err != nil || r.Index == nil || r.Tokens.Start != 0 {
		t.Errorf("index query with a token range: %+v, %v", r, err)
	}
	if _, err := bind("SELECT * FROM ks.t WHERE v = 'a' AND w = 1"); err == nil || !strings.Contains(err.Error(), "ALLOW FILTERING") {
		t.Errorf("index query and another filter without ALLOW FILTERING: %v", err)
	}
	if r, err := bind("SELECT * FROM ks.t WHERE v = 'a' AND w = 1 ALLOW FILTERING"); err != nil || len(r.Filters) != 2 {
		t.Errorf("index query and another filter with ALLOW FILTERING: %+v, %v", r, err)
	}
	// With the partition key: the partition's rows filtered, no ALLOW FILTERING needed.
	if r, err := bind("SELECT * FROM ks.t WHERE k = 1 AND v = 'a'"); err != nil || r.Scan || len(r.Filters) != 1 {
		t.Errorf("index query in a partition: %+v, %v", r, err)
	}
	if _, err := bind("SELECT * FROM ks.t WHERE w = 1"); err == nil || !strings.Contains(err.Error(), "ALLOW FILTERING") {
		t.Errorf("a query on an unindexed column: %v", err)
	}
	if _, err := bind("SELECT * FROM ks.t WHERE v > 'a'"); err == nil {
		t.Error("a range on an indexed column ran without ALLOW FILTERING")
	}
	// Collections: values (the default of a non-frozen collection named alone) and keys.
	s2, err := apply(s, "CREATE INDEX ON ks.t (m)", 200)
	if err != nil {
		t.Fatal(err)
	}
	if ix, _ := s2.mustTable(t, "t").IndexFor("m", cql.CONTAINS); ix == nil || ix.Target != "values" || ix.TargetCQL() != "values(m)" {
		t.Fatalf("CREATE INDEX ON t (m) made %+v, want a values(m) index", ix)
	}
	if s2, err = apply(s2, "CREATE INDEX mk ON ks.t (keys(m))", 201); err != nil {
		t.Fatal(err)
	}
	s = s2
	r, err = bind("SELECT * FROM ks.t WHERE m CONTAINS 7")
	if err != nil || r.Index == nil || r.Index.Target != "values" {
		t.Errorf("CONTAINS by index: %+v, %v", r, err)
	}
	r, err = bind("SELECT * FROM ks.t WHERE m CONTAINS KEY 7")
	if err != nil || r.Index == nil || r.Index.Name != "mk" {
		t.Errorf("CONTAINS KEY by index: %+v, %v", r, err)
	}
	if _, err := bind("SELECT * FROM ks.t WHERE f CONTAINS 1"); err == nil || !strings.Contains(err.Error(), "ALLOW FILTERING") {
		t.Errorf("CONTAINS on an unindexed collection: %v", err)
	}
	if _, err := bind("SELECT * FROM ks.t WHERE k = 1 AND v CONTAINS 1 ALLOW FILTERING"); err == nil || !strings.Contains(err.Error(), "non-collection") {
		t.Errorf("CONTAINS on a text column: %v", err)
	}
	if _, err := bind("SELECT * FROM ks.t WHERE k = 1 AND f CONTAINS KEY 1 ALLOW FILTERING"); err == nil || !strings.Contains(err.Error(), "non-map") {
		t.Errorf("CONTAINS KEY on a list: %v", err)
	}
	// Entries: m[key] = value.
	if s, err = apply(s, "CREATE INDEX me ON ks.t (entries(m))", 202); err != nil {
		t.Fatal(err)
	}
	re, err := bind("SELECT * FROM ks.t WHERE m[7] = 9")
	if err != nil || re.Index == nil || re.Index.Name != "me" || string(re.IndexValue) != string(EntryValue([]byte{0, 0, 0, 7}, []byte{0, 0, 0, 9})) {
		t.Errorf("m[7] = 9 by index: %+v, %v", re, err)
	}
	mv0 := []byte{0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7, 0, 0, 0, 4, 0, 0, 0, 9} // {7: 9}
	if !re.Filters[0].Match(func(*Column) []byte { return mv0 }) {
		t.Error("{7: 9} does not match m[7] = 9")
	}
	// Prepared with the map's key a marker (as drivers prepare m[?] = ?): the key is not known
	// until bound, yet the index serves the relation, so neither needs ALLOW FILTERING.
	for _, src := range []string{"SELECT * FROM ks.t WHERE k = ? AND m[?] = ?", "SELECT * FROM ks.t WHERE m[?] = ?"} {
		st, err := cql.ParseStatement(src)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Variables(st, "ks"); err != nil {
			t.Errorf("prepare %s: %v", src, err)
		}
	}
	if _, err := bind("SELECT * FROM ks.t WHERE k = 1 AND m[7] = 9"); err != nil {
		t.Errorf("m[7] = 9 in a partition: %v", err)
	}
	st, err := cql.ParseStatement("SELECT * FROM ks.t WHERE k = ? AND m[?] = ?")
	if err != nil {
		t.Fatal(err)
	}
	four := func(n byte) BindValue { return BindValue{Bytes: []byte{0, 0, 0, n}} }
	if r, err := s.BindRead(st.(*cql.SelectStmt), "ks", []BindValue{four(1), four(7), four(9)}); err != nil || r.Scan || len(r.Filters) != 1 || !r.Filters[0].Match(func(*Column) []byte { return mv0 }) {
		t.Errorf("k = ? AND m[?] = ? bound to 1, 7, 9: %+v, %v", r, err)
	}
	if _, err := cql.ParseStatement("SELECT * FROM ks.t WHERE k = 1 AND m[7] > 9 ALLOW FILTERING"); err == nil || !strings.Contains(err.Error(), "can only be restricted by =") {
		t.Errorf("m[7] > 9: %v", err)
	}
	// The filter itself: a frozen list [1, 2] contains 2, not 3.
	f := r.Filters[0]
	mv := []byte{0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7, 0, 0, 0, 4, 0, 0, 0, 9} // {7: 9}
	if !f.Match(func(*Column) []byte { return mv }) {
		t.Error("{7: 9} does not CONTAIN KEY 7")
	}
	if f.Values[0][0] = []byte{0, 0, 0, 9}; f.Match(func(*Column) []byte { return mv }) {
		t.Error("{7: 9} CONTAINS KEY 9")
	}
}

// TestSelectByIndexWithPrimaryKeyColumns: beside an indexed column and without the whole
// partition key, restrictions on clustering columns and on part of the partition key are
// filters of the index query, and need ALLOW FILTERING (two restrictions), as in Cassandra
// 4.1; IN on a partition key column is refused with its message.
func TestSelectByIndexWithPrimaryKeyColumns(t *testing.T) {
	s := mustBuild(t, indexDDL+`CREATE TABLE ks.ct (a int, b int, c int, d int, v int, PRIMARY KEY ((a, b), c, d));
CREATE INDEX vi ON ks.t (v);
CREATE INDEX cvi ON ks.ct (v);`)
	bind := func(src string) (*Read, error) {
		st, err := cql.ParseStatement(src)
		if err != nil {
			t.Fatal(err)
		}
		return s.BindRead(st.(*cql.SelectStmt), "ks", nil)
	}
	for _, tt := range []struct {
		src  string
		cols []string
	}{
		{"SELECT * FROM ks.t WHERE v = 'a' AND c = 1 ALLOW FILTERING", []string{"v", "c"}},
		{"SELECT * FROM ks.t WHERE v = 'a' AND c > 1 AND c < 5 ALLOW FILTERING", []string{"v", "c", "c"}},
		{"SELECT * FROM ks.t WHERE v = 'a' AND c IN (1, 2) ALLOW FILTERING", []string{"v", "c"}},
		{"SELECT * FROM ks.t WHERE v = 'a' AND k > 1 ALLOW FILTERING", []string{"v", "k"}},
		{"SELECT * FROM ks.ct WHERE v = 1 AND a = 1 ALLOW FILTERING", []string{"v", "a"}},
		{"SELECT * FROM ks.ct WHERE a = 1 AND v = 1 AND d = 2 ALLOW FILTERING", []string{"a", "v", "d"}},
		{"SELECT * FROM ks.ct WHERE v = 1 AND (c, d) > (1, 2) ALLOW FILTERING", []string{"v", "c"}},
		{"SELECT * FROM ks.ct WHERE v = 1 AND b = 2 AND token(a, b) > 0 ALLOW FILTERING", nil},
	} {
		r, err := bind(tt.src)
		if tt.cols == nil {
			if err == nil || !strings.Contains(err.Error(), "cannot be restricted by both a normal relation and a token relation") {
				t.Errorf("%s: %v, want the token refusal", tt.src, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if !r.Scan || r.Index == nil || len(r.Filters) != len(tt.cols) {
			t.Errorf("%s: scan %v index %v filters %d, want an index query with %d", tt.src, r.Scan, r.Index, len(r.Filters), len(tt.cols))
			continue
		}
		for i, f := range r.Filters {
			if f.Columns[0].Name != tt.cols[i] {
				t.Errorf("%s: filter %d on %s, want %s", tt.src, i, f.Columns[0].Name, tt.cols[i])
			}
		}
	}
	for _, tt := range []struct{ src, want string }{
		{"SELECT * FROM ks.t WHERE v = 'a' AND c = 1", errNeedsFiltering},
		{"SELECT * FROM ks.t WHERE v = 'a' AND k > 1", errNeedsFiltering},
		{"SELECT * FROM ks.ct WHERE v = 1 AND a = 1", errNeedsFiltering},
		{"SELECT * FROM ks.ct WHERE v = 1 AND d = 1", errNeedsFiltering},
		{"SELECT * FROM ks.ct WHERE v = 1 AND a IN (1, 2) ALLOW FILTERING", "Select on indexed columns and with IN clause for the PRIMARY KEY are not supported"},
		{"SELECT * FROM ks.ct WHERE v = 1 AND a IN (1, 2)", "Select on indexed columns and with IN clause for the PRIMARY KEY are not supported"},
		{"SELECT * FROM ks.ct WHERE v = 1 AND a = 1 AND a = 2 ALLOW FILTERING", "column a is restricted more than once"},
		{"SELECT * FROM ks.ct WHERE v = 1 AND c CONTAINS 1 ALLOW FILTERING", "CONTAINS on the primary key column c is not supported"},
	} {
		if _, err := bind(tt.src); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s\n  gave error %v\n  want %q", tt.src, err, tt.want)
		}
	}
}
