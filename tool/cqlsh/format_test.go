package cqlsh

import (
	"bytes"
	"flag"
	"math"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cqlwire"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/schema"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the actual output")

// checkGolden compares got with testdata/name, or rewrites the file with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test -update after checking it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{schema.List{int32(1), int32(-2)}, "[1, -2]"},
		{schema.Set{"a", "it's"}, "{'a', 'it''s'}"},
		{schema.Map{{Key: "k", Value: schema.List{}}, {Key: "l", Value: schema.Set{int32(3)}}}, "{'k': [], 'l': {3}}"},
		{schema.Tuple{int32(1), nil, "x"}, "(1, null, 'x')"},
		{schema.Duration{Months: 14, Days: 1, Nanoseconds: 90 * 60 * 1e9}, "1y2mo1d1h30m"},
		{"plain text", "plain text"},
		{"héllo wörld", "héllo wörld"},
		{"two\nlines\tand a tab\r", `two\nlines\tand a tab\r`},
		{"bell\a del\x7f", `bell\x07 del\x7f`},
		{"bad \xff byte", `bad \xff byte`},
		{"line\u2028sep", `line\u2028sep`},
		{"�", "�"},
		{"", ""},
		{int32(-7), "-7"},
		{int32(math.MaxInt32), "2147483647"},
		{int64(math.MinInt64), "-9223372036854775808"},
		{2.5, "2.5"},
		{2.0, "2"},
		{-0.125, "-0.125"},
		{0.0, "0"},
		{1e6, "1000000"},
		{math.Nextafter(0.3, 1), "0.30000000000000004"},
		{1e15, "1e+15"},
		{1.5e-5, "1.5e-05"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
		{true, "true"},
		{false, "false"},
		{[]byte{0xca, 0xfe, 0x00}, "0xcafe00"},
		{[]byte{}, "0x"},
		{time.Date(2026, 11, 21, 9, 30, 5, 7_000_000, time.UTC), "2026-11-21T09:30:05.007Z"},
		{time.Date(2026, 11, 21, 10, 30, 0, 0, time.FixedZone("CET", 3600)), "2026-11-21T09:30:00.000Z"},
		{time.UnixMilli(-1).UTC(), "1969-12-31T23:59:59.999Z"},
		{float32(0.1), "0.1"},
		{float32(math.Inf(-1)), "-Infinity"},
		{int16(-32768), "-32768"},
		{int8(127), "127"},
		{client.UUID{0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x42, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00}, "123e4567-e89b-42d3-a456-426614174000"},
		{netip.MustParseAddr("2001:db8::1"), "2001:db8::1"},
		{client.Date(-1), "1969-12-31"},
		{8*time.Hour + 12*time.Minute + 54*time.Second + 123456789, "08:12:54.123456789"},
		{client.Decimal{Unscaled: big.NewInt(-150), Scale: 2}, "-1.50"},
		{big.NewInt(-129), "-129"},
		{[]string{"a", "it's"}, "['a', 'it''s']"},
		{map[string]string{"z": "1", "a": "x\ny"}, "{'a': 'x\\ny', 'z': '1'}"},
		{map[string][]byte{"k": {0xca, 0xfe}}, "{'k': 0xcafe}"},
	} {
		if got := formatValue(tc.v); got != tc.want {
			t.Errorf("formatValue(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func allTypesColumns() []client.Column {
	return []client.Column{
		{Name: "k", Type: "text"},
		{Name: "i", Type: "int"},
		{Name: "big", Type: "bigint"},
		{Name: "d", Type: "double"},
		{Name: "ok", Type: "boolean"},
		{Name: "data", Type: "blob"},
		{Name: "at", Type: "timestamp"},
		{Name: "note", Type: "text"},
	}
}

func allTypesRows() [][]any {
	ts := time.Date(2026, 11, 21, 9, 30, 0, 123_000_000, time.UTC)
	return [][]any{
		{"a", int32(1), int64(1) << 40, 2.5, true, []byte{0xca, 0xfe}, ts, "first"},
		{"héllo", int32(-70000), int64(-3), -0.001, false, []byte{}, ts.Add(time.Hour), "two\nlines"},
		{"null row", nil, nil, nil, nil, nil, nil, nil},
	}
}

func TestWriteRowsGolden(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("== every type, with nulls and escapes ==\n")
	writeRows(&b, allTypesColumns(), allTypesRows())
	b.WriteString("== no rows: header only ==\n")
	writeRows(&b, []client.Column{{Name: "k", Type: "text"}, {Name: "v", Type: "int"}}, nil)
	b.WriteString("== one column wider than its values ==\n")
	writeRows(&b, []client.Column{{Name: "a_long_column_name", Type: "int"}, {Name: "v", Type: "text"}},
		[][]any{{int32(1), "x"}, {int32(22), "yy"}})
	checkGolden(t, "rows.golden", b.String())

	for i, line := range strings.Split(b.String(), "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("line %d of the table ends in a space: %q", i+1, line)
		}
	}
}

func TestWriteRowsAlignsColumns(t *testing.T) {
	var b bytes.Buffer
	writeRows(&b, []client.Column{{Name: "name", Type: "text"}, {Name: "n", Type: "bigint"}, {Name: "last", Type: "text"}},
		[][]any{{"ab", int64(5), "x"}, {"c", int64(123456), "yz"}})
	want := "" +
		" name |      n | last\n" +
		"------+--------+------\n" +
		" ab   |      5 | x\n" +
		" c    | 123456 | yz\n" +
		"\n" +
		"(2 rows)\n"
	if b.String() != want {
		t.Errorf("two-row table printed as\n%s\nwant\n%s", b.String(), want)
	}
}

// TestUserTypeDisplay: a user type learnt from the native protocol's UDT option decodes its
// values, and they show as cqlsh shows them, missing trailing fields as null.
func TestUserTypeDisplay(t *testing.T) {
	wt := cqlwire.Type{ID: cqlwire.TypeUDT, Keyspace: "ks", Name: "address", Fields: []string{"street", "zip", "tags"},
		Elems: []cqlwire.Type{{ID: cqlwire.TypeVarchar}, {ID: cqlwire.TypeInt}, {ID: cqlwire.TypeSet, Elems: []cqlwire.Type{{ID: cqlwire.TypeVarchar}}}}}
	st, err := schemaType(wt)
	if err != nil {
		t.Fatal(err)
	}
	if st.CQL() != "frozen<address>" {
		t.Errorf("schemaType gave %s", st)
	}
	v := []byte{0, 0, 0, 4, 'm', 'a', 'i', 'n', 0, 0, 0, 4, 0, 0, 0, 5} // street 'main', zip 5, no tags
	x, err := st.Decode(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := formatValue(x), "{street: 'main', zip: 5, tags: null}"; got != want {
		t.Errorf("formatValue = %s, want %s", got, want)
	}
	if _, err := schemaType(cqlwire.Type{ID: cqlwire.TypeUDT, Keyspace: "ks", Name: "bad name", Fields: []string{"a"}, Elems: []cqlwire.Type{{ID: cqlwire.TypeInt}}}); err == nil {
		t.Error("schemaType accepted a user type name no type can have")
	}
}
