package schema

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLookupType(t *testing.T) {
	tests := []struct {
		name string
		want Type
	}{
		{"text", TypeText}, {"TEXT", TypeText}, {"varchar", TypeText}, {"int", TypeInt},
		{"bigint", TypeBigInt}, {"double", TypeDouble}, {"boolean", TypeBoolean},
		{"blob", TypeBlob}, {"Timestamp", TypeTimestamp},
		{"ascii", TypeASCII}, {"float", TypeFloat}, {"smallint", TypeSmallInt}, {"tinyint", TypeTinyInt},
		{"UUID", TypeUUID}, {"timeuuid", TypeTimeUUID}, {"inet", TypeInet}, {"date", TypeDate},
		{"time", TypeTime}, {"decimal", TypeDecimal}, {"varint", TypeVarint}, {"Duration", TypeDuration},
	}
	for _, tt := range tests {
		got, err := LookupType(tt.name)
		if err != nil || got != tt.want {
			t.Errorf("LookupType(%q) = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	for _, name := range []string{"", "invalid", "set", "text<int>"} {
		_, err := LookupType(name)
		want := `unsupported column type "` + name + `" (supported: text, int, bigint, double, boolean, blob, timestamp, ascii, float, smallint, tinyint, uuid, timeuuid, inet, date, time, decimal, varint, duration, counter)`
		if err == nil || err.Error() != want {
			t.Errorf("LookupType(%q) error = %v, want %q", name, err, want)
		}
	}
	// Non-frozen collections are multi-cell columns, named without frozen at the top.
	for name, want := range map[string]Type{"set<text>": TypeSetText, "list<text>": TypeListText, "map<text, text>": TypeMapTextText,
		"MAP<int, int>": "map<int, int>", "list<frozen<list<int>>>": "list<frozen<list<int>>>", "map<text, frozen<set<int>>>": "map<text, frozen<set<int>>>"} {
		got, err := LookupType(name)
		if err != nil || got != want || !got.MultiCell() || !got.Valid() {
			t.Errorf("LookupType(%q) = %q, %v; want %q, a valid multi-cell type", name, got, err, want)
		}
		if f := got.Frozen(); f != "frozen<"+want+">" || f.MultiCell() {
			t.Errorf("%q.Frozen() = %q, want frozen<%s>", got, f, want)
		}
	}
	for name, want := range map[string]Type{
		"frozen<list<int>>": "frozen<list<int>>", "tuple<int, int>": "frozen<tuple<int, int>>",
		"FROZEN < map < text , frozen<list<varchar>> > >": "frozen<map<text, frozen<list<text>>>>",
		"frozen<set<frozen<tuple<int, list<blob>>>>>":     "frozen<set<frozen<tuple<int, frozen<list<blob>>>>>>",
		"frozen<tuple<int>>":                              "frozen<tuple<int>>", "frozen<map<int, duration>>": "frozen<map<int, duration>>",
	} {
		got, err := LookupType(name)
		if err != nil || got != want {
			t.Errorf("LookupType(%q) = %q, %v; want %q", name, got, err, want)
		}
		if !got.Valid() || got.String() != string(want) {
			t.Errorf("%q is not Valid or prints as %q", got, got.String())
		}
	}
	for name, want := range map[string]string{
		"frozen<int>":                `type "frozen<int>": frozen<> is only allowed on collections, tuples and user-defined types, not on int`,
		"frozen<list<int, int>>":     `type "frozen<list<int, int>>": list takes one type, not 2`,
		"frozen<map<int>>":           `type "frozen<map<int>>": map takes two types, not 1`,
		"frozen<set<duration>>":      `type "frozen<set<duration>>": durations are not allowed inside sets: frozen<set<duration>>`,
		"frozen<map<duration, int>>": `type "frozen<map<duration, int>>": durations are not allowed as map keys: frozen<map<duration, int>>`,
		"frozen<list<counter>>":      `type "frozen<list<counter>>": Counters are not allowed inside collections: list<counter>`,
		"tuple<int":                  `type "tuple<int": expected ',' or '>' in "tuple<int"`,
		"frozen<list<int>> x":        `type "frozen<list<int>> x": unexpected "x" after the type in "frozen<list<int>> x"`,
		"tuple<list<int>>":           "",
		"list<list<int>>":            `type "list<list<int>>": non-frozen collections are not allowed inside collections (use frozen<...>): "list<list<int>>"`,
		"frozen<list<set<text>>>":    "",
	} {
		got, err := LookupType(name)
		if want == "" {
			if err != nil {
				t.Errorf("LookupType(%q): %v", name, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("LookupType(%q) = %q, %v; want an error starting %q", name, got, err, want)
		}
	}

}

func TestTypeString(t *testing.T) {
	for _, typ := range typeCodes[typeCode(TypeText) : typeCode(TypeVarint)+1] {
		if !typ.Valid() {
			t.Errorf("%v.Valid() = false, want true", typ)
		}
		if got, err := LookupType(typ.String()); err != nil || got != typ {
			t.Errorf("LookupType(%v.String()) = %v, %v; want the type back", typ, got, err)
		}
	}
	for _, typ := range []Type{TypeInvalid, "frozen<list<>>", "Int", "tuple<int>", "frozen<list<varchar>>"} {
		if typ.Valid() {
			t.Errorf("Type(%q).Valid() = true, want false", string(typ))
		}
	}
	if got := TypeInvalid.String(); got != "invalid" {
		t.Errorf("TypeInvalid.String() = %q, want %q", got, "invalid")
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		typ  Type
		v    []byte
		want string // "" for well-formed
	}{
		{TypeText, nil, ""},
		{TypeText, []byte{}, ""},
		{TypeText, []byte("héllo"), ""},
		{TypeText, []byte{0xff}, "invalid text value: not valid UTF-8"},
		{TypeInt, EncodeInt(-1), ""},
		{TypeInt, []byte{1, 2, 3}, "invalid int value: 3 bytes, want 4"},
		{TypeBigInt, EncodeBigInt(7), ""},
		{TypeBigInt, EncodeInt(7), "invalid bigint value: 4 bytes, want 8"},
		{TypeDouble, EncodeDouble(1.5), ""},
		{TypeDouble, []byte{}, "invalid double value: 0 bytes, want 8"},
		{TypeTimestamp, EncodeBigInt(0), ""},
		{TypeBoolean, []byte{1}, ""},
		{TypeBoolean, []byte{2}, "invalid boolean value: byte 2 is neither 0 nor 1"},
		{TypeBoolean, []byte{0, 0}, "invalid boolean value: 2 bytes, want 1"},
		{TypeBlob, []byte{0xff, 0}, ""},
		{TypeInvalid, []byte{1}, "invalid column type invalid"},
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
}

func TestCompareOrdersValues(t *testing.T) {
	tests := []struct {
		typ    Type
		sorted [][]byte // strictly increasing
	}{
		{TypeInt, [][]byte{EncodeInt(math.MinInt32), EncodeInt(-1), EncodeInt(0), EncodeInt(1), EncodeInt(math.MaxInt32)}},
		{TypeBigInt, [][]byte{EncodeBigInt(math.MinInt64), EncodeBigInt(-2), EncodeBigInt(0), EncodeBigInt(math.MaxInt64)}},
		{TypeTimestamp, [][]byte{EncodeBigInt(-1000), EncodeTimestamp(time.UnixMilli(0)), EncodeTimestamp(time.UnixMilli(5))}},
		{TypeDouble, [][]byte{
			EncodeDouble(math.Inf(-1)), EncodeDouble(-1e300), EncodeDouble(-1), EncodeDouble(math.Copysign(0, -1)),
			EncodeDouble(0), EncodeDouble(math.SmallestNonzeroFloat64), EncodeDouble(2.5), EncodeDouble(math.Inf(1)), EncodeDouble(math.NaN()),
		}},
		{TypeText, [][]byte{EncodeText(""), EncodeText("A"), EncodeText("a"), EncodeText("ab"), EncodeText("é")}},
		{TypeBlob, [][]byte{{}, {0}, {0, 0}, {1}, {0xff}}},
		{TypeBoolean, [][]byte{EncodeBoolean(false), EncodeBoolean(true)}},
	}
	for _, tt := range tests {
		for i := range tt.sorted {
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
}

func TestOrderedFloatBitsIsMonotonic(t *testing.T) {
	fs := []float64{math.Inf(-1), -math.MaxFloat64, -1, -math.SmallestNonzeroFloat64, math.Copysign(0, -1), 0, math.SmallestNonzeroFloat64, 1, math.MaxFloat64, math.Inf(1)}
	for i := 1; i < len(fs); i++ {
		a, b := OrderedFloatBits(math.Float64bits(fs[i-1])), OrderedFloatBits(math.Float64bits(fs[i]))
		if a >= b {
			t.Errorf("OrderedFloatBits(%v) = %#x is not below OrderedFloatBits(%v) = %#x", fs[i-1], a, fs[i], b)
		}
	}
	nan1, nan2 := OrderedFloatBits(math.Float64bits(math.NaN())), OrderedFloatBits(0x7ff8000000000001|1<<63)
	if nan1 != math.MaxUint64 || nan2 != math.MaxUint64 {
		t.Errorf("NaNs map to %#x and %#x, want both %#x (canonical, last)", nan1, nan2, uint64(math.MaxUint64))
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	ts := time.Date(2024, 2, 29, 12, 30, 45, 123_456_789, time.FixedZone("X", 3600))
	tests := []struct {
		typ  Type
		v    []byte
		want any
	}{
		{TypeText, EncodeText("héllo"), "héllo"},
		{TypeInt, EncodeInt(-42), int32(-42)},
		{TypeBigInt, EncodeBigInt(math.MinInt64), int64(math.MinInt64)},
		{TypeDouble, EncodeDouble(-0.25), -0.25},
		{TypeBoolean, EncodeBoolean(true), true},
		{TypeBoolean, EncodeBoolean(false), false},
		{TypeBlob, EncodeBlob([]byte{0xca, 0xfe}), []byte{0xca, 0xfe}},
		{TypeTimestamp, EncodeTimestamp(ts), time.UnixMilli(ts.UnixMilli()).UTC()},
	}
	for _, tt := range tests {
		if err := tt.typ.Check(tt.v); err != nil {
			t.Errorf("%v.Check of its own encoding %x failed: %v", tt.typ, tt.v, err)
		}
		got, err := tt.typ.Decode(tt.v)
		if err != nil {
			t.Errorf("%v.Decode(%x) failed: %v", tt.typ, tt.v, err)
			continue
		}
		equal := false
		switch w := tt.want.(type) {
		case []byte:
			b, ok := got.([]byte)
			equal = ok && bytes.Equal(b, w)
		case time.Time:
			tm, ok := got.(time.Time)
			equal = ok && tm.Equal(w) && tm.Location() == time.UTC
		default:
			equal = got == tt.want
		}
		if !equal {
			t.Errorf("%v.Decode(%x) = %#v, want %#v", tt.typ, tt.v, got, tt.want)
		}
	}
	if v, err := TypeInt.Decode(nil); v != nil || err != nil {
		t.Errorf("TypeInt.Decode(nil) = %v, %v; want nil, nil (null)", v, err)
	}
	if _, err := TypeInt.Decode([]byte{1}); err == nil {
		t.Errorf("TypeInt.Decode of 1 byte succeeded, want an error")
	}
	if got := EncodeTimestamp(ts); !bytes.Equal(got, EncodeBigInt(ts.UnixMilli())) {
		t.Errorf("EncodeTimestamp(%v) = %x, want the milliseconds %x", ts, got, EncodeBigInt(ts.UnixMilli()))
	}
}

func TestEncodeBlobCopies(t *testing.T) {
	src := []byte{1, 2}
	b := EncodeBlob(src)
	src[0] = 9
	if !slices.Equal(b, []byte{1, 2}) {
		t.Errorf("EncodeBlob shares memory with its argument: got %x after changing the source", b)
	}
	if b := EncodeBlob(nil); b == nil || len(b) != 0 {
		t.Errorf("EncodeBlob(nil) = %#v, want an empty non-nil slice (the empty blob, not null)", b)
	}
	dec, _ := TypeBlob.Decode(b)
	if dec.([]byte) == nil {
		t.Errorf("decoding the empty blob gave nil, want an empty slice")
	}
}
