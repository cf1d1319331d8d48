package cqlwire

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// FuzzReadFrame feeds arbitrary bytes to the frame reader and body decoder,
// as a server reads them (and, with the first byte's low bit, as a client
// reads responses) with each compression. It must never panic, must return
// a typed error for anything malformed, and whatever decodes must encode to
// something that decodes to the same message.
func FuzzReadFrame(f *testing.F) {
	for _, m := range testMessages() {
		f.Add(byte(0), AppendFrame(nil, 1, m, FrameOptions{}))
		var scratch []byte
		f.Add(byte(1), AppendFrame(nil, 1, m, FrameOptions{Compression: LZ4{}, Scratch: &scratch}))
		f.Add(byte(2), AppendFrame(nil, 1, m, FrameOptions{Compression: Snappy{}, Scratch: &scratch}))
	}
	f.Add(byte(0), []byte{0x03, 0, 0, 1, 1, 0, 0, 0, 0})
	f.Add(byte(0), []byte{0x04, 0, 0, 1, 7, 0x7f, 0xff, 0xff, 0xff, 1, 2})
	f.Fuzz(func(t *testing.T, mode byte, in []byte) {
		comp := []Compression{nil, LZ4{}, Snappy{}}[mode%3]
		fr := NewFrameReader(bytes.NewReader(in), ReaderOptions{MaxFrameSize: 1 << 20})
		fr.SetCompression(comp)
		for range 4 { // a few frames of a stream
			h, body, err := fr.ReadFrame()
			if err != nil {
				var pe *ProtocolError
				var ve *VersionError
				if !errors.As(err, &pe) && !errors.As(err, &ve) && err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Fatalf("ReadFrame error %T %v is not typed", err, err)
				}
				if ve != nil {
					ve.AppendFrame(nil)
				}
				return
			}
			if len(body) > 1<<20 {
				t.Fatalf("body of %d bytes exceeds the 1 MiB limit", len(body))
			}
			var head ExecuteHead
			scanned := false
			if h.Opcode == OpExecute && !h.Response {
				head, scanned = ScanExecute(h.Flags, body) // never panics, whatever the body
				for i := range min(head.NumValues, 64) {
					head.Value(i)
				}
			}
			fr2, err := DecodeFrame(h, body)
			if ex, ok := fr2.Message.(*Execute); ok && err == nil && scanned {
				// What the scan reads in place is what the decoder decodes.
				if !bytes.Equal(head.ID, ex.ID) || head.Consistency != ex.Params.Consistency || head.NumValues != len(ex.Params.Values) {
					t.Fatalf("ScanExecute read id %x, %v, %d values; DecodeFrame %x, %v, %d", head.ID, head.Consistency, head.NumValues, ex.ID, ex.Params.Consistency, len(ex.Params.Values))
				}
				for i, want := range ex.Params.Values {
					if v, unset, ok := head.Value(i); !ok || unset != want.Unset || !bytes.Equal(v, want.Bytes) {
						t.Fatalf("ScanExecute value %d = %x, unset %v, %v; DecodeFrame %x, unset %v", i, v, unset, ok, want.Bytes, want.Unset)
					}
				}
			}
			if err != nil {
				var pe *ProtocolError
				if !errors.As(err, &pe) || pe.Stream != h.Stream {
					t.Fatalf("DecodeFrame error %v is not a ProtocolError on stream %d", err, h.Stream)
				}
				continue
			}
			// Re-encode and decode again: the same message.
			opt := FrameOptions{Warnings: fr2.Warnings, CustomPayload: fr2.CustomPayload, TracingID: fr2.TracingID}
			wire := AppendFrame(nil, h.Stream, fr2.Message, opt)
			rr := NewFrameReader(bytes.NewReader(wire), ReaderOptions{Responses: h.Response})
			h3, body3, err := rr.ReadFrame()
			if err != nil {
				t.Fatalf("re-encoded %v does not read back: %v", h.Opcode, err)
			}
			f3, err := DecodeFrame(h3, body3)
			if err != nil {
				t.Fatalf("re-encoded %v does not decode: %v", h.Opcode, err)
			}
			if !reflect.DeepEqual(normalize(f3.Message), normalize(fr2.Message)) {
				t.Fatalf("re-encoded %v decodes to\n%#v\nwant\n%#v", h.Opcode, f3.Message, fr2.Message)
			}
		}
	})
}

// normalize erases the differences the encoding does not keep: an empty
// but present map or list versus an absent one.
func normalize(m Message) Message {
	switch m := m.(type) {
	case *Startup:
		if len(m.Options) == 0 {
			return &Startup{}
		}
	case *Supported:
		if len(m.Options) == 0 {
			return &Supported{}
		}
	}
	return m
}
