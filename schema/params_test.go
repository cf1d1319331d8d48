package schema

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

// elems encodes [int length][bytes] elements, nil as null (-1).
func elems(es ...[]byte) []byte {
	var b []byte
	for _, e := range es {
		if e == nil {
			b = binary.BigEndian.AppendUint32(b, ^uint32(0))
			continue
		}
		b = append(binary.BigEndian.AppendUint32(b, uint32(len(e))), e...)
	}
	return b
}

func coll(n int, es ...[]byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(n)), elems(es...)...)
}

func mustType(t *testing.T, name string) Type {
	t.Helper()
	typ, err := LookupType(name)
	if err != nil {
		t.Fatal(err)
	}
	return typ
}

func TestParametricCheckAndDecode(t *testing.T) {
	list := mustType(t, "frozen<list<int>>")
	set := mustType(t, "frozen<set<int>>")
	m := mustType(t, "frozen<map<text, frozen<list<int>>>>")
	tup := mustType(t, "tuple<int, text>")
	one, two := EncodeInt(1), EncodeInt(-2)
	good := []struct {
		typ  Type
		v    []byte
		want any
	}{
		{list, coll(3, one, two, one), List{int32(1), int32(-2), int32(1)}},
		{list, coll(0), List{}},
		{set, coll(2, two, one), Set{int32(-2), int32(1)}},
		{m, coll(1, []byte("a"), coll(1, one)), Map{{"a", List{int32(1)}}}},
		{tup, elems(one, nil), Tuple{int32(1), nil}},
		{tup, elems(nil, []byte("x")), Tuple{nil, "x"}},
	}
	for _, tt := range good {
		got, err := tt.typ.Decode(tt.v)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s.Decode(% x) = %#v, %v; want %#v", tt.typ, tt.v, got, err, tt.want)
		}
	}
	bad := []struct {
		typ  Type
		v    []byte
		want string
	}{
		{list, coll(1, nil), "element 0 is null: null is not allowed inside a collection"},
		{list, coll(1, []byte{1}), "element 0: invalid int value: 1 bytes, want 4"},
		{list, coll(2, one), "element 1: truncated length"},
		{list, append(coll(1, one), 0), "1 bytes after the last element"},
		{set, coll(2, one, two), "element 1 is not above element 0 (elements must be distinct and ascending)"},
		{set, coll(2, one, one), "element 1 is not above element 0"},
		{m, coll(1, []byte("a"), nil), "value 0 is null"},
		{m, coll(2, []byte("b"), coll(0), []byte("a"), coll(0)), "keys must be distinct and ascending"},
		{tup, elems(one), "component 1: truncated length"},
		{tup, elems(one, nil, nil), "4 bytes after the last of 2 components"},
		{tup, elems([]byte{1}, nil), "component 0: invalid int value"},
	}
	for _, tt := range bad {
		err := tt.typ.Check(tt.v)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "invalid "+string(tt.typ)+" value: ") {
			t.Errorf("%s.Check(% x) = %v, want an error naming the type and containing %q", tt.typ, tt.v, err, tt.want)
		}
	}
}

// TestParametricCompare checks Compare against Cassandra's order written out by hand:
// element-wise, then by count; a map by key, then value; a null tuple component first.
func TestParametricCompare(t *testing.T) {
	list := mustType(t, "frozen<list<int>>")
	m := mustType(t, "frozen<map<int, text>>")
	tup := mustType(t, "tuple<int, text>")
	i := EncodeInt
	ordered := []struct {
		typ Type
		vs  [][]byte // ascending
	}{
		{list, [][]byte{coll(0), coll(1, i(-5)), coll(2, i(-5), i(9)), coll(1, i(-1)), coll(1, i(0)), coll(2, i(0), i(-7)), coll(1, i(3))}},
		{m, [][]byte{coll(0), coll(1, i(1), []byte("a")), coll(2, i(1), []byte("a"), i(2), []byte("")), coll(1, i(1), []byte("b")), coll(1, i(2), []byte(""))}},
		{tup, [][]byte{elems(nil, nil), elems(nil, []byte("a")), elems(i(-1), nil), elems(i(-1), []byte("")), elems(i(-1), []byte("z")), elems(i(4), nil)}},
	}
	for _, tt := range ordered {
		for a := range tt.vs {
			for b := range tt.vs {
				want := 0
				switch {
				case a < b:
					want = -1
				case a > b:
					want = 1
				}
				if got := tt.typ.Compare(tt.vs[a], tt.vs[b]); got != want {
					t.Errorf("%s: Compare(% x, % x) = %d, want %d", tt.typ, tt.vs[a], tt.vs[b], got, want)
				}
			}
		}
	}
}

func TestParametricLiterals(t *testing.T) {
	s := mustBuild(t, ksDDL+`CREATE TABLE ks.p (k int PRIMARY KEY, l frozen<list<int>>, s frozen<set<text>>,
		m frozen<map<text, frozen<list<int>>>>, t tuple<int, text, frozen<set<int>>>)`)
	tab := table(t, s, "p")
	value := func(col, lit string) ([]byte, error) {
		st, err := cql.ParseStatement("INSERT INTO ks.p (k, " + col + ") VALUES (1, " + lit + ")")
		if err != nil {
			return nil, err
		}
		c, _ := tab.Column(col)
		return c.Value(st.(*cql.InsertStmt).Values[1])
	}
	i, txt := EncodeInt, EncodeText
	good := []struct {
		col, lit string
		want     []byte
	}{
		{"l", "[3, -1, 3]", coll(3, i(3), i(-1), i(3))},
		{"l", "[]", coll(0)},
		{"s", "{'b', 'a', 'b'}", coll(2, txt("a"), txt("b"))},
		{"s", "{}", coll(0)},
		{"m", "{'z': [1], 'a': [], 'z': [2]}", coll(2, txt("a"), coll(0), txt("z"), coll(1, i(2)))},
		{"t", "(1, 'x', {2, 1})", elems(i(1), txt("x"), coll(2, i(1), i(2)))},
		{"t", "(1, NULL)", elems(i(1), nil, nil)},
		{"t", "NULL", nil},
	}
	for _, tt := range good {
		got, err := value(tt.col, tt.lit)
		if err != nil || !bytes.Equal(got, tt.want) {
			t.Errorf("%s = %s: % x, %v; want % x", tt.col, tt.lit, got, err, tt.want)
		}
	}
	bad := []struct{ col, lit, want string }{
		{"l", "[1, NULL]", "column l: element 1: null is not supported inside collections"},
		{"l", "['a']", "column l: element 0: cannot use string literal 'a' as int inside a list"},
		{"l", "{1}", "column l is frozen<list<int>>; cannot assign set literal {1}"},
		{"l", "(1)", "column l is frozen<list<int>>; cannot assign tuple literal (1)"},
		{"s", "[]", "column s is frozen<set<text>>; cannot assign list literal []"},
		{"m", "{'a': NULL}", "column m: entry 0: null is not supported inside collections"},
		{"m", "{'a': 1}", "column m: value 0: cannot use integer literal 1 as frozen<list<int>> inside a map"},
		{"t", "(1, 'a', {}, 4)", "column t: invalid tuple literal: too many elements: type frozen<tuple<int, text, frozen<set<int>>>> expects 3 but got 4"},
		{"t", "('a')", "column t: component 0: cannot use string literal 'a' as int inside a tuple"},
		{"t", "'a'", "column t is frozen<tuple<int, text, frozen<set<int>>>>; cannot assign string literal 'a'"},
		{"t", "(?, 'a')", "column t: component 0: bind marker ? has no value"},
		{"l", "[2147483648]", "column l: element 0: int value 2147483648 is out of range"},
	}
	for _, tt := range bad {
		_, err := value(tt.col, tt.lit)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s = %s: %v, want an error starting %q", tt.col, tt.lit, err, tt.want)
		}
	}
}

// TestMarkersInsideLiterals: bind markers inside collection and tuple literals get their
// element's type and Cassandra's names in the prepared metadata, and their values build the
// value, checked, as a literal's would.
func TestMarkersInsideLiterals(t *testing.T) {
	s := mustBuild(t, ksDDL+`CREATE TABLE ks.p (k int, c tuple<int, text>, m frozen<map<text, int>>, l frozen<list<int>>,
		PRIMARY KEY (k, c))`)
	st, err := cql.ParseStatement("INSERT INTO ks.p (k, c, m, l) VALUES (?, (?, ?), {?: ?}, [1, :x])")
	if err != nil {
		t.Fatal(err)
	}
	vars, _, err := s.Variables(st, "ks")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vars {
		got = append(got, v.Name+" "+string(v.Type))
	}
	want := []string{"k int", "c[0] int", "c[1] text", "key(m) text", "value(m) int", "x int"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("Variables = %q, want %q", got, want)
	}
	vals := func(vs ...[]byte) []BindValue {
		out := make([]BindValue, len(vs))
		for i, v := range vs {
			out[i] = BindValue{Bytes: v}
		}
		return out
	}
	w, err := s.BindWrite(st, "ks", vals(EncodeInt(1), EncodeInt(2), nil, EncodeText("a"), EncodeInt(3), EncodeInt(4)))
	if err != nil {
		t.Fatal(err)
	}
	if c := w.Clustering.Prefix; len(c) != 1 || !bytes.Equal(c[0], elems(EncodeInt(2), nil)) {
		t.Errorf("clustering = % x, want the tuple (2, null)", c)
	}
	for _, tt := range []struct {
		vals []BindValue
		want string
	}{
		{vals(EncodeInt(1), EncodeInt(2), nil, nil, EncodeInt(3), EncodeInt(4)), "column m: entry 0: null is not supported inside collections"},
		{vals(EncodeInt(1), []byte{1}, nil, EncodeText("a"), EncodeInt(3), EncodeInt(4)), "column c: component 0: bind marker 1: invalid int value"},
		{append(vals(EncodeInt(1), EncodeInt(2), nil, EncodeText("a"), EncodeInt(3)), BindValue{Unset: true}), "column l: element 1: bind marker 5 inside a list literal is unset"},
	} {
		if _, err := s.BindWrite(st, "ks", tt.vals); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("BindWrite: %v, want an error containing %q", err, tt.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	m := mustType(t, "frozen<map<text, frozen<set<int>>>>")
	i, txt := EncodeInt, EncodeText
	in := coll(3, txt("b"), coll(2, i(2), i(1)), txt("a"), coll(0), txt("b"), coll(3, i(5), i(5), i(-1)))
	want := coll(2, txt("a"), coll(0), txt("b"), coll(2, i(-1), i(5)))
	got, err := m.Normalize(in)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("Normalize = % x, %v; want % x", got, err, want)
	}
	if err := m.Check(got); err != nil {
		t.Errorf("the normalized value does not Check: %v", err)
	}
	if _, err := m.Normalize(coll(1, txt("a"), nil)); err == nil || !strings.Contains(err.Error(), "value 0 is null") {
		t.Errorf("Normalize of a null map value: %v", err)
	}
	if v, err := TypeInt.Normalize(i(7)); err != nil || !bytes.Equal(v, i(7)) {
		t.Errorf("Normalize of an int = % x, %v", v, err)
	}
}

// FuzzParametric: on any type name LookupType never panics, and on any bytes Check and Normalize
// of a parametric type never panic; what Check accepts, Normalize leaves as it is, decodes, and
// compares equal to itself; what Normalize returns, Check accepts.
func FuzzParametric(f *testing.F) {
	f.Add("frozen<map<text, frozen<list<int>>>>", coll(1, []byte("a"), coll(1, EncodeInt(1))))
	f.Add("tuple<int, frozen<set<text>>>", elems(nil, coll(2, []byte("b"), []byte("a"))))
	f.Add("frozen<list<frozen<tuple<bigint, blob>>>>", coll(1, elems(EncodeBigInt(1), nil)))
	f.Add("frozen<set<frozen<set<int>>>>", coll(2, coll(0), coll(0)))
	f.Fuzz(func(t *testing.T, name string, v []byte) {
		typ, err := LookupType(name)
		if err != nil || !typ.IsParametric() {
			return
		}
		if n, err := typ.Normalize(v); err == nil {
			if err := typ.Check(n); err != nil {
				t.Fatalf("%s: Normalize(% x) = % x, which Check refuses: %v", typ, v, n, err)
			}
		}
		if typ.Check(v) != nil {
			return
		}
		if n, err := typ.Normalize(v); err != nil || !bytes.Equal(n, v) {
			t.Fatalf("%s: Normalize of the canonical % x = % x, %v", typ, v, n, err)
		}
		if _, err := typ.Decode(v); err != nil {
			t.Fatalf("%s: Check accepts % x, Decode refuses it: %v", typ, v, err)
		}
		if typ.Compare(v, v) != 0 {
			t.Fatalf("%s: Compare(% x, itself) != 0", typ, v)
		}
	})
}
