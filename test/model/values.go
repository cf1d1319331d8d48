package model

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"strings"
	"time"

	"github.com/kvnode/kvnode/client"
)

// Type is a CQL column type, as the workload knows it. The model keeps its own encoding and
// order of values (the canonical encodings package schema documents), so that it checks the
// server's rather than sharing its code.
type Type uint8

// The column types, every one the server supports.
const (
	Text Type = iota
	Int
	BigInt
	Double
	Boolean
	Blob
	Timestamp
	ASCII
	Float
	SmallInt
	TinyInt
	UUID
	TimeUUID
	Inet
	Date
	Time
	Decimal
	Varint
	numTypes
)

var typeNames = [numTypes]string{"text", "int", "bigint", "double", "boolean", "blob", "timestamp",
	"ascii", "float", "smallint", "tinyint", "uuid", "timeuuid", "inet", "date", "time", "decimal", "varint"}

func (t Type) String() string { return typeNames[t] }

// Val is one value of a column: its CQL literal and its canonical encoding.
type Val struct {
	Lit string
	Enc []byte
}

func (v Val) String() string { return v.Lit }

// domains holds, per type, the values the workload writes. They are few, so that writes collide
// on the same cells and rows, and varied: negative numbers, quotes, bytes above 0x7f, extremes.
var domains = [numTypes][]Val{
	Text:      {textVal("a"), textVal("b"), textVal("it's"), textVal("zé")},
	Int:       {intVal(-7), intVal(0), intVal(3), intVal(math.MaxInt32)},
	BigInt:    {bigintVal(-1), bigintVal(0), bigintVal(1 << 40), bigintVal(math.MaxInt64)},
	Double:    {doubleVal("-2.5", -2.5), doubleVal("0.5", 0.5), doubleVal("3.0", 3), doubleVal("10000000000.0", 1e10)},
	Boolean:   {{"false", []byte{0}}, {"true", []byte{1}}},
	Blob:      {{"0x00", []byte{0}}, {"0x01ff", []byte{1, 0xff}}, {"0xab", []byte{0xab}}, {"0xabcd", []byte{0xab, 0xcd}}},
	Timestamp: {timestampVal(-1000), timestampVal(0), timestampVal(1700000000123), timestampVal(1700000000124)},
	ASCII:     {textVal("A"), textVal("a"), textVal("it's"), textVal("~")},
	Float:     {floatVal("-2.5", -2.5), floatVal("0.5", 0.5), floatVal("3", 3), floatVal("1e10", 1e10)},
	SmallInt:  {{"-32768", []byte{0x80, 0}}, {"-1", []byte{0xff, 0xff}}, {"0", []byte{0, 0}}, {"32767", []byte{0x7f, 0xff}}},
	TinyInt:   {{"-128", []byte{0x80}}, {"0", []byte{0}}, {"5", []byte{5}}, {"127", []byte{0x7f}}},
	// Versions 1 and 4; the version 1 ones order by time (time_hi first), not by bytes.
	UUID: {uuidVal("ffffffff-0000-1000-8000-000000000001"), uuidVal("00000000-0001-1000-8000-000000000001"),
		uuidVal("123e4567-e89b-42d3-a456-426614174000"), uuidVal("00000000-0000-4000-8000-000000000000")},
	// The same time with clock sequences whose bytes order differently signed and unsigned.
	TimeUUID: {uuidVal("6ba7b810-9dad-11d1-80b4-00c04fd430c8"), uuidVal("6ba7b810-9dad-11d1-00b4-00c04fd430c8"),
		uuidVal("6ba7b811-9dad-11d1-80b4-00c04fd430c8"), uuidVal("00000000-0000-11d2-80b4-00c04fd430c8")},
	Inet: {inetVal("10.0.0.1"), inetVal("192.0.2.1"), inetVal("::1"), inetVal("2001:db8::1")},
	// 2^31 is the Unix epoch.
	Date: {{"'1969-12-31'", []byte{0x7f, 0xff, 0xff, 0xff}}, {"'1970-01-01'", []byte{0x80, 0, 0, 0}},
		{"'2024-02-29'", binary.BigEndian.AppendUint32(nil, 1<<31+19782)}, {"0", []byte{0, 0, 0, 0}}},
	Time: {{"'00:00:00'", make([]byte, 8)}, {"'08:12:54.123456789'", binary.BigEndian.AppendUint64(nil, 29574123456789)},
		{"'23:59:59.999999999'", binary.BigEndian.AppendUint64(nil, 86399999999999)}, {"5", binary.BigEndian.AppendUint64(nil, 5)}},
	// Normal forms only (no trailing zeros): a clustering key keeps the value, not the scale, so
	// 1.50 would read back as 1.5, which the model, comparing bytes, would call a different row.
	Decimal: {decimalVal("-2.5", -25, 1), decimalVal("0", 0, 0), decimalVal("0.001", 1, 3), decimalVal("12345678901234567890.5", 0, 1)},
	Varint:  {varintVal("-129"), varintVal("0"), varintVal("127"), varintVal("123456789012345678901234567890")},
}

func floatVal(lit string, f float32) Val {
	return Val{lit, binary.BigEndian.AppendUint32(nil, math.Float32bits(f))}
}

func uuidVal(s string) Val {
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 {
		panic("model: bad uuid " + s)
	}
	return Val{s, b}
}

func inetVal(s string) Val {
	return Val{"'" + s + "'", netip.MustParseAddr(s).AsSlice()}
}

// decimalVal is the decimal lit: 4 bytes of scale, then the unscaled value as a varint. A
// zero unscaled argument with a long literal means "parse the literal's digits".
func decimalVal(lit string, unscaled int64, scale int32) Val {
	u := big.NewInt(unscaled)
	if len(lit) > 18 {
		u, _ = new(big.Int).SetString(strings.ReplaceAll(lit, ".", ""), 10)
	}
	return Val{lit, append(binary.BigEndian.AppendUint32(nil, uint32(scale)), twosComplement(u)...)}
}

func varintVal(lit string) Val {
	n, _ := new(big.Int).SetString(lit, 10)
	return Val{lit, twosComplement(n)}
}

// twosComplement is n in the fewest big-endian two's complement bytes.
func twosComplement(n *big.Int) []byte {
	for size := 1; ; size++ {
		lo := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), uint(8*size-1)))
		hi := new(big.Int).Sub(new(big.Int).Neg(lo), big.NewInt(1))
		if n.Cmp(lo) >= 0 && n.Cmp(hi) <= 0 {
			m := new(big.Int).Set(n)
			if n.Sign() < 0 {
				m.Add(m, new(big.Int).Lsh(big.NewInt(1), uint(8*size)))
			}
			return m.FillBytes(make([]byte, size))
		}
	}
}

// bigOf is the value of a varint's bytes.
func bigOf(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0] >= 0x80 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return n
}

// ratOf is the value of a decimal's bytes.
func ratOf(b []byte) *big.Rat {
	scale := int32(binary.BigEndian.Uint32(b))
	r := new(big.Rat).SetInt(bigOf(b[4:]))
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(scale, -scale))), nil))
	if scale >= 0 {
		return r.Quo(r, p)
	}
	return r.Mul(r, p)
}

// uuidTime is a version 1 uuid's 60-bit time with its version above it, time_hi first.
func uuidTime(b []byte) uint64 {
	return uint64(binary.BigEndian.Uint16(b[6:]))<<48 | uint64(binary.BigEndian.Uint16(b[4:]))<<32 | uint64(binary.BigEndian.Uint32(b))
}

func textVal(s string) Val {
	q := bytes.ReplaceAll([]byte(s), []byte("'"), []byte("''"))
	return Val{"'" + string(q) + "'", []byte(s)}
}

func intVal(n int32) Val {
	return Val{fmt.Sprint(n), binary.BigEndian.AppendUint32(nil, uint32(n))}
}

func bigintVal(n int64) Val {
	return Val{fmt.Sprint(n), binary.BigEndian.AppendUint64(nil, uint64(n))}
}

func doubleVal(lit string, f float64) Val {
	return Val{lit, binary.BigEndian.AppendUint64(nil, math.Float64bits(f))}
}

func timestampVal(ms int64) Val {
	return Val{fmt.Sprint(ms), binary.BigEndian.AppendUint64(nil, uint64(ms))}
}

// compareVals orders two encoded values of type t as clustering columns order them (ascending).
func compareVals(t Type, a, b []byte) int {
	switch t {
	case Int:
		return cmp.Compare(int32(binary.BigEndian.Uint32(a)), int32(binary.BigEndian.Uint32(b)))
	case BigInt, Timestamp:
		return cmp.Compare(int64(binary.BigEndian.Uint64(a)), int64(binary.BigEndian.Uint64(b)))
	case Double: // the domain has no NaN and no -0
		return cmp.Compare(math.Float64frombits(binary.BigEndian.Uint64(a)), math.Float64frombits(binary.BigEndian.Uint64(b)))
	case Float: // nor has this one
		return cmp.Compare(math.Float32frombits(binary.BigEndian.Uint32(a)), math.Float32frombits(binary.BigEndian.Uint32(b)))
	case SmallInt:
		return cmp.Compare(int16(binary.BigEndian.Uint16(a)), int16(binary.BigEndian.Uint16(b)))
	case TinyInt:
		return cmp.Compare(int8(a[0]), int8(b[0]))
	case Time:
		return cmp.Compare(int64(binary.BigEndian.Uint64(a)), int64(binary.BigEndian.Uint64(b)))
	case Varint:
		return bigOf(a).Cmp(bigOf(b))
	case Decimal:
		return ratOf(a).Cmp(ratOf(b))
	case UUID: // Cassandra's UUIDType: version, then time for version 1, then bytes
		if c := cmp.Compare(a[6]>>4, b[6]>>4); c != 0 {
			return c
		}
		if a[6]>>4 == 1 {
			if c := cmp.Compare(uuidTime(a), uuidTime(b)); c != 0 {
				return c
			}
		}
		return bytes.Compare(a, b)
	case TimeUUID: // TimeUUIDType: time, then the last 8 bytes as signed bytes
		if c := cmp.Compare(uuidTime(a), uuidTime(b)); c != 0 {
			return c
		}
		for i := 8; i < 16; i++ {
			if c := cmp.Compare(int8(a[i]), int8(b[i])); c != 0 {
				return c
			}
		}
		return 0
	default: // text, ascii, blob, inet bytewise, date unsigned, boolean false < true
		return bytes.Compare(a, b)
	}
}

// encodeResult returns the canonical encoding of a value the Go client returned for a column of
// type t (nil for null), or an error when the Go type does not fit the column.
func encodeResult(t Type, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	ok := false
	var out []byte
	switch t {
	case Text:
		var s string
		if s, ok = v.(string); ok {
			out = []byte(s)
		}
	case Int:
		var n int32
		if n, ok = v.(int32); ok {
			out = binary.BigEndian.AppendUint32(nil, uint32(n))
		}
	case BigInt:
		var n int64
		if n, ok = v.(int64); ok {
			out = binary.BigEndian.AppendUint64(nil, uint64(n))
		}
	case Double:
		var f float64
		if f, ok = v.(float64); ok {
			out = binary.BigEndian.AppendUint64(nil, math.Float64bits(f))
		}
	case Boolean:
		var b bool
		if b, ok = v.(bool); ok {
			out = []byte{0}
			if b {
				out[0] = 1
			}
		}
	case Blob:
		var b []byte
		if b, ok = v.([]byte); ok {
			out = append([]byte{}, b...)
		}
	case Timestamp:
		var tm time.Time
		if tm, ok = v.(time.Time); ok {
			out = binary.BigEndian.AppendUint64(nil, uint64(tm.UnixMilli()))
		}
	case ASCII:
		var s string
		if s, ok = v.(string); ok {
			out = []byte(s)
		}
	case Float:
		var f float32
		if f, ok = v.(float32); ok {
			out = binary.BigEndian.AppendUint32(nil, math.Float32bits(f))
		}
	case SmallInt:
		var n int16
		if n, ok = v.(int16); ok {
			out = binary.BigEndian.AppendUint16(nil, uint16(n))
		}
	case TinyInt:
		var n int8
		if n, ok = v.(int8); ok {
			out = []byte{byte(n)}
		}
	case UUID, TimeUUID:
		var u client.UUID
		if u, ok = v.(client.UUID); ok {
			out = append([]byte{}, u[:]...)
		}
	case Inet:
		var a netip.Addr
		if a, ok = v.(netip.Addr); ok {
			out = a.AsSlice()
		}
	case Date:
		var d client.Date
		if d, ok = v.(client.Date); ok {
			out = binary.BigEndian.AppendUint32(nil, uint32(int64(d)+1<<31))
		}
	case Time:
		var d time.Duration
		if d, ok = v.(time.Duration); ok {
			out = binary.BigEndian.AppendUint64(nil, uint64(d))
		}
	case Decimal:
		var d client.Decimal
		if d, ok = v.(client.Decimal); ok {
			out = append(binary.BigEndian.AppendUint32(nil, uint32(d.Scale)), twosComplement(d.Unscaled)...)
		}
	case Varint:
		var n *big.Int
		if n, ok = v.(*big.Int); ok {
			out = twosComplement(n)
		}
	}
	if !ok {
		return nil, fmt.Errorf("value %#v (%T) for a %s column", v, v, t)
	}
	return out, nil
}

// formatEnc formats an encoded value of type t for messages, as its literal when it is in the
// domain.
func formatEnc(t Type, enc []byte) string {
	if enc == nil {
		return "null"
	}
	for _, v := range domains[t] {
		if bytes.Equal(v.Enc, enc) {
			return v.Lit
		}
	}
	return fmt.Sprintf("%s(0x%x, not a value the workload writes)", t, enc)
}
