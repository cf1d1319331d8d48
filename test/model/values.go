package model

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"time"
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
	numTypes
)

var typeNames = [numTypes]string{"text", "int", "bigint", "double", "boolean", "blob", "timestamp"}

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
	default: // text and blob bytewise, boolean false < true
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
