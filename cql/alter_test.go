package cql

import (
	"errors"
	"testing"
)

func TestParseAlterTableAndTruncate(t *testing.T) {
	tests := []struct {
		src  string
		want string // "" means the source is already canonical
	}{
		{"ALTER TABLE t ADD v int", ""},
		{"alter table ks.t add V text", "ALTER TABLE ks.t ADD v text"},
		{"ALTER TABLE t ADD (a int, b map<text, int>)", ""},
		{"ALTER TABLE t ADD (a int)", ""},
		{"ALTER TABLE IF EXISTS t ADD IF NOT EXISTS (a int, \"B\" text)", ""},
		{"ALTER TABLE t DROP v", ""},
		{"ALTER TABLE t DROP (a, b)", ""},
		{"ALTER TABLE t DROP IF EXISTS (a) USING TIMESTAMP 1234", ""},
		{"ALTER TABLE t RENAME k TO key", ""},
		{"ALTER TABLE t rename IF EXISTS k to x and c TO y", "ALTER TABLE t RENAME IF EXISTS k TO x AND c TO y"},
		{"ALTER TABLE IF EXISTS t WITH gc_grace_seconds = 10", ""},
		{"TRUNCATE t", "TRUNCATE TABLE t"},
		{"truncate table ks.t;", "TRUNCATE TABLE ks.t"},
		{"TRUNCATE \"Ks\".\"T\"", "TRUNCATE TABLE \"Ks\".\"T\""},
	}
	for _, tt := range tests {
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

func TestParseAlterTableTree(t *testing.T) {
	s, err := ParseStatement("ALTER TABLE ks.t ADD (a int, b text)")
	if err != nil {
		t.Fatal(err)
	}
	at := s.(*AlterTableStmt)
	if at.Action != AlterAdd || len(at.Add) != 2 || at.Add[1].Name.Name != "b" || at.Add[1].Type.Name != "text" || at.Add[1].Name.NamePos.Col != 30 {
		t.Errorf("ADD (a int, b text) parsed as %+v", at)
	}
	s, err = ParseStatement("ALTER TABLE t RENAME a TO b AND c TO d")
	if err != nil {
		t.Fatal(err)
	}
	at = s.(*AlterTableStmt)
	if at.Action != AlterRename || len(at.Rename) != 2 || at.Rename[1].From.Name != "c" || at.Rename[1].To.Name != "d" {
		t.Errorf("RENAME a TO b AND c TO d parsed as %+v", at)
	}
}

func TestParseAlterTableInvalid(t *testing.T) {
	tests := []struct {
		src  string
		want string
	}{
		{"ALTER TABLE t", "1:14: expected 'WITH', 'ADD', 'DROP' or 'RENAME', found end of input"},
		{"ALTER TABLE t ADD", "1:18: expected column name, found end of input"},
		{"ALTER TABLE t ADD v", "1:20: expected type name, found end of input"},
		{"ALTER TABLE t ADD a int, b text", "1:24: expected ';' or end of input, found ','; to add several columns write ADD (a int, ...)"},
		{"ALTER TABLE t ADD (a int, b)", "1:28: expected type name, found ')'"},
		{"ALTER TABLE t ADD (a int", "1:25: expected ',' or ')', found end of input"},
		{"ALTER TABLE t ADD s int PRIMARY KEY", "1:25: ALTER TABLE ADD cannot add a PRIMARY KEY column: the primary key of a table cannot be changed"},
		{"ALTER TABLE t DROP", "1:19: expected column name or '(', found end of input"},
		{"ALTER TABLE t DROP a, b", "1:21: expected ';', USING or end of input, found ','; to drop several columns write DROP (a, ...)"},
		{"ALTER TABLE t DROP a USING TIMESTAMP x", "1:38: expected integer timestamp, found identifier x"},
		{"ALTER TABLE t DROP COMPACT STORAGE", "1:20: DROP COMPACT STORAGE is not supported: kvnode has no COMPACT STORAGE tables"},
		{"ALTER TABLE t RENAME a", "1:23: expected 'TO', found end of input"},
		{"ALTER TABLE t RENAME a TO", "1:26: expected new column name, found end of input"},
		{"ALTER TABLE t ALTER v TYPE text", "1:15: ALTER TABLE ... ALTER column TYPE is not supported: column types cannot be changed (as in Cassandra 4.1)"},
		{"TRUNCATE", "1:9: expected table name, found end of input"},
		{"TRUNCATE TABLE", "1:15: expected table name, found end of input"},
		{"TRUNCATE t x", "1:12: expected ';' or end of input, found identifier x"},
	}
	for _, tt := range tests {
		_, err := ParseStatement(tt.src)
		var list ErrorList
		if err == nil || !errors.As(err, &list) || len(list) == 0 {
			t.Errorf("ParseStatement(%q) = %v, want error %q", tt.src, err, tt.want)
			continue
		}
		if got := list[0].Error(); got != tt.want {
			t.Errorf("ParseStatement(%q) error = %q, want %q", tt.src, got, tt.want)
		}
	}
}
