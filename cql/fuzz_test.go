package cql

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that the parser never panics, that every error has a
// position inside the input, and that every statement it accepts survives
// a round trip through Format unchanged. The seed corpus is the table of
// valid statements plus testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, tt := range validStatements {
		f.Add(tt.src)
	}
	f.Add("ALTER TABLE IF EXISTS ks.t ADD IF NOT EXISTS (a int, b map<text, int>); ALTER TABLE t DROP (a, b) USING TIMESTAMP -5; ALTER TABLE t RENAME k TO x AND c TO y; TRUNCATE TABLE t")
	f.Add("SELECT token(k), system.toDate(c), CAST(CAST(v AS int) AS text), blobAsInt(?), ttl(v) FROM t WHERE k = now() AND c > minTimeuuid(:x)")
	f.Add("CREATE SERVICE LEVEL IF NOT EXISTS sl WITH max_reads_per_second = 1 AND timeout = 5s; ATTACH SERVICE LEVEL sl TO ADDRESS '::1'; GRANT a TO b; LIST ALL ATTACHED SERVICE LEVELS; LIST EFFECTIVE SERVICE LEVEL OF 'A'")
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := Parse(src)
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 || len(list) > MaxErrors {
				t.Fatalf("Parse(%q) returned %v, want an ErrorList of 1 to %d errors", src, err, MaxErrors)
			}
			lines := strings.Count(src, "\n") + 1
			for _, e := range list {
				if strings.Contains(e.Msg, "internal parser error") {
					t.Fatalf("Parse(%q) hit a parser bug: %v", src, e)
				}
				if !e.Pos.IsValid() || e.Pos.Line > lines || e.Pos.Offset > len(src) || e.Pos.Col < 1 {
					t.Fatalf("Parse(%q) reported an error outside the input: %v (offset %d)", src, e, e.Pos.Offset)
				}
			}
			return
		}
		for _, s := range stmts {
			text := Format(s)
			again, err := ParseStatement(text)
			if err != nil {
				t.Fatalf("the canonical text %q of a statement parsed from %q does not parse: %v", text, src, err)
			}
			if !equalIgnoringPos(s, again) {
				t.Fatalf("parsing the canonical text %q of %q gave a different tree:\n%s\nwant:\n%s", text, src, dump(again), dump(s))
			}
			if text2 := Format(again); text2 != text {
				t.Fatalf("Format is not stable: %q, then %q", text, text2)
			}
		}
	})
}
