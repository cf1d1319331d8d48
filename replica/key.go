package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/kvnode/kvnode/schema"
)

// Storage key layout. Every key of a partition starts with the partition
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
//	                  text, blob           escaped and terminated as above
//	                and for a DESC column (schema.Column.Descending) that
//	                encoding with every byte complemented
//	row entry       rowDeletion (the key ends here), rowMarker (the key ends
//	                here) or rowCell followed by the column name's bytes
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
	case schema.TypeBoolean:
		return append(dst, v[0])
	default: // text, blob
		return appendEscaped(dst, v)
	}
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
	case schema.TypeBoolean:
		n = 1
	case schema.TypeText, schema.TypeBlob:
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
	default:
		return nil, nil, fmt.Errorf("%w: clustering column of type %s", errBadKey, t)
	}
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
