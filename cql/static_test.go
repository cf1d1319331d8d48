package cql

import "testing"

// TestParseStatic checks that STATIC parses in CREATE TABLE and ALTER TABLE
// ADD, sets ColumnDef.Static, and prints back.
func TestParseStatic(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"CREATE TABLE t (k int, c int, s text STATIC, v int, PRIMARY KEY (k, c))",
			"CREATE TABLE t (k int, c int, s text STATIC, v int, PRIMARY KEY (k, c))"},
		{"create table t (k int, s int static primary key)", "CREATE TABLE t (k int, s int STATIC PRIMARY KEY)"},
		{"ALTER TABLE t ADD s int static", "ALTER TABLE t ADD s int STATIC"},
		{"ALTER TABLE t ADD (s int STATIC, v int)", "ALTER TABLE t ADD (s int STATIC, v int)"},
	} {
		st, err := ParseStatement(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got := Format(st); got != tc.want {
			t.Errorf("Format(Parse(%q)) = %q, want %q", tc.in, got, tc.want)
		}
	}
	st, err := ParseStatement("CREATE TABLE t (k int, c int, s text STATIC, PRIMARY KEY (k, c))")
	if err != nil {
		t.Fatal(err)
	}
	cols := st.(*CreateTableStmt).Columns
	if cols[0].Static || cols[1].Static || !cols[2].Static {
		t.Errorf("Static flags = %v %v %v, want only s", cols[0].Static, cols[1].Static, cols[2].Static)
	}
	a, err := ParseStatement("ALTER TABLE t ADD s int STATIC")
	if err != nil {
		t.Fatal(err)
	}
	if add := a.(*AlterTableStmt).Add; len(add) != 1 || !add[0].Static {
		t.Errorf("ALTER TABLE ADD STATIC: Add = %+v", add)
	}
}
