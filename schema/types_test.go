package schema

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustUUID(t testing.TB, s string) []byte {
	t.Helper()
	u, err := ParseUUID(s)
	if err != nil {
		t.Fatal(err)
	}
	return EncodeUUID(u)
}

func dec(t testing.TB, s string) Decimal {
	t.Helper()
	d, err := ParseDecimal(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCheckNewTypes(t *testing.T) {
	v1 := mustUUID(t, "6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	v4 := mustUUID(t, "123e4567-e89b-42d3-a456-426614174000")
	tests := []struct {
		typ  Type
		v    []byte
		want string // "" for well-formed
	}{
		{TypeASCII, []byte("abc\x7f"), ""},
		{TypeASCII, []byte{}, ""},
		{TypeASCII, []byte("héllo"), "invalid ascii value: byte 1 is 0xc3, not ASCII (0x00 to 0x7f)"},
		{TypeFloat, EncodeFloat(1.5), ""},
		{TypeFloat, EncodeDouble(1.5), "invalid float value: 8 bytes, want 4"},
		{TypeSmallInt, EncodeSmallInt(-3), ""},
		{TypeSmallInt, EncodeInt(3), "invalid smallint value: 4 bytes, want 2"},
		{TypeTinyInt, EncodeTinyInt(-3), ""},
		{TypeTinyInt, []byte{}, "invalid tinyint value: 0 bytes, want 1"},
		{TypeUUID, v4, ""},
		{TypeUUID, v4[:15], "invalid uuid value: 15 bytes, want 16"},
		{TypeTimeUUID, v1, ""},
		{TypeTimeUUID, v4, "invalid timeuuid value: version 4 uuid, want version 1 (time-based)"},
		{TypeInet, []byte{127, 0, 0, 1}, ""},
		{TypeInet, make([]byte, 16), ""},
		{TypeInet, make([]byte, 5), "invalid inet value: 5 bytes, want 4 (IPv4) or 16 (IPv6)"},
		{TypeDate, EncodeDate(0), ""},
		{TypeDate, []byte{1, 2}, "invalid date value: 2 bytes, want 4"},
		{TypeTime, EncodeBigInt(0), ""},
		{TypeTime, EncodeBigInt(86399999999999), ""},
		{TypeTime, EncodeBigInt(86400000000000), "invalid time value: 86400000000000 nanoseconds is outside a day (0 to 86399999999999)"},
		{TypeTime, EncodeBigInt(-1), "invalid time value: -1 nanoseconds is outside a day (0 to 86399999999999)"},
		{TypeVarint, []byte{0}, ""},
		{TypeVarint, []byte{0x00, 0x80}, ""},
		{TypeVarint, []byte{0xff, 0x7f}, ""},
		{TypeVarint, []byte{}, "invalid varint value: 0 bytes, want at least 1"},
		{TypeVarint, []byte{0x00, 0x01}, "invalid varint value: integer not in its fewest bytes (leading 0x00 0x01)"},
		{TypeVarint, []byte{0xff, 0x80}, "invalid varint value: integer not in its fewest bytes (leading 0xff 0x80)"},
		{TypeDecimal, []byte{0, 0, 0, 2, 0x7f}, ""},
		{TypeDecimal, []byte{0, 0, 0, 2}, "invalid decimal value: 4 bytes, want a 4-byte scale and at least 1 byte of unscaled value"},
		{TypeDecimal, []byte{0, 0, 0, 2, 0, 1}, "invalid decimal value: integer not in its fewest bytes (leading 0x00 0x01)"},
		{TypeSetText, EncodeSetText([]string{"b", "a"}), ""},
		{TypeSetText, EncodeListText([]string{"b", "a"}), "invalid set<text> value: element 1 is not above element 0 (elements must be distinct and ascending)"},
		{TypeSetText, EncodeListText([]string{"a", "a"}), "invalid set<text> value: element 1 is not above element 0 (elements must be distinct and ascending)"},
		{TypeListText, EncodeListText([]string{"b", "a", "b"}), ""},
		{TypeListText, EncodeListText([]string{"\xff"}), "invalid list<text> value: element 0 is not valid UTF-8"},
		{TypeListText, []byte{0, 0, 0}, "invalid list<text> value: 3 bytes, want at least a 4-byte count"},
		{TypeListText, []byte{0x7f, 0xff, 0xff, 0xff}, "invalid list<text> value: count 2147483647 does not fit in 4 bytes"},
		{TypeListText, []byte{0xff, 0xff, 0xff, 0xff}, "invalid list<text> value: count -1 does not fit in 4 bytes"},
		{TypeListText, []byte{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}, "invalid list<text> value: element 0: null (length -1) in a collection"},
		{TypeListText, []byte{0, 0, 0, 1, 0, 0, 0, 9, 'a'}, "invalid list<text> value: element 0: length 9 overruns the value (1 bytes left)"},
		{TypeListText, append(EncodeListText([]string{"a"}), 0), "invalid list<text> value: 1 bytes after the last element"},
		{TypeMapTextText, EncodeMapTextText(map[string]string{"k": "v", "a": ""}), ""},
		{TypeMapTextText, EncodeMapTextBlob(map[string][]byte{"k": {0xff}}), "invalid map<text, text> value: value 0 is not valid UTF-8"},
		{TypeMapTextBlob, EncodeMapTextBlob(map[string][]byte{"k": {0xff}}), ""},
		{TypeMapTextBlob, []byte{0, 0, 0, 1, 0, 0, 0, 1, 'k'}, "invalid map<text, blob> value: value 0: truncated length"},
	}
	for _, tt := range tests {
		err := tt.typ.Check(tt.v)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%v.Check(%x) = %q, want %q", tt.typ, tt.v, got, tt.want)
		}
	}
	// Every scalar type other than the byte strings refuses the empty value.
	for _, typ := range typeCodes[typeCode(TypeText) : typeCode(TypeVarint)+1] {
		if typ == TypeText || typ == TypeASCII || typ == TypeBlob {
			continue
		}
		if err := typ.Check([]byte{}); err == nil {
			t.Errorf("%v.Check(empty) = nil, want an error", typ)
		}
	}
}

func TestCompareOrdersNewTypes(t *testing.T) {
	ip := func(s string) []byte { return EncodeInet(netip.MustParseAddr(s)) }
	d := func(s string) []byte { return EncodeDecimal(dec(t, s)) }
	vi := func(s string) []byte { n, _ := new(big.Int).SetString(s, 10); return EncodeVarint(n) }
	tests := []struct {
		typ    Type
		sorted [][]byte // strictly increasing
	}{
		{TypeFloat, [][]byte{EncodeFloat(float32(math.Inf(-1))), EncodeFloat(-1), EncodeFloat(float32(math.Copysign(0, -1))), EncodeFloat(0), EncodeFloat(math.SmallestNonzeroFloat32), EncodeFloat(float32(math.Inf(1))), EncodeFloat(float32(math.NaN()))}},
		{TypeSmallInt, [][]byte{EncodeSmallInt(math.MinInt16), EncodeSmallInt(-1), EncodeSmallInt(0), EncodeSmallInt(math.MaxInt16)}},
		{TypeTinyInt, [][]byte{EncodeTinyInt(math.MinInt8), EncodeTinyInt(-1), EncodeTinyInt(0), EncodeTinyInt(math.MaxInt8)}},
		{TypeASCII, [][]byte{{}, []byte("A"), []byte("a"), []byte("ab")}},
		{TypeDate, [][]byte{EncodeDate(MinDate), EncodeDate(-1), EncodeDate(0), EncodeDate(MaxDate)}},
		{TypeTime, [][]byte{EncodeBigInt(0), EncodeBigInt(1), EncodeBigInt(86399999999999)}},
		// Cassandra's InetAddressType compares bytes: ::1 (0x00...) before 10.0.0.1.
		{TypeInet, [][]byte{ip("::"), ip("::1"), ip("1.2.3.4"), ip("10.0.0.1"), ip("fe80::1")}},
		{TypeVarint, [][]byte{vi("-100000000000000000000"), vi("-129"), vi("-128"), vi("-1"), vi("0"), vi("1"), vi("127"), vi("128"), vi("255"), vi("256"), vi("100000000000000000000")}},
		{TypeDecimal, [][]byte{d("-1e10"), d("-1.5"), d("-0.0001"), d("0"), d("1e-1000"), d("0.001"), d("1"), d("1.0000001"), d("12e3"), d("1e2147483647")}},
		// UUIDType: by version; version 1 by timestamp (time_hi before time_mid before time_low), then bytes.
		{TypeUUID, [][]byte{
			mustUUID(t, "ffffffff-ffff-0fff-ffff-ffffffffffff"),
			mustUUID(t, "ffffffff-0000-1000-0000-000000000000"),
			mustUUID(t, "00000000-0001-1000-0000-000000000000"),
			mustUUID(t, "00000000-0000-1001-0000-000000000000"),
			mustUUID(t, "00000000-0000-1001-8000-000000000000"),
			mustUUID(t, "00000000-0000-4000-0000-000000000000"),
			mustUUID(t, "00000000-0000-4000-0000-000000000001"),
			mustUUID(t, "00000001-0000-4000-0000-000000000000"),
		}},
		// TimeUUIDType: by timestamp, then the last 8 bytes as signed bytes.
		{TypeTimeUUID, [][]byte{
			mustUUID(t, "ffffffff-0000-1000-8000-000000000000"),
			mustUUID(t, "00000000-0001-1000-8000-000000000000"),
			mustUUID(t, "00000000-0001-1000-ff00-000000000000"),
			mustUUID(t, "00000000-0001-1000-0080-000000000000"),
			mustUUID(t, "00000000-0001-1000-0000-000000000000"),
			mustUUID(t, "00000000-0001-1000-0000-000000000001"),
			mustUUID(t, "00000000-0000-1001-8000-000000000000"),
		}},
	}
	for _, tt := range tests {
		for i := range tt.sorted {
			if err := tt.typ.Check(tt.sorted[i]); err != nil {
				t.Fatalf("%v value %d: %v", tt.typ, i, err)
			}
			for j := range tt.sorted {
				want := 0
				if i < j {
					want = -1
				} else if i > j {
					want = 1
				}
				if got := tt.typ.Compare(tt.sorted[i], tt.sorted[j]); got != want {
					t.Errorf("%v.Compare(%x, %x) = %d, want %d", tt.typ, tt.sorted[i], tt.sorted[j], got, want)
				}
			}
		}
	}
	// Equal decimals with different scales compare equal, as BigDecimal.compareTo does.
	for _, pair := range [][2]string{{"1.0", "1.00"}, {"100", "1e2"}, {"0", "0.000"}, {"-2.50", "-2.5"}} {
		if got := TypeDecimal.Compare(d(pair[0]), d(pair[1])); got != 0 {
			t.Errorf("decimal Compare(%s, %s) = %d, want 0", pair[0], pair[1], got)
		}
	}
}

// TestVarintAndDecimalMatchBigArithmetic checks the encodings and orders
// against math/big on random values.
func TestVarintAndDecimalMatchBigArithmetic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	randInt := func() *big.Int {
		b := make([]byte, r.IntN(17))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		n := new(big.Int).SetBytes(b)
		if r.IntN(2) == 0 {
			n.Neg(n)
		}
		return n
	}
	for range 3000 {
		a, b := randInt(), randInt()
		ea, eb := EncodeVarint(a), EncodeVarint(b)
		if err := TypeVarint.Check(ea); err != nil {
			t.Fatalf("EncodeVarint(%v) = %x: %v", a, ea, err)
		}
		if got, _ := TypeVarint.Decode(ea); got.(*big.Int).Cmp(a) != 0 {
			t.Fatalf("Decode(EncodeVarint(%v)) = %v", a, got)
		}
		if got, want := TypeVarint.Compare(ea, eb), a.Cmp(b); got != want {
			t.Fatalf("varint Compare(%v, %v) = %d, want %d", a, b, got, want)
		}
		da := Decimal{a, int32(r.IntN(40) - 20)}
		db := Decimal{b, int32(r.IntN(40) - 20)}
		if r.IntN(4) == 0 { // same value, another scale
			db = Decimal{new(big.Int).Mul(a, pow10(3)), da.Scale + 3}
		}
		if got, want := TypeDecimal.Compare(EncodeDecimal(da), EncodeDecimal(db)), ratOf(da).Cmp(ratOf(db)); got != want {
			t.Fatalf("decimal Compare(%v, %v) = %d, want %d", da, db, got, want)
		}
		back, err := ParseDecimal(da.String())
		if err != nil || back.Scale != da.Scale || back.Unscaled.Cmp(da.Unscaled) != 0 {
			t.Fatalf("ParseDecimal(%q) = %v, %v; want %v exactly", da.String(), back, err, da)
		}
	}
}

func ratOf(d Decimal) *big.Rat {
	x := new(big.Rat).SetInt(d.Unscaled)
	p := new(big.Rat).SetInt(pow10(int64(math.Abs(float64(d.Scale)))))
	if d.Scale >= 0 {
		return x.Quo(x, p)
	}
	return x.Mul(x, p)
}

func TestDecodeNewTypes(t *testing.T) {
	u := UUID(mustUUID(t, "123e4567-e89b-42d3-a456-426614174000"))
	tests := []struct {
		typ  Type
		v    []byte
		want any
	}{
		{TypeASCII, []byte("hi"), "hi"},
		{TypeFloat, EncodeFloat(-0.5), float32(-0.5)},
		{TypeSmallInt, EncodeSmallInt(-300), int16(-300)},
		{TypeTinyInt, EncodeTinyInt(-100), int8(-100)},
		{TypeUUID, EncodeUUID(u), u},
		{TypeInet, []byte{10, 0, 0, 1}, netip.MustParseAddr("10.0.0.1")},
		{TypeInet, EncodeInet(netip.MustParseAddr("::ffff:1.2.3.4")), netip.MustParseAddr("::ffff:1.2.3.4")},
		{TypeDate, []byte{0x80, 0, 0, 0}, Date(0)},
		{TypeDate, []byte{0x7f, 0xff, 0xff, 0xff}, Date(-1)},
		{TypeTime, EncodeBigInt(3723_000_000_001), time.Hour + 2*time.Minute + 3*time.Second + 1},
		{TypeSetText, EncodeSetText([]string{"b", "a", "b"}), []string{"a", "b"}},
		{TypeListText, EncodeListText([]string{"b", "a", "b"}), []string{"b", "a", "b"}},
		{TypeMapTextText, EncodeMapTextText(map[string]string{"z": "1", "a": "2"}), []MapEntry[string]{{"a", "2"}, {"z", "1"}}},
		{TypeMapTextBlob, EncodeMapTextBlob(map[string][]byte{"k": {1}}), []MapEntry[[]byte]{{"k", []byte{1}}}},
	}
	for _, tt := range tests {
		got, err := tt.typ.Decode(tt.v)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v.Decode(%x) = %#v, %v; want %#v", tt.typ, tt.v, got, err, tt.want)
		}
	}
	if got, _ := TypeDecimal.Decode(EncodeDecimal(dec(t, "-1.50"))); got.(Decimal).String() != "-1.50" {
		t.Errorf("decimal -1.50 decodes to %v", got)
	}
	if got, _ := TypeVarint.Decode([]byte{0xff, 0x7f}); got.(*big.Int).Int64() != -129 {
		t.Errorf("varint ff7f decodes to %v, want -129", got)
	}
}

func TestParseAndFormatScalars(t *testing.T) {
	for _, s := range []string{"00000000-0000-0000-0000-000000000000", "123e4567-e89b-12d3-a456-426614174000"} {
		u, err := ParseUUID(strings.ToUpper(s))
		if err != nil || u.String() != s {
			t.Errorf("ParseUUID(%q) = %v, %v", strings.ToUpper(s), u, err)
		}
	}
	for _, s := range []string{"", "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g", "123e4567-e89b-12d3-a456+426614174000"} {
		if _, err := ParseUUID(s); err == nil {
			t.Errorf("ParseUUID(%q) succeeded, want an error", s)
		}
	}
	tm := time.Date(2024, 2, 29, 12, 30, 45, 123456700, time.UTC)
	u := MakeTimeUUID(tm, 0x1234, 0xaabbccddeeff)
	if u.Version() != 1 || !u.Time().Equal(tm) || u.String()[19:] != "9234-aabbccddeeff" {
		t.Errorf("MakeTimeUUID = %v (version %d, time %v), want version 1 at %v", u, u.Version(), u.Time(), tm)
	}

	dates := []struct {
		s string
		d Date
	}{{"1970-01-01", 0}, {"1969-12-31", -1}, {"2024-02-29", 19782}, {"-5877641-06-23", MinDate}, {"5881580-07-11", MaxDate}}
	for _, tt := range dates {
		d, err := ParseDate(tt.s)
		if err != nil || d != tt.d || d.String() != tt.s {
			t.Errorf("ParseDate(%q) = %d (%v), %v; want %d", tt.s, d, d, err, tt.d)
		}
	}
	for _, s := range []string{"2023-02-29", "2024-13-01", "2024-1-01", "20240101", "5881580-07-12", "abcd-01-01", ""} {
		if d, err := ParseDate(s); err == nil {
			t.Errorf("ParseDate(%q) = %v, want an error", s, d)
		}
	}

	times := []struct {
		s    string
		d    time.Duration
		back string
	}{
		{"00:00:00", 0, "00:00:00.000000000"},
		{"1:02:03.5", time.Hour + 2*time.Minute + 3*time.Second + 500*time.Millisecond, "01:02:03.500000000"},
		{"23:59:59.999999999", 24*time.Hour - 1, "23:59:59.999999999"},
	}
	for _, tt := range times {
		d, err := ParseTimeOfDay(tt.s)
		if err != nil || d != tt.d || FormatTimeOfDay(d) != tt.back {
			t.Errorf("ParseTimeOfDay(%q) = %v (%s), %v; want %v", tt.s, d, FormatTimeOfDay(d), err, tt.d)
		}
	}
	for _, s := range []string{"24:00:00", "12:60:00", "12:00:60", "12:00", "12:00:00.", "12:00:00.1234567890", "-1:00:00", "12:00:0a"} {
		if d, err := ParseTimeOfDay(s); err == nil {
			t.Errorf("ParseTimeOfDay(%q) = %v, want an error", s, d)
		}
	}

	decimals := []struct {
		in, out string
		scale   int32
	}{
		{"1.50", "1.50", 2}, {"-0.001", "-0.001", 3}, {"12e3", "1.2E+4", -3}, {"1.2E-3", "0.0012", 4},
		{"0", "0", 0}, {"+7", "7", 0}, {"1e-10", "1E-10", 10}, {".5", "0.5", 1}, {"5.", "5", 0},
	}
	for _, tt := range decimals {
		d, err := ParseDecimal(tt.in)
		if err != nil || d.String() != tt.out || d.Scale != tt.scale {
			t.Errorf("ParseDecimal(%q) = %v (scale %d), %v; want %s at scale %d", tt.in, d, d.Scale, err, tt.out, tt.scale)
		}
	}
	for _, s := range []string{"", "-", ".", "1e", "1e5000000000", "1.2.3", "0x10", "NaN", "1e2147483649"} {
		if d, err := ParseDecimal(s); err == nil {
			t.Errorf("ParseDecimal(%q) = %v, want an error", s, d)
		}
	}
}

func TestElements(t *testing.T) {
	tests := []struct {
		typ        Type
		kind       CollectionKind
		key, value Type
		name       string
	}{
		{TypeSetText, CollectionSet, TypeText, TypeInvalid, "set<text>"},
		{TypeListText, CollectionList, TypeText, TypeInvalid, "list<text>"},
		{TypeMapTextText, CollectionMap, TypeText, TypeText, "map<text, text>"},
		{TypeMapTextBlob, CollectionMap, TypeText, TypeBlob, "map<text, blob>"},
		{TypeUUID, NotCollection, TypeInvalid, TypeInvalid, "uuid"},
	}
	for _, tt := range tests {
		kind, key, value := tt.typ.Elements()
		if kind != tt.kind || key != tt.key || value != tt.value || tt.typ.String() != tt.name || tt.typ.IsCollection() != (tt.kind != NotCollection) || !tt.typ.Valid() {
			t.Errorf("%v.Elements() = %v, %v, %v; want %v, %v, %v", tt.typ, kind, key, value, tt.kind, tt.key, tt.value)
		}
	}
	// The numbers are stored in the schema's encoding: pin them.
	if typeCode(TypeASCII) != 8 || typeCode(TypeVarint) != 18 || typeCode(TypeMapTextBlob) != 22 || typeCode(TypeDuration) != 23 {
		t.Errorf("type numbers moved: ascii %d, varint %d, map<text, blob> %d, duration %d; want 8, 18, 22, 23", typeCode(TypeASCII), typeCode(TypeVarint), typeCode(TypeMapTextBlob), typeCode(TypeDuration))
	}
	if !bytes.Equal(EncodeDate(0), []byte{0x80, 0, 0, 0}) {
		t.Errorf("EncodeDate(epoch) = %x, want 80000000", EncodeDate(0))
	}
}

// TestNewTypesInTheSchema: a table of every new type survives the schema's encoding (the type
// numbers are stored) and DESCRIBE prints it so that it runs again.
func TestNewTypesInTheSchema(t *testing.T) {
	s := mustBuild(t, ksDDL+`CREATE TABLE ks.every (a ascii, f float, s smallint, y tinyint, u uuid, tu timeuuid,
		ip inet, d date, tm time, dec decimal, vi varint, v varchar,
		PRIMARY KEY ((a, u), dec, tu)) WITH CLUSTERING ORDER BY (dec DESC, tu ASC);`)
	d, err := Decode(s.Encode())
	if err != nil {
		t.Fatalf("Decode(Encode(s)): %v", err)
	}
	out, err := describe(t, d, "DESCRIBE TABLE ks.every", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a ascii", "f float", "s smallint", "y tinyint", "u uuid", "tu timeuuid", "ip inet", "d date", "tm time", "dec decimal", "vi varint", "v text", "dec DESC"} {
		if !strings.Contains(out, want) {
			t.Errorf("DESCRIBE TABLE ks.every lacks %q:\n%s", want, out)
		}
	}
	again, err := Build(ksDDL + out)
	if err != nil {
		t.Fatalf("the output of DESCRIBE does not run: %v\n%s", err, out)
	}
	want, _ := s.Table("ks", "every")
	got, _ := again.Table("ks", "every")
	if got == nil || got.CreateStatement() != want.CreateStatement() {
		t.Errorf("DESCRIBE recreated\n%v\nwant\n%s", got, want.CreateStatement())
	}
	// A column type number the node does not know (a newer node's) is refused, not misread.
	b := s.Encode()
	i := bytes.Index(b, []byte("dec"))
	b[i+3] = byte(len(typeCodes)) | 0x80
	if _, err := Decode(b); err == nil {
		t.Errorf("Decode of a schema with column type %d succeeded, want an error", len(typeCodes))
	}
}

// FuzzCheckDecodeCompare: on any bytes, Check never panics; what it accepts decodes, compares
// equal to itself, and (for the scalar types) the literal of its decoded value reads back to an
// equal value.
func FuzzCheckDecodeCompare(f *testing.F) {
	f.Add(typeCode(TypeDecimal), []byte{0, 0, 0, 2, 0x7f})
	f.Add(typeCode(TypeVarint), []byte{0xff, 0x7f})
	f.Add(typeCode(TypeMapTextBlob), EncodeMapTextBlob(map[string][]byte{"k": {1}}))
	f.Add(typeCode(TypeTimeUUID), mustUUID(f, "6ba7b810-9dad-11d1-80b4-00c04fd430c8"))
	f.Fuzz(func(t *testing.T, typ uint8, v []byte) {
		tp := typeOfCode(typ % uint8(len(typeCodes)))
		if tp.Check(v) != nil || v == nil || !tp.Valid() {
			return
		}
		x, err := tp.Decode(v)
		if err != nil {
			t.Fatalf("%v: Check accepts %x, Decode refuses it: %v", tp, v, err)
		}
		if tp.Compare(v, v) != 0 {
			t.Fatalf("%v: Compare(%x, itself) != 0", tp, v)
		}
		var back []byte
		switch tp {
		case TypeDecimal:
			d, err := ParseDecimal(x.(Decimal).String())
			if err != nil {
				t.Fatalf("decimal %x prints as %s, which does not parse: %v", v, x, err)
			}
			back = EncodeDecimal(d)
		case TypeDate:
			d, err := ParseDate(x.(Date).String())
			if err != nil {
				t.Fatalf("date %x prints as %s, which does not parse: %v", v, x, err)
			}
			back = EncodeDate(d)
		case TypeTime:
			d, err := ParseTimeOfDay(FormatTimeOfDay(x.(time.Duration)))
			if err != nil {
				t.Fatalf("time %x prints as %s, which does not parse: %v", v, FormatTimeOfDay(x.(time.Duration)), err)
			}
			back, _ = EncodeTime(d)
		case TypeUUID, TypeTimeUUID:
			u, err := ParseUUID(x.(UUID).String())
			if err != nil {
				t.Fatal(err)
			}
			back = EncodeUUID(u)
		default:
			return
		}
		if !bytes.Equal(back, v) {
			t.Fatalf("%v %x prints as %v, which reads back as %x", tp, v, x, back)
		}
	})
}

func TestDigitCount(t *testing.T) {
	for n := 1; n < 400; n++ {
		p := pow10(int64(n - 1)) // n digits
		for _, v := range []*big.Int{p, new(big.Int).Sub(new(big.Int).Mul(p, big.NewInt(10)), big.NewInt(1))} {
			if got := digitCount(v); got != n {
				t.Fatalf("digitCount(%v) = %d, want %d", v, got, n)
			}
			if got := digitCount(new(big.Int).Neg(v)); got != n {
				t.Fatalf("digitCount(-%v) = %d, want %d", v, got, n)
			}
		}
	}
}
