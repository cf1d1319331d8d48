package cql

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// validStatements maps one-line statements to their canonical text.
var validStatements = []struct {
	src  string
	want string // "" means the source is already canonical
}{
	{"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", ""},
	{"create keyspace if not exists KS with REPLICATION = {'class':'SimpleStrategy','replication_factor':'2'};", "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '2'}"},
	{"DROP KEYSPACE ks", ""},
	{"ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", ""},
	{"alter keyspace if exists KS with REPLICATION = {'class':'SimpleStrategy','replication_factor':'2'} and durable_writes = true;", "ALTER KEYSPACE IF EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '2'} AND durable_writes = true"},
	{"ALTER KEYSPACE \"Ks\" WITH durable_writes = true", ""},
	{"DROP KEYSPACE IF EXISTS \"Ks\"", ""},
	{"USE ks;", "USE ks"},
	{"CREATE TABLE t (k int PRIMARY KEY, v text)", ""},
	{"CREATE TABLE ks.t (a int, b int, PRIMARY KEY (a, b))", ""},
	{"CREATE TABLE ks.t (a int, b int, PRIMARY KEY ((a), b))", "CREATE TABLE ks.t (a int, b int, PRIMARY KEY (a, b))"},
	{"CREATE TABLE t (a int, b text, c int, d int, PRIMARY KEY ((a, b), c, d))", ""},
	{"CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY) WITH per_partition_rate_limit = {'max_reads_per_second': 1, 'max_writes_per_second': '2'}", ""},
	{"CREATE TABLE t (k int PRIMARY KEY) WITH per_partition_rate_limit = {} AND comment = 'x'", ""},
	{"CREATE TABLE t (k int, v list<int>, PRIMARY KEY (k))", ""},
	{"ALTER TABLE t WITH per_partition_rate_limit = {'max_writes_per_second': 10}", ""},
	{"ALTER TABLE ks.t WITH per_partition_rate_limit = {}", ""},
	{"DROP TABLE t", ""},
	{"DROP TABLE IF EXISTS ks.t", ""},
	{"INSERT INTO t (k, v) VALUES (1, 'a')", ""},
	{"INSERT INTO t (k, v) VALUES (1, 'a') USING TIMESTAMP 123", ""},
	{"insert into T (K, \"V\") values (0XAB, -1.5E3)", "INSERT INTO t (k, \"V\") VALUES (0xab, -1.5E3)"},
	{"INSERT INTO t (a, b, c, d) VALUES (true, FALSE, null, ?)", "INSERT INTO t (a, b, c, d) VALUES (true, false, NULL, ?)"},
	{"INSERT INTO t (a, b, c) VALUES (nan, INFINITY, - Infinity)", "INSERT INTO t (a, b, c) VALUES (NaN, Infinity, -Infinity)"},
	{"UPDATE t SET v = 'x' WHERE k = 1", ""},
	{"UPDATE ks.t USING TIMESTAMP 5 SET v = 'x', w = NULL WHERE k = 1 AND c = 2", ""},
	{"DELETE FROM t WHERE k = 1", ""},
	{"DELETE v FROM t USING TIMESTAMP 9 WHERE k = 1 AND c > 2 AND c <= 5", ""},
	{"SELECT * FROM t", ""},
	{"SELECT k, v FROM ks.t WHERE k = ? AND c >= 1 AND c < 2 LIMIT 10", ""},
	{"SELECT * FROM t LIMIT ?", ""},
	{"SELECT \"select\", \"Key\", key FROM t", ""},
	{"DESCRIBE KEYSPACES", ""},
	{"DESC KEYSPACE", "DESCRIBE KEYSPACE"},
	{"DESCRIBE KEYSPACE ks", ""},
	{"DESCRIBE TABLES", ""},
	{"DESCRIBE TABLE ks.t", ""},
	{"DESCRIBE CLUSTER", ""},
	{"SELECT * FROM t -- trailing comment", "SELECT * FROM t"},
	{"/* leading */ SELECT * FROM t", "SELECT * FROM t"},
	{"SELECT * FROM t WHERE k = 'a''b'", ""},
	{"CREATE TABLE t (k int, c int, d text, PRIMARY KEY (k, c, d)) WITH CLUSTERING ORDER BY (c DESC, d ASC)", ""},
	{"create table t (k int, c int, primary key (k, c)) with per_partition_rate_limit = {'max_reads_per_second': 5} and clustering order by (c desc)",
		"CREATE TABLE t (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC) AND per_partition_rate_limit = {'max_reads_per_second': 5}"},
	{"CREATE TABLE t (k int PRIMARY KEY, clustering int) WITH clustering = 1", ""},
	{"SELECT * FROM t WHERE k = 1 ORDER BY c DESC LIMIT 3", ""},
	{"SELECT c FROM t WHERE k = 1 AND c > 2 order by c, d desc", "SELECT c FROM t WHERE k = 1 AND c > 2 ORDER BY c ASC, d DESC"},
	{"SELECT * FROM t WHERE k = 1 ORDER BY \"Order\" ASC", ""},
	{"SELECT * FROM t WHERE k = ? ALLOW FILTERING", ""},
	{"SELECT * FROM t WHERE k = :k AND c > :\"Low\" LIMIT :lim", ""},
	{"INSERT INTO t (k, v) VALUES (:K, ?) USING TIMESTAMP :ts", "INSERT INTO t (k, v) VALUES (:k, ?) USING TIMESTAMP :ts"},
	{"UPDATE t SET v = : \"select\" WHERE k = :key", "UPDATE t SET v = :\"select\" WHERE k = :key"},
	{"SELECT \"key\", rpc_address FROM system.local WHERE key = 'local' USING TIMEOUT 500ms", "SELECT key, rpc_address FROM system.local WHERE key = 'local' USING TIMEOUT 500ms"},
	{"select * from t where k = 1 order by c desc limit ? allow filtering using timeout 1M30S", "SELECT * FROM t WHERE k = 1 ORDER BY c DESC LIMIT ? ALLOW FILTERING USING TIMEOUT 1m30s"},
	{"SELECT * FROM system_schema.keyspaces USING TIMEOUT 2s", ""},
	{"INSERT INTO t (k, v) VALUES (?, ?) USING TIMESTAMP ? AND TIMEOUT 2s", ""},
	{"INSERT INTO t (k, v) VALUES (?, ?) USING TIMEOUT 2s AND TIMESTAMP ?", ""},
	{"UPDATE t USING TIMEOUT 10ms SET v = ? WHERE k = ?", ""},
	{"DELETE FROM t USING TIMESTAMP 5 AND TIMEOUT 1h WHERE k = ?", ""},
	{"BEGIN BATCH INSERT INTO t (k, v) VALUES (1, 'a'); UPDATE t SET v = 'b' WHERE k = 2; APPLY BATCH", ""},
	{"begin unlogged batch using timestamp 5 insert into t (k) values (?) delete from t where k = ? apply batch;",
		"BEGIN UNLOGGED BATCH USING TIMESTAMP 5 INSERT INTO t (k) VALUES (?); DELETE FROM t WHERE k = ?; APPLY BATCH"},
	{"BEGIN LOGGED BATCH USING TIMESTAMP ? AND TIMEOUT 3s INSERT INTO ks.t (k) VALUES (?); APPLY BATCH", "BEGIN BATCH USING TIMESTAMP ? AND TIMEOUT 3s INSERT INTO ks.t (k) VALUES (?); APPLY BATCH"},
	{"CREATE TABLE t (k int PRIMARY KEY, timeout int, filtering int, logged int, unlogged int)", ""},
}

func TestParseValid(t *testing.T) {
	for _, tt := range validStatements {
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
	}
}

// checkRoundTrip checks that Parse(Format(s)) equals s, positions aside.
func checkRoundTrip(t *testing.T, src string, s Statement) {
	t.Helper()
	text := Format(s)
	again, err := ParseStatement(text)
	if err != nil {
		t.Fatalf("the canonical text %q of %q does not parse: %v", text, src, err)
	}
	if !equalIgnoringPos(s, again) {
		t.Fatalf("parsing the canonical text %q of %q gave a different tree:\n%s\nwant:\n%s", text, src, dump(again), dump(s))
	}
}

// equalIgnoringPos compares two syntax trees with all positions cleared.
func equalIgnoringPos(a, b Statement) bool {
	return reflect.DeepEqual(clearPos(a), clearPos(b))
}

func clearPos(s Statement) any {
	v := reflect.New(reflect.TypeOf(s).Elem())
	v.Elem().Set(reflect.ValueOf(s).Elem())
	clearPosValue(v.Elem())
	return v.Interface()
}

// clearPosValue zeroes every Pos reachable from v, copying pointers first
// so that the original tree is untouched.
func clearPosValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(v.Elem())
		if v.CanSet() {
			v.Set(c)
		}
		clearPosValue(c.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		e := reflect.New(v.Elem().Type()).Elem()
		e.Set(v.Elem())
		clearPosValue(e)
		v.Set(e)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(Pos{}) {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			clearPosValue(v.Field(i))
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		v.Set(c)
		for i := 0; i < c.Len(); i++ {
			clearPosValue(c.Index(i))
		}
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		src  string
		want string // the first error, with its position
	}{
		{"", "1:1: expected statement, found end of input"},
		{"SELEC * FROM t", "1:1: expected statement, found identifier SELEC"},
		{"SELECT * FROM", "1:14: expected table name, found end of input"},
		{"SELECT * FROM t WHERE", "1:22: expected column name, found end of input"},
		{"SELECT * FROM t WHERE k", "1:24: expected '=', '<', '<=', '>', '>=' or 'IN', found end of input"},
		{"SELECT * FROM t WHERE k =", "1:26: expected value, found end of input"},
		{"SELECT * FROM t WHERE k = 1 OR k = 2", "1:29: expected ';' or end of input, found identifier OR"},
		{"SELECT * FROM t LIMIT -", "1:23: expected integer limit, found '-'"},
		{"SELECT * FROM t LIMIT 1.5", "1:23: expected integer limit, found float 1.5"},
		{"SELECT a, FROM t", "1:11: expected column name, found 'FROM'"},
		{"SELECT * FROM ks.", "1:18: expected table name, found end of input"},
		{"SELECT * FROM t WHERE k = -x", "1:28: expected number or 'Infinity' after '-', found identifier x"},
		{"SELECT * FROM t WHERE k = -NaN", "1:28: expected number or 'Infinity' after '-', found 'NAN'"},
		{"CREATE KEYSPACE ks", "1:19: expected 'WITH', found end of input"},
		{"CREATE KEYSPACE ks WITH replication {}", "1:37: expected '=', found '{'"},
		{"CREATE KEYSPACE ks WITH replication = {'class' 'x'}", "1:48: expected ':', found string 'x'"},
		{"CREATE KEYSPACE ks WITH replication = {'class': 'x'", "1:52: expected ',' or '}', found end of input"},
		{"CREATE KEYSPACE IF EXISTS ks WITH x = 1", "1:20: expected 'NOT', found 'EXISTS'"},
		{"ALTER KEYSPACE ks", "1:18: expected 'WITH', found end of input"},
		{"ALTER KEYSPACE IF NOT EXISTS ks WITH x = 1", "1:19: expected 'EXISTS', found 'NOT'"},
		{"ALTER KEYSPACE ks WITH replication {}", "1:36: expected '=', found '{'"},
		{"ALTER KEYSPACE WITH x = 1", "1:16: expected keyspace name, found 'WITH'"},
		{"ALTER VIEW v", "1:7: expected 'KEYSPACE', 'TABLE' or 'ROLE', found identifier VIEW"},
		{"CREATE TABLE t", "1:15: expected '(', found end of input"},
		{"CREATE TABLE t ()", "1:17: expected column name or PRIMARY KEY, found ')'"},
		{"CREATE TABLE t (a)", "1:18: expected type name, found ')'"},
		{"CREATE TABLE t (a int b int)", "1:23: expected ',' or ')', found identifier b"},
		{"CREATE TABLE t (a int, PRIMARY (a))", "1:32: expected 'KEY', found '('"},
		{"CREATE TABLE t (a int, PRIMARY KEY a)", "1:36: expected '(', found identifier a"},
		{"CREATE TABLE t (a int, PRIMARY KEY ((a), b)", "1:44: expected ',' or ')', found end of input"},
		{"CREATE TABLE t (a int, PRIMARY KEY (a)) WITH", "1:45: expected option name, found end of input"},
		{"CREATE TABLE t (a map<int, text)", "1:32: expected ',' or '>', found ')'"},
		{"CREATE TABLE t (a set)", "1:22: expected '<' after set, found ')'"},
		{"CREATE TABLE t (a set<int)", "1:26: expected ',' or '>', found ')'"},
		{"CREATE TABLE t (a list<list<list<list<list<list<list<list<list<int>>>>>>>>>)", "1:63: type parameters are nested too deeply"},
		{"ALTER TABLE t MODIFY v int", "1:15: expected 'WITH', 'ADD', 'DROP' or 'RENAME', found identifier MODIFY"},
		{"DROP t", "1:6: expected 'KEYSPACE', 'TABLE' or 'ROLE', found identifier t"},
		{"DROP TABLE IF t", "1:15: expected 'EXISTS', found identifier t"},
		{"USE", "1:4: expected keyspace name, found end of input"},
		{"USE 'ks'", "1:5: expected keyspace name, found string 'ks'"},
		{"INSERT t (a) VALUES (1)", "1:8: expected 'INTO', found identifier t"},
		{"INSERT INTO t VALUES (1)", "1:15: expected '(', found 'VALUES'"},
		{"INSERT INTO t (a) VALUE (1)", "1:19: expected 'VALUES', found identifier VALUE"},
		{"INSERT INTO t (a) VALUES (1", "1:28: expected ',' or ')', found end of input"},
		{"INSERT INTO t (a) VALUES (1) USING TTL 5.5", "1:40: expected integer TTL in seconds, found float 5.5"},
		{"INSERT INTO t (a) VALUES (1) USING TIMESTAMP 'x'", "1:46: expected integer timestamp, found string 'x'"},
		{"UPDATE t WHERE k = 1", "1:10: expected 'USING' or 'SET', found 'WHERE'"},
		{"UPDATE t USING TIMESTAMP 1 WHERE k = 1", "1:28: expected 'SET', found 'WHERE'"},
		{"UPDATE t SET v = 1", "1:19: expected ',' or 'WHERE', found end of input"},
		{"UPDATE t SET v 1 WHERE k = 1", "1:16: expected '=', found integer 1"},
		{"DELETE FROM t", "1:14: expected 'USING' or 'WHERE', found end of input"},
		{"DELETE v w FROM t WHERE k = 1", "1:10: expected ',' or 'FROM', found identifier w"},
		{"DESCRIBE", "1:9: expected 'KEYSPACES', 'KEYSPACE', 'TABLES', 'TABLE', 'CLUSTER' or 'SCHEMA', found end of input"},
		{"DESCRIBE TABLE", "1:15: expected table name, found end of input"},
		{"DESCRIBE KEYSPACE ks extra", "1:22: expected ';' or end of input, found identifier extra"},
		{"SELECT * FROM t WHERE k = 'abc", "1:27: string literal is not terminated"},
		{"SELECT * FROM \"t", "1:15: quoted identifier is not terminated"},
		{"SELECT * FROM t /* open", "1:17: comment is not terminated"},
		{"SELECT * FROM t WHERE k = 10abc", "1:27: malformed number 10abc"},
		{"SELECT * FROM t WHERE k = 0x123", "1:27: blob literal 0x123 has an odd number of hex digits"},
		{"SELECT * FROM t WHERE k = {{{{{{{{{{}}}}}}}}}}", "1:35: map literals are nested too deeply"},
		{"SELECT * FROM \"\"", "1:15: empty quoted identifier"},
		{"SELECT * FROM t\nWHERE\n  k = 1 AND", "3:12: expected column name, found end of input"},
		{"SELECT * FROM t; SELECT * FROM u", "1:18: expected one statement, found several"},
		{"SELECT * FROM t SELECT", "1:17: expected ';' or end of input, found 'SELECT'"},
		{"SELECT * FROM t WHERE k = 'ééééééééééééééééééééééééééééééééééééééééééé' x", "1:73: expected ';' or end of input, found identifier x"},
		{"SELECT * FROM t WHERE k = 1 AND 'ééééééééééééééééééééééééééééééééééééééééééé'", "1:33: expected column name, found string 'éééééééééééééééééééééééééééééééééééé..."},
		// CLUSTERING ORDER BY and ORDER BY.
		{"CREATE TABLE t (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c)", "1:78: expected 'ASC' or 'DESC', found ')'"},
		{"CREATE TABLE t (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c UP)", "1:79: expected 'ASC' or 'DESC', found identifier UP"},
		{"CREATE TABLE t (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER (c DESC)", "1:73: expected 'BY', found '('"},
		{"CREATE TABLE t (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY c DESC", "1:76: expected '(', found identifier c"},
		{"CREATE TABLE t (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC", "1:83: expected ',' or ')', found end of input"},
		{"CREATE TABLE t (k int, c int, d int, PRIMARY KEY (k, c, d)) WITH CLUSTERING ORDER BY (d DESC, c ASC)", "1:87: CLUSTERING ORDER BY must list the clustering columns in PRIMARY KEY order (c, d): expected c, found d"},
		{"CREATE TABLE t (k int, c int, d int, PRIMARY KEY (k, c, d)) WITH CLUSTERING ORDER BY (c DESC)", "1:93: CLUSTERING ORDER BY must list every clustering column in PRIMARY KEY order (c, d): d is missing"},
		{"CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC, v ASC)", "1:92: column v in CLUSTERING ORDER BY is not a clustering column (the clustering columns are c)"},
		{"CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (k ASC, c DESC)", "1:84: column k in CLUSTERING ORDER BY is not a clustering column (the clustering columns are c)"},
		{"CREATE TABLE t (k int, c int, d int, PRIMARY KEY (k, c, d)) WITH CLUSTERING ORDER BY (c DESC, c ASC)", "1:95: column c appears twice in CLUSTERING ORDER BY"},
		{"CREATE TABLE t (k int PRIMARY KEY, v int) WITH CLUSTERING ORDER BY (v DESC)", "1:48: CLUSTERING ORDER BY is only allowed on a table with clustering columns; this PRIMARY KEY has none"},
		{"CREATE TABLE t (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC) AND CLUSTERING ORDER BY (c ASC)", "1:89: CLUSTERING ORDER BY is given twice"},
		{"ALTER TABLE t WITH CLUSTERING ORDER BY (c DESC)", "1:20: CLUSTERING ORDER BY is only allowed in CREATE TABLE: the clustering order of a table cannot be changed"},
		{"CREATE KEYSPACE ks WITH CLUSTERING ORDER BY (c DESC)", "1:25: CLUSTERING ORDER BY is only allowed in CREATE TABLE: the clustering order of a table cannot be changed"},
		{"SELECT * FROM t WHERE k = 1 ORDER c", "1:35: expected 'BY', found identifier c"},
		{"SELECT * FROM t WHERE k = 1 ORDER BY", "1:37: expected column name, found end of input"},
		{"SELECT * FROM t WHERE k = 1 ORDER BY c DSC", "1:40: expected 'ASC', 'DESC', ',', 'LIMIT' or end of input, found identifier DSC"},
		{"SELECT * FROM t WHERE k = 1 ORDER BY c, c DESC", "1:41: column c appears twice in ORDER BY"},
		{"SELECT * FROM t WHERE k = 1 LIMIT 1 ORDER BY c", "1:37: expected ';' or end of input, found 'ORDER'"},
		{"SELECT * FROM t WHERE k = 1 ORDER BY c DESC ASC", "1:45: expected ';' or end of input, found 'ASC'"},
		{"SELECT order FROM t", "1:8: expected '*' or column name, found 'ORDER'"},
		// USING TIMEOUT, ALLOW FILTERING, BATCH.
		{"SELECT * FROM t WHERE k = :1", "1:28: expected bind marker name after ':', found integer 1"},
		{"SELECT * FROM t WHERE k = :", "1:28: expected bind marker name after ':', found end of input"},
		{"SELECT * FROM t LIMIT :from", "1:24: expected bind marker name after ':', found 'FROM'"},
		{"SELECT * FROM t USING TIMEOUT 5", "1:31: expected duration (such as 500ms or 1m30s), found integer 5"},
		{"SELECT * FROM t USING TIMEOUT 5parsecs", "1:31: malformed number 5parsecs"},
		{"SELECT * FROM t USING TIMEOUT ms", "1:31: expected duration (such as 500ms or 1m30s), found identifier ms"},
		{"SELECT * FROM t USING TIMESTAMP 5", "1:23: expected 'TIMEOUT', found 'TIMESTAMP'"},
		{"SELECT * FROM t USING TIMEOUT 1s AND TIMEOUT 2s", "1:38: USING TIMEOUT is given twice"},
		{"INSERT INTO t (k) VALUES (1) USING TIMESTAMP 1 AND TIMESTAMP 2", "1:52: USING TIMESTAMP is given twice"},
		{"INSERT INTO t (k) VALUES (1) USING TIMEOUT ?", "1:44: expected duration (such as 500ms or 1m30s), found '?'"},
		{"SELECT * FROM t ALLOW", "1:22: expected 'FILTERING', found end of input"},
		{"SELECT * FROM t ALLOW FILTERING LIMIT 1", "1:33: expected ';' or end of input, found 'LIMIT'"},
		{"BEGIN TRANSACTION", "1:7: expected 'BATCH', 'UNLOGGED' or 'LOGGED', found identifier TRANSACTION"},
		{"BEGIN BATCH APPLY BATCH", "1:13: expected INSERT, UPDATE or DELETE, found 'APPLY'"},
		{"BEGIN BATCH SELECT * FROM t APPLY BATCH", "1:13: expected INSERT, UPDATE or DELETE, found 'SELECT'"},
		{"BEGIN BATCH INSERT INTO t (k) VALUES (1); SELECT * FROM t; APPLY BATCH", "1:43: expected INSERT, UPDATE, DELETE or 'APPLY BATCH', found 'SELECT'"},
		{"BEGIN BATCH INSERT INTO t (k) VALUES (1);", "1:42: expected INSERT, UPDATE, DELETE or 'APPLY BATCH', found end of input"},
		{"BEGIN BATCH INSERT INTO t (k) VALUES (1); APPLY", "1:48: expected 'BATCH', found end of input"},
		{"BEGIN BATCH INSERT INTO t (k) VALUES (1) USING TIMEOUT 1s; APPLY BATCH x", "1:72: expected ';' or end of input, found identifier x"},
		{"SELECT * FROM t WHERE k = 1 ORDER BY c USING TIMEOUT 1s DESC", "1:57: expected ';' or end of input, found 'DESC'"},
	}
	for _, tt := range tests {
		_, err := ParseStatement(tt.src)
		if err == nil {
			t.Errorf("ParseStatement(%q) succeeded, want error %q", tt.src, tt.want)
			continue
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Errorf("ParseStatement(%q) error %v is not an ErrorList", tt.src, err)
			continue
		}
		if got := list[0].Error(); got != tt.want {
			t.Errorf("ParseStatement(%q) error = %q, want %q", tt.src, got, tt.want)
		}
	}
}

func TestParseRecoversAndStops(t *testing.T) {
	src := "SELEC 1; SELECT * FROM t; DROP x;" + strings.Repeat(" bad;", 20)
	stmts, err := Parse(src)
	if stmts != nil {
		t.Errorf("Parse of a script with errors returned %d statements, want none", len(stmts))
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Parse error %v is not an ErrorList", err)
	}
	if len(list) != MaxErrors {
		t.Errorf("Parse reported %d errors, want it to stop at %d", len(list), MaxErrors)
	}
	if got, want := list[1].Error(), "1:32: expected 'KEYSPACE', 'TABLE' or 'ROLE', found identifier x"; got != want {
		t.Errorf("the second error = %q, want %q (the parser should resume after the first semicolon)", got, want)
	}
	if got, want := err.Error(), "1:1: expected statement, found identifier SELEC (and 9 more errors)"; got != want {
		t.Errorf("ErrorList.Error() = %q, want %q", got, want)
	}
	var one *Error
	if !errors.As(err, &one) || one.Pos != (Pos{Offset: 0, Line: 1, Col: 1}) {
		t.Errorf("errors.As(err, *Error) gave %v, want the first error at 1:1", one)
	}
}

func TestParseScript(t *testing.T) {
	stmts, err := Parse("USE ks;;\n SELECT * FROM t;\n-- done\n;")
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 2 {
		t.Fatalf("Parse found %d statements, want 2", len(stmts))
	}
	if _, ok := stmts[1].(*SelectStmt); !ok || stmts[1].Pos() != (Pos{Offset: 10, Line: 2, Col: 2}) {
		t.Errorf("the second statement is %T at %v, want *SelectStmt at 2:2", stmts[1], stmts[1].Pos())
	}
	if stmts, err := Parse("  -- nothing\n"); err != nil || len(stmts) != 0 {
		t.Errorf("Parse of a comment = %v, %v; want no statements and no error", stmts, err)
	}
}

func TestQuoteIdent(t *testing.T) {
	tests := []struct{ name, want string }{
		{"abc", "abc"}, {"a_1", "a_1"}, {"Abc", `"Abc"`}, {"1a", `"1a"`}, {"_a", `"_a"`},
		{"select", `"select"`}, {"key", "key"}, {"timestamp", "timestamp"}, {"nan", `"nan"`},
		{"order", `"order"`}, {"asc", `"asc"`}, {"by", `"by"`}, {"clustering", "clustering"},
		{`a"b`, `"a""b"`}, {"a b", `"a b"`}, {"é", `"é"`},
	}
	for _, tt := range tests {
		if got := QuoteIdent(tt.name); got != tt.want {
			t.Errorf("QuoteIdent(%q) = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestNodePositions(t *testing.T) {
	for _, tt := range validStatements {
		if strings.HasPrefix(tt.src, "/*") {
			continue
		}
		s, err := ParseStatement(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Pos(); got != (Pos{Offset: 0, Line: 1, Col: 1}) {
			t.Errorf("ParseStatement(%q).Pos() = %v, want 1:1", tt.src, got)
		}
	}
	s, _ := ParseStatement("INSERT INTO ks.t (a) VALUES ({'k': 1})")
	ins := s.(*InsertStmt)
	if got := ins.Table.Pos().String(); got != "1:13" {
		t.Errorf("the table name of %q is at %s, want 1:13", Format(s), got)
	}
	if got := ins.Values[0].Pos().String(); got != "1:30" {
		t.Errorf("the map literal of %q is at %s, want 1:30", Format(s), got)
	}
	if got := ins.Values[0].(*MapLiteral).Entries[0].Value.Pos().String(); got != "1:36" {
		t.Errorf("the map value of %q is at %s, want 1:36", Format(s), got)
	}
	if got := ins.Columns[0].Pos().String(); got != "1:19" {
		t.Errorf("the column of %q is at %s, want 1:19", Format(s), got)
	}
	if got := (Pos{}).String(); got != "-" {
		t.Errorf("Pos{}.String() = %q, want -", got)
	}
}

func TestTokenClasses(t *testing.T) {
	tests := []struct {
		tok                                  Token
		literal, operator, keyword, reserved bool
	}{
		{IDENT, true, false, false, false},
		{BLOB, true, false, false, false},
		{LPAREN, false, true, false, false},
		{GE, false, true, false, false},
		{SELECT, false, false, true, true},
		{KEY, false, false, true, false},
		{EOF, false, false, false, false},
	}
	for _, tt := range tests {
		if tt.tok.IsLiteral() != tt.literal || tt.tok.IsOperator() != tt.operator || tt.tok.IsKeyword() != tt.keyword || tt.tok.IsReserved() != tt.reserved {
			t.Errorf("%v: IsLiteral %v, IsOperator %v, IsKeyword %v, IsReserved %v; want %v %v %v %v", tt.tok,
				tt.tok.IsLiteral(), tt.tok.IsOperator(), tt.tok.IsKeyword(), tt.tok.IsReserved(), tt.literal, tt.operator, tt.keyword, tt.reserved)
		}
	}
	if got := Token(999).String(); got != "Token(999)" {
		t.Errorf("Token(999).String() = %q", got)
	}
}

func TestParseDurationLiterals(t *testing.T) {
	for src, want := range map[string]string{
		"1h30m":   "1h30m",
		"-2d":     "-2d",
		"P1DT2H":  "P1DT2H",
		"-P3W":    "-P3W",
		"PT90M":   "PT90M",
		"1Y2MO3W": "1Y2MO3W",
	} {
		st, err := ParseStatement("INSERT INTO t (k, d) VALUES (1, " + src + ")")
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		lit, ok := st.(*InsertStmt).Values[1].(*Literal)
		if !ok || lit.Kind != LitDuration || lit.Value != want {
			t.Errorf("%s parsed as %#v, want duration literal %q", src, st.(*InsertStmt).Values[1], want)
		}
	}
	// Identifiers that only look like an ISO duration stay identifiers (column names, functions).
	for _, word := range []string{"P", "PT", "P1", "PX1D", "P1DT", "pt1", "P1D2"} {
		if IsISODuration(word) {
			t.Errorf("IsISODuration(%q) = true", word)
		}
	}
	if _, err := ParseStatement("INSERT INTO t (k, d) VALUES (1, 1h30x)"); err == nil || !strings.Contains(err.Error(), "malformed number 1h30x") {
		t.Errorf("1h30x: %v, want a malformed number", err)
	}
}

func TestParseCollectionLiterals(t *testing.T) {
	for src, want := range map[string]string{
		"[1, 2]":               "[1, 2]",
		"[]":                   "[]",
		"{1, 'a'}":             "{1, 'a'}",
		"{}":                   "{}",
		"{'k': [1], 'j': []}":  "{'k': [1], 'j': []}",
		"(1, 'a', NULL)":       "(1, 'a', NULL)",
		"((1, 2), [{3}], P1D)": "((1, 2), [{3}], P1D)",
		"[?, :x]":              "[?, :x]",
		"(now(), {0xff: -1h})": "(now(), {0xff: -1h})",
	} {
		st, err := ParseStatement("INSERT INTO t (k, v) VALUES (1, " + src + ")")
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := Format(st.(*InsertStmt).Values[1]); got != want {
			t.Errorf("%s formats as %s, want %s", src, got, want)
		}
	}
	for src, want := range map[string]string{
		"[1, 2":                   "expected ',' or ']'",
		"(1 2)":                   "expected ',' or ')'",
		"{1, 2: 3}":               "expected ',' or '}'",
		"(int) 5":                 "type hints ((type) value) are not supported",
		"(frozen<list<int>>) [1]": "type hints ((type) value) are not supported",
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]": "nested too deeply",
	} {
		_, err := ParseStatement("INSERT INTO t (k, v) VALUES (1, " + src + ")")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", src, err, want)
		}
	}
	if n := len(BindMarkers(mustParseInsert(t, "INSERT INTO t (k, v) VALUES (?, [?, (?, ?)])"))); n != 4 {
		t.Errorf("BindMarkers found %d markers in collection literals, want 4", n)
	}
}

func mustParseInsert(t *testing.T, src string) Statement {
	t.Helper()
	st, err := ParseStatement(src)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
