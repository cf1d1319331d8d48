package schema

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cql"
)

// term parses src as the value of a one-column INSERT.
func term(t *testing.T, src string) cql.Term {
	t.Helper()
	st, err := cql.ParseStatement("INSERT INTO t (c) VALUES (" + src + ")")
	if err != nil {
		t.Fatalf("cannot parse literal %s: %v", src, err)
	}
	return st.(*cql.InsertStmt).Values[0]
}

func TestLiteralValue(t *testing.T) {
	ms := func(s string) []byte {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return EncodeBigInt(tm.UnixMilli())
	}
	tests := []struct {
		typ  Type
		lit  string
		want []byte
	}{
		{TypeText, "'abc'", EncodeText("abc")},
		{TypeText, "''", []byte{}},
		{TypeText, "NULL", nil},
		{TypeInt, "-2147483648", EncodeInt(math.MinInt32)},
		{TypeInt, "2147483647", EncodeInt(math.MaxInt32)},
		{TypeInt, "007", EncodeInt(7)},
		{TypeBigInt, "-9223372036854775808", EncodeBigInt(math.MinInt64)},
		{TypeDouble, "1.5", EncodeDouble(1.5)},
		{TypeDouble, "-3", EncodeDouble(-3)},
		{TypeDouble, "2e-3", EncodeDouble(0.002)},
		{TypeDouble, "-Infinity", EncodeDouble(math.Inf(-1))},
		{TypeDouble, "NaN", EncodeDouble(math.NaN())},
		{TypeBoolean, "TRUE", EncodeBoolean(true)},
		{TypeBoolean, "false", EncodeBoolean(false)},
		{TypeBlob, "0xCAFE", []byte{0xca, 0xfe}},
		{TypeBlob, "0x", []byte{}},
		{TypeTimestamp, "1700000000123", EncodeBigInt(1700000000123)},
		{TypeTimestamp, "-1", EncodeBigInt(-1)},
		{TypeTimestamp, "'2024-03-01'", ms("2024-03-01T00:00:00Z")},
		{TypeTimestamp, "'2024-03-01 10:20'", ms("2024-03-01T10:20:00Z")},
		{TypeTimestamp, "'2024-03-01T10:20:30'", ms("2024-03-01T10:20:30Z")},
		{TypeTimestamp, "'2024-03-01 10:20:30.456'", ms("2024-03-01T10:20:30.456Z")},
		{TypeTimestamp, "'2024-03-01T10:20:30.456789Z'", ms("2024-03-01T10:20:30.456Z")},
		{TypeTimestamp, "'2024-03-01 10:20:30+0100'", ms("2024-03-01T09:20:30Z")},
		{TypeTimestamp, "'2024-03-01T10:20:30-02:30'", ms("2024-03-01T12:50:30Z")},
		{TypeTimestamp, "'2024-03-01 10:20+01'", ms("2024-03-01T09:20:00Z")},
	}
	for _, tt := range tests {
		got, err := LiteralValue(tt.typ, term(t, tt.lit))
		if err != nil {
			t.Errorf("LiteralValue(%v, %s) failed: %v", tt.typ, tt.lit, err)
			continue
		}
		if !bytes.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("LiteralValue(%v, %s) = %#v, want %#v", tt.typ, tt.lit, got, tt.want)
		}
	}
}

func TestLiteralValueErrors(t *testing.T) {
	tests := []struct {
		typ  Type
		lit  string
		want string
	}{
		{TypeInt, "'abc'", "cannot use string literal 'abc' as int"},
		{TypeInt, "1.5", "cannot use float literal 1.5 as int"},
		{TypeInt, "2147483648", "int value 2147483648 is out of range (-2147483648 to 2147483647)"},
		{TypeInt, "-2147483649", "int value -2147483649 is out of range (-2147483648 to 2147483647)"},
		{TypeBigInt, "9223372036854775808", "bigint value 9223372036854775808 is out of range (-9223372036854775808 to 9223372036854775807)"},
		{TypeText, "5", "cannot use integer literal 5 as text"},
		{TypeText, "0x00", "cannot use blob literal 0x00 as text"},
		{TypeDouble, "'1.5'", "cannot use string literal '1.5' as double"},
		{TypeDouble, "1e400", "double value 1e400 is out of range"},
		{TypeBoolean, "1", "cannot use integer literal 1 as boolean"},
		{TypeBoolean, "'true'", "cannot use string literal 'true' as boolean"},
		{TypeBlob, "'cafe'", "cannot use string literal 'cafe' as blob"},
		{TypeTimestamp, "1.5", "cannot use float literal 1.5 as timestamp"},
		{TypeTimestamp, "'yesterday'", "invalid timestamp 'yesterday': write milliseconds since the Unix epoch or 'yyyy-mm-dd[ hh:mm[:ss[.fff]]][+hh:mm]'"},
		{TypeTimestamp, "'2024-02-30'", "invalid timestamp '2024-02-30': write milliseconds since the Unix epoch or 'yyyy-mm-dd[ hh:mm[:ss[.fff]]][+hh:mm]'"},
		{TypeTimestamp, "99999999999999999999", "timestamp value 99999999999999999999 is out of range"},
		{TypeText, "{'a': 1}", "cannot use map literal {'a': 1} as text"},
		{TypeText, "?", "bind marker ? has no value: prepared statements are not supported yet"},
		{TypeInt, "'" + string(bytes.Repeat([]byte("x"), 100)) + "'", "cannot use string literal 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... as int"},
	}
	for _, tt := range tests {
		_, err := LiteralValue(tt.typ, term(t, tt.lit))
		if err == nil || err.Error() != tt.want {
			t.Errorf("LiteralValue(%v, %s) error = %v, want %q", tt.typ, tt.lit, err, tt.want)
		}
	}
}

func TestColumnValueNamesTheColumn(t *testing.T) {
	c := &Column{Name: "age", Type: TypeInt}
	tests := []struct{ lit, want string }{
		{"'abc'", "column age is int; cannot assign string literal 'abc'"},
		{"3000000000", "column age: int value 3000000000 is out of range (-2147483648 to 2147483647)"},
	}
	for _, tt := range tests {
		_, err := c.Value(term(t, tt.lit))
		if err == nil || err.Error() != tt.want {
			t.Errorf("column age (int).Value(%s) error = %v, want %q", tt.lit, err, tt.want)
		}
	}
	q := &Column{Name: "Age", Type: TypeText}
	if _, err := q.Value(term(t, "1")); err == nil || err.Error() != `column "Age" is text; cannot assign integer literal 1` {
		t.Errorf(`column "Age" error = %v, want the name quoted as in CQL`, err)
	}
}
