package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/kvnode/kvnode/schema"
)

// Storage key layout. Table id 0 is no table's (the schema never assigns it):
// its key space holds the batchlog (batchlog.go). Every key of a partition starts with the partition
// prefix, and keys sort in (table id, token, partition key, clustering key)
// order because every part is encoded order-preservingly and
// self-delimitingly:
//
//	table id        8 bytes, big-endian
//	token           8 bytes, big-endian with the sign bit flipped, so that
//	                int64 order is byte order
//	partition key   the serialized partition key (partitioner.AppendKey),
//	                escaped: 0x00 → 0x00 0xFF, terminated by 0x00 0x01
//	kind            kindPartitionDeletion (the key ends here),
//	                kindStatic (a row entry follows: the static row, static.go),
//	                kindRangeTombstone (its bounds follow; see rangetomb.go)
//	                or kindRow
//
// and for kindRow:
//
//	clustering      one component per clustering column, by type:
//	                  int                  4 bytes big-endian, sign flipped
//	                  bigint, timestamp    8 bytes big-endian, sign flipped
//	                  double               8 bytes big-endian of schema.OrderedFloatBits
//	                  boolean              1 byte
//	                  text, ascii, blob, inet
//	                                       escaped and terminated as above
//	                                       (inet orders by bytes, as Cassandra's)
//	                  smallint, tinyint    2 bytes, 1 byte, sign flipped
//	                  float                4 bytes big-endian of schema.OrderedFloat32Bits
//	                  date                 4 bytes as encoded (unsigned days)
//	                  time                 8 bytes as encoded (non-negative)
//	                  uuid                 the version byte (byte 6 >> 4), then for
//	                                       version 1 the timestamp-first 8 bytes
//	                                       (schema.UUIDTimestampBits) and the last 8,
//	                                       for other versions the 16 bytes as they are
//	                  timeuuid             the timestamp-first 8 bytes, then the last 8
//	                                       with each byte's top bit flipped (Cassandra
//	                                       compares them as signed bytes)
//	                  varint               see appendVarintKey
//	                  decimal              see appendDecimalKey; equal values of
//	                                       different scales (1.0, 1.00) are one key
//	                  frozen collections, tuples
//	                                       see keyparam.go
//	                and for a DESC column (schema.Column.Descending) that
//	                encoding with every byte complemented
//	row entry       rowDeletion (the key ends here), rowMarker (the key ends
//	                here), rowCell followed by the column name's bytes,
//	                rowCollectionDeletion followed by the column name's bytes
//	                (a non-frozen collection's tombstone, format 6) or
//	                rowElement followed by the column name, escaped and
//	                terminated as above, and the element's path bytes (an
//	                element of a non-frozen collection, format 6)
//
// The terminator 0x00 0x01 sorts below an escaped 0x00 (0x00 0xFF) and below
// every other byte, so a string sorts before its extensions, as it should.
//
// Every ascending component encoding is prefix-free: no component's bytes
// are a proper prefix of another's (the fixed-size ones trivially; an
// escaped string ends at its first unescaped 0x00 0x01). So two different
// components first differ at a byte inside both, and complementing every
// byte reverses that byte's order and nothing else: the complemented
// encoding sorts in exactly the reverse order, whatever follows it in the
// key. That is a DESC column's storage order, so a partition's rows are
// stored in the table's clustering order (schema.Table.CompareClustering).
// Within a row, the row tombstone comes first, then the marker, then the
// cells by column name, which is the order a read needs them in.
//
// Values (see appendValue) are a flags byte, the 8-byte big-endian write
// timestamp and the cell's value bytes; markers and tombstones use the same
// format, so one last-write-wins merge operator serves every key.
const (
	kindPartitionDeletion byte = 0x10
	kindRow               byte = 0x20

	rowDeletion byte = 0x01
	rowMarker   byte = 0x02
	rowCell     byte = 0x03
	// rowCollectionDeletion and rowElement sort after every simple cell of a row: a reader
	// sorts a row's cells (cell.CompareColumns) when a row has elements.
	rowCollectionDeletion byte = 0x04
	rowElement            byte = 0x05

	escape     byte = 0x00
	escaped00  byte = 0xFF
	terminator byte = 0x01
)

// errBadKey reports a storage key that does not decode: corruption, or a bug.
var errBadKey = errors.New("replica: malformed storage key")

// appendPartitionPrefix appends the prefix shared by every key of the
// partition with serialized key pk.
func appendPartitionPrefix(dst []byte, table uint64, token int64, pk []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, table)
	dst = binary.BigEndian.AppendUint64(dst, uint64(token)^(1<<63))
	return appendEscaped(dst, pk)
}

// decodePartitionPrefix is the inverse of appendPartitionPrefix; it returns
// the rest of key after the prefix.
func decodePartitionPrefix(key []byte) (table uint64, token int64, pk, rest []byte, err error) {
	if len(key) < 16 {
		return 0, 0, nil, nil, errBadKey
	}
	table = binary.BigEndian.Uint64(key)
	token = int64(binary.BigEndian.Uint64(key[8:]) ^ (1 << 63))
	pk, rest, err = decodeEscaped(key[16:])
	return table, token, pk, rest, err
}

// appendEscaped appends b with every 0x00 escaped as 0x00 0xFF, then the
// terminator 0x00 0x01.
func appendEscaped(dst, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, escape)
		if i < 0 {
			break
		}
		dst = append(dst, b[:i+1]...)
		dst = append(dst, escaped00)
		b = b[i+1:]
	}
	dst = append(dst, b...)
	return append(dst, escape, terminator)
}

// decodeEscaped is the inverse of appendEscaped: it returns the unescaped
// bytes (never nil) and what follows the terminator.
func decodeEscaped(src []byte) (b, rest []byte, err error) {
	b = []byte{}
	for {
		i := bytes.IndexByte(src, escape)
		if i < 0 || i+1 >= len(src) {
			return nil, nil, errBadKey
		}
		b = append(b, src[:i]...)
		switch src[i+1] {
		case terminator:
			return b, src[i+2:], nil
		case escaped00:
			b = append(b, escape)
			src = src[i+2:]
		default:
			return nil, nil, errBadKey
		}
	}
}

// appendClustering appends the encoding of v, a well-formed non-null value
// of type t, for a clustering column that sorts in t's order, or in its
// reverse when desc.
func appendClustering(dst []byte, t schema.Type, desc bool, v []byte) []byte {
	start := len(dst)
	dst = appendAscending(dst, t, v)
	if desc {
		complement(dst[start:])
	}
	return dst
}

func complement(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

// appendAscending appends the order-preserving encoding of v, a well-formed
// non-null value of type t.
func appendAscending(dst []byte, t schema.Type, v []byte) []byte {
	switch t {
	case schema.TypeInt:
		return binary.BigEndian.AppendUint32(dst, binary.BigEndian.Uint32(v)^(1<<31))
	case schema.TypeBigInt, schema.TypeTimestamp:
		return binary.BigEndian.AppendUint64(dst, binary.BigEndian.Uint64(v)^(1<<63))
	case schema.TypeDouble:
		return binary.BigEndian.AppendUint64(dst, schema.OrderedFloatBits(binary.BigEndian.Uint64(v)))
	case schema.TypeBoolean, schema.TypeDate, schema.TypeTime:
		return append(dst, v...)
	case schema.TypeSmallInt:
		return binary.BigEndian.AppendUint16(dst, binary.BigEndian.Uint16(v)^(1<<15))
	case schema.TypeTinyInt:
		return append(dst, v[0]^0x80)
	case schema.TypeFloat:
		return binary.BigEndian.AppendUint32(dst, schema.OrderedFloat32Bits(binary.BigEndian.Uint32(v)))
	case schema.TypeUUID:
		dst = append(dst, v[6]>>4)
		if v[6]>>4 != 1 {
			return append(dst, v...)
		}
		dst = binary.BigEndian.AppendUint64(dst, schema.UUIDTimestampBits(v))
		return append(dst, v[8:]...)
	case schema.TypeTimeUUID:
		dst = binary.BigEndian.AppendUint64(dst, schema.UUIDTimestampBits(v))
		return binary.BigEndian.AppendUint64(dst, binary.BigEndian.Uint64(v[8:])^timeUUIDLowFlip)
	case schema.TypeVarint:
		return appendVarintKey(dst, v)
	case schema.TypeDecimal:
		return appendDecimalKey(dst, v)
	case schema.TypeText, schema.TypeASCII, schema.TypeBlob, schema.TypeInet:
		return appendEscaped(dst, v)
	}
	if kind, elems := t.Params(); kind != schema.NotParametric {
		return appendParamKey(dst, kind, elems, v) // keyparam.go
	}
	return appendEscaped(dst, v) // no other type is a clustering column's (the schema refuses them)
}

// timeUUIDLowFlip flips the top bit of each of a timeuuid's last 8 bytes,
// turning Cassandra's signed byte order into unsigned order.
const timeUUIDLowFlip = 0x8080_8080_8080_8080

// unreorderUUID is the inverse of schema.UUIDTimestampBits: the first 8
// bytes of the uuid (time_low, time_mid, time_hi_and_version).
func unreorderUUID(r uint64) uint64 {
	return r<<32 | (r>>16)&0xFFFF_0000 | r>>48
}

// appendVarintKey appends the order-preserving encoding of a varint v
// (minimal two's complement): a sign byte (0x00 negative, 0x01 not), the
// byte length n as 4 bytes big-endian (complemented for a negative, since
// a longer negative is a smaller number), then v's bytes as they are (two's
// complement bytes of equal length order as unsigned). Prefix-free: the
// length says where it ends.
func appendVarintKey(dst, v []byte) []byte {
	if v[0] >= 0x80 {
		dst = append(dst, 0x00)
		dst = binary.BigEndian.AppendUint32(dst, ^uint32(len(v)))
	} else {
		dst = append(dst, 0x01)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
	}
	return append(dst, v...)
}

// Decimal keys. A decimal is normalised to ±0.d1d2…dn × 10^E with d1 and dn
// not zero (equal values of different scales have one normal form; zero is
// alone), and encoded as
//
//	0x02                                  zero
//	0x03, E, digits, 0x00                 positive
//	0x01, ^E, ^digits, 0xFF               negative (the positive encoding of
//	                                      its magnitude, complemented)
//
// where E is 8 bytes big-endian with the sign bit flipped, and the digits go
// two to a byte, d1d2 as 1 + 10·d1 + d2 (1..100), an odd last digit as
// 1 + 10·dn. Between positives, a larger exponent is a larger number, then
// the digits compare as a decimal fraction: bytewise, with a shorter
// fraction (ended by 0x00, below every digit byte) before its extensions.
// Complementing reverses that for negatives. The decoded value is the
// normal form with the smallest scale ≥ the int32 minimum: 1.50 and 1.5
// decode as 1.5, 100 as 1E+2, 0.00 as 0.
const (
	decimalNeg  byte = 0x01
	decimalZero byte = 0x02
	decimalPos  byte = 0x03

	// maxDecimalKeyPad caps the zeros a decoded decimal key may need to
	// append to reach an int32 scale: corruption, not data, beyond it.
	maxDecimalKeyPad = 1 << 20
)

func appendDecimalKey(dst, v []byte) []byte {
	d := schema.DecodeDecimal(v)
	if d.Unscaled.Sign() == 0 {
		return append(dst, decimalZero)
	}
	digits := new(big.Int).Abs(d.Unscaled).Text(10)
	exp := int64(len(digits)) - int64(d.Scale)
	digits = strings.TrimRight(digits, "0")
	start := len(dst)
	dst = append(dst, decimalPos)
	dst = binary.BigEndian.AppendUint64(dst, uint64(exp)^(1<<63))
	for i := 0; i < len(digits); i += 2 {
		b := 1 + 10*(digits[i]-'0')
		if i+1 < len(digits) {
			b += digits[i+1] - '0'
		}
		dst = append(dst, b)
	}
	dst = append(dst, 0x00)
	if d.Unscaled.Sign() < 0 {
		complement(dst[start+1:])
		dst[start] = decimalNeg
	}
	return dst
}

// decodeDecimalKey decodes a decimal key component whose bytes are XORed
// with mask (0x00 ASC, 0xFF DESC): it returns the canonical value and the
// length of the component, refusing every non-canonical form.
func decodeDecimalKey(src []byte, mask byte) (v []byte, n int, err error) {
	bad := func(what string) ([]byte, int, error) {
		return nil, 0, fmt.Errorf("%w: decimal clustering component %s", errBadKey, what)
	}
	if len(src) < 1 {
		return bad("truncated")
	}
	sign := src[0] ^ mask
	if sign == decimalZero {
		return []byte{0, 0, 0, 0, 0}, 1, nil
	}
	if sign != decimalPos && sign != decimalNeg {
		return bad("has a bad sign byte")
	}
	inner := mask
	if sign == decimalNeg {
		inner = ^mask
	}
	if len(src) < 9 {
		return bad("truncated")
	}
	var e [8]byte
	for i := range e {
		e[i] = src[1+i] ^ inner
	}
	exp := int64(binary.BigEndian.Uint64(e[:]) ^ (1 << 63))
	digits := make([]byte, 0, 16)
	i := 9
	for ; ; i++ {
		if i >= len(src) {
			return bad("is not terminated")
		}
		b := src[i] ^ inner
		if b == 0 {
			break
		}
		if b > 100 {
			return bad("has a bad digit byte")
		}
		digits = append(digits, '0'+(b-1)/10, '0'+(b-1)%10)
	}
	if len(digits) == 0 || digits[0] == '0' {
		return bad("is not normalised")
	}
	if digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		if digits[len(digits)-1] == '0' {
			return bad("is not normalised")
		}
	}
	scale := int64(len(digits)) - exp
	if scale > math.MaxInt32 {
		return bad("has an exponent out of range")
	}
	if scale < math.MinInt32 {
		pad := math.MinInt32 - scale
		if pad > maxDecimalKeyPad {
			return bad("has an exponent out of range")
		}
		digits = append(digits, bytes.Repeat([]byte{'0'}, int(pad))...)
		scale = math.MinInt32
	}
	u, _ := new(big.Int).SetString(string(digits), 10)
	if sign == decimalNeg {
		u.Neg(u)
	}
	return schema.EncodeDecimal(schema.Decimal{Unscaled: u, Scale: int32(scale)}), i + 1, nil
}

// decodeVarintKey decodes a varint key component whose bytes are XORed with
// mask, as decodeDecimalKey does.
func decodeVarintKey(src []byte, mask byte) (v []byte, n int, err error) {
	bad := func(what string) ([]byte, int, error) {
		return nil, 0, fmt.Errorf("%w: varint clustering component %s", errBadKey, what)
	}
	if len(src) < 5 {
		return bad("truncated")
	}
	sign := src[0] ^ mask
	var l [4]byte
	for i := range l {
		l[i] = src[1+i] ^ mask
	}
	length := binary.BigEndian.Uint32(l[:])
	switch sign {
	case 0x00:
		length = ^length
	case 0x01:
	default:
		return bad("has a bad sign byte")
	}
	if uint64(length) > uint64(len(src)-5) || length == 0 {
		return bad("truncated")
	}
	v = make([]byte, length)
	for i := range v {
		v[i] = src[5+i] ^ mask
	}
	if (v[0] >= 0x80) != (sign == 0x00) || schema.TypeVarint.Check(v) != nil {
		return bad("is not canonical")
	}
	return v, 5 + int(length), nil
}

// canonicalNaN is the bits of the NaN a decoded double clustering value has:
// the encoding canonicalises NaNs (they all sort last), so their payload is
// not kept.
const canonicalNaN = 0x7FF8000000000000

// decodeClustering is the inverse of appendClustering: it returns the
// canonical value (newly allocated) and the rest of src.
func decodeClustering(src []byte, t schema.Type, desc bool) (v, rest []byte, err error) {
	if !desc {
		return decodeAscending(src, t)
	}
	if t.IsParametric() {
		return decodeParamDesc(src, t)
	}
	n, err := componentLen(src, t)
	if err != nil {
		return nil, nil, err
	}
	var buf [16]byte
	asc := append(buf[:0], src[:n]...)
	complement(asc)
	if v, _, err = decodeAscending(asc, t); err != nil {
		return nil, nil, err
	}
	return v, src[n:], nil
}

// componentLen returns the length of the complemented (DESC) encoding of a
// value of type t at the start of src.
func componentLen(src []byte, t schema.Type) (int, error) {
	n := 0
	switch t {
	case schema.TypeInt:
		n = 4
	case schema.TypeBigInt, schema.TypeTimestamp, schema.TypeDouble:
		n = 8
	case schema.TypeBoolean, schema.TypeTinyInt:
		n = 1
	case schema.TypeSmallInt:
		n = 2
	case schema.TypeFloat, schema.TypeDate:
		n = 4
	case schema.TypeTime:
		n = 8
	case schema.TypeUUID:
		n = 17
	case schema.TypeTimeUUID:
		n = 16
	case schema.TypeVarint:
		_, n, err := decodeVarintKey(src, 0xFF)
		return n, err
	case schema.TypeDecimal:
		_, n, err := decodeDecimalKey(src, 0xFF)
		return n, err
	case schema.TypeText, schema.TypeASCII, schema.TypeBlob, schema.TypeInet:
		// Complemented, the escape 0x00 is 0xFF, followed by 0x00 (an
		// escaped 0x00) or by 0xFE (the terminator).
		for i := 0; ; i += 2 {
			j := bytes.IndexByte(src[i:], ^escape)
			if j < 0 || i+j+1 >= len(src) {
				return 0, fmt.Errorf("%w: %s clustering component is not terminated", errBadKey, t)
			}
			i += j
			switch src[i+1] {
			case ^terminator:
				return i + 2, nil
			case ^escaped00:
			default:
				return 0, fmt.Errorf("%w: %s clustering component has a bad escape", errBadKey, t)
			}
		}
	default:
		return 0, fmt.Errorf("%w: clustering column of type %s", errBadKey, t)
	}
	if len(src) < n {
		return 0, fmt.Errorf("%w: %s clustering component truncated", errBadKey, t)
	}
	return n, nil
}

// decodeAscending is the inverse of appendAscending: it returns the
// canonical value (newly allocated) and the rest of src.
func decodeAscending(src []byte, t schema.Type) (v, rest []byte, err error) {
	fixed := func(n int) error {
		if len(src) < n {
			return fmt.Errorf("%w: %s clustering component truncated", errBadKey, t)
		}
		return nil
	}
	switch t {
	case schema.TypeInt:
		if err := fixed(4); err != nil {
			return nil, nil, err
		}
		return binary.BigEndian.AppendUint32(nil, binary.BigEndian.Uint32(src)^(1<<31)), src[4:], nil
	case schema.TypeBigInt, schema.TypeTimestamp:
		if err := fixed(8); err != nil {
			return nil, nil, err
		}
		return binary.BigEndian.AppendUint64(nil, binary.BigEndian.Uint64(src)^(1<<63)), src[8:], nil
	case schema.TypeDouble:
		if err := fixed(8); err != nil {
			return nil, nil, err
		}
		u := binary.BigEndian.Uint64(src)
		var bits uint64
		switch {
		case u == math.MaxUint64:
			bits = canonicalNaN
		case u&(1<<63) != 0:
			bits = u &^ (1 << 63)
		default:
			bits = ^u
		}
		return binary.BigEndian.AppendUint64(nil, bits), src[8:], nil
	case schema.TypeBoolean:
		if err := fixed(1); err != nil {
			return nil, nil, err
		}
		return []byte{src[0]}, src[1:], nil
	case schema.TypeText, schema.TypeBlob:
		return decodeEscaped(src)
	case schema.TypeASCII, schema.TypeInet:
		if v, rest, err = decodeEscaped(src); err != nil {
			return nil, nil, err
		}
		return checked(t, v, rest)
	case schema.TypeTinyInt:
		if err := fixed(1); err != nil {
			return nil, nil, err
		}
		return []byte{src[0] ^ 0x80}, src[1:], nil
	case schema.TypeSmallInt:
		if err := fixed(2); err != nil {
			return nil, nil, err
		}
		return binary.BigEndian.AppendUint16(nil, binary.BigEndian.Uint16(src)^(1<<15)), src[2:], nil
	case schema.TypeFloat:
		if err := fixed(4); err != nil {
			return nil, nil, err
		}
		u := binary.BigEndian.Uint32(src)
		var bits uint32
		switch {
		case u == math.MaxUint32:
			bits = canonicalNaN32
		case u&(1<<31) != 0:
			bits = u &^ (1 << 31)
		default:
			bits = ^u
		}
		return binary.BigEndian.AppendUint32(nil, bits), src[4:], nil
	case schema.TypeDate:
		if err := fixed(4); err != nil {
			return nil, nil, err
		}
		return bytes.Clone(src[:4]), src[4:], nil
	case schema.TypeTime:
		if err := fixed(8); err != nil {
			return nil, nil, err
		}
		return checked(t, bytes.Clone(src[:8]), src[8:])
	case schema.TypeUUID:
		if err := fixed(17); err != nil {
			return nil, nil, err
		}
		version, body := src[0], src[1:17]
		v = bytes.Clone(body)
		if version == 1 {
			binary.BigEndian.PutUint64(v, unreorderUUID(binary.BigEndian.Uint64(body)))
		}
		if v[6]>>4 != version {
			return nil, nil, fmt.Errorf("%w: uuid clustering component's version byte %d disagrees with its uuid", errBadKey, version)
		}
		return v, src[17:], nil
	case schema.TypeTimeUUID:
		if err := fixed(16); err != nil {
			return nil, nil, err
		}
		v = binary.BigEndian.AppendUint64(nil, unreorderUUID(binary.BigEndian.Uint64(src)))
		v = binary.BigEndian.AppendUint64(v, binary.BigEndian.Uint64(src[8:])^timeUUIDLowFlip)
		return checked(t, v, src[16:])
	case schema.TypeVarint:
		v, n, err := decodeVarintKey(src, 0)
		if err != nil {
			return nil, nil, err
		}
		return v, src[n:], nil
	case schema.TypeDecimal:
		v, n, err := decodeDecimalKey(src, 0)
		if err != nil {
			return nil, nil, err
		}
		return v, src[n:], nil
	}
	if kind, elems := t.Params(); kind != schema.NotParametric {
		return decodeParamKey(src, t, kind, elems) // keyparam.go
	}
	return nil, nil, fmt.Errorf("%w: clustering column of type %s", errBadKey, t)
}

// canonicalNaN32 is the bits of the NaN a decoded float clustering value
// has, as canonicalNaN is for doubles.
const canonicalNaN32 = 0x7FC00000

// checked returns v and rest if v is a well-formed value of type t, and an
// error naming the key as malformed otherwise.
func checked(t schema.Type, v, rest []byte) ([]byte, []byte, error) {
	if err := t.Check(v); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errBadKey, err)
	}
	return v, rest, nil
}

// prefixEnd returns the smallest key greater than every key that starts with
// prefix, or nil if there is none (prefix is all 0xFF).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// appendElementKey appends the row entry of element path of non-frozen collection column name.
func appendElementKey(dst []byte, name string, path []byte) []byte {
	dst = append(dst, rowElement)
	dst = appendEscaped(dst, []byte(name))
	return append(dst, path...)
}

// decodeElementEntry is the inverse of appendElementKey on a row entry: the column name and the
// element's path (a copy, never nil).
func decodeElementEntry(entry []byte) (name string, path []byte, err error) {
	if len(entry) == 0 || entry[0] != rowElement {
		return "", nil, errBadKey
	}
	n, rest, err := decodeEscaped(entry[1:])
	if err != nil {
		return "", nil, err
	}
	return string(n), append([]byte{}, rest...), nil
}

// entryColumn returns the column a row entry belongs to: false for a row tombstone or marker
// (and a malformed entry).
func entryColumn(entry []byte) (string, bool) {
	if len(entry) == 0 {
		return "", false
	}
	switch entry[0] {
	case rowCell, rowCollectionDeletion:
		return string(entry[1:]), true
	case rowElement:
		name, _, err := decodeElementEntry(entry)
		return name, err == nil
	}
	return "", false
}
