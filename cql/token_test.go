package cql

import (
	"strings"
	"testing"
)

func TestParseTokenRelations(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{src: "SELECT * FROM t WHERE token(k) > 0"},
		{src: "SELECT * FROM t WHERE token(k) > ? AND token(k) <= ?"},
		{src: "SELECT a FROM ks.t WHERE TOKEN(k1, K2) >= -5 AND token(k1, k2) < 9 LIMIT 10",
			want: "SELECT a FROM ks.t WHERE token(k1, k2) >= -5 AND token(k1, k2) < 9 LIMIT 10"},
		{src: `SELECT * FROM t WHERE token("K") = :t`},
	} {
		want := tt.want
		if want == "" {
			want = tt.src
		}
		s, err := ParseStatement(tt.src)
		if err != nil {
			t.Errorf("ParseStatement(%q) failed: %v", tt.src, err)
			continue
		}
		if got := Format(s); got != want {
			t.Errorf("Format(ParseStatement(%q)) = %q, want %q", tt.src, got, want)
		}
		checkRoundTrip(t, tt.src, s)
		if r := s.(*SelectStmt).Where[0]; len(r.Token) == 0 || r.Column.Name != "token" {
			t.Errorf("ParseStatement(%q): the first relation is %+v, want a token relation", tt.src, r)
		}
	}
	// A column named token (quoted, or without a call) is a column.
	s, err := ParseStatement(`SELECT * FROM t WHERE "token" = 1 AND token = 2`)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.(*SelectStmt).Where {
		if r.Token != nil {
			t.Errorf("relation %+v on the column token parsed as a token relation", r)
		}
	}
	for _, tt := range []struct{ src, want string }{
		{"SELECT * FROM t WHERE token() > 0", "1:29: expected partition key column name, found ')'"},
		{"SELECT * FROM t WHERE token(k > 0", "expected ')'"},
		{"SELECT * FROM t WHERE token(k) != 1", "!= restrictions are not supported"},
	} {
		_, err := ParseStatement(tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseStatement(%q) error = %v, want one containing %q", tt.src, err, tt.want)
		}
	}
}
