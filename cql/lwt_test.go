package cql

import (
	"strings"
	"testing"
)

func TestParseConditions(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"INSERT INTO t (k, v) VALUES (1, 2) IF NOT EXISTS", ""},
		{"insert into t (k, v) values (?, ?) if not exists using ttl 5", "INSERT INTO t (k, v) VALUES (?, ?) IF NOT EXISTS USING TTL 5"},
		{"UPDATE t SET v = 2 WHERE k = 1 IF EXISTS", ""},
		{"UPDATE t SET v = ? WHERE k = ? IF v > 0 AND w = 2", ""},
		{"UPDATE t SET v = 1 WHERE k = 1 IF a != 1 AND b < 2 AND c <= 3 AND d >= 4 AND e IN (1, 2) AND f IN ?", ""},
		{"UPDATE t SET v = 1 WHERE k = 1 IF v = NULL", ""},
		{"BEGIN BATCH INSERT INTO t (k, c) VALUES (1, 1) IF NOT EXISTS; UPDATE t SET v = ? WHERE k = 1 AND c = 2 IF v = ?; APPLY BATCH", ""},
		{"INSERT INTO t (k) VALUES (1) IF NOT EXISTS USING TIMESTAMP 5", ""}, // refused by the executor, Invalid as in Cassandra
		{"DELETE FROM t WHERE k = 1 IF EXISTS", ""},
		{"DELETE v FROM t WHERE k = 1 IF v = 'a'", ""},
		{"UPDATE t USING TTL 3 SET v = 1 WHERE k = 1 IF v IN ()", ""},
		{"UPDATE t SET v = 1 WHERE k = 1 IF m['a'] = 1 AND l[?] > ? AND u.f IN (1, 2) AND u.\"G\" = ?", ""},
	} {
		want := tt.want
		if want == "" {
			want = tt.src
		}
		s, err := ParseStatement(tt.src)
		if err != nil {
			t.Errorf("ParseStatement(%q): %v", tt.src, err)
			continue
		}
		if got := Format(s); got != want {
			t.Errorf("Format(ParseStatement(%q)) = %q, want %q", tt.src, got, want)
		}
		if _, batch := s.(*BatchStmt); !batch && ConditionsOf(s) == nil {
			t.Errorf("ConditionsOf(%q) = nil", tt.src)
		}
		checkRoundTrip(t, tt.src, s)
	}
	s, err := ParseStatement("UPDATE t SET v = ? WHERE k = ? IF v = ? AND w IN ?")
	if err != nil {
		t.Fatal(err)
	}
	c := ConditionsOf(s).Cols
	if len(c) != 2 || c[0].Value.(*Literal).Index != 2 || !c[1].IsIn() || c[1].Value.(*Literal).Index != 3 {
		t.Errorf("conditions %+v: want v = marker 2, w IN marker 3", c)
	}
	s, err = ParseStatement("UPDATE t SET v = ? WHERE k = ? IF m[?] = ? AND u.f = ?")
	if err != nil {
		t.Fatal(err)
	}
	c = ConditionsOf(s).Cols
	if len(c) != 2 || c[0].Element.(*Literal).Index != 2 || c[0].Value.(*Literal).Index != 3 || c[1].Field.Name != "f" || c[1].Value.(*Literal).Index != 4 {
		t.Errorf("conditions %+v: want m[marker 2] = marker 3, u.f = marker 4", c)
	}
	if s, _ := ParseStatement("UPDATE t SET v = 1 WHERE k = 1"); ConditionsOf(s) != nil {
		t.Error("an unconditional UPDATE has conditions")
	}
}

func TestParseConditionsErrors(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"INSERT INTO t (k) VALUES (1) IF EXISTS", "1:33: expected 'NOT', found 'EXISTS'"},
		{"UPDATE t SET v = 1 WHERE k = 1 IF NOT EXISTS", "1:35: IF NOT EXISTS is only for INSERT; use IF EXISTS or conditions"},
		{"UPDATE t SET v = 1 WHERE k = 1 IF", "expected 'EXISTS' or a condition"},
		{"UPDATE t SET v = 1 WHERE k = 1 IF v LIKE 1", "expected '=', '!=', '<', '<=', '>', '>=' or 'IN'"},
		{"UPDATE t SET v = 1 WHERE k = 1 IF v IN 1", "expected '(' or bind marker after IN"},
		{"UPDATE t SET v = 1 WHERE k = 1 IF m['a' = 1", "expected ']'"},
		{"UPDATE t SET v = 1 WHERE k = 1 IF u. = 1", "expected field name"},
	} {
		_, err := ParseStatement(tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseStatement(%q) = %v, want %q", tt.src, err, tt.want)
		}
	}
}
