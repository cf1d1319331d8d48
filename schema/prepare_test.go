package schema

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

const dataDDL = ksDDL + `
CREATE TABLE ks.t (a int, b text, c1 int, c2 text, v text, w blob, PRIMARY KEY ((a, b), c1, c2));
CREATE TABLE ks.kv (k text PRIMARY KEY, v bigint);
`

// describeWrite renders a Write as one line for comparison.
func describeWrite(w *Write) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s pk=%s %s", w.Kind, w.Table.QualifiedName(), hexList(w.PartitionKey), describeRange(w.Clustering))
	for _, c := range w.Cells {
		if c.Value == nil {
			fmt.Fprintf(&b, " %s=null", c.Column.Name)
		} else {
			fmt.Fprintf(&b, " %s=%x", c.Column.Name, c.Value)
		}
	}
	if w.HasTimestamp {
		fmt.Fprintf(&b, " ts=%d", w.Timestamp)
	}
	return b.String()
}

func describeRead(r *Read) string {
	var cols []string
	for _, c := range r.Columns {
		cols = append(cols, c.Name)
	}
	return fmt.Sprintf("%s pk=%s %s cols=%s limit=%d", r.Table.QualifiedName(), hexList(r.PartitionKey), describeRange(r.Clustering), strings.Join(cols, ","), r.Limit)
}

func hexList(vs [][]byte) string {
	var parts []string
	for _, v := range vs {
		parts = append(parts, fmt.Sprintf("%x", v))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func describeRange(r ClusteringRange) string {
	s := "ck=" + hexList(r.Prefix)
	if r.Lower != nil {
		op := ">"
		if r.Lower.Inclusive {
			op = ">="
		}
		s += fmt.Sprintf(" %s%x", op, r.Lower.Value)
	}
	if r.Upper != nil {
		op := "<"
		if r.Upper.Inclusive {
			op = "<="
		}
		s += fmt.Sprintf(" %s%x", op, r.Upper.Value)
	}
	return s
}

func TestPrepareWrite(t *testing.T) {
	s := mustBuild(t, dataDDL)
	tests := []struct{ src, want string }{
		{"INSERT INTO t (a, b, c1, c2, v) VALUES (1, 'x', 2, 'y', 'z')", "INSERT ks.t pk=[00000001 78] ck=[00000002 79] v=7a"},
		{"INSERT INTO t (w, c2, c1, b, a, v) VALUES (0xff, '', 2, 'x', 1, NULL) USING TIMESTAMP 77", "INSERT ks.t pk=[00000001 78] ck=[00000002 ] v=null w=ff ts=77"},
		{"INSERT INTO t (a, b, c1, c2) VALUES (1, 'x', 2, 'y')", "INSERT ks.t pk=[00000001 78] ck=[00000002 79]"},
		{"INSERT INTO kv (k, v) VALUES ('key', -1)", "INSERT ks.kv pk=[6b6579] ck=[] v=ffffffffffffffff"},
		{"UPDATE t SET v = 'q', w = NULL WHERE a = 1 AND b = 'x' AND c1 = 2 AND c2 = 'y'", "UPDATE ks.t pk=[00000001 78] ck=[00000002 79] v=71 w=null"},
		{"UPDATE t USING TIMESTAMP -5 SET w = 0x WHERE c2 = 'y' AND c1 = 2 AND b = 'x' AND a = 1", "UPDATE ks.t pk=[00000001 78] ck=[00000002 79] w= ts=-5"},
		{"UPDATE kv SET v = 3 WHERE k = 'a'", "UPDATE ks.kv pk=[61] ck=[] v=0000000000000003"},
		{"DELETE FROM t WHERE a = 1 AND b = 'x'", "DELETE ks.t pk=[00000001 78] ck=[]"},
		{"DELETE FROM t WHERE a = 1 AND b = 'x' AND c1 = 2", "DELETE ks.t pk=[00000001 78] ck=[00000002]"},
		{"DELETE FROM t WHERE a = 1 AND b = 'x' AND c1 = 2 AND c2 = 'y'", "DELETE ks.t pk=[00000001 78] ck=[00000002 79]"},
		{"DELETE FROM t WHERE a = 1 AND b = 'x' AND c1 > 2 AND c1 <= 5", "DELETE ks.t pk=[00000001 78] ck=[] >00000002 <=00000005"},
		{"DELETE FROM t USING TIMESTAMP 9 WHERE a = 1 AND b = 'x' AND c1 = 2 AND c2 < 'm'", "DELETE ks.t pk=[00000001 78] ck=[00000002] <6d ts=9"},
		{"DELETE w, v FROM t WHERE a = 1 AND b = 'x' AND c1 = 2 AND c2 = 'y'", "DELETE ks.t pk=[00000001 78] ck=[00000002 79] v=null w=null"},
		{"DELETE FROM kv WHERE k = 'a'", "DELETE ks.kv pk=[61] ck=[]"},
	}
	for _, tt := range tests {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.PrepareWrite(st, "ks")
		if err != nil {
			t.Errorf("PrepareWrite(%s) failed: %v", tt.src, err)
			continue
		}
		if got := describeWrite(w); got != tt.want {
			t.Errorf("PrepareWrite(%s)\n  = %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

func TestPrepareRead(t *testing.T) {
	s := mustBuild(t, dataDDL)
	tests := []struct{ src, want string }{
		{"SELECT * FROM t WHERE a = 1 AND b = 'x'", "ks.t pk=[00000001 78] ck=[] cols=a,b,c1,c2,v,w limit=0"},
		{"SELECT v, a, v FROM ks.t WHERE b = 'x' AND a = 1 LIMIT 10", "ks.t pk=[00000001 78] ck=[] cols=v,a,v limit=10"},
		{"SELECT v FROM t WHERE a = 1 AND b = 'x' AND c1 = 2", "ks.t pk=[00000001 78] ck=[00000002] cols=v limit=0"},
		{"SELECT v FROM t WHERE a = 1 AND b = 'x' AND c1 = 2 AND c2 = 'y'", "ks.t pk=[00000001 78] ck=[00000002 79] cols=v limit=0"},
		{"SELECT v FROM t WHERE a = 1 AND b = 'x' AND c1 >= -1", "ks.t pk=[00000001 78] ck=[] >=ffffffff cols=v limit=0"},
		{"SELECT v FROM t WHERE c1 < 9 AND a = 1 AND b = 'x' AND c1 > 3", "ks.t pk=[00000001 78] ck=[] >00000003 <00000009 cols=v limit=0"},
		{"SELECT v FROM t WHERE a = 1 AND b = 'x' AND c1 = 2 AND c2 > 'a' AND c2 <= 'b' LIMIT 2147483647", "ks.t pk=[00000001 78] ck=[00000002] >61 <=62 cols=v limit=2147483647"},
		{"SELECT * FROM kv WHERE k = 'a'", "ks.kv pk=[61] ck=[] cols=k,v limit=0"},
	}
	for _, tt := range tests {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.PrepareRead(st.(*cql.SelectStmt), "ks")
		if err != nil {
			t.Errorf("PrepareRead(%s) failed: %v", tt.src, err)
			continue
		}
		if got := describeRead(r); got != tt.want {
			t.Errorf("PrepareRead(%s)\n  = %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

func TestPrepareErrors(t *testing.T) {
	s := mustBuild(t, dataDDL)
	const pk = "a = 1 AND b = 'x'"
	const key = pk + " AND c1 = 2 AND c2 = 'y'"
	tests := []struct{ src, want string }{
		// unknown keyspace, table, column
		{"SELECT * FROM nope.t WHERE a = 1", "unknown keyspace nope"},
		{"SELECT * FROM ks.nope WHERE a = 1", "unknown table ks.nope"},
		{"SELECT x FROM t WHERE " + pk, "unknown column x in table ks.t"},
		{"SELECT * FROM t WHERE " + pk + " AND x = 1", "unknown column x in table ks.t"},
		{"INSERT INTO t (a, b, c1, c2, x) VALUES (1, 'x', 2, 'y', 1)", "unknown column x in table ks.t"},
		{"UPDATE t SET x = 1 WHERE " + key, "unknown column x in table ks.t"},
		{"DELETE x FROM t WHERE " + key, "unknown column x in table ks.t"},
		{`SELECT "V" FROM t WHERE ` + pk, `unknown column "V" in table ks.t`},
		// wrong literal types
		{"INSERT INTO t (a, b, c1, c2) VALUES ('abc', 'x', 2, 'y')", "column a is int; cannot assign string literal 'abc'"},
		{"INSERT INTO t (a, b, c1, c2, w) VALUES (1, 'x', 2, 'y', 'cafe')", "column w is blob; cannot assign string literal 'cafe'"},
		{"UPDATE t SET v = 5 WHERE " + key, "column v is text; cannot assign integer literal 5"},
		{"SELECT * FROM t WHERE a = 1.5 AND b = 'x'", "column a is int; cannot assign float literal 1.5"},
		{"SELECT * FROM t WHERE a = 9999999999 AND b = 'x'", "column a: int value 9999999999 is out of range (-2147483648 to 2147483647)"},
		{"UPDATE kv SET v = {'a': 1} WHERE k = 'a'", "column v is bigint; cannot assign map literal {'a': 1}"},
		{"SELECT * FROM kv WHERE k = ?", "bind marker 0 (column k) has no value: the statement has bind markers but no values were given"},
		// missing partition key equality
		{"SELECT * FROM t WHERE c1 = 1", "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"},
		// Part of the partition key, or a slice of it, filters a scan (Cassandra 4.1).
		{"SELECT * FROM t WHERE a = 1", "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"},
		{"SELECT * FROM t WHERE b = 'x' AND c1 = 1", "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"},
		{"UPDATE t SET v = 'q' WHERE a = 1 AND c1 = 2 AND c2 = 'y'", "missing partition key column b: UPDATE needs = on every partition key column (a, b)"},
		{"DELETE FROM t WHERE b = 'x'", "missing partition key column a: DELETE needs = on every partition key column (a, b)"},
		{"SELECT * FROM t WHERE a > 1 AND b = 'x'", "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"},
		// full primary key for UPDATE and DELETE of cells
		{"UPDATE t SET v = 'q' WHERE " + pk + " AND c1 = 2", "missing clustering column c2: UPDATE needs = on every primary key column (a, b, c1, c2)"},
		{"UPDATE t SET v = 'q' WHERE " + pk + " AND c1 = 2 AND c2 > 'a'", "missing clustering column c2: UPDATE needs = on every primary key column (a, b, c1, c2)"},
		{"DELETE v FROM t WHERE " + pk, "missing clustering column c1: DELETE needs = on every primary key column (a, b, c1, c2)"},
		{"INSERT INTO t (a, b, c1, v) VALUES (1, 'x', 2, 'z')", "missing clustering column c2: INSERT needs a value for every primary key column (a, b, c1, c2)"},
		{"INSERT INTO t (b, c1, c2) VALUES ('x', 2, 'y')", "missing partition key column a: INSERT needs a value for every primary key column (a, b, c1, c2)"},
		// writing primary key columns
		{"UPDATE t SET a = 2 WHERE " + key, "cannot SET partition key column a: primary key columns identify the row; write the new row with INSERT"},
		{"UPDATE t SET c1 = 2 WHERE " + key, "cannot SET clustering column c1: primary key columns identify the row; write the new row with INSERT"},
		{"DELETE c2 FROM t WHERE " + key, "cannot DELETE clustering column c2: delete the row instead (DELETE FROM ... WHERE ...)"},
		// clustering restrictions of an unsupported shape
		{"SELECT * FROM t WHERE " + pk + " AND c2 = 'y'", "clustering column c2 cannot be restricted: the preceding clustering column c1 is not restricted by ="},
		{"SELECT * FROM t WHERE " + pk + " AND c1 > 2 AND c2 = 'y'", "clustering column c2 cannot be restricted: the preceding clustering column c1 is restricted by a range"},
		{"SELECT * FROM t WHERE " + pk + " AND c1 = 2 AND c1 = 3", "column c1 is restricted more than once"},
		{"SELECT * FROM t WHERE " + pk + " AND c1 > 2 AND c1 = 3", "column c1 is restricted more than once"},
		{"SELECT * FROM t WHERE " + pk + " AND c1 > 2 AND c1 >= 3", "column c1 is restricted more than once (a lower bound is already given)"},
		{"SELECT * FROM t WHERE " + pk + " AND c1 < 2 AND c1 < 3", "column c1 is restricted more than once (an upper bound is already given)"},
		{"SELECT * FROM t WHERE " + pk + " AND a = 1", "column a is restricted more than once"},
		{"SELECT * FROM t WHERE " + pk + " AND v = 'z'", "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"},
		// key values
		{"SELECT * FROM t WHERE a = NULL AND b = 'x'", "partition key column a cannot be NULL"},
		{"SELECT * FROM t WHERE " + pk + " AND c1 > NULL", "clustering column c1 cannot be NULL"},
		{"INSERT INTO t (a, b, c1, c2) VALUES (1, 'x', NULL, 'y')", "clustering column c1 cannot be NULL"},
		{"INSERT INTO kv (k) VALUES ('')", "partition key column k cannot be empty"},
		{"INSERT INTO kv (k) VALUES ('" + strings.Repeat("x", 65536) + "')", "partition key column k: the value is 65536 bytes; the maximum is 65535"},
		// statement shape
		{"INSERT INTO kv (k, v) VALUES ('a')", "INSERT names 2 columns but gives 1 values"},
		{"INSERT INTO kv (k, k) VALUES ('a', 'b')", "column k is given twice"},
		{"UPDATE kv SET v = 1, v = 2 WHERE k = 'a'", "column v is assigned twice"},
		{"DELETE v, v FROM kv WHERE k = 'a'", "column v is named twice"},
		{"INSERT INTO kv (k) VALUES ('a') USING TIMESTAMP 99999999999999999999", "USING TIMESTAMP 99999999999999999999 is not a 64-bit integer"},
		{"INSERT INTO kv (k) VALUES ('a') USING TIMESTAMP ?", "bind marker 0 (USING TIMESTAMP) has no value: the statement has bind markers but no values were given"},
		{"SELECT * FROM kv WHERE k = 'a' LIMIT 0", "LIMIT must be positive, not 0"},
		{"SELECT * FROM kv WHERE k = 'a' LIMIT -3", "LIMIT must be positive, not -3"},
		{"SELECT * FROM kv WHERE k = 'a' LIMIT 2147483648", "LIMIT 2147483648 is too large; the maximum is 2147483647"},
		{"SELECT * FROM kv WHERE k = 'a' LIMIT ?", "bind marker 0 (LIMIT) has no value: the statement has bind markers but no values were given"},
		{"CREATE TABLE x (k int PRIMARY KEY)", "CREATE TABLE is not a write statement"},
	}
	for _, tt := range tests {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if sel, ok := st.(*cql.SelectStmt); ok {
			_, err = s.PrepareRead(sel, "ks")
		} else {
			_, err = s.PrepareWrite(st, "ks")
		}
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s\n  gave error %v\n  want %q", truncate(tt.src, 120), err, tt.want)
		}
	}
	sel, _ := cql.ParseStatement("SELECT * FROM t WHERE a = 1")
	if _, err := s.PrepareRead(sel.(*cql.SelectStmt), ""); err == nil || err.Error() != "no keyspace for table t: USE a keyspace or write keyspace.t" {
		t.Errorf("SELECT of an unqualified table without a keyspace: error %v", err)
	}
	if _, err := s.PrepareRead(sel.(*cql.SelectStmt), "nope"); !errors.Is(err, ErrUnknownKeyspace) {
		t.Errorf("SELECT in a missing current keyspace: error %v, want ErrUnknownKeyspace", err)
	}
}

func TestClusteringRangeIsRow(t *testing.T) {
	s := mustBuild(t, dataDDL)
	tb, _ := s.Table("ks", "t")
	kv, _ := s.Table("ks", "kv")
	tests := []struct {
		r    ClusteringRange
		t    *Table
		want bool
	}{
		{ClusteringRange{}, kv, true},
		{ClusteringRange{}, tb, false},
		{ClusteringRange{Prefix: [][]byte{{1}, {2}}}, tb, true},
		{ClusteringRange{Prefix: [][]byte{{1}}}, tb, false},
		{ClusteringRange{Prefix: [][]byte{{1}}, Lower: &Bound{Value: []byte{2}}}, tb, false},
	}
	for _, tt := range tests {
		if got := tt.r.IsRow(tt.t); got != tt.want {
			t.Errorf("%s.IsRow(%s) = %v, want %v", describeRange(tt.r), tt.t.Name, got, tt.want)
		}
	}
}
