package schema

import (
	"bytes"
	"math"
	"math/big"
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

func TestLiteralValueNewTypes(t *testing.T) {
	u := func(s string) []byte { return mustUUID(t, s) }
	d := func(s string) []byte { return EncodeDecimal(dec(t, s)) }
	day := func(s string) []byte {
		dd, err := ParseDate(s)
		if err != nil {
			t.Fatal(err)
		}
		return EncodeDate(dd)
	}
	tests := []struct {
		typ  Type
		lit  string
		want []byte
	}{
		{TypeASCII, "'abc'", []byte("abc")},
		{TypeSmallInt, "-32768", EncodeSmallInt(math.MinInt16)},
		{TypeSmallInt, "32767", EncodeSmallInt(math.MaxInt16)},
		{TypeTinyInt, "-128", EncodeTinyInt(math.MinInt8)},
		{TypeTinyInt, "127", EncodeTinyInt(math.MaxInt8)},
		{TypeFloat, "1.5", EncodeFloat(1.5)},
		{TypeFloat, "-3", EncodeFloat(-3)},
		{TypeFloat, "0.1", EncodeFloat(0.1)},
		{TypeFloat, "-Infinity", EncodeFloat(float32(math.Inf(-1)))},
		{TypeFloat, "3.4028234e38", EncodeFloat(math.MaxFloat32)},
		{TypeUUID, "123E4567-e89b-42d3-a456-426614174000", u("123e4567-e89b-42d3-a456-426614174000")},
		{TypeTimeUUID, "6ba7b810-9dad-11d1-80b4-00c04fd430c8", u("6ba7b810-9dad-11d1-80b4-00c04fd430c8")},
		{TypeInet, "'127.0.0.1'", []byte{127, 0, 0, 1}},
		{TypeInet, "'::1'", append(make([]byte, 15), 1)},
		{TypeDate, "'2024-02-29'", day("2024-02-29")},
		{TypeDate, "'1969-12-31'", EncodeDate(-1)},
		{TypeDate, "2147483648", EncodeDate(0)},
		{TypeDate, "'2147483649'", EncodeDate(1)},
		{TypeDate, "0", EncodeDate(MinDate)},
		{TypeDate, "4294967295", EncodeDate(MaxDate)},
		{TypeTime, "'08:12:54.123456789'", EncodeBigInt(29574123456789)},
		{TypeTime, "'08:12:54'", EncodeBigInt(29574000000000)},
		{TypeTime, "86399999999999", EncodeBigInt(86399999999999)},
		{TypeTime, "'5'", EncodeBigInt(5)},
		{TypeVarint, "-123456789012345678901234567890", EncodeVarint(bigString(t, "-123456789012345678901234567890"))},
		{TypeVarint, "0", []byte{0}},
		{TypeDecimal, "1.50", d("1.50")},
		{TypeDecimal, "-7", d("-7")},
		{TypeDecimal, "1.5e-3", d("0.0015")},
		{TypeDecimal, "123456789012345678901234567890.5", d("123456789012345678901234567890.5")},
	}
	for _, tt := range tests {
		got, err := LiteralValue(tt.typ, term(t, tt.lit))
		if err != nil {
			t.Errorf("LiteralValue(%v, %s) failed: %v", tt.typ, tt.lit, err)
			continue
		}
		if !bytes.Equal(got, tt.want) {
			t.Errorf("LiteralValue(%v, %s) = %x, want %x", tt.typ, tt.lit, got, tt.want)
		}
		if err := tt.typ.Check(got); err != nil {
			t.Errorf("LiteralValue(%v, %s) = %x, which Check refuses: %v", tt.typ, tt.lit, got, err)
		}
	}
}

func bigString(t *testing.T, s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad big integer %s", s)
	}
	return n
}

func TestLiteralValueNewTypesErrors(t *testing.T) {
	tests := []struct {
		typ  Type
		lit  string
		want string
	}{
		{TypeASCII, "'héllo'", `ascii value 'héllo' is not ASCII: byte 1 of "héllo" is 0xc3, not ASCII`},
		{TypeASCII, "1", "cannot use integer literal 1 as ascii"},
		{TypeSmallInt, "32768", "smallint value 32768 is out of range (-32768 to 32767)"},
		{TypeSmallInt, "1.0", "cannot use float literal 1.0 as smallint"},
		{TypeTinyInt, "-129", "tinyint value -129 is out of range (-128 to 127)"},
		{TypeTinyInt, "'1'", "cannot use string literal '1' as tinyint"},
		{TypeFloat, "3.5e38", "float value 3.5e38 is out of range (a float is at most 3.4028234663852886e+38 in magnitude; use double)"},
		{TypeFloat, "'1'", "cannot use string literal '1' as float"},
		{TypeUUID, "'123e4567-e89b-42d3-a456-426614174000'", "cannot use string literal '123e4567-e89b-42d3-a456-426614174000' as uuid"},
		{TypeUUID, "5", "cannot use integer literal 5 as uuid"},
		{TypeTimeUUID, "123e4567-e89b-42d3-a456-426614174000", "timeuuid value 123e4567-e89b-42d3-a456-426614174000 is a version 4 uuid; a timeuuid is version 1 (time-based)"},
		{TypeText, "123e4567-e89b-42d3-a456-426614174000", "cannot use uuid literal 123e4567-e89b-42d3-a456-426614174000 as text"},
		{TypeInet, "'1.2.3'", "inet value '1.2.3' is not an IPv4 or IPv6 address (write '192.0.2.1' or '2001:db8::1', no zone)"},
		{TypeInet, "'fe80::1%eth0'", "inet value 'fe80::1%eth0' is not an IPv4 or IPv6 address (write '192.0.2.1' or '2001:db8::1', no zone)"},
		{TypeInet, "0x7f000001", "cannot use blob literal 0x7f000001 as inet"},
		{TypeDate, "'2023-02-29'", `date value: "2023-02-29" is not a date: day out of range for the month; write 'yyyy-mm-dd' or days with 2^31 the Unix epoch`},
		{TypeDate, "4294967296", "date value 4294967296 is out of range (an integer date is days from 0 to 4294967295, with 2147483648 the Unix epoch; or write 'yyyy-mm-dd')"},
		{TypeDate, "-1", "date value -1 is out of range (an integer date is days from 0 to 4294967295, with 2147483648 the Unix epoch; or write 'yyyy-mm-dd')"},
		{TypeTime, "'24:00:00'", `time value: "24:00:00" is not a time: hour out of range; write 'hh:mm:ss[.fffffffff]' or nanoseconds since midnight`},
		{TypeTime, "86400000000000", "time value 86400000000000 is out of range (nanoseconds from 0 to 86399999999999; or write 'hh:mm:ss[.fffffffff]')"},
		{TypeTime, "-1", "time value -1 is out of range (nanoseconds from 0 to 86399999999999; or write 'hh:mm:ss[.fffffffff]')"},
		{TypeVarint, "1.5", "cannot use float literal 1.5 as varint"},
		{TypeDecimal, "NaN", `decimal value NaN: "NaN" is not a decimal number: not a number (NaN and Infinity have no decimal value)`},
		{TypeDecimal, "1e9999999999", `decimal value 1e9999999999: "1e9999999999" is not a decimal number: exponent out of range (NaN and Infinity have no decimal value)`},
		{TypeDecimal, "'1.5'", "cannot use string literal '1.5' as decimal"},
	}
	for _, tt := range tests {
		_, err := LiteralValue(tt.typ, term(t, tt.lit))
		if err == nil || err.Error() != tt.want {
			t.Errorf("LiteralValue(%v, %s) error = %v, want %q", tt.typ, tt.lit, err, tt.want)
		}
	}
	c := &Column{Name: "n", Type: TypeTinyInt}
	if _, err := c.Value(term(t, "300")); err == nil || err.Error() != "column n: tinyint value 300 is out of range (-128 to 127)" {
		t.Errorf("column n (tinyint).Value(300) error = %v, want it to name the column, the type and the range", err)
	}
}
