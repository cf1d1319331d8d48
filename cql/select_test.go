package cql

import "testing"

// TestParseSelectShapes checks the SELECT forms of IN, multi-column
// relations, aggregates, aliases, DISTINCT, GROUP BY and PER PARTITION
// LIMIT: each parses, and formats back to its canonical text.
func TestParseSelectShapes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT * FROM t WHERE k IN (1, 2)", "SELECT * FROM t WHERE k IN (1, 2)"},
		{"select * from t where k in ?", "SELECT * FROM t WHERE k IN ?"},
		{"SELECT * FROM t WHERE k IN ()", "SELECT * FROM t WHERE k IN ()"},
		{"SELECT * FROM t WHERE k = 1 AND (c, d) IN ((1, 2), (3, 4))", "SELECT * FROM t WHERE k = 1 AND (c, d) IN ((1, 2), (3, 4))"},
		{"SELECT * FROM t WHERE k = 1 AND (c, d) > (1, 2) AND (c) <= (5)", "SELECT * FROM t WHERE k = 1 AND (c, d) > (1, 2) AND (c) <= (5)"},
		{"SELECT count(*), COUNT(1), min(v) AS lo, max(v), sum(v), avg(v) FROM t", "SELECT COUNT(*), COUNT(*), MIN(v) AS lo, MAX(v), SUM(v), AVG(v) FROM t"},
		{"SELECT k AS key, v FROM t", "SELECT k AS key, v FROM t"},
		{"SELECT DISTINCT k FROM t", "SELECT DISTINCT k FROM t"},
		{"SELECT distinct, v FROM t", "SELECT distinct, v FROM t"},
		{"SELECT k, c, count(*) FROM t WHERE k = 1 GROUP BY k, c ORDER BY c DESC PER PARTITION LIMIT 2 LIMIT 10 ALLOW FILTERING",
			"SELECT k, c, COUNT(*) FROM t WHERE k = 1 GROUP BY k, c ORDER BY c DESC PER PARTITION LIMIT 2 LIMIT 10 ALLOW FILTERING"},
		{"SELECT * FROM t PER PARTITION LIMIT ?", "SELECT * FROM t PER PARTITION LIMIT ?"},
		{"SELECT JSON * FROM t", "SELECT JSON * FROM t"},
		{"SELECT JSON DISTINCT k FROM t", "SELECT JSON DISTINCT k FROM t"},
		{"SELECT json, v FROM t", "SELECT json, v FROM t"},
		{"SELECT toJson(v) FROM t", "SELECT tojson(v) FROM t"},
		{`INSERT INTO t JSON '{"k": 1}'`, `INSERT INTO t JSON '{"k": 1}'`},
		{"INSERT INTO t JSON ? DEFAULT UNSET USING TTL 5", "INSERT INTO t JSON ? DEFAULT UNSET USING TTL 5"},
		{"INSERT INTO t JSON ? DEFAULT NULL", "INSERT INTO t JSON ?"},
	} {
		st, err := ParseStatement(c.in)
		if err != nil {
			t.Errorf("ParseStatement(%q): %v", c.in, err)
			continue
		}
		if got := Format(st); got != c.want {
			t.Errorf("Format(ParseStatement(%q)) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"SELECT * FROM t WHERE k IN 1", "1:28: expected '(' or a bind marker, found integer 1"},
		{"SELECT * FROM t WHERE (c, d) != (1, 2)", "1:30: != restrictions are not supported"},
		{"SELECT count(count(v)) FROM t", "1:14: aggregate functions (COUNT) are only supported as selectors of their own, not inside other functions"},
		{"SELECT * FROM t PER PARTITION 1", "1:31: expected 'LIMIT', found integer 1"},
		{"INSERT INTO t JSON 1", "1:20: expected JSON string or bind marker, found integer 1"},
		{"INSERT INTO t JSON '{}' DEFAULT 1", "1:33: expected 'NULL' or 'UNSET', found integer 1"},
	} {
		_, err := ParseStatement(c.in)
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseStatement(%q) error = %v, want %q", c.in, err, c.want)
		}
	}
}

// TestBindMarkersSelectOrder checks that the markers of IN lists and PER
// PARTITION LIMIT are numbered in source order.
func TestBindMarkersSelectOrder(t *testing.T) {
	st, err := ParseStatement("SELECT * FROM t WHERE k IN (?, ?) AND c IN ? PER PARTITION LIMIT ? LIMIT ?")
	if err != nil {
		t.Fatal(err)
	}
	ms := BindMarkers(st)
	if len(ms) != 5 {
		t.Fatalf("BindMarkers: %d markers, want 5", len(ms))
	}
	for i, m := range ms {
		if m.Index != i {
			t.Errorf("marker %d has index %d", i, m.Index)
		}
	}
}
