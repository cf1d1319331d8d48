package cqlwire

import (
	"encoding/binary"
	"fmt"
)

// Frame is a decoded frame: the header, the body prefix fields, and the
// message.
type Frame struct {
	Header Header
	// TracingID is set on a response whose header has FlagTracing.
	TracingID     *[16]byte
	Warnings      []string
	CustomPayload map[string][]byte
	Message       Message
}

// AppendFrame appends a complete frame carrying m on stream. For a
// response, warnings and custom payload (when non-empty) become the body
// prefix and set their flags (a tracing id likewise); a request carries
// only the custom payload. With opt.Compression the body is compressed.
func AppendFrame(dst []byte, stream int16, m Message, opt FrameOptions) []byte {
	h := Header{Response: m.Opcode().IsResponse(), Stream: stream, Opcode: m.Opcode()}
	if opt.TracingID != nil && h.Response {
		h.Flags |= FlagTracing
	}
	if len(opt.Warnings) > 0 && h.Response {
		h.Flags |= FlagWarning
	}
	if len(opt.CustomPayload) > 0 {
		h.Flags |= FlagCustomPayload
	}
	appendBody := func(b []byte) []byte {
		if h.Flags&FlagTracing != 0 {
			b = append(b, opt.TracingID[:]...)
		}
		if h.Flags&FlagWarning != 0 {
			b = appendStringList(b, opt.Warnings)
		}
		if h.Flags&FlagCustomPayload != 0 {
			b = appendBytesMap(b, opt.CustomPayload)
		}
		return m.AppendBody(b)
	}
	start := len(dst)
	if opt.Compression == nil {
		dst = AppendHeader(dst, h)
		dst = appendBody(dst)
		binary.BigEndian.PutUint32(dst[start+5:], uint32(len(dst)-start-HeaderSize))
		return dst
	}
	h.Flags |= FlagCompression
	dst = AppendHeader(dst, h)
	plain := appendBody((*opt.Scratch)[:0])
	*opt.Scratch = plain
	dst = opt.Compression.Compress(dst, plain)
	binary.BigEndian.PutUint32(dst[start+5:], uint32(len(dst)-start-HeaderSize))
	return dst
}

// FrameOptions are the optional parts of a frame for AppendFrame.
type FrameOptions struct {
	TracingID     *[16]byte
	Warnings      []string
	CustomPayload map[string][]byte
	// Compression, when non-nil, compresses the body; Scratch must then
	// point at a buffer the encoder may reuse between frames.
	Compression Compression
	Scratch     *[]byte
}

// DecodeFrame decodes the body prefix and the message of a frame read by a
// FrameReader. Errors are *ProtocolError naming the stream.
func DecodeFrame(h Header, body []byte) (Frame, error) {
	f := Frame{Header: h}
	perr := func(err error) error { return &ProtocolError{Stream: h.Stream, Opcode: h.Opcode, Err: err} }
	r := &reader{b: body}
	if h.Flags&FlagTracing != 0 && h.Response {
		if id := r.take(16, "tracing id"); id != nil {
			f.TracingID = (*[16]byte)(id)
		}
	}
	if h.Flags&FlagWarning != 0 {
		if !h.Response {
			return f, perr(fmt.Errorf("cqlwire: warning flag on a request"))
		}
		f.Warnings = r.stringList("warnings")
	}
	if h.Flags&FlagCustomPayload != 0 {
		f.CustomPayload = r.bytesMap("custom payload")
	}
	if r.err != nil {
		return f, perr(r.err)
	}
	var err error
	if h.Response {
		f.Message, err = DecodeResponse(h.Opcode, body[r.off:])
	} else {
		f.Message, err = DecodeRequest(h.Opcode, body[r.off:])
	}
	if err != nil {
		return f, perr(err)
	}
	return f, nil
}
