package cqlwire

import "encoding/binary"

// ExecuteHead is the start of an EXECUTE request's body read in place, without decoding its
// values: the prepared statement's id, the consistency level and where the bound values are.
// A server reads the few values it needs first (a partition key, to decide a rate limit before
// anything else) with Value, and decodes the whole frame only if it goes on. ID and the values
// alias the body.
type ExecuteHead struct {
	ID          []byte
	Consistency Consistency
	// NumValues is the number of bound values.
	NumValues int
	values    []byte // the body from the first value on
}

// ScanExecute reads the head of the body of an EXECUTE frame with header flags flags. It
// reports false when the frame is not one it reads in place (a custom payload, values bound by
// name) or when the head is malformed; DecodeFrame then decodes it, or names what is wrong.
// It does not allocate.
func ScanExecute(flags Flags, body []byte) (ExecuteHead, bool) {
	var h ExecuteHead
	if flags&FlagCustomPayload != 0 || len(body) < 2 {
		return h, false
	}
	n := int(binary.BigEndian.Uint16(body))
	if len(body) < 2+n+3 {
		return h, false
	}
	h.ID = body[2 : 2+n]
	rest := body[2+n:]
	h.Consistency = Consistency(binary.BigEndian.Uint16(rest))
	qflags := rest[2]
	if qflags&^queryKnown != 0 || qflags&queryValueNames != 0 {
		return h, false
	}
	if qflags&queryValues != 0 {
		if len(rest) < 5 {
			return h, false
		}
		h.NumValues = int(binary.BigEndian.Uint16(rest[3:]))
		h.values = rest[5:]
	}
	return h, true
}

// Value returns bound value i: its bytes (nil for null and unset, empty for an empty value),
// whether it is unset, and false when there is no value i or the values before it are
// malformed.
func (h *ExecuteHead) Value(i int) (v []byte, unset, ok bool) {
	if i < 0 || i >= h.NumValues {
		return nil, false, false
	}
	b := h.values
	for j := 0; ; j++ {
		if len(b) < 4 {
			return nil, false, false
		}
		n := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		var cur []byte
		switch {
		case n == -1, n == -2:
		case n < 0 || int(n) > len(b):
			return nil, false, false
		default:
			cur, b = b[:n:n], b[n:]
		}
		if j == i {
			return cur, n == -2, true
		}
	}
}
