package schema

import (
	"strings"
	"testing"
)

func TestStaticColumns(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int, c int, s text STATIC, v int, PRIMARY KEY (k, c))")
	tb, _ := s.Table("ks", "t")
	if !tb.HasStatic() || !tb.IsStatic("s") || tb.IsStatic("v") || tb.IsStatic("c") {
		t.Fatalf("statics: HasStatic %v, s %v, v %v", tb.HasStatic(), tb.IsStatic("s"), tb.IsStatic("v"))
	}
	if c, _ := tb.Column("s"); c.Kind != RegularColumn {
		t.Errorf("static column kind = %v, want regular", c.Kind)
	}
	if got := tb.CreateStatement(); !strings.Contains(got, "s text static,") {
		t.Errorf("CreateStatement lacks the static column:\n%s", got)
	}
	// The encoding keeps it, and a regular column stays regular.
	d, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	dt, _ := d.Table("ks", "t")
	if !dt.IsStatic("s") || dt.IsStatic("v") {
		t.Errorf("after Decode: s static %v, v static %v", dt.IsStatic("s"), dt.IsStatic("v"))
	}
	if _, needs := s.FormatNeeds("ks", "t"); len(needs) != 1 || needs[0].Format != FormatStatic {
		t.Errorf("FormatNeeds = %v, want one at FormatStatic", needs)
	}

	s2, err := apply(s, "ALTER TABLE t ADD s2 int STATIC", 5)
	if err != nil {
		t.Fatal(err)
	}
	if tb2, _ := s2.Table("ks", "t"); !tb2.IsStatic("s2") {
		t.Error("ALTER TABLE ADD STATIC did not add a static column")
	}
	if _, err := apply(s2, "ALTER TABLE t DROP s", 6); err != nil {
		t.Errorf("dropping a static column: %v", err)
	}
}

func TestStaticColumnRefusals(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.p (k int PRIMARY KEY, v int)")
	for _, tc := range []struct{ stmt, want string }{
		{"CREATE TABLE t1 (k int PRIMARY KEY, s int STATIC)", "Static columns are only useful (and thus allowed) if the table has at least one clustering column"},
		{"CREATE TABLE t2 (k int, c int, PRIMARY KEY (k, c), s int STATIC)", ""},
		{"CREATE TABLE t3 (k int STATIC, c int, PRIMARY KEY (k, c))", "Static column k cannot be part of the PRIMARY KEY"},
		{"CREATE TABLE t4 (k int, c int STATIC, PRIMARY KEY (k, c))", "Static column c cannot be part of the PRIMARY KEY"},
		{"ALTER TABLE p ADD s int STATIC", "Static columns are only useful (and thus allowed) if the table has at least one clustering column"},
	} {
		_, err := apply(s, tc.stmt, 10)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.stmt, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.stmt, err, tc.want)
		}
	}
}
