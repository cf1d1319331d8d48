package cql

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseTypeStatements(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want Statement
		text string // Format's text; src when empty
	}{
		{src: "CREATE TYPE IF NOT EXISTS ks.address (street text, zip int, tags frozen<set<text>>)",
			want: &CreateTypeStmt{IfNotExists: true, Name: TableName{Keyspace: Ident{Name: "ks"}, Name: Ident{Name: "address"}},
				Fields: []ColumnDef{{Name: Ident{Name: "street"}, Type: Ident{Name: "text"}}, {Name: Ident{Name: "zip"}, Type: Ident{Name: "int"}}, {Name: Ident{Name: "tags"}, Type: Ident{Name: "frozen<set<text>>"}}}}},
		{src: "ALTER TYPE address ADD home frozen<ks.address>",
			want: &AlterTypeStmt{Name: TableName{Name: Ident{Name: "address"}}, Add: &ColumnDef{Name: Ident{Name: "home"}, Type: Ident{Name: "frozen<ks.address>"}}}},
		{src: "ALTER TYPE ks.address RENAME street TO road AND zip TO code",
			want: &AlterTypeStmt{Name: TableName{Keyspace: Ident{Name: "ks"}, Name: Ident{Name: "address"}}, Renames: []Rename{{Ident{Name: "street"}, Ident{Name: "road"}}, {Ident{Name: "zip"}, Ident{Name: "code"}}}}},
		{src: "DROP TYPE IF EXISTS ks.address", want: &DropTypeStmt{IfExists: true, Name: TableName{Keyspace: Ident{Name: "ks"}, Name: Ident{Name: "address"}}}},
		{src: "DESCRIBE TYPE ks.address", want: &DescribeStmt{Kind: DescribeType, Table: TableName{Keyspace: Ident{Name: "ks"}, Name: Ident{Name: "address"}}}},
		{src: "DESCRIBE TYPES", want: &DescribeStmt{Kind: DescribeTypes}},
	} {
		st, err := ParseStatement(tt.src)
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if !reflect.DeepEqual(clearPos(st), clearPos(tt.want)) {
			t.Errorf("%s: parsed %#v, want %#v", tt.src, st, tt.want)
		}
		if got := Format(st); got != tt.src {
			t.Errorf("Format(%s) = %s", tt.src, got)
		}
	}
	for src, want := range map[string]string{
		"CREATE TYPE t (a int":                  "expected ',' or ')'",
		"ALTER TYPE t DROP a":                   "expected 'ADD' or 'RENAME'",
		"ALTER TYPE t ALTER a TYPE blob":        "a field's type cannot change",
		"ALTER TYPE t RENAME a b":               "expected 'TO'",
		"CREATE TABLE t (k int, v frozen<ks.>)": "expected type name",
	} {
		if _, err := ParseStatement(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", src, err, want)
		}
	}
}

func TestParseUDTLiteral(t *testing.T) {
	src := `INSERT INTO t (k, v) VALUES (1, {a: 1, "B": {c: ?}, m: {'x': 2}})`
	st, err := ParseStatement(src)
	if err != nil {
		t.Fatal(err)
	}
	u, ok := st.(*InsertStmt).Values[1].(*UDTLiteral)
	if !ok || len(u.Fields) != 3 || u.Fields[1].Name.Name != "B" {
		t.Fatalf("parsed %#v, want a UDT literal with fields a, B, m", st.(*InsertStmt).Values[1])
	}
	if _, ok := u.Fields[2].Value.(*MapLiteral); !ok {
		t.Errorf("field m is %#v, want a map literal", u.Fields[2].Value)
	}
	if got := Format(st); got != src {
		t.Errorf("Format = %s, want %s", got, src)
	}
	// A map whose first key is a function call is still a map.
	if st, err := ParseStatement(`INSERT INTO t (k, v) VALUES (1, {now(): 1})`); err != nil {
		t.Error(err)
	} else if _, ok := st.(*InsertStmt).Values[1].(*MapLiteral); !ok {
		t.Errorf("{now(): 1} parsed as %#v, want a map literal", st.(*InsertStmt).Values[1])
	}
}
