package partitioner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// MinToken is the smallest token, which Cassandra reserves: no non-empty key hashes to it (a hash equal
// to it is mapped to [MaxToken]), and the empty key gets it.
const MinToken int64 = math.MinInt64

// MaxToken is the largest token.
const MaxToken int64 = math.MaxInt64

// MaxComponentSize is the largest component a composite key can hold: CompositeType stores each
// component's length in two bytes.
const MaxComponentSize = math.MaxUint16

// ErrComponentTooLarge reports a partition key component that a composite key cannot hold.
var ErrComponentTooLarge = errors.New("partitioner: partition key component too large")

const (
	c1 uint64 = 0x87c37b91114253d5
	c2 uint64 = 0x4cf5ad432745937f
)

// Token returns the Murmur3Partitioner token of a serialized partition key: the first 64 bits of
// Cassandra's MurmurHash3 x64 128 (seed 0), with math.MinInt64 replaced by math.MaxInt64. The empty
// key gets [MinToken], as in Cassandra.
//
// Cassandra's MurmurHash3 differs from the reference algorithm in one place, which Token reproduces:
// the tail bytes (the last len%16) are read as signed Java bytes, so a tail byte ≥ 0x80 is
// sign-extended before it is shifted into place.
func Token(key []byte) int64 {
	if len(key) == 0 {
		return MinToken
	}
	h1 := int64(hash1(key))
	if h1 == math.MinInt64 {
		return math.MaxInt64
	}
	return h1
}

// hash1 returns h1 of Cassandra's MurmurHash.hash3_x64_128(key, seed 0).
func hash1(key []byte) uint64 {
	var h1, h2 uint64
	n := len(key)
	body := key[:n&^15]
	for len(body) >= 16 {
		k1 := binary.LittleEndian.Uint64(body)
		k2 := binary.LittleEndian.Uint64(body[8:])
		body = body[16:]

		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
		h1 = bits.RotateLeft64(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729

		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
		h2 = bits.RotateLeft64(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}

	tail := key[n&^15:]
	var k1, k2 uint64
	// signed returns tail byte i as Java's (long) cast of a byte sees it: sign-extended.
	signed := func(i int) uint64 { return uint64(int64(int8(tail[i]))) }
	switch len(tail) {
	case 15:
		k2 ^= signed(14) << 48
		fallthrough
	case 14:
		k2 ^= signed(13) << 40
		fallthrough
	case 13:
		k2 ^= signed(12) << 32
		fallthrough
	case 12:
		k2 ^= signed(11) << 24
		fallthrough
	case 11:
		k2 ^= signed(10) << 16
		fallthrough
	case 10:
		k2 ^= signed(9) << 8
		fallthrough
	case 9:
		k2 ^= signed(8)
		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
		fallthrough
	case 8:
		k1 ^= signed(7) << 56
		fallthrough
	case 7:
		k1 ^= signed(6) << 48
		fallthrough
	case 6:
		k1 ^= signed(5) << 40
		fallthrough
	case 5:
		k1 ^= signed(4) << 32
		fallthrough
	case 4:
		k1 ^= signed(3) << 24
		fallthrough
	case 3:
		k1 ^= signed(2) << 16
		fallthrough
	case 2:
		k1 ^= signed(1) << 8
		fallthrough
	case 1:
		k1 ^= signed(0)
		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
	}

	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1 = fmix(h1)
	h2 = fmix(h2)
	h1 += h2
	return h1
}

func fmix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// AppendKey appends the serialized partition key made of components to dst and returns the extended
// slice. A single component is its raw bytes. Several are encoded as Cassandra's CompositeType does:
// for each component a 2-byte big-endian length, the bytes, and a 0x00 end-of-component byte.
//
// Every component of a composite key must be at most [MaxComponentSize] bytes; check with
// [CheckComponents] first when that is not already guaranteed (a longer component would have its
// length truncated, giving a key no Cassandra node would produce).
func AppendKey(dst []byte, components [][]byte) []byte {
	if len(components) == 1 {
		return append(dst, components[0]...)
	}
	for _, c := range components {
		dst = append(dst, byte(len(c)>>8), byte(len(c)))
		dst = append(dst, c...)
		dst = append(dst, 0)
	}
	return dst
}

// KeySize returns the length of the key AppendKey produces for components.
func KeySize(components [][]byte) int {
	if len(components) == 1 {
		return len(components[0])
	}
	n := 0
	for _, c := range components {
		n += 3 + len(c)
	}
	return n
}

// CheckComponents reports an error wrapping [ErrComponentTooLarge] when components form a composite
// key (more than one component) and one of them exceeds [MaxComponentSize] bytes.
func CheckComponents(components [][]byte) error {
	if len(components) < 2 {
		return nil
	}
	for i, c := range components {
		if len(c) > MaxComponentSize {
			return fmt.Errorf("%w: component %d is %d bytes, the limit is %d", ErrComponentTooLarge, i, len(c), MaxComponentSize)
		}
	}
	return nil
}
