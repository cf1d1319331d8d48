package cqlwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
)

// ErrTruncated is wrapped by every decode error caused by a body shorter
// than what its fields claim.
var ErrTruncated = errors.New("cqlwire: truncated body")

// Appenders for the spec's notation types (section 3). They never fail: the
// caller's values are trusted; lengths that do not fit their field are the
// caller's bug and are clamped by the conversions the spec implies.

func appendByte(dst []byte, v byte) []byte    { return append(dst, v) }
func appendShort(dst []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(dst, v) }
func appendInt(dst []byte, v int32) []byte    { return binary.BigEndian.AppendUint32(dst, uint32(v)) }
func appendLong(dst []byte, v int64) []byte   { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

func appendString(dst []byte, s string) []byte {
	dst = appendShort(dst, uint16(len(s)))
	return append(dst, s...)
}

func appendLongString(dst []byte, s string) []byte {
	dst = appendInt(dst, int32(len(s)))
	return append(dst, s...)
}

// appendBytes writes [bytes]: a nil slice is null (length -1).
func appendBytes(dst []byte, b []byte) []byte {
	if b == nil {
		return appendInt(dst, -1)
	}
	dst = appendInt(dst, int32(len(b)))
	return append(dst, b...)
}

func appendShortBytes(dst []byte, b []byte) []byte {
	dst = appendShort(dst, uint16(len(b)))
	return append(dst, b...)
}

func appendValue(dst []byte, v Value) []byte {
	if v.Unset {
		return appendInt(dst, -2)
	}
	return appendBytes(dst, v.Bytes)
}

func appendStringList(dst []byte, l []string) []byte {
	dst = appendShort(dst, uint16(len(l)))
	for _, s := range l {
		dst = appendString(dst, s)
	}
	return dst
}

func appendInet(dst []byte, a netip.AddrPort) []byte {
	ip := a.Addr().Unmap()
	if ip.Is4() {
		b := ip.As4()
		dst = append(dst, 4)
		dst = append(dst, b[:]...)
	} else {
		b := ip.As16()
		dst = append(dst, 16)
		dst = append(dst, b[:]...)
	}
	return appendInt(dst, int32(a.Port()))
}

// reader decodes notation types from a body. The first failure is kept in
// err and every later read returns zero values, so decoders check once at
// the end (or before any loop whose count came from the input).
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d of %d", ErrTruncated, what, r.off, len(r.b))
	}
}

func (r *reader) failf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("cqlwire: "+format+" (at byte %d)", append(args, r.off)...)
	}
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail(what)
		return nil
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

func (r *reader) byte(what string) byte {
	s := r.take(1, what)
	if s == nil {
		return 0
	}
	return s[0]
}

func (r *reader) short(what string) uint16 {
	s := r.take(2, what)
	if s == nil {
		return 0
	}
	return binary.BigEndian.Uint16(s)
}

func (r *reader) int(what string) int32 {
	s := r.take(4, what)
	if s == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(s))
}

func (r *reader) long(what string) int64 {
	s := r.take(8, what)
	if s == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(s))
}

func (r *reader) string(what string) string {
	n := r.short(what)
	return string(r.take(int(n), what))
}

func (r *reader) longString(what string) string {
	n := r.int(what)
	if n < 0 {
		r.failf("%s: negative [long string] length %d", what, n)
		return ""
	}
	return string(r.take(int(n), what))
}

// bytes reads [bytes]; a negative length is null (nil). The result aliases
// the body.
func (r *reader) bytes(what string) []byte {
	n := r.int(what)
	if n < 0 {
		return nil
	}
	return r.take(int(n), what)
}

func (r *reader) shortBytes(what string) []byte {
	n := r.short(what)
	return r.take(int(n), what)
}

// value reads [value]: -1 is null, -2 unset, other negatives are an error.
func (r *reader) value(what string) Value {
	n := r.int(what)
	switch {
	case r.err != nil:
		return Value{}
	case n == -1:
		return Value{}
	case n == -2:
		return Value{Unset: true}
	case n < 0:
		r.failf("%s: invalid [value] length %d", what, n)
		return Value{}
	}
	return Value{Bytes: r.take(int(n), what)}
}

// count reads a [short] element count and checks that the body can hold that
// many elements of at least minSize bytes each, so that no caller ever
// allocates for a count the input cannot back.
func (r *reader) count(n int, minSize int, what string) int {
	if r.err != nil {
		return 0
	}
	if n < 0 {
		r.failf("%s: negative count %d", what, n)
		return 0
	}
	if n*minSize > r.remaining() {
		r.fail(fmt.Sprintf("%s (%d elements claimed)", what, n))
		return 0
	}
	return n
}

func (r *reader) stringList(what string) []string {
	n := r.count(int(r.short(what)), 2, what)
	if n == 0 {
		return nil
	}
	l := make([]string, n)
	for i := range l {
		l[i] = r.string(what)
	}
	return l
}

func (r *reader) stringMap(what string) map[string]string {
	return r.stringMapMax(what, math.MaxUint16)
}

// stringMapMax reads a [string map] of at most max entries; more is an error naming the bound,
// found before anything is allocated for them.
func (r *reader) stringMapMax(what string, max int) map[string]string {
	n := r.count(int(r.short(what)), 4, what)
	if n > max {
		r.failf("%s: %d entries, at most %d are accepted", what, n, max)
		return nil
	}
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := r.string(what)
		m[k] = r.string(what)
	}
	return m
}

func (r *reader) stringMultimap(what string) map[string][]string {
	n := r.count(int(r.short(what)), 4, what)
	if n == 0 {
		return nil
	}
	m := make(map[string][]string, n)
	for range n {
		k := r.string(what)
		m[k] = r.stringList(what)
	}
	return m
}

func (r *reader) bytesMap(what string) map[string][]byte {
	n := r.count(int(r.short(what)), 6, what)
	if n == 0 {
		return nil
	}
	m := make(map[string][]byte, n)
	for range n {
		k := r.string(what)
		m[k] = r.bytes(what)
	}
	return m
}

func (r *reader) inet(what string) netip.AddrPort {
	n := r.byte(what)
	if r.err != nil {
		return netip.AddrPort{}
	}
	if n != 4 && n != 16 {
		r.failf("%s: [inet] address length %d, want 4 or 16", what, n)
		return netip.AddrPort{}
	}
	ip, _ := netip.AddrFromSlice(r.take(int(n), what))
	port := r.int(what)
	if port < 0 || port > math.MaxUint16 {
		r.failf("%s: [inet] port %d out of range", what, port)
	}
	return netip.AddrPortFrom(ip, uint16(port))
}

// done reports the first error, or one for bytes left over after the
// message: a well-formed body is consumed exactly.
func (r *reader) done(what string) error {
	if r.err != nil {
		return fmt.Errorf("%s: %w", what, r.err)
	}
	if r.off != len(r.b) {
		return fmt.Errorf("cqlwire: %s: %d unexpected trailing bytes after byte %d", what, len(r.b)-r.off, r.off)
	}
	return nil
}
