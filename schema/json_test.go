package schema

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

// valueOf returns the value of CQL literal src for type t.
func valueOf(t *testing.T, typ Type, src string) []byte {
	t.Helper()
	st, err := cql.ParseStatement("INSERT INTO t (a) VALUES (" + src + ")")
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	v, mismatch, err := literalValue(typ, st.(*cql.InsertStmt).Values[0])
	if err != nil || mismatch {
		t.Fatalf("%s as %s: %v (mismatch %v)", src, typ, err, mismatch)
	}
	return v
}

// TestJSONRoundTrip checks toJson's text of a value of every type, and that fromJson reads
// it back to the same value.
func TestJSONRoundTrip(t *testing.T) {
	for _, c := range []struct {
		typ  Type
		lit  string
		json string
	}{
		{TypeText, `'a "quoted" <b>'`, `"a \"quoted\" <b>"`},
		{TypeASCII, `'abc'`, `"abc"`},
		{TypeInt, `-42`, `-42`},
		{TypeBigInt, `9223372036854775807`, `9223372036854775807`},
		{TypeSmallInt, `-32768`, `-32768`},
		{TypeTinyInt, `7`, `7`},
		{TypeVarint, `123456789012345678901234567890`, `123456789012345678901234567890`},
		{TypeDouble, `1.5`, `1.5`},
		{TypeDouble, `1e10`, `1.0E10`},
		{TypeFloat, `0.25`, `0.25`},
		{TypeDecimal, `3.14159`, `3.14159`},
		{TypeBoolean, `true`, `true`},
		{TypeBlob, `0xcafe`, `"0xcafe"`},
		{TypeTimestamp, `'2024-03-01 10:00:00.123Z'`, `"2024-03-01 10:00:00.123Z"`},
		{TypeDate, `'2024-03-01'`, `"2024-03-01"`},
		{TypeTime, `'10:00:00.000000001'`, `"10:00:00.000000001"`},
		{TypeUUID, `123e4567-e89b-12d3-a456-426614174000`, `"123e4567-e89b-12d3-a456-426614174000"`},
		{TypeTimeUUID, `50554d6e-29bb-11e5-b345-feff819cdc9f`, `"50554d6e-29bb-11e5-b345-feff819cdc9f"`},
		{TypeInet, `'127.0.0.1'`, `"127.0.0.1"`},
		{TypeDuration, `1h30m`, `"1h30m"`},
		{"frozen<list<int>>", `[1, 2, 3]`, `[1, 2, 3]`},
		{"frozen<set<text>>", `{'a', 'b'}`, `["a", "b"]`},
		{"frozen<map<int, text>>", `{1: 'x', 2: 'y'}`, `{"1": "x", "2": "y"}`},
		{"frozen<map<text, frozen<list<boolean>>>>", `{'k': [true]}`, `{"k": [true]}`},
		{"frozen<tuple<int, text, blob>>", `(1, 'a', null)`, `[1, "a", null]`},
	} {
		v := valueOf(t, c.typ, c.lit)
		got, err := c.typ.JSON(v)
		if err != nil || string(got) != c.json {
			t.Errorf("%s %s: toJson = %s, %v; want %s", c.typ, c.lit, got, err, c.json)
			continue
		}
		back, err := FromJSON(c.typ, string(got))
		if err != nil || !bytes.Equal(back, v) {
			t.Errorf("%s: fromJson(%s) = %x, %v; want %x", c.typ, got, back, err, v)
		}
	}
	// fromJson also takes numbers and booleans as strings, timestamps as milliseconds.
	for _, c := range []struct {
		typ       Type
		json, lit string
	}{
		{TypeInt, `"5"`, `5`},
		{TypeBoolean, `"TRUE"`, `true`},
		{TypeTimestamp, `1709287200000`, `1709287200000`},
		{TypeDouble, `2`, `2.0`},
		{TypeText, `null`, `null`},
	} {
		got, err := FromJSON(c.typ, c.json)
		if want := valueOf(t, c.typ, c.lit); err != nil || !bytes.Equal(got, want) {
			t.Errorf("fromJson(%s) as %s = %x, %v; want %x", c.json, c.typ, got, err, want)
		}
	}
	for _, c := range []struct {
		typ  Type
		json string
		want string
	}{
		{TypeInt, `"x"`, `unable to make int from "x"`},
		{TypeInt, `[1]`, `expected a int value, found JSON [1]`},
		{"frozen<list<int>>", `{"a": 1}`, `expected a JSON array`},
		{TypeInt, `1 2`, `trailing data`},
		{TypeInt, `99999999999`, `out of range`},
	} {
		if _, err := FromJSON(c.typ, c.json); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("fromJson(%s) as %s: %v, want an error containing %q", c.json, c.typ, err, c.want)
		}
	}
}

func TestInsertJSON(t *testing.T) {
	s := mustBuild(t, dataDDL)
	w, err := s.PrepareWrite(mustParse(t, `INSERT INTO t JSON '{"a": 1, "b": "x", "c1": 2, "c2": "y", "v": "z"}'`), "ks")
	if err != nil {
		t.Fatal(err)
	}
	if got := describeWrite(w); got != "INSERT ks.t pk=[00000001 78] ck=[00000002 79] v=7a w=null" {
		t.Errorf("INSERT JSON = %s (DEFAULT NULL sets w null)", got)
	}
	w, err = s.PrepareWrite(mustParse(t, `INSERT INTO t JSON '{"a": 1, "b": "x", "c1": 2, "c2": "y"}' DEFAULT UNSET`), "ks")
	if err != nil {
		t.Fatal(err)
	}
	if got := describeWrite(w); got != "INSERT ks.t pk=[00000001 78] ck=[00000002 79]" {
		t.Errorf("INSERT JSON DEFAULT UNSET = %s", got)
	}
	for _, c := range []struct{ src, want string }{
		{`INSERT INTO t JSON '{"a": 1, "b": "x", "c1": 2, "nope": 1}'`, "JSON values map contains unrecognized column: nope"},
		{`INSERT INTO t JSON '{"a": 1, "b": "x", "c1": 2}'`, "missing clustering column c2"},
		{`INSERT INTO t JSON '[1]'`, "could not decode JSON string"},
		{`INSERT INTO t JSON '{"a": "one"}'`, `error decoding JSON value for a: unable to make int from "one"`},
	} {
		if _, err := s.PrepareWrite(mustParse(t, c.src), "ks"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.src, err, c.want)
		}
	}
	vars, _, err := s.Variables(mustParse(t, "INSERT INTO t JSON ?"), "ks")
	if err != nil || len(vars) != 1 || vars[0].Name != "[json]" || vars[0].Type != TypeText {
		t.Errorf("INSERT JSON ? variables %+v, %v; want [json] text", vars, err)
	}
	vars, _, err = s.Variables(mustParse(t, "UPDATE t SET v = fromJson(?) WHERE a = 1 AND b = 'x' AND c1 = 1 AND c2 = 'y'"), "ks")
	if err != nil || len(vars) != 1 || vars[0].Type != TypeText {
		t.Errorf("fromJson(?) variables %+v, %v; want one text", vars, err)
	}
}
