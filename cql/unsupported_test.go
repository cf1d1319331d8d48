package cql

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCassandraExamples holds the examples of Cassandra's CQL documentation
// (testdata/cassandra/examples.cql) to the rule that every valid statement
// either parses or is refused as not supported, never as a syntax error.
func TestCassandraExamples(t *testing.T) {
	data, err := os.ReadFile("testdata/cassandra/examples.cql")
	if err != nil {
		t.Fatal(err)
	}
	// Each example file's statements follow a comment naming the file; each
	// group is parsed on its own, so that a refusal's skip stays inside it.
	header := regexp.MustCompile(`(?m)^-- ([a-z0-9_-]+\.cql).*$`)
	idx := header.FindAllStringSubmatchIndex(string(data), -1)
	if len(idx) < 40 {
		t.Fatalf("found %d example groups in examples.cql, want at least 40", len(idx))
	}
	parsed, refused := 0, 0
	for i, m := range idx {
		name := string(data[m[2]:m[3]])
		end := len(data)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		src := string(data[m[1]:end])
		want := strings.Count(src, ";") - 4*strings.Count(src, "BEGIN BATCH") // a batch's inner semicolons
		stmts, err := Parse(src)
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("%s: Parse error %v is not an ErrorList", name, err)
			}
			for _, e := range list {
				if !e.Unsupported || !strings.Contains(e.Msg, "not supported") {
					t.Errorf("%s: Parse error %q is a syntax error, want a parsed statement or a \"not supported\" refusal", name, e)
				}
			}
			refused += len(list)
			continue
		}
		if len(stmts) != want {
			t.Errorf("%s: Parse gave %d statements, want %d", name, len(stmts), want)
		}
		parsed += len(stmts)
	}
	t.Logf("%d example groups: %d statements parsed, %d refused as not supported", len(idx), parsed, refused)
	if parsed < 15 || refused < 25 {
		t.Errorf("parsed %d and refused %d examples, want at least 15 and 25: the test no longer reads the file as meant", parsed, refused)
	}
}

// unsupportedStatements are valid Cassandra 4.1 CQL that kvnode refuses, with
// the position and message of the refusal.
var unsupportedStatements = []struct{ src, want string }{
	{"CREATE MATERIALIZED VIEW v AS SELECT * FROM t WHERE k IS NOT NULL PRIMARY KEY (k)", "1:8: materialized views are not supported: to query a table by a regular column, create a secondary index on it (CREATE INDEX ON ks.t (col)), or keep a second table written beside it"},
	{"DROP MATERIALIZED VIEW v", "1:6: materialized views are not supported: to query a table by a regular column, create a secondary index on it (CREATE INDEX ON ks.t (col)), or keep a second table written beside it"},
	{"ALTER MATERIALIZED VIEW v WITH comment = 'x'", "1:7: materialized views are not supported: to query a table by a regular column, create a secondary index on it (CREATE INDEX ON ks.t (col)), or keep a second table written beside it"},
	{"CREATE CUSTOM INDEX ON t (v) USING 'org.apache.cassandra.index.sasi.SASIIndex'", "1:8: custom (SASI and storage-attached) indexes are not supported"},
	{"CREATE INDEX ON t (v, w)", "1:21: only CUSTOM indexes support multiple columns, and custom indexes are not supported"},
	{"CREATE INDEX ON t (v) WITH options = {}", "1:23: index options (USING, WITH) are only for CUSTOM indexes, which are not supported"},
	{"CREATE FUNCTION f (a int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS $$ return a; $$", "1:8: user-defined functions are not supported"},
	{"CREATE OR REPLACE AGGREGATE ks.avg (int) SFUNC s STYPE tuple<int, bigint> FINALFUNC f INITCOND (0, 0)", "1:8: user-defined aggregates are not supported"},
	{"DROP FUNCTION IF EXISTS f (int)", "1:6: user-defined functions are not supported"},
	{"DROP AGGREGATE a", "1:6: user-defined aggregates are not supported"},
	{"CREATE TRIGGER tr ON t USING 'x.Y'", "1:8: triggers are not supported"},
	{"DROP TRIGGER tr ON t", "1:6: triggers are not supported"},
	{"CREATE USER u WITH PASSWORD 'p' NOSUPERUSER", "1:8: CREATE USER is not supported: use CREATE ROLE"},
	{"ALTER USER u WITH PASSWORD 'p'", "1:7: ALTER USER is not supported: use ALTER ROLE"},
	{"DROP USER u", "1:6: DROP USER is not supported: use DROP ROLE"},
	{"GRANT EXECUTE ON ALL FUNCTIONS TO r", "1:7: permission EXECUTE is not supported (valid: SELECT, MODIFY, ALTER, CREATE, DROP, AUTHORIZE, ALL PERMISSIONS)"},
	{"CREATE ROLE r WITH HASHED PASSWORD = 'x'", "1:20: HASHED PASSWORD is not supported: set the password itself"},
	{"CREATE TABLE t (k int PRIMARY KEY, v int) WITH COMPACT STORAGE", "1:48: COMPACT STORAGE is not supported"},
	{"ALTER TABLE t DROP COMPACT STORAGE", "1:20: DROP COMPACT STORAGE is not supported: kvnode has no COMPACT STORAGE tables"},
	{"ALTER TABLE t ALTER v TYPE blob", "1:15: ALTER TABLE ... ALTER column TYPE is not supported: column types cannot be changed (as in Cassandra 4.1)"},
	{"SELECT myks.f(v) FROM t", "1:8: user-defined functions are not supported"},
	{"SELECT f(v) FROM t", "1:8: unknown function f: kvnode runs Cassandra's native scalar functions, and user-defined functions are not supported"},
	{"SELECT toDate(sum(v)) FROM t", "1:15: aggregate functions (SUM) are only supported as selectors of their own, not inside other functions"},
	{"SELECT * FROM t WHERE v LIKE 'a%'", "1:25: LIKE restrictions are not supported"},
	{"INSERT INTO t (k, v) VALUES (1, myks.f(2))", "1:33: user-defined functions are not supported"},
	{"UPDATE t SET c = d + 1 WHERE k = 1", "1:18: counter and collection updates (c = c + ...) are not supported"},
	{"UPDATE t SET c = 1 + c + 2 WHERE k = 1", "1:24: arithmetic operators and counter or collection updates are not supported"},
	{"SELECT -v FROM t", "1:8: selectors other than column names and function calls are not supported"},
	{"SELECT 1 FROM t", "1:8: selectors other than column names and function calls are not supported"},
	{"SELECT maxwritetime(v) FROM t", "1:8: MAXWRITETIME is not supported"},
	{"SELECT token(k) + 1 FROM t", "1:17: arithmetic operators are not supported"},
	{"SELECT a.b FROM t", "1:9: selecting collection elements or fields is not supported"},
	{"SELECT * FROM t WHERE k = 1 AND ts > floor(ts, 1h)", "1:38: function floor is not supported"},
	{"SELECT * FROM t WHERE k = 1 AND c IS NOT NULL", "1:35: IS NOT NULL restrictions are only for materialized views, which are not supported"},
	{"SELECT * FROM t WHERE k = (int) 1", "1:27: type hints ((type) value) are not supported"},
	{"LIST USERS", "1:1: LIST USERS is not supported: use LIST ROLES"},
	{"LIST ROLES OF alice NORECURSIVE", "1:21: NORECURSIVE is not supported"},
	{"LIST ALL PERMISSIONS OF alice NORECURSIVE", "1:31: NORECURSIVE is not supported"},
	{"GRANT ALL ON ALL MBEANS TO r", "1:18: resource ALL MBEANS is not supported: permissions are granted on ALL KEYSPACES, KEYSPACE ks or TABLE ks.t"},
	{"CREATE AGGREGATE IF NOT EXISTS a (int) SFUNC f STYPE int", "1:8: user-defined aggregates are not supported"},
}

func TestParseUnsupported(t *testing.T) {
	for _, tt := range unsupportedStatements {
		_, err := ParseStatement(tt.src)
		var list ErrorList
		if !errors.As(err, &list) {
			t.Errorf("ParseStatement(%q) error = %v, want the refusal %q", tt.src, err, tt.want)
			continue
		}
		if got := list[0].Error(); got != tt.want || !list.Unsupported() {
			t.Errorf("ParseStatement(%q) error = %q (unsupported %v), want the refusal %q", tt.src, err, list.Unsupported(), tt.want)
		}
	}
}

// TestParseUnsupportedWordsAsNames checks that the words the refusals look
// for still name columns and values where the grammar allows a name.
func TestParseUnsupportedWordsAsNames(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"SELECT json FROM t", "SELECT json FROM t"},
		{"SELECT distinct, json FROM t", "SELECT distinct, json FROM t"},
		{"SELECT * FROM t WHERE token = 1 AND in = 2", "SELECT * FROM t WHERE token = 1 AND in = 2"},
		{"CREATE TABLE t (index int PRIMARY KEY, type text, static int, json text)", "CREATE TABLE t (index int PRIMARY KEY, type text, static int, json text)"},
		{"UPDATE t SET group = 1, per = 2 WHERE k = 1", "UPDATE t SET group = 1, per = 2 WHERE k = 1"},
	} {
		s, err := ParseStatement(tt.src)
		if err != nil {
			t.Errorf("ParseStatement(%q) error = %v, want it to parse", tt.src, err)
			continue
		}
		if got := Format(s); got != tt.want {
			t.Errorf("Format(ParseStatement(%q)) = %q, want %q", tt.src, got, tt.want)
		}
	}
}

// TestParseSyntaxErrorsStaySyntaxErrors checks that a refusal does not hide
// a typo: what is not valid CQL is still a syntax error.
func TestParseSyntaxErrorsStaySyntaxErrors(t *testing.T) {
	for _, src := range []string{
		"CREATE INDX i ON t (v)",
		"SELECT * FROM t WHERE k = abc",
		"GRANT SELCT ON ks.t TO r",
		"INSERT INTO t (k) VALUES (1) IF",
		"SELECT * FROM t WHERE k = 1 GROUPBY k",
		"CREATE OR FUNCTION f",
	} {
		_, err := ParseStatement(src)
		var list ErrorList
		if !errors.As(err, &list) || list.Unsupported() {
			t.Errorf("ParseStatement(%q) error = %v, want a syntax error", src, err)
		}
	}
}

func TestParseDescribeWithInternals(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"DESCRIBE KEYSPACE ks WITH INTERNALS", ""},
		{"desc keyspace \"Ks\" with internals;", "DESCRIBE KEYSPACE \"Ks\" WITH INTERNALS"},
		{"DESCRIBE TABLE ks.t WITH INTERNALS", ""},
		{"DESCRIBE KEYSPACE WITH INTERNALS", ""},
		{"DESCRIBE SCHEMA WITH INTERNALS", ""},
		{"desc full schema with internals", "DESCRIBE SCHEMA WITH INTERNALS"},
	} {
		s, err := ParseStatement(tt.src)
		if err != nil {
			t.Errorf("ParseStatement(%q) error = %v", tt.src, err)
			continue
		}
		want := tt.want
		if want == "" {
			want = tt.src
		}
		if got := Format(s); got != want || !s.(*DescribeStmt).Internals {
			t.Errorf("Format(ParseStatement(%q)) = %q (Internals %v), want %q with Internals", tt.src, got, s.(*DescribeStmt).Internals, want)
		}
	}
	for _, tt := range []struct{ src, want string }{
		{"DESCRIBE MATERIALIZED VIEW ks.v", "1:10: materialized views are not supported: to query a table by a regular column, create a secondary index on it (CREATE INDEX)"},
		{"DESCRIBE ks", "1:10: DESCRIBE of a name without its kind is not supported: write DESCRIBE KEYSPACE ks or DESCRIBE TABLE ks"},
	} {
		_, err := ParseStatement(tt.src)
		var list ErrorList
		if !errors.As(err, &list) || !list.Unsupported() || list[0].Error() != tt.want {
			t.Errorf("ParseStatement(%q) error = %v, want the refusal %q", tt.src, err, tt.want)
		}
	}
	if _, err := ParseStatement("DESCRIBE KEYSPACE ks WITH TABLES"); err == nil || err.Error() != "1:27: expected 'INTERNALS', found 'TABLES'" {
		t.Errorf("DESCRIBE KEYSPACE ks WITH TABLES: error = %v, want expected 'INTERNALS'", err)
	}
}
