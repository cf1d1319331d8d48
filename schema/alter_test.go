package schema

import (
	"slices"
	"strings"
	"testing"
)

func columnNames(cols []Column) []string {
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	return names
}

func TestAlterAddDropRename(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c));")
	steps := []struct {
		stmt string
		ts   int64
		want []string // the columns after, canonical order
	}{
		{"ALTER TABLE t ADD (z int, a blob)", 100, []string{"k", "c", "a", "v", "z"}},
		{"ALTER TABLE t DROP v", 200, []string{"k", "c", "a", "z"}},
		{"ALTER TABLE t ADD v text", 300, []string{"k", "c", "a", "v", "z"}},
		{"ALTER TABLE t DROP (a, z) USING TIMESTAMP 250", 400, []string{"k", "c", "v"}},
		{"ALTER TABLE t RENAME k TO key AND c TO cl", 500, []string{"key", "cl", "v"}},
	}
	for _, st := range steps {
		next, err := apply(s, st.stmt, st.ts)
		if err != nil {
			t.Fatalf("%s: %v", st.stmt, err)
		}
		s = next
		tb, _ := s.Table("ks", "t")
		if got := columnNames(tb.Columns); !slices.Equal(got, st.want) {
			t.Fatalf("after %s the columns are %v, want %v", st.stmt, got, st.want)
		}
		for i, c := range tb.Columns {
			if c.Index != i {
				t.Fatalf("after %s column %s has index %d, want %d", st.stmt, c.Name, c.Index, i)
			}
		}
		if tb.Version.Timestamp != st.ts {
			t.Errorf("after %s the table's version is %v, want timestamp %d", st.stmt, tb.Version, st.ts)
		}
	}
	tb, _ := s.Table("ks", "t")
	want := []DroppedColumn{{"a", TypeBlob, 250}, {"v", TypeText, 200}, {"z", TypeInt, 250}}
	if got := tb.DroppedColumns(); !slices.Equal(got, want) {
		t.Errorf("DroppedColumns() = %v, want %v", got, want)
	}
	shadowed := []struct {
		col  string
		ts   int64
		want bool
	}{
		{"v", 199, true}, {"v", 200, true}, {"v", 201, false}, {"a", 250, true}, {"a", 251, false}, {"", 1, false}, {"other", 1, false},
	}
	for _, c := range shadowed {
		if got := tb.Shadowed(c.col, c.ts); got != c.want {
			t.Errorf("Shadowed(%q, %d) = %v, want %v", c.col, c.ts, got, c.want)
		}
	}
	// The records survive encoding.
	back, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if back.Digest() != s.Digest() {
		t.Errorf("Decode(Encode()) changed the digest")
	}
	bt, _ := back.Table("ks", "t")
	if !slices.Equal(bt.DroppedColumns(), want) || !slices.Equal(columnNames(bt.Columns), []string{"key", "cl", "v"}) {
		t.Errorf("decoded table has columns %v and dropped %v", columnNames(bt.Columns), bt.DroppedColumns())
	}
}

func TestAlterNoOpAndIfExists(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY, v text);")
	for _, stmt := range []string{
		"ALTER TABLE t ADD IF NOT EXISTS v text",
		"ALTER TABLE t DROP IF EXISTS nope",
		"ALTER TABLE t RENAME IF EXISTS nope TO x",
		"ALTER TABLE IF EXISTS nope ADD x int",
	} {
		next, err := apply(s, stmt, 100)
		if err != nil || next != s {
			t.Errorf("%s = %p, %v; want the same schema, unchanged", stmt, next, err)
		}
	}
}

func TestAlterErrors(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c));")
	s, err := apply(s, "ALTER TABLE t DROP v", 100)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ stmt, want string }{
		{"ALTER TABLE t ADD k int", "1:19: Column with name 'k' already exists"},
		{"ALTER TABLE t ADD (x int, x text)", "1:27: Column with name 'x' already exists"},
		{"ALTER TABLE t ADD x nosuchtype", "1:21: column x: unsupported column type \"nosuchtype\" (supported: text, int, bigint, double, boolean, blob, timestamp, ascii, float, smallint, tinyint, uuid, timeuuid, inet, date, time, decimal, varint, duration, counter)"},
		{"ALTER TABLE t ADD v int", "1:21: Cannot re-add previously dropped column 'v' of type int, incompatible with previous type text"},
		{"ALTER TABLE t DROP nope", "1:20: Column nope was not found in table ks.t"},
		{"ALTER TABLE t DROP k", "1:20: Cannot drop PRIMARY KEY column k"},
		{"ALTER TABLE t DROP (c)", "1:21: Cannot drop PRIMARY KEY column c"},
		{"ALTER TABLE t RENAME nope TO x", "1:22: Column nope was not found in table ks.t"},
		{"ALTER TABLE t RENAME k TO c", "1:27: Cannot rename column k to c in table ks.t; another column with that name already exists"},
		{"ALTER TABLE nope ADD x int", "unknown table ks.nope"},
	}
	for _, tt := range tests {
		_, err := apply(s, tt.stmt, 200)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.stmt, err, tt.want)
		}
	}
	s2 := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY, v text);")
	if _, err := apply(s2, "ALTER TABLE t RENAME v TO w", 100); err == nil || err.Error() != "1:22: Cannot rename non PRIMARY KEY column v" {
		t.Errorf("RENAME of a regular column: error %v", err)
	}
}

func TestTruncate(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY, v text);")
	before, _ := s.Table("ks", "t")
	if _, ok := before.TruncatedAt(); ok || before.HasShadows() || before.Shadowed("v", -1<<62) {
		t.Fatalf("a new table reads as truncated")
	}
	s, err := apply(s, "TRUNCATE ks.t", 1000)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := s.Table("ks", "t")
	if at, ok := tb.TruncatedAt(); !ok || at != 1000 || tb.ID != before.ID {
		t.Fatalf("after TRUNCATE: TruncatedAt() = %d, %v, id %d; want 1000, true, id %d", at, ok, tb.ID, before.ID)
	}
	if !tb.Shadowed("", 1000) || !tb.Shadowed("v", 999) || tb.Shadowed("v", 1001) {
		t.Errorf("Shadowed does not hide exactly the writes at or before the truncation")
	}
	back, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if bt, _ := back.Table("ks", "t"); !bt.Shadowed("", 1000) {
		t.Errorf("the truncation did not survive encoding")
	}
	if _, err := apply(s, "TRUNCATE nope", 2000); err == nil {
		t.Errorf("TRUNCATE of a missing table succeeded")
	}
	// A later truncation of an older copy loses to the newer one when merged (LWW by table version).
	s3, err := apply(s, "TRUNCATE t", 3000)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := s.Merge(s3).Table("ks", "t"); !mt.Shadowed("", 2999) {
		t.Errorf("merging a later TRUNCATE did not take it")
	}
}
