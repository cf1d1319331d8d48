package schema

import (
	"slices"
	"strings"
	"testing"
)

// TestFormatFeatures: a table names exactly the features a release of data format 1 cannot
// decode (the table flags it does not know); what such a release reads names none.
func TestFormatFeatures(t *testing.T) {
	const base = ksDDL + "CREATE TABLE ks.t (k int, c int, v int, w int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC);\n"
	cases := []struct {
		stmts []string
		want  []string
	}{
		{nil, nil},
		{[]string{"ALTER TABLE ks.t ADD x int"}, nil},
		{[]string{"ALTER TABLE ks.t RENAME c TO c2"}, nil},
		{[]string{"ALTER TABLE ks.t WITH gc_grace_seconds = 60 AND speculative_retry = '50ms'"}, nil},
		{[]string{"ALTER TABLE ks.t WITH speculative_retry = 'ALWAYS'"}, nil},
		{[]string{"ALTER TABLE ks.t WITH default_time_to_live = 60"}, []string{"default_time_to_live"}},
		{[]string{"ALTER TABLE ks.t WITH default_time_to_live = 60", "ALTER TABLE ks.t WITH default_time_to_live = 0"}, nil},
		{[]string{"ALTER TABLE ks.t WITH comment = 'x' AND bloom_filter_fp_chance = 0.1"}, []string{"table options bloom_filter_fp_chance, comment"}},
		{[]string{"ALTER TABLE ks.t WITH speculative_retry = 'MAX(99p,50ms)'"}, []string{"speculative_retry MIN or MAX"}},
		{[]string{"ALTER TABLE ks.t DROP w"}, []string{"records of dropped columns (ALTER TABLE DROP)"}},
		{[]string{"TRUNCATE ks.t"}, []string{"a record of TRUNCATE"}},
		{[]string{"ALTER TABLE ks.t WITH default_time_to_live = 60", "TRUNCATE ks.t"}, []string{"default_time_to_live", "a record of TRUNCATE"}},
	}
	for _, tc := range cases {
		s := mustBuild(t, base)
		for i, stmt := range tc.stmts {
			var err error
			if s, err = apply(s, stmt, int64(100+i)); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		tb, ok := s.Table("ks", "t")
		if !ok {
			t.Fatalf("after %v: no table ks.t", tc.stmts)
		}
		if got := tb.FormatFeatures(); !slices.Equal(got, tc.want) {
			t.Errorf("after %s: FormatFeatures() = %q, want %q", strings.Join(tc.stmts, "; "), got, tc.want)
		}
	}
}
