package schema

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Type is the type of a column.
type Type uint8

// The supported column types. The zero Type is invalid.
const (
	TypeInvalid Type = iota
	TypeText
	TypeInt
	TypeBigInt
	TypeDouble
	TypeBoolean
	TypeBlob
	TypeTimestamp
)

var typeNames = [...]string{
	TypeInvalid:   "invalid",
	TypeText:      "text",
	TypeInt:       "int",
	TypeBigInt:    "bigint",
	TypeDouble:    "double",
	TypeBoolean:   "boolean",
	TypeBlob:      "blob",
	TypeTimestamp: "timestamp",
}

// SupportedTypes lists the names LookupType accepts, in declaration order.
const SupportedTypes = "text, int, bigint, double, boolean, blob, timestamp"

// String returns the CQL name of t.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Valid reports whether t is one of the supported types.
func (t Type) Valid() bool { return t > TypeInvalid && int(t) < len(typeNames) }

// LookupType returns the type named name, case-insensitively. "varchar" is
// accepted as an alias of text, as in CQL.
func LookupType(name string) (Type, error) {
	n := strings.ToLower(name)
	if n == "varchar" {
		return TypeText, nil
	}
	for t := TypeText; int(t) < len(typeNames); t++ {
		if typeNames[t] == n {
			return t, nil
		}
	}
	return TypeInvalid, fmt.Errorf("unsupported column type %q (supported: %s)", name, SupportedTypes)
}

// Values are carried between nodes and stored in their canonical encoding,
// the one Cassandra's native protocol uses, so that a value is a []byte
// everywhere below the parser:
//
//	text       UTF-8 bytes
//	int        4 bytes, big-endian two's complement
//	bigint     8 bytes, big-endian two's complement
//	double     8 bytes, IEEE 754 binary64, big-endian
//	boolean    1 byte, 0 or 1
//	blob       the bytes themselves
//	timestamp  8 bytes, big-endian milliseconds since the Unix epoch
//
// A nil slice is null. An empty, non-nil slice is the empty text or blob.

// Check reports whether v is a well-formed encoding of a value of type t.
// A nil v (null) is well-formed for every type.
func (t Type) Check(v []byte) error {
	if v == nil {
		return nil
	}
	switch t {
	case TypeText:
		if !utf8.Valid(v) {
			return fmt.Errorf("invalid %s value: not valid UTF-8", t)
		}
	case TypeInt:
		return checkLen(t, v, 4)
	case TypeBigInt, TypeDouble, TypeTimestamp:
		return checkLen(t, v, 8)
	case TypeBoolean:
		if err := checkLen(t, v, 1); err != nil {
			return err
		}
		if v[0] > 1 {
			return fmt.Errorf("invalid %s value: byte %d is neither 0 nor 1", t, v[0])
		}
	case TypeBlob:
	default:
		return fmt.Errorf("invalid column type %s", t)
	}
	return nil
}

func checkLen(t Type, v []byte, n int) error {
	if len(v) != n {
		return fmt.Errorf("invalid %s value: %d bytes, want %d", t, len(v), n)
	}
	return nil
}

// Compare orders two well-formed, non-null values of type t: the order used
// for clustering columns. Doubles order as Java's Double.compare does
// (-0 before +0, NaN last), so the order is total.
func (t Type) Compare(a, b []byte) int {
	switch t {
	case TypeInt:
		return cmp.Compare(int32(binary.BigEndian.Uint32(a)), int32(binary.BigEndian.Uint32(b)))
	case TypeBigInt, TypeTimestamp:
		return cmp.Compare(int64(binary.BigEndian.Uint64(a)), int64(binary.BigEndian.Uint64(b)))
	case TypeDouble:
		return cmp.Compare(OrderedFloatBits(binary.BigEndian.Uint64(a)), OrderedFloatBits(binary.BigEndian.Uint64(b)))
	default: // text (UTF-8 byte order is code point order), blob, boolean
		return bytes.Compare(a, b)
	}
}

// OrderedFloatBits maps the IEEE 754 bits of a double to a uint64 whose
// unsigned order is the double's total order (negatives flipped, sign bit
// set on positives; NaNs are canonicalised to sort last).
func OrderedFloatBits(bits uint64) uint64 {
	if f := math.Float64frombits(bits); f != f {
		return math.MaxUint64
	}
	if bits&(1<<63) != 0 {
		return ^bits
	}
	return bits | 1<<63
}

// EncodeText, EncodeInt, ... return the canonical encoding of a Go value.
func EncodeText(s string) []byte { return []byte(s) }

// EncodeInt returns the canonical encoding of an int.
func EncodeInt(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// EncodeBigInt returns the canonical encoding of a bigint.
func EncodeBigInt(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// EncodeDouble returns the canonical encoding of a double.
func EncodeDouble(v float64) []byte {
	return binary.BigEndian.AppendUint64(nil, math.Float64bits(v))
}

// EncodeBoolean returns the canonical encoding of a boolean.
func EncodeBoolean(v bool) []byte {
	if v {
		return []byte{1}
	}
	return []byte{0}
}

// EncodeBlob returns the canonical encoding of a blob (a copy of b, never nil).
func EncodeBlob(b []byte) []byte { return append([]byte{}, b...) }

// EncodeTimestamp returns the canonical encoding of a timestamp, truncated to
// milliseconds.
func EncodeTimestamp(t time.Time) []byte { return EncodeBigInt(t.UnixMilli()) }

// Decode returns the Go value of an encoded value of type t: string, int32,
// int64, float64, bool, []byte or time.Time (UTC), or nil for null.
func (t Type) Decode(v []byte) (any, error) {
	if v == nil {
		return nil, nil
	}
	if err := t.Check(v); err != nil {
		return nil, err
	}
	switch t {
	case TypeText:
		return string(v), nil
	case TypeInt:
		return int32(binary.BigEndian.Uint32(v)), nil
	case TypeBigInt:
		return int64(binary.BigEndian.Uint64(v)), nil
	case TypeDouble:
		return math.Float64frombits(binary.BigEndian.Uint64(v)), nil
	case TypeBoolean:
		return v[0] == 1, nil
	case TypeTimestamp:
		return time.UnixMilli(int64(binary.BigEndian.Uint64(v))).UTC(), nil
	default: // blob
		return bytes.Clone(v), nil
	}
}
