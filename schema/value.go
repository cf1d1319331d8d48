package schema

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/big"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Type is the type of a column: its CQL name in canonical form, lower-case, with ", " between
// type parameters and every collection and tuple inside frozen<...> (as system_schema and
// DESCRIBE write it): "int", "frozen<map<text, frozen<list<int>>>>", "frozen<tuple<int, text>>".
// The zero Type is invalid. Scalar types are the constants below; parametric ones are built by
// LookupType (see params.go).
type Type string

// The scalar column types, and the read-only collection types of the system tables
// (TypeSetText, TypeListText, TypeMapTextText and TypeMapTextBlob: Valid reports them, but
// LookupType refuses them for table columns; they are not frozen).
const (
	TypeInvalid     Type = ""
	TypeText        Type = "text"
	TypeInt         Type = "int"
	TypeBigInt      Type = "bigint"
	TypeDouble      Type = "double"
	TypeBoolean     Type = "boolean"
	TypeBlob        Type = "blob"
	TypeTimestamp   Type = "timestamp"
	TypeASCII       Type = "ascii"
	TypeFloat       Type = "float"
	TypeSmallInt    Type = "smallint"
	TypeTinyInt     Type = "tinyint"
	TypeUUID        Type = "uuid"
	TypeTimeUUID    Type = "timeuuid"
	TypeInet        Type = "inet"
	TypeDate        Type = "date"
	TypeTime        Type = "time"
	TypeDecimal     Type = "decimal"
	TypeVarint      Type = "varint"
	TypeSetText     Type = "set<text>"
	TypeListText    Type = "list<text>"
	TypeMapTextText Type = "map<text, text>"
	TypeMapTextBlob Type = "map<text, blob>"
	TypeDuration    Type = "duration"
	// TypeCounter is the type of a counter column (see counter.go): its values are bigints,
	// written only by increments.
	TypeCounter Type = "counter"
)

// typeCodes are the numbers of the types in the schema's encoding (gossiped between nodes and
// stored), by position: a type's code is its index, so new types are only ever appended. A
// parametric type is stored as codeParametric followed by its name.
var typeCodes = [...]Type{
	TypeInvalid, TypeText, TypeInt, TypeBigInt, TypeDouble, TypeBoolean, TypeBlob, TypeTimestamp,
	TypeASCII, TypeFloat, TypeSmallInt, TypeTinyInt, TypeUUID, TypeTimeUUID, TypeInet, TypeDate,
	TypeTime, TypeDecimal, TypeVarint, TypeSetText, TypeListText, TypeMapTextText, TypeMapTextBlob,
	TypeDuration, TypeCounter,
}

// codeParametric is the code of a parametric type (frozen collections, tuples), whose name
// follows the code in the schema's encoding.
const codeParametric = 0x7F

// typeCode returns t's code in the schema's encoding, codeParametric for a parametric type.
func typeCode(t Type) byte {
	for i, c := range typeCodes {
		if c == t {
			return byte(i)
		}
	}
	return codeParametric
}

// typeOfCode returns the scalar type of code c (TypeInvalid for an unknown code).
func typeOfCode(c byte) Type {
	if int(c) < len(typeCodes) {
		return typeCodes[c]
	}
	return TypeInvalid
}

// SupportedTypes lists the names LookupType accepts, in declaration order
// (varchar, an alias of text, aside).
const SupportedTypes = "text, int, bigint, double, boolean, blob, timestamp, ascii, float, smallint, tinyint, uuid, timeuuid, inet, date, time, decimal, varint, duration, counter"

// String returns the CQL name of t.
func (t Type) String() string {
	if t == TypeInvalid {
		return "invalid"
	}
	return string(t)
}

// Valid reports whether t is one of the types, the collections included, by its canonical name.
func (t Type) Valid() bool {
	if typeCode(t) != codeParametric {
		return t != TypeInvalid
	}
	p, err := parseParametric(string(t))
	return err == nil && p == t // canonical names only
}

// CollectionKind says whether a type is a collection, and which kind.
type CollectionKind uint8

// The collection kinds. NotCollection is every scalar type's.
const (
	NotCollection CollectionKind = iota
	CollectionSet
	CollectionList
	CollectionMap
)

// Elements describes a collection type for result metadata: its kind, the
// element type of a set or list (key), or the key and value types of a map.
// A scalar type gives NotCollection and invalid key and value.
func (t Type) Elements() (kind CollectionKind, key, value Type) {
	switch t {
	case TypeSetText:
		return CollectionSet, TypeText, TypeInvalid
	case TypeListText:
		return CollectionList, TypeText, TypeInvalid
	case TypeMapTextText:
		return CollectionMap, TypeText, TypeText
	case TypeMapTextBlob:
		return CollectionMap, TypeText, TypeBlob
	}
	return NotCollection, TypeInvalid, TypeInvalid
}

// IsCollection reports whether t is one of the (read-only) collection types.
func (t Type) IsCollection() bool {
	k, _, _ := t.Elements()
	return k != NotCollection
}

// LookupType returns the type named name, case-insensitively, for a table
// column. "varchar" is accepted as an alias of text, as in CQL. Collection
// types are refused: kvnode's tables have scalar columns only (the system
// tables' collections are read-only).
func LookupType(name string) (Type, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "varchar" {
		return TypeText, nil
	}
	for _, t := range typeCodes[1:] {
		if string(t) == n && !t.IsCollection() {
			return t, nil
		}
	}
	if strings.Contains(n, "udt<") { // kvnode's canonical form of a user type, not CQL
		return TypeInvalid, fmt.Errorf("unsupported column type %q (a user-defined type is written frozen<name>)", name)
	}
	if i := strings.IndexByte(n, '<'); i > 0 {
		switch strings.TrimSpace(n[:i]) {
		case "set", "list", "map", "frozen", "tuple":
			node, err := parseTypeName(name)
			if err != nil {
				return TypeInvalid, fmt.Errorf("type %q: %w", name, err)
			}
			return node.typ(), nil
		}
	}
	return TypeInvalid, fmt.Errorf("unsupported column type %q (supported: %s)", name, SupportedTypes)
}

// Values are carried between nodes and stored in their canonical encoding,
// the one Cassandra's native protocol v4 uses, so that a value is a []byte
// everywhere below the parser:
//
//	text       UTF-8 bytes
//	ascii      bytes 0x00..0x7F
//	int        4 bytes, big-endian two's complement
//	bigint     8 bytes, big-endian two's complement
//	smallint   2 bytes, big-endian two's complement
//	tinyint    1 byte, two's complement
//	double     8 bytes, IEEE 754 binary64, big-endian
//	float      4 bytes, IEEE 754 binary32, big-endian
//	boolean    1 byte, 0 or 1
//	blob       the bytes themselves
//	timestamp  8 bytes, big-endian milliseconds since the Unix epoch
//	uuid       16 bytes (RFC 4122 byte order)
//	timeuuid   16 bytes of a version 1 uuid
//	inet       4 bytes (IPv4) or 16 bytes (IPv6)
//	date       4 bytes, big-endian unsigned days, with 2^31 the Unix epoch
//	time       8 bytes, big-endian nanoseconds since midnight, 0..86399999999999
//	varint     big-endian two's complement in the fewest bytes (at least one)
//	decimal    4 bytes big-endian scale, then the unscaled value as a varint:
//	           the value is unscaled × 10^-scale
//	set<text>, list<text>
//	           4 bytes big-endian count n ≥ 0, then n elements, each a 4-byte
//	           big-endian length and that many UTF-8 bytes; a set's elements
//	           are distinct and in ascending order
//	duration   three signed vints (Cassandra's VIntCoding: zigzag, then the
//	           first byte's leading one bits count the bytes that follow):
//	           months, days, nanoseconds, all of one sign, each in its fewest
//	           bytes
//	map<text, text>, map<text, blob>
//	           4 bytes big-endian count n ≥ 0, then n (key, value) pairs, each
//	           a 4-byte length and the bytes; keys distinct and ascending
//
// A nil slice is null. An empty, non-nil slice is the empty text, ascii or
// blob; for every other type it is malformed (Cassandra's legacy "empty"
// values are refused).
//
// Check is strict where Cassandra is lenient: a varint (or a decimal's
// unscaled part) in more bytes than it needs (0x0001 for 1) is refused,
// so that every value has exactly one encoding and equal values are equal
// bytes (partition keys hash their bytes; cells compare them). Drivers
// encode minimally (Java's BigInteger.toByteArray, gocql, the Python and
// Node drivers), so this refuses only hand-made values. A decimal has many
// encodings of equal values (1.0 is unscaled 10 at scale 1, 1.00 is 100 at
// scale 2); those are distinct values, as in Cassandra, but Compare orders
// them as equal, and so does a clustering key (see replica's key encoding).

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
	case TypeASCII:
		for i, c := range v {
			if c > 0x7F {
				return fmt.Errorf("invalid %s value: byte %d is 0x%02x, not ASCII (0x00 to 0x7f)", t, i, c)
			}
		}
	case TypeInt, TypeFloat:
		return checkLen(t, v, 4)
	case TypeBigInt, TypeDouble, TypeTimestamp, TypeCounter:
		return checkLen(t, v, 8)
	case TypeSmallInt:
		return checkLen(t, v, 2)
	case TypeTinyInt:
		return checkLen(t, v, 1)
	case TypeBoolean:
		if err := checkLen(t, v, 1); err != nil {
			return err
		}
		if v[0] > 1 {
			return fmt.Errorf("invalid %s value: byte %d is neither 0 nor 1", t, v[0])
		}
	case TypeBlob:
	case TypeUUID:
		return checkLen(t, v, 16)
	case TypeTimeUUID:
		if err := checkLen(t, v, 16); err != nil {
			return err
		}
		if ver := v[6] >> 4; ver != 1 {
			return fmt.Errorf("invalid %s value: version %d uuid, want version 1 (time-based)", t, ver)
		}
	case TypeInet:
		if len(v) != 4 && len(v) != 16 {
			return fmt.Errorf("invalid %s value: %d bytes, want 4 (IPv4) or 16 (IPv6)", t, len(v))
		}
	case TypeDate:
		return checkLen(t, v, 4)
	case TypeTime:
		if err := checkLen(t, v, 8); err != nil {
			return err
		}
		if ns := int64(binary.BigEndian.Uint64(v)); ns < 0 || ns > maxTimeNanos {
			return fmt.Errorf("invalid %s value: %d nanoseconds is outside a day (0 to %d)", t, ns, maxTimeNanos)
		}
	case TypeVarint:
		return checkVarint(t, v)
	case TypeDecimal:
		if len(v) < 5 {
			return fmt.Errorf("invalid %s value: %d bytes, want a 4-byte scale and at least 1 byte of unscaled value", t, len(v))
		}
		return checkVarint(t, v[4:])
	case TypeSetText, TypeListText, TypeMapTextText, TypeMapTextBlob:
		return checkCollection(t, v)
	case TypeDuration:
		if _, err := decodeDuration(v); err != nil {
			return fmt.Errorf("invalid %s value: %w", t, err)
		}
	default:
		n := t.node()
		if n == nil {
			return fmt.Errorf("invalid column type %s", t)
		}
		if err := n.check(v); err != nil {
			return fmt.Errorf("invalid %s value: %w", t, err)
		}
	}
	return nil
}

// maxTimeNanos is the last nanosecond of a day, the largest time value.
const maxTimeNanos = int64(24*time.Hour - 1)

func checkLen(t Type, v []byte, n int) error {
	if len(v) != n {
		return fmt.Errorf("invalid %s value: %d bytes, want %d", t, len(v), n)
	}
	return nil
}

// checkVarint checks a minimal two's complement big-endian integer.
func checkVarint(t Type, v []byte) error {
	switch {
	case len(v) == 0:
		return fmt.Errorf("invalid %s value: 0 bytes, want at least 1", t)
	case len(v) > 1 && (v[0] == 0x00 && v[1] < 0x80 || v[0] == 0xFF && v[1] >= 0x80):
		return fmt.Errorf("invalid %s value: integer not in its fewest bytes (leading 0x%02x 0x%02x)", t, v[0], v[1])
	}
	return nil
}

// checkCollection checks the encoding of a collection of type t.
func checkCollection(t Type, v []byte) error {
	kind, _, val := t.Elements()
	n, rest, err := collectionCount(v)
	if err != nil {
		return fmt.Errorf("invalid %s value: %w", t, err)
	}
	var prev []byte
	for i := range n {
		var key []byte
		if key, rest, err = collectionElement(rest); err != nil {
			return fmt.Errorf("invalid %s value: element %d: %w", t, i, err)
		}
		if !utf8.Valid(key) {
			return fmt.Errorf("invalid %s value: element %d is not valid UTF-8", t, i)
		}
		if kind != CollectionList {
			if i > 0 && bytes.Compare(prev, key) >= 0 {
				return fmt.Errorf("invalid %s value: element %d is not above element %d (elements must be distinct and ascending)", t, i, i-1)
			}
			prev = key
		}
		if kind == CollectionMap {
			var value []byte
			if value, rest, err = collectionElement(rest); err != nil {
				return fmt.Errorf("invalid %s value: value %d: %w", t, i, err)
			}
			if val == TypeText && !utf8.Valid(value) {
				return fmt.Errorf("invalid %s value: value %d is not valid UTF-8", t, i)
			}
		}
	}
	if len(rest) != 0 {
		return fmt.Errorf("invalid %s value: %d bytes after the last element", t, len(rest))
	}
	return nil
}

func collectionCount(v []byte) (int, []byte, error) {
	if len(v) < 4 {
		return 0, nil, fmt.Errorf("%d bytes, want at least a 4-byte count", len(v))
	}
	n := int32(binary.BigEndian.Uint32(v))
	// Every element takes at least 4 bytes: a count above that is a lie,
	// refused before anything is sized by it.
	if n < 0 || int64(n) > int64(len(v)-4)/4 {
		return 0, nil, fmt.Errorf("count %d does not fit in %d bytes", n, len(v))
	}
	return int(n), v[4:], nil
}

func collectionElement(v []byte) (elem, rest []byte, err error) {
	if len(v) < 4 {
		return nil, nil, fmt.Errorf("truncated length")
	}
	n := int32(binary.BigEndian.Uint32(v))
	switch {
	case n < 0:
		return nil, nil, fmt.Errorf("null (length %d) in a collection", n)
	case int64(n) > int64(len(v)-4):
		return nil, nil, fmt.Errorf("length %d overruns the value (%d bytes left)", n, len(v)-4)
	}
	return v[4 : 4+n], v[4+n:], nil
}

// Compare orders two well-formed, non-null values of type t: the order used
// for clustering columns, Cassandra's order for each type:
//
//	int, bigint, smallint, tinyint, timestamp, time, varint
//	           numerically
//	double, float
//	           as Java's Double.compare and Float.compare (-0 before +0, NaN
//	           last), so the order is total
//	decimal    numerically: 1.0 and 1.00 compare equal (BigDecimal.compareTo)
//	date       by day (unsigned, as encoded)
//	uuid       as Cassandra's UUIDType: by version, then for version 1 by
//	           timestamp, then by bytes (unsigned)
//	timeuuid   as TimeUUIDType: by timestamp, then by the last 8 bytes
//	           compared as signed bytes
//	text, ascii, blob, boolean, inet
//	           by bytes (unsigned; an IPv4 address and an IPv6 one compare
//	           as byte strings, as in Cassandra's InetAddressType)
//	the system tables' collections, duration
//	           by bytes (they are never clustering columns)
//	frozen collections, tuples
//	           as Cassandra: element by element, then by count (see params.go)
func (t Type) Compare(a, b []byte) int {
	switch t {
	case TypeInt:
		return cmp.Compare(int32(binary.BigEndian.Uint32(a)), int32(binary.BigEndian.Uint32(b)))
	case TypeBigInt, TypeTimestamp, TypeTime, TypeCounter:
		return cmp.Compare(int64(binary.BigEndian.Uint64(a)), int64(binary.BigEndian.Uint64(b)))
	case TypeSmallInt:
		return cmp.Compare(int16(binary.BigEndian.Uint16(a)), int16(binary.BigEndian.Uint16(b)))
	case TypeTinyInt:
		return cmp.Compare(int8(a[0]), int8(b[0]))
	case TypeDouble:
		return cmp.Compare(OrderedFloatBits(binary.BigEndian.Uint64(a)), OrderedFloatBits(binary.BigEndian.Uint64(b)))
	case TypeFloat:
		return cmp.Compare(OrderedFloat32Bits(binary.BigEndian.Uint32(a)), OrderedFloat32Bits(binary.BigEndian.Uint32(b)))
	case TypeUUID:
		return compareUUID(a, b)
	case TypeTimeUUID:
		return compareTimeUUID(a, b)
	case TypeVarint:
		return compareVarint(a, b)
	case TypeDecimal:
		return DecodeDecimal(a).Cmp(DecodeDecimal(b))
	case TypeText, TypeASCII, TypeBlob, TypeBoolean, TypeInet, TypeDate:
		// UTF-8 byte order is code point order
		return bytes.Compare(a, b)
	}
	if n := t.node(); n != nil {
		return n.compare(a, b)
	}
	return bytes.Compare(a, b) // duration, the system tables' collections
}

// compareVarint compares two minimal two's complement integers without
// converting them: by sign, then by length, then by bytes.
func compareVarint(a, b []byte) int {
	na, nb := a[0] >= 0x80, b[0] >= 0x80
	switch {
	case na != nb:
		if na {
			return -1
		}
		return 1
	case len(a) != len(b):
		// Minimal encodings: a longer one has the larger magnitude.
		if (len(a) < len(b)) != na {
			return -1
		}
		return 1
	}
	return bytes.Compare(a, b)
}

// UUIDTimestampBits returns the 60-bit timestamp field of a version 1 uuid
// (100 ns intervals since 1582-10-15) with the version nibble above it: the
// first 8 bytes reordered time_hi_and_version, time_mid, time_low, as
// Cassandra's TimeUUIDType compares them.
func UUIDTimestampBits(u []byte) uint64 {
	msb := binary.BigEndian.Uint64(u)
	return msb<<48 | (msb<<16)&0xFFFF_0000_0000 | msb>>32
}

func compareUUID(a, b []byte) int {
	if c := cmp.Compare(a[6]>>4, b[6]>>4); c != 0 {
		return c
	}
	if a[6]>>4 == 1 {
		if c := cmp.Compare(UUIDTimestampBits(a), UUIDTimestampBits(b)); c != 0 {
			return c
		}
	}
	return bytes.Compare(a, b)
}

// timeUUIDLowFlip turns the signed byte-wise order of a timeuuid's last 8
// bytes into unsigned order.
const timeUUIDLowFlip = 0x8080_8080_8080_8080

func compareTimeUUID(a, b []byte) int {
	if c := cmp.Compare(UUIDTimestampBits(a), UUIDTimestampBits(b)); c != 0 {
		return c
	}
	return cmp.Compare(binary.BigEndian.Uint64(a[8:])^timeUUIDLowFlip, binary.BigEndian.Uint64(b[8:])^timeUUIDLowFlip)
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

// OrderedFloat32Bits is OrderedFloatBits for a float.
func OrderedFloat32Bits(bits uint32) uint32 {
	if f := math.Float32frombits(bits); f != f {
		return math.MaxUint32
	}
	if bits&(1<<31) != 0 {
		return ^bits
	}
	return bits | 1<<31
}

// EncodeText, EncodeInt, ... return the canonical encoding of a Go value.
func EncodeText(s string) []byte { return []byte(s) }

// EncodeASCII returns the canonical encoding of an ascii value, or an error
// naming the first byte above 0x7F.
func EncodeASCII(s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if s[i] > 0x7F {
			return nil, fmt.Errorf("byte %d of %q is 0x%02x, not ASCII", i, s, s[i])
		}
	}
	return []byte(s), nil
}

// EncodeInt returns the canonical encoding of an int.
func EncodeInt(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// EncodeBigInt returns the canonical encoding of a bigint.
func EncodeBigInt(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// EncodeSmallInt returns the canonical encoding of a smallint.
func EncodeSmallInt(v int16) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }

// EncodeTinyInt returns the canonical encoding of a tinyint.
func EncodeTinyInt(v int8) []byte { return []byte{byte(v)} }

// EncodeDouble returns the canonical encoding of a double.
func EncodeDouble(v float64) []byte {
	return binary.BigEndian.AppendUint64(nil, math.Float64bits(v))
}

// EncodeFloat returns the canonical encoding of a float.
func EncodeFloat(v float32) []byte {
	return binary.BigEndian.AppendUint32(nil, math.Float32bits(v))
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

// EncodeUUID returns the canonical encoding of a uuid or timeuuid.
func EncodeUUID(u UUID) []byte { return bytes.Clone(u[:]) }

// EncodeInet returns the canonical encoding of an inet: 4 bytes for an IPv4
// address, 16 for IPv6 (an IPv4-mapped IPv6 address stays 16 bytes). The
// zone of an IPv6 address is not kept. The invalid Addr is null.
func EncodeInet(a netip.Addr) []byte {
	if !a.IsValid() {
		return nil
	}
	return a.WithZone("").AsSlice()
}

// EncodeDate returns the canonical encoding of a date.
func EncodeDate(d Date) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(int64(d)+dateEpoch))
}

// EncodeTime returns the canonical encoding of a time of day, or an error if
// d is outside 0 to 23:59:59.999999999.
func EncodeTime(d time.Duration) ([]byte, error) {
	if d < 0 || int64(d) > maxTimeNanos {
		return nil, fmt.Errorf("time %d ns is outside a day (0 to %d)", int64(d), maxTimeNanos)
	}
	return EncodeBigInt(int64(d)), nil
}

// EncodeVarint returns the canonical (minimal two's complement) encoding of
// a varint. A nil v is null.
func EncodeVarint(v *big.Int) []byte {
	if v == nil {
		return nil
	}
	return appendVarint(nil, v)
}

// appendVarint appends the minimal two's complement big-endian bytes of v.
func appendVarint(dst []byte, v *big.Int) []byte {
	switch v.Sign() {
	case 0:
		return append(dst, 0)
	case 1:
		b := v.Bytes()
		if b[0] >= 0x80 {
			dst = append(dst, 0)
		}
		return append(dst, b...)
	}
	// -v = |v|; two's complement of v is ^(|v| - 1).
	m := new(big.Int).Neg(v)
	m.Sub(m, big.NewInt(1))
	b := m.Bytes()
	start := len(dst)
	if len(b) == 0 || b[0] >= 0x80 {
		dst = append(dst, 0)
	}
	dst = append(dst, b...)
	for i := start; i < len(dst); i++ {
		dst[i] = ^dst[i]
	}
	return dst
}

// decodeVarint is the inverse of appendVarint for a well-formed b.
func decodeVarint(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0] >= 0x80 {
		// v - 2^(8·len)
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// EncodeDecimal returns the canonical encoding of a decimal. A decimal
// whose Unscaled is nil is null.
func EncodeDecimal(d Decimal) []byte {
	if d.Unscaled == nil {
		return nil
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(d.Scale))
	return appendVarint(b, d.Unscaled)
}

// DecodeDecimal decodes a well-formed decimal value (see Check).
func DecodeDecimal(v []byte) Decimal {
	return Decimal{Unscaled: decodeVarint(v[4:]), Scale: int32(binary.BigEndian.Uint32(v))}
}

// EncodeSetText returns the canonical encoding of a set<text>: the distinct
// elements of s, in ascending order.
func EncodeSetText(s []string) []byte {
	s = slices.Clone(s)
	slices.Sort(s)
	s = slices.Compact(s)
	return EncodeListText(s)
}

// EncodeListText returns the canonical encoding of a list<text>.
func EncodeListText(s []string) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+8*len(s)), uint32(len(s)))
	for _, e := range s {
		b = appendElement(b, []byte(e))
	}
	return b
}

// EncodeMapTextText returns the canonical encoding of a map<text, text>,
// keys in ascending order.
func EncodeMapTextText(m map[string]string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = appendElement(b, []byte(k))
		b = appendElement(b, []byte(m[k]))
	}
	return b
}

// EncodeMapTextBlob returns the canonical encoding of a map<text, blob>,
// keys in ascending order.
func EncodeMapTextBlob(m map[string][]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = appendElement(b, []byte(k))
		b = appendElement(b, m[k])
	}
	return b
}

func appendElement(b, e []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
	return append(b, e...)
}

// MapEntry is one entry of a decoded map, in the map's (key) order.
type MapEntry[V any] struct {
	Key   string
	Value V
}

// Decode returns the Go value of an encoded value of type t, or nil for
// null:
//
//	text, ascii        string
//	int                int32
//	bigint             int64
//	smallint           int16
//	tinyint            int8
//	double             float64
//	float              float32
//	boolean            bool
//	blob               []byte (a copy)
//	timestamp          time.Time (UTC)
//	uuid, timeuuid     UUID
//	inet               netip.Addr
//	date               Date
//	time               time.Duration since midnight
//	varint             *big.Int
//	decimal            Decimal
//	set<text>, list<text>
//	                   []string
//	map<text, text>    []MapEntry[string]
//	map<text, blob>    []MapEntry[[]byte]
//	duration           Duration
//	frozen<list<T>>    List, frozen<set<T>> Set, frozen<map<K, V>> Map, tuple Tuple
func (t Type) Decode(v []byte) (any, error) {
	if v == nil {
		return nil, nil
	}
	if err := t.Check(v); err != nil {
		return nil, err
	}
	switch t {
	case TypeText, TypeASCII:
		return string(v), nil
	case TypeInt:
		return int32(binary.BigEndian.Uint32(v)), nil
	case TypeBigInt, TypeCounter:
		return int64(binary.BigEndian.Uint64(v)), nil
	case TypeSmallInt:
		return int16(binary.BigEndian.Uint16(v)), nil
	case TypeTinyInt:
		return int8(v[0]), nil
	case TypeDouble:
		return math.Float64frombits(binary.BigEndian.Uint64(v)), nil
	case TypeFloat:
		return math.Float32frombits(binary.BigEndian.Uint32(v)), nil
	case TypeBoolean:
		return v[0] == 1, nil
	case TypeTimestamp:
		return time.UnixMilli(int64(binary.BigEndian.Uint64(v))).UTC(), nil
	case TypeUUID, TypeTimeUUID:
		return UUID(v), nil
	case TypeInet:
		a, _ := netip.AddrFromSlice(v)
		return a, nil
	case TypeDate:
		return Date(int64(binary.BigEndian.Uint32(v)) - dateEpoch), nil
	case TypeTime:
		return time.Duration(binary.BigEndian.Uint64(v)), nil
	case TypeVarint:
		return decodeVarint(v), nil
	case TypeDecimal:
		return DecodeDecimal(v), nil
	case TypeDuration:
		d, _ := decodeDuration(v)
		return d, nil
	case TypeBlob:
		return bytes.Clone(v), nil
	case TypeSetText, TypeListText:
		n, rest, _ := collectionCount(v)
		out := make([]string, n)
		for i := range out {
			var e []byte
			e, rest, _ = collectionElement(rest)
			out[i] = string(e)
		}
		return out, nil
	case TypeMapTextText:
		n, rest, _ := collectionCount(v)
		out := make([]MapEntry[string], n)
		for i := range out {
			var k, e []byte
			k, rest, _ = collectionElement(rest)
			e, rest, _ = collectionElement(rest)
			out[i] = MapEntry[string]{string(k), string(e)}
		}
		return out, nil
	case TypeMapTextBlob:
		n, rest, _ := collectionCount(v)
		out := make([]MapEntry[[]byte], n)
		for i := range out {
			var k, e []byte
			k, rest, _ = collectionElement(rest)
			e, rest, _ = collectionElement(rest)
			out[i] = MapEntry[[]byte]{string(k), bytes.Clone(e)}
		}
		return out, nil
	default: // parametric (Check accepted v, so t is one)
		return t.node().decode(v), nil
	}
}

// Types returns every non-parametric type, the system tables' collections included, in the
// order of their codes.
func Types() []Type { return slices.Clone(typeCodes[1:]) }
