package schema

import (
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/cql"
)

func TestMaxTTLAgrees(t *testing.T) {
	limits := []int64{MaxTTL, cql.MaxTTL, cell.MaxTTL}
	for _, l := range limits {
		if l != limits[0] {
			t.Errorf("MaxTTL: schema, cql, cell = %v; want one value", limits)
		}
	}
}

func TestDefaultTTLOption(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY, v int) WITH default_time_to_live = 3600;\n")
	tbl, _ := s.Table("ks", "t")
	if tbl.DefaultTTL() != 3600 {
		t.Fatalf("DefaultTTL() = %d, want 3600", tbl.DefaultTTL())
	}
	d, err := describe(t, s, "DESCRIBE TABLE ks.t", "")
	if err != nil || !strings.Contains(d, "default_time_to_live = 3600") {
		t.Errorf("DESCRIBE = %q, %v; want default_time_to_live = 3600", d, err)
	}
	// DESCRIBE's output recreates the table, option included.
	s2 := mustBuild(t, ksDDL+d+"\n")
	if t2, _ := s2.Table("ks", "t"); t2.DefaultTTL() != 3600 {
		t.Errorf("the DESCRIBE output recreates default_time_to_live %d, want 3600", t2.DefaultTTL())
	}
	// The schema encoding carries it.
	dec, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if t2, _ := dec.Table("ks", "t"); t2.DefaultTTL() != 3600 {
		t.Errorf("after Encode/Decode, DefaultTTL() = %d, want 3600", t2.DefaultTTL())
	}
	// A table without it encodes as before: no flag bit.
	plain := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY, v int);\n")
	if d, _ := describe(t, plain, "DESCRIBE TABLE ks.t", ""); strings.Contains(d, "default_time_to_live") {
		t.Errorf("DESCRIBE of a table without default_time_to_live shows it: %q", d)
	}
	s3, err := apply(s, "ALTER TABLE t WITH default_time_to_live = 0", 100)
	if err != nil {
		t.Fatal(err)
	}
	if t3, _ := s3.Table("ks", "t"); t3.DefaultTTL() != 0 {
		t.Errorf("after ALTER ... = 0, DefaultTTL() = %d, want 0", t3.DefaultTTL())
	}
	for _, tt := range []struct{ opt, want string }{
		{"-1", "default_time_to_live = -1"},
		{"630720001", "630720001"},
		{"1.5", "not an integer"},
		{"'x'", "not a number"},
	} {
		_, err := Build(ksDDL + "CREATE TABLE ks.t (k int PRIMARY KEY) WITH default_time_to_live = " + tt.opt + ";\n")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("default_time_to_live = %s: %v, want an error containing %q", tt.opt, err, tt.want)
		}
	}
}
