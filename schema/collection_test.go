package schema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

const collectionDDL = ksDDL + `
CREATE TABLE ks.c (k int PRIMARY KEY, s set<text>, m map<text, int>, l list<int>, f frozen<set<int>>, n int);
`

// describeOps renders a write's cells as "col:op[element]=value".
func describeOps(w *Write) string {
	var parts []string
	for _, c := range w.Cells {
		p := fmt.Sprintf("%s:%d", c.Column.Name, c.Op)
		if c.Element != nil {
			p += fmt.Sprintf("[%x]", c.Element)
		}
		if c.Value == nil {
			p += "=null"
		} else {
			p += fmt.Sprintf("=%x", c.Value)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

func TestCollectionOperations(t *testing.T) {
	s := mustBuild(t, collectionDDL)
	for _, tt := range []struct{ src, want string }{
		{"UPDATE c SET s = s + {'a'} WHERE k = 1", "s:1=000000010000000161"},
		{"UPDATE c SET s = s - {'a'} WHERE k = 1", "s:3=000000010000000161"},
		{"UPDATE c SET s = {'a'} WHERE k = 1", "s:0=000000010000000161"},
		{"UPDATE c SET m['x'] = 1, m['y'] = null WHERE k = 1", "m:4[78]=00000001 m:4[79]=null"},
		{"UPDATE c SET m = m - {'x'} WHERE k = 1", "m:3=000000010000000178"},
		{"UPDATE c SET l = [1] + l, n = 2 WHERE k = 1", "l:2=000000010000000400000001 n:0=00000002"},
		{"UPDATE c SET l[0] = 5 WHERE k = 1", "l:4[00000000]=00000005"},
		{"DELETE m['x'], l[1], s FROM c WHERE k = 1", "l:4[00000001]=null m:4[78]=null s:0=null"},
	} {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.PrepareWrite(st, "ks")
		if err != nil {
			t.Errorf("PrepareWrite(%q): %v", tt.src, err)
			continue
		}
		if got := describeOps(w); got != tt.want {
			t.Errorf("PrepareWrite(%q) cells = %s, want %s", tt.src, got, tt.want)
		}
	}
	big := "'" + strings.Repeat("x", MaxElementKey+1) + "'"
	for src, want := range map[string]string{
		"UPDATE c SET f = f + {1} WHERE k = 1":              "invalid operation (f = f + {1}) for frozen collection column f",
		"UPDATE c SET n = n + 1 WHERE k = 1":                "invalid operation (n = n + 1) for non counter column n",
		"UPDATE c SET n[1] = 1 WHERE k = 1":                 "invalid operation (n[1] = 1) for non collection column n",
		"UPDATE c SET s['a'] = 1 WHERE k = 1":               "invalid operation (s['a'] = 1) for set column s",
		"UPDATE c SET s = {'a'} + s WHERE k = 1":            "invalid operation (s = {'a'} + s) for non list column s",
		"UPDATE c SET m[null] = 1 WHERE k = 1":              "invalid null key(m) for column m",
		"UPDATE c SET s = s + {" + big + "} WHERE k = 1":    "set element of column s is 65536 bytes; at most 65535 bytes",
		"INSERT INTO c (k, m) VALUES (1, {" + big + ": 1})": "map key of column m is 65536 bytes; at most 65535 bytes",
		"UPDATE c SET s = {'a'}, s = s + {'b'} WHERE k = 1": "column s is assigned twice",
		"SELECT WRITETIME(s) FROM c WHERE k = 1":            "cannot use selection function WRITETIME() on non-frozen collection s",
	} {
		st, err := cql.ParseStatement(src)
		if err != nil {
			t.Fatal(err)
		}
		if sel, ok := st.(*cql.SelectStmt); ok {
			_, err = s.PrepareRead(sel, "ks")
		} else {
			_, err = s.PrepareWrite(st, "ks")
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("preparing %.80q: error %v, want %q", src, err, want)
		}
	}
}

func TestCollectionVariables(t *testing.T) {
	s := mustBuild(t, collectionDDL)
	st, err := cql.ParseStatement("UPDATE c SET m[?] = ?, l[?] = ?, s = s + ?, n = ? WHERE k = ?")
	if err != nil {
		t.Fatal(err)
	}
	vars, _, err := s.Variables(st, "ks")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"key(m) text", "value(m) int", "idx(l) int", "value(l) int", "s set<text>", "n int", "k int"}
	for i, v := range vars {
		if got := v.Name + " " + string(v.Type); i >= len(want) || got != want[i] {
			t.Errorf("variable %d = %s, want %v", i, got, want)
		}
	}
	st, _ = cql.ParseStatement("UPDATE c SET m = m - ? WHERE k = 1")
	if vars, _, err := s.Variables(st, "ks"); err != nil || len(vars) != 1 || vars[0].Type != "frozen<set<text>>" {
		t.Errorf("Variables(m = m - ?) = %v, %v; want one frozen<set<text>>", vars, err)
	}
	// Bound: an unset key is refused, an unset value leaves the element alone.
	st, _ = cql.ParseStatement("UPDATE c SET m[?] = ? WHERE k = 1")
	if _, err := s.BindWrite(st, "ks", []BindValue{unset, v(EncodeInt(1))}); err == nil || !strings.Contains(err.Error(), "invalid unset key(m)") {
		t.Errorf("BindWrite(m[unset] = 1) error = %v, want invalid unset key(m)", err)
	}
	if w, err := s.BindWrite(st, "ks", []BindValue{v([]byte("a")), unset}); err != nil || len(w.Cells) != 0 {
		t.Errorf("BindWrite(m['a'] = unset) = %v, %v; want no cells", w, err)
	}
}

func TestCollectionNullOperandIsNoOp(t *testing.T) {
	s := mustBuild(t, collectionDDL)
	st, _ := cql.ParseStatement("UPDATE c SET s = s + null, n = 1 WHERE k = 1")
	w, err := s.PrepareWrite(st, "ks")
	if err != nil || describeOps(w) != "n:0=00000001" {
		t.Errorf("s = s + null, n = 1: %v, %v; want only n written", w, err)
	}
}

// TestAlterTypeKeepsCollectionsNonFrozen: ALTER TYPE rewrites the type of a non-frozen
// collection of the user type, and the column stays non-frozen.
func TestAlterTypeKeepsCollectionsNonFrozen(t *testing.T) {
	s := mustBuild(t, udtDDL+"CREATE TABLE ks.nf (k int PRIMARY KEY, l list<frozen<address>>, m map<int, frozen<address>>);\n")
	s2 := mustApplyUDT(t, s, `ALTER TYPE ks.address ADD city text`, 100)
	tb, _ := s2.Table("ks", "nf")
	for name, want := range map[string]Type{
		"l": "list<frozen<udt<ks.address, street text, zip int, city text>>>",
		"m": "map<int, frozen<udt<ks.address, street text, zip int, city text>>>",
	} {
		c, _ := tb.Column(name)
		if c.Type != want || !c.Type.MultiCell() || c.Type.CQL() != strings.Replace(string(want), "frozen<udt<ks.address, street text, zip int, city text>>", "frozen<address>", 1) {
			t.Errorf("after ALTER TYPE ADD column %s is %s (CQL %s), want %s", name, c.Type, c.Type.CQL(), want)
		}
	}
}

// TestUserTypeFieldCollectionIsFrozen: a user type's field written list<int> is a frozen list,
// as the field of a frozen value is.
func TestUserTypeFieldCollectionIsFrozen(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TYPE ks.x (f list<int>);\n")
	k, _ := s.Keyspace("ks")
	if u := k.UserTypes()[0]; len(u.FieldTypes) != 1 || u.FieldTypes[0] != "frozen<list<int>>" {
		t.Errorf("field f of type x is %v, want frozen<list<int>>", u.FieldTypes)
	}
}

// TestCollectionOperationsPrepared: several element operations on one column prepare (their
// markers have no values yet) and bind.
func TestCollectionOperationsPrepared(t *testing.T) {
	s := mustBuild(t, collectionDDL)
	st, _ := cql.ParseStatement("UPDATE c SET m[?] = ?, m[?] = ? WHERE k = 1")
	if _, _, err := s.Variables(st, "ks"); err != nil {
		t.Fatalf("preparing two element assignments of m: %v", err)
	}
	w, err := s.BindWrite(st, "ks", []BindValue{v([]byte("a")), v(EncodeInt(1)), v([]byte("b")), unset})
	if err != nil || describeOps(w) != "m:4[61]=00000001" {
		t.Errorf("binding them = %v, %v; want m['a'] = 1 only", w, err)
	}
}
