package cqlwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Version is the only protocol version this package speaks.
const Version = 4

// HeaderSize is the size of a v3/v4 frame header.
const HeaderSize = 9

// DefaultMaxFrameSize is the largest frame (header excluded, compressed or
// not, and again after decompression) a FrameReader accepts unless told
// otherwise: 16 MiB, Cassandra 4's native_transport_max_frame_size. See the
// package documentation for why not Cassandra 3's and ScyllaDB's 256 MiB.
const DefaultMaxFrameSize = 16 << 20

// ResponseBit is set in the version byte of every response frame.
const ResponseBit = 0x80

// Flags are the frame header flags.
type Flags uint8

// Header flags (spec section 2.2).
const (
	FlagCompression   Flags = 0x01
	FlagTracing       Flags = 0x02
	FlagCustomPayload Flags = 0x04
	FlagWarning       Flags = 0x08
	FlagBeta          Flags = 0x10
)

// Opcode identifies the message in a frame.
type Opcode uint8

// Opcodes (spec section 2.4).
const (
	OpError         Opcode = 0x00
	OpStartup       Opcode = 0x01
	OpReady         Opcode = 0x02
	OpAuthenticate  Opcode = 0x03
	OpOptions       Opcode = 0x05
	OpSupported     Opcode = 0x06
	OpQuery         Opcode = 0x07
	OpResult        Opcode = 0x08
	OpPrepare       Opcode = 0x09
	OpExecute       Opcode = 0x0A
	OpRegister      Opcode = 0x0B
	OpEvent         Opcode = 0x0C
	OpBatch         Opcode = 0x0D
	OpAuthChallenge Opcode = 0x0E
	OpAuthResponse  Opcode = 0x0F
	OpAuthSuccess   Opcode = 0x10
)

var opcodeNames = [...]string{
	OpError: "ERROR", OpStartup: "STARTUP", OpReady: "READY", OpAuthenticate: "AUTHENTICATE",
	OpOptions: "OPTIONS", OpSupported: "SUPPORTED", OpQuery: "QUERY", OpResult: "RESULT",
	OpPrepare: "PREPARE", OpExecute: "EXECUTE", OpRegister: "REGISTER", OpEvent: "EVENT",
	OpBatch: "BATCH", OpAuthChallenge: "AUTH_CHALLENGE", OpAuthResponse: "AUTH_RESPONSE",
	OpAuthSuccess: "AUTH_SUCCESS",
}

func (o Opcode) String() string {
	if int(o) < len(opcodeNames) && opcodeNames[o] != "" {
		return opcodeNames[o]
	}
	return fmt.Sprintf("opcode(0x%02x)", uint8(o))
}

// IsRequest reports whether o is an opcode a client sends.
func (o Opcode) IsRequest() bool {
	switch o {
	case OpStartup, OpOptions, OpQuery, OpPrepare, OpExecute, OpRegister, OpBatch, OpAuthResponse:
		return true
	}
	return false
}

// IsResponse reports whether o is an opcode a server sends.
func (o Opcode) IsResponse() bool {
	switch o {
	case OpError, OpReady, OpAuthenticate, OpSupported, OpResult, OpEvent, OpAuthChallenge, OpAuthSuccess:
		return true
	}
	return false
}

// Header is a decoded v4 frame header.
type Header struct {
	Response bool // the direction bit of the version byte
	Flags    Flags
	Stream   int16
	Opcode   Opcode
	Length   uint32 // body length as sent (compressed length if FlagCompression)
}

// AppendHeader appends the 9-byte v4 header for h.
func AppendHeader(dst []byte, h Header) []byte {
	v := byte(Version)
	if h.Response {
		v |= ResponseBit
	}
	dst = append(dst, v, byte(h.Flags))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Stream))
	dst = append(dst, byte(h.Opcode))
	return binary.BigEndian.AppendUint32(dst, h.Length)
}

// Errors returned by FrameReader. Each is wrapped in a *ProtocolError (or is
// a *VersionError) so that the server knows the stream to answer on.
var (
	ErrFrameTooLarge  = errors.New("cqlwire: frame too large")
	ErrUnknownOpcode  = errors.New("cqlwire: unknown opcode")
	ErrWrongDirection = errors.New("cqlwire: frame in the wrong direction")
	ErrCompression    = errors.New("cqlwire: bad compressed body")
)

// ProtocolError is a malformed frame: the server answers it with an ERROR of
// code ProtocolErrorCode on Stream, whose message is Error(), and closes the
// connection (the byte stream cannot be trusted to be in sync after it).
type ProtocolError struct {
	Stream int16
	Opcode Opcode
	Err    error
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("stream %d, %v: %v", e.Stream, e.Opcode, e.Err)
}

func (e *ProtocolError) Unwrap() error { return e.Err }

// AppendFrame appends the ERROR frame (code ErrProtocol, message Error())
// that answers e on its stream.
func (e *ProtocolError) AppendFrame(dst []byte) []byte {
	return AppendFrame(dst, e.Stream, &Error{Code: ErrProtocol, Message: e.Error()}, FrameOptions{})
}

// VersionError is a frame whose version is not 4. The server answers it with
// AppendVersionErrorFrame and closes the connection; drivers parse the
// message to step down to version 4.
type VersionError struct {
	Version byte // without the response bit
	Stream  int16
}

func (e *VersionError) Error() string { return VersionErrorMessage(e.Version) }

// VersionErrorMessage is the message of the PROTOCOL_ERROR answering a frame
// of version v, worded as Cassandra words it: gocql matches it with
// `the lowest supported version is \d+ and the greatest is (\d+)$` (so the
// message must end there), the Python and Node drivers look for
// "Invalid or unsupported protocol version".
func VersionErrorMessage(v byte) string {
	return fmt.Sprintf("Invalid or unsupported protocol version (%d); the lowest supported version is %d and the greatest is %d", v, Version, Version)
}

// AppendFrame appends the complete ERROR frame answering e. The frame is
// written in the header layout of the client's version so the client can
// decode it: versions 1 and 2 have an 8-byte header with a one-byte stream;
// versions above 4 (whose first frames use v4's layout) are answered as v4.
func (e *VersionError) AppendFrame(dst []byte) []byte {
	msg := VersionErrorMessage(e.Version)
	bodyLen := uint32(4 + 2 + len(msg))
	v := e.Version
	if v > Version || v == 0 {
		v = Version
	}
	dst = append(dst, v|ResponseBit, 0)
	if v <= 2 {
		dst = append(dst, byte(e.Stream))
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(e.Stream))
	}
	dst = append(dst, byte(OpError))
	dst = binary.BigEndian.AppendUint32(dst, bodyLen)
	dst = appendInt(dst, int32(ErrProtocol))
	return appendString(dst, msg)
}

// ReaderOptions configure a FrameReader. The zero value is usable.
type ReaderOptions struct {
	// MaxFrameSize bounds a frame body, compressed and decompressed; zero
	// means DefaultMaxFrameSize.
	MaxFrameSize int
	// Responses makes the reader expect response frames (a client or a
	// test); by default it expects requests, as a server does.
	Responses bool
}

// FrameReader reads frames from a byte stream. It owns two buffers that it
// reuses: the body returned by ReadFrame is valid until the next call.
// A FrameReader is not safe for concurrent use.
type FrameReader struct {
	r           io.Reader
	max         int
	responses   bool
	compression Compression
	hdr         [HeaderSize]byte
	buf         []byte // raw body
	plain       []byte // decompressed body
}

// NewFrameReader returns a reader of frames from r. Wrap a net.Conn in a
// bufio.Reader first: ReadFrame reads the header and body separately.
func NewFrameReader(r io.Reader, opts ReaderOptions) *FrameReader {
	max := opts.MaxFrameSize
	if max <= 0 {
		max = DefaultMaxFrameSize
	}
	return &FrameReader{r: r, max: max, responses: opts.Responses}
}

// SetMaxFrameSize changes the bound on the next frames' bodies (zero means
// DefaultMaxFrameSize): a server keeps it small until the client has logged
// in, then raises it.
func (fr *FrameReader) SetMaxFrameSize(n int) {
	if n <= 0 {
		n = DefaultMaxFrameSize
	}
	fr.max = n
}

// SetCompression sets the algorithm of compressed frames from now on (the
// one the client chose in STARTUP). Frames flagged compressed before it is
// set are a protocol error.
func (fr *FrameReader) SetCompression(c Compression) { fr.compression = c }

// growChunk bounds how much the body buffer grows ahead of the bytes that
// have actually arrived, so that a frame claiming a large length costs
// memory only as its bytes come in.
const growChunk = 64 << 10

// ReadFrame reads one frame. The returned body has been decompressed; it
// aliases the reader's buffer and is valid until the next ReadFrame.
// io.EOF means the stream ended cleanly between frames. Any other error but
// a plain I/O error is a *ProtocolError or a *VersionError.
func (fr *FrameReader) ReadFrame() (Header, []byte, error) {
	// Versions 1 and 2 have an 8-byte header: read 8 bytes first so that a
	// v2 OPTIONS frame (8 bytes, empty body) does not leave us waiting.
	if _, err := io.ReadFull(fr.r, fr.hdr[:8]); err != nil {
		return Header{}, nil, err
	}
	version := fr.hdr[0] &^ ResponseBit
	if version <= 2 {
		return Header{}, nil, &VersionError{Version: version, Stream: int16(int8(fr.hdr[2]))}
	}
	stream := int16(binary.BigEndian.Uint16(fr.hdr[2:4]))
	if version != Version {
		return Header{}, nil, &VersionError{Version: version, Stream: stream}
	}
	if _, err := io.ReadFull(fr.r, fr.hdr[8:9]); err != nil {
		return Header{}, nil, noEOF(err)
	}
	h := Header{
		Response: fr.hdr[0]&ResponseBit != 0,
		Flags:    Flags(fr.hdr[1]),
		Stream:   stream,
		Opcode:   Opcode(fr.hdr[4]),
		Length:   binary.BigEndian.Uint32(fr.hdr[5:9]),
	}
	perr := func(err error) error { return &ProtocolError{Stream: h.Stream, Opcode: h.Opcode, Err: err} }
	if h.Response != fr.responses {
		return h, nil, perr(ErrWrongDirection)
	}
	if fr.responses && !h.Opcode.IsResponse() || !fr.responses && !h.Opcode.IsRequest() {
		return h, nil, perr(fmt.Errorf("%w 0x%02x", ErrUnknownOpcode, uint8(h.Opcode)))
	}
	if uint64(h.Length) > uint64(fr.max) {
		return h, nil, perr(fmt.Errorf("%w: body of %d bytes exceeds the limit of %d", ErrFrameTooLarge, h.Length, fr.max))
	}
	body, err := fr.readBody(int(h.Length))
	if err != nil {
		return h, nil, noEOF(err)
	}
	if h.Flags&FlagCompression != 0 {
		if fr.compression == nil {
			return h, nil, perr(fmt.Errorf("%w: compressed frame but no compression was negotiated", ErrCompression))
		}
		fr.plain, err = fr.compression.Decompress(fr.plain[:0], body, fr.max)
		if err != nil {
			return h, nil, perr(err)
		}
		body = fr.plain
	}
	return h, body, nil
}

// readBody reads n bytes into fr.buf, growing it only as bytes arrive.
func (fr *FrameReader) readBody(n int) ([]byte, error) {
	if n <= cap(fr.buf) {
		fr.buf = fr.buf[:n]
		_, err := io.ReadFull(fr.r, fr.buf)
		return fr.buf, err
	}
	fr.buf = fr.buf[:0]
	for len(fr.buf) < n {
		want := min(n-len(fr.buf), growChunk)
		fr.buf = slices.Grow(fr.buf, want) // amortized doubling of what arrived
		start := len(fr.buf)
		fr.buf = fr.buf[:start+want]
		if _, err := io.ReadFull(fr.r, fr.buf[start:]); err != nil {
			return nil, err
		}
	}
	return fr.buf, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
