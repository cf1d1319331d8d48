package cqlsh

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

// splitAll feeds chunks in order, collecting the statements each one completes, then ends the
// input.
func splitAll(chunks ...string) []statement {
	var (
		s   splitter
		out []statement
	)
	for _, c := range chunks {
		s.feed(c)
		for st, ok := s.next(false); ok; st, ok = s.next(false) {
			out = append(out, st)
		}
	}
	for st, ok := s.next(true); ok; st, ok = s.next(true) {
		out = append(out, st)
	}
	return out
}

func TestSplitterStatements(t *testing.T) {
	stmt := func(line int, text string) statement { return statement{Text: text, Line: line} }
	sh := func(line int, text string) statement { return statement{Text: text, Line: line, Shell: true} }
	for _, tc := range []struct {
		name  string
		input string
		want  []statement
	}{
		{"one statement", "SELECT * FROM t WHERE k = 1;\n", []statement{stmt(1, "SELECT * FROM t WHERE k = 1")}},
		{"a BATCH ends after APPLY BATCH", "BEGIN BATCH\n  INSERT INTO t (k) VALUES (1);\n  DELETE FROM t WHERE k = 2;\nAPPLY BATCH;\nSELECT 1;\n",
			[]statement{stmt(1, "BEGIN BATCH\n  INSERT INTO t (k) VALUES (1);\n  DELETE FROM t WHERE k = 2;\nAPPLY BATCH"), stmt(5, "SELECT 1")}},
		{"an unfinished BATCH at EOF goes to the server", "BEGIN BATCH INSERT INTO t (k) VALUES (1);", []statement{stmt(1, "BEGIN BATCH INSERT INTO t (k) VALUES (1);")}},
		{"several on one line", "USE ks; INSERT INTO t (k) VALUES (1);SELECT * FROM t;\n",
			[]statement{stmt(1, "USE ks"), stmt(1, "INSERT INTO t (k) VALUES (1)"), stmt(1, "SELECT * FROM t")}},
		{"multi-line", "SELECT *\n  FROM t\n  WHERE k = 1\n;\nSELECT 2;\n",
			[]statement{stmt(1, "SELECT *\n  FROM t\n  WHERE k = 1"), stmt(5, "SELECT 2")}},
		{"semicolon in a string", "INSERT INTO t (k, v) VALUES (1, 'a;b''c;');\n",
			[]statement{stmt(1, "INSERT INTO t (k, v) VALUES (1, 'a;b''c;')")}},
		{"semicolon in a quoted identifier", `SELECT "a;b" FROM t;` + "\n", []statement{stmt(1, `SELECT "a;b" FROM t`)}},
		{"semicolon in comments", "SELECT -- not ; here\n /* nor ; here */ * FROM t; // after ;\n",
			[]statement{stmt(1, "SELECT -- not ; here\n /* nor ; here */ * FROM t")}},
		{"string spanning lines", "INSERT INTO t (k, v) VALUES (1, 'line1;\nline2');\n",
			[]statement{stmt(1, "INSERT INTO t (k, v) VALUES (1, 'line1;\nline2')")}},
		{"empty statements and comments only", ";;\n-- nothing\n/* at all */ ;\n", nil},
		{"leading comment lines count", "-- header\n\nSELECT 1;\n", []statement{stmt(3, "SELECT 1")}},
		{"trailing statement without semicolon at EOF", "USE ks;\nSELECT * FROM t", []statement{stmt(1, "USE ks"), stmt(2, "SELECT * FROM t")}},
		{"unterminated string at EOF goes to the server", "SELECT 'abc", []statement{stmt(1, "SELECT 'abc")}},
		{"unterminated comment at EOF goes to the server", "SELECT 1; /* open", []statement{stmt(1, "SELECT 1"), stmt(1, "/* open")}},
		{"shell command ends at end of line", "CONSISTENCY\nconsistency all\nSELECT 1;\n",
			[]statement{sh(1, "CONSISTENCY"), sh(2, "consistency all"), stmt(3, "SELECT 1")}},
		{"shell command ends at semicolon", "CONSISTENCY QUORUM; SELECT 1;\n",
			[]statement{sh(1, "CONSISTENCY QUORUM"), stmt(1, "SELECT 1")}},
		{"shell command at EOF without newline", "SELECT 1;\nexit", []statement{stmt(1, "SELECT 1"), sh(2, "exit")}},
		{"shell command with comment", "help -- me\n", []statement{sh(1, "help -- me")}},
		{"shell word inside a statement is not a command", "SELECT\nhelp FROM t;\n", []statement{stmt(1, "SELECT\nhelp FROM t")}},
	} {
		// Every way of delivering the input must give the same statements: all at once, line by
		// line, and one byte at a time.
		deliveries := map[string][]string{
			"whole": {tc.input},
			"lines": strings.SplitAfter(tc.input, "\n"),
			"bytes": strings.Split(tc.input, ""),
		}
		for _, how := range []string{"whole", "lines", "bytes"} {
			got := splitAll(deliveries[how]...)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s: splitting %q fed %s gave\n%s\nwant\n%s", tc.name, tc.input, how, show(got), show(tc.want))
			}
		}
	}
}

func show(sts []statement) string {
	var b strings.Builder
	for _, st := range sts {
		fmt.Fprintf(&b, "  line %d shell=%v %q\n", st.Line, st.Shell, st.Text)
	}
	if b.Len() == 0 {
		return "  (none)\n"
	}
	return b.String()
}

func TestSplitterWaitsForIncompleteInput(t *testing.T) {
	for _, tc := range []struct {
		input       string
		wantPending bool
	}{
		{"SELECT * FROM t\n", true},
		{"INSERT INTO t (k) VALUES ('a;\n", true},
		{`SELECT "a;` + "\n", true},
		{"SELECT 1 /* ; \n", true},
		{"/* a comment\n", true},
		{"CONSISTENCY", true}, // a shell command waits for its line to end
		{"-- only a comment\n", false},
		{"   \n", false},
		{";\n", false},
	} {
		var s splitter
		s.feed(tc.input)
		if st, ok := s.next(false); ok {
			t.Errorf("after %q the splitter handed out %q before the statement was complete", tc.input, st.Text)
		}
		if got := s.pending(); got != tc.wantPending {
			t.Errorf("after %q pending() = %v, want %v", tc.input, got, tc.wantPending)
		}
	}
}

func TestSplitterResetDropsHalfTypedStatement(t *testing.T) {
	var s splitter
	s.feed("SELECT * FROM\n")
	s.feed("'unterminated;\n")
	s.reset()
	if s.pending() {
		t.Fatal("after reset the splitter still has a pending statement")
	}
	s.feed("SELECT 1;\n")
	st, ok := s.next(false)
	if !ok || st.Text != "SELECT 1" {
		t.Errorf("after reset, next() = %q, %v; want the new statement SELECT 1", st.Text, ok)
	}
	if st.Line != 3 {
		t.Errorf("statement after reset is on line %d, want 3 (dropped lines still count)", st.Line)
	}
}

// TestScannerUnterminatedMessages pins the cql scanner messages that unterminated() relies on to
// tell "more input may complete this" from other malformed tokens.
func TestScannerUnterminatedMessages(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{"'abc", true},
		{`"abc`, true},
		{"/* abc", true},
		{"10abc", false},
		{"0xabc", false},
		{"#", false},
		{`""`, false},
	} {
		var sc cql.Scanner
		sc.Init(tc.src)
		_, tok, lit := sc.Scan()
		if tok != cql.ILLEGAL {
			t.Errorf("scanning %q gave %v, want ILLEGAL", tc.src, tok)
			continue
		}
		if got := unterminated(lit); got != tc.want {
			t.Errorf("unterminated(%q) for source %q = %v, want %v", lit, tc.src, got, tc.want)
		}
	}
}
