package cqlwire

import (
	"encoding/binary"
	"fmt"

	"github.com/golang/snappy"
	"github.com/pierrec/lz4/v4"
)

// Compression is a frame body compression algorithm, as negotiated by the
// COMPRESSION option of STARTUP.
type Compression interface {
	// Name is the STARTUP/SUPPORTED name: "lz4" or "snappy".
	Name() string
	// Compress appends the compressed form of src to dst.
	Compress(dst, src []byte) []byte
	// Decompress appends the decompressed form of src to dst, failing
	// before allocating anything if the claimed size exceeds max.
	Decompress(dst, src []byte, max int) ([]byte, error)
}

// LZ4 is Cassandra's lz4 framing: a 4-byte big-endian uncompressed length
// followed by a raw lz4 block.
type LZ4 struct{}

// Snappy is a raw snappy block (whose header carries the uncompressed
// length as a varint).
type Snappy struct{}

// CompressionByName returns the algorithm a client names in STARTUP, or nil.
func CompressionByName(name string) Compression {
	switch name {
	case "lz4":
		return LZ4{}
	case "snappy":
		return Snappy{}
	}
	return nil
}

func (LZ4) Name() string { return "lz4" }

func (LZ4) Compress(dst, src []byte) []byte {
	start := len(dst)
	dst = slicesGrowLen(dst, 4+lz4.CompressBlockBound(len(src)))
	binary.BigEndian.PutUint32(dst[start:], uint32(len(src)))
	n, err := lz4.CompressBlock(src, dst[start+4:], nil)
	if err != nil || (n == 0 && len(src) > 0) {
		// CompressBlock reports incompressible input as n == 0; an lz4
		// block of only literals is always valid, so fall back to it.
		n = appendLiteralBlock(dst[start+4:start+4], src)
	}
	return dst[:start+4+n]
}

func (LZ4) Decompress(dst, src []byte, max int) ([]byte, error) {
	if len(src) == 0 {
		return dst, nil
	}
	if len(src) < 4 {
		return dst, fmt.Errorf("%w: lz4 body of %d bytes has no length prefix", ErrCompression, len(src))
	}
	n := binary.BigEndian.Uint32(src)
	if uint64(n) > uint64(max) {
		return dst, fmt.Errorf("%w: lz4 body claims %d uncompressed bytes, over the limit of %d", ErrFrameTooLarge, n, max)
	}
	// An lz4 block expands at most 255x; a claim beyond that is a lie that
	// must not cost an allocation.
	if uint64(n) > 255*uint64(len(src)) {
		return dst, fmt.Errorf("%w: lz4 body of %d bytes cannot expand to the claimed %d", ErrCompression, len(src), n)
	}
	if n == 0 {
		// pierrec/lz4 v4.1.22 faults (nil dereference in its amd64
		// decoder) when given an empty destination and a non-empty
		// block, so the empty body is handled here: its only valid block
		// is absent or a lone zero token.
		if len(src) == 4 || len(src) == 5 && src[4] == 0 {
			return dst, nil
		}
		return dst, fmt.Errorf("%w: lz4 body claims 0 uncompressed bytes but holds a %d-byte block", ErrCompression, len(src)-4)
	}
	start := len(dst)
	dst = slicesGrowLen(dst, int(n))
	got, err := lz4.UncompressBlock(src[4:], dst[start:])
	if err != nil {
		return dst[:start], fmt.Errorf("%w: lz4: %v", ErrCompression, err)
	}
	if got != int(n) {
		return dst[:start], fmt.Errorf("%w: lz4 body decompressed to %d bytes, claimed %d", ErrCompression, got, n)
	}
	return dst, nil
}

func (Snappy) Name() string { return "snappy" }

func (Snappy) Compress(dst, src []byte) []byte {
	start := len(dst)
	dst = slicesGrowLen(dst, snappy.MaxEncodedLen(len(src)))
	out := snappy.Encode(dst[start:], src)
	return dst[:start+len(out)]
}

func (Snappy) Decompress(dst, src []byte, max int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return dst, fmt.Errorf("%w: snappy: %v", ErrCompression, err)
	}
	if n > max {
		return dst, fmt.Errorf("%w: snappy body claims %d uncompressed bytes, over the limit of %d", ErrFrameTooLarge, n, max)
	}
	// Snappy's densest encoding is a 64-byte copy in 2 bytes (32x); a claim
	// beyond that is a lie that must not cost an allocation.
	if n > 32*len(src)+32 {
		return dst, fmt.Errorf("%w: snappy body of %d bytes cannot expand to the claimed %d", ErrCompression, len(src), n)
	}
	start := len(dst)
	dst = slicesGrowLen(dst, n)
	out, err := snappy.Decode(dst[start:], src)
	if err != nil {
		return dst[:start], fmt.Errorf("%w: snappy: %v", ErrCompression, err)
	}
	return dst[:start+len(out)], nil
}

// slicesGrowLen extends b by n bytes of unspecified content.
func slicesGrowLen(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n+len(b)/4)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// appendLiteralBlock writes src as a single lz4 sequence of literals.
func appendLiteralBlock(dst, src []byte) int {
	l := len(src)
	start := len(dst)
	if l < 15 {
		dst = append(dst, byte(l)<<4)
	} else {
		dst = append(dst, 0xF0)
		for r := l - 15; ; r -= 255 {
			if r < 255 {
				dst = append(dst, byte(r))
				break
			}
			dst = append(dst, 255)
		}
	}
	dst = append(dst, src...)
	return len(dst) - start
}
