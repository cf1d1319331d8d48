package cqlwire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// testMessages returns one of every message, with every optional part used
// somewhere.
func testMessages() []Message {
	cols := []ColumnSpec{
		{Keyspace: "ks", Table: "t", Name: "k", Type: Type{ID: TypeInt}},
		{Keyspace: "ks", Table: "t", Name: "v", Type: Type{ID: TypeVarchar}},
		{Keyspace: "ks", Table: "t", Name: "m", Type: Type{ID: TypeMap, Elems: []Type{{ID: TypeVarchar}, {ID: TypeList, Elems: []Type{{ID: TypeUUID}}}}}},
	}
	mixed := []ColumnSpec{
		{Keyspace: "ks", Table: "a", Name: "x", Type: Type{ID: TypeSet, Elems: []Type{{ID: TypeInet}}}},
		{Keyspace: "ks2", Table: "b", Name: "y", Type: Type{ID: TypeCustom, Custom: "org.apache.cassandra.db.marshal.DurationType"}},
		{Keyspace: "ks2", Table: "b", Name: "z", Type: Type{ID: TypeTuple, Elems: []Type{{ID: TypeInt}, {ID: TypeBlob}}}},
		{Keyspace: "ks2", Table: "b", Name: "u", Type: Type{ID: TypeUDT, Keyspace: "ks2", Name: "addr", Fields: []string{"street", "zip"}, Elems: []Type{{ID: TypeVarchar}, {ID: TypeSmallint}}}},
	}
	return []Message{
		Options{},
		&Startup{Options: map[string]string{"CQL_VERSION": "3.0.0", "COMPRESSION": "lz4", "SCYLLA_RATE_LIMIT_ERROR": ""}},
		&AuthResponse{Token: []byte("\x00user\x00pass")},
		&Register{Events: []string{"TOPOLOGY_CHANGE", "STATUS_CHANGE", "SCHEMA_CHANGE"}},
		&Query{Query: "SELECT * FROM ks.t WHERE k = ?", Params: QueryParams{Consistency: LocalQuorum}},
		&Query{Query: "INSERT INTO t (a, b, c, d) VALUES (?, ?, ?, ?)", Params: QueryParams{
			Consistency: Quorum, Values: []Value{{Bytes: []byte{0, 0, 0, 1}}, {}, {Unset: true}, {Bytes: []byte{}}},
			SkipMetadata: true, PageSize: 5000, PagingState: []byte{0xca, 0xfe},
			SerialConsistency: LocalSerial, Timestamp: 1700000000000000, HasTimestamp: true,
		}},
		&Query{Query: "UPDATE t SET v = :v WHERE k = :k", Params: QueryParams{
			Consistency: One, Names: []string{"v", "k"}, Values: []Value{{Bytes: []byte("x")}, {Bytes: []byte{0, 0, 0, 7}}},
		}},
		&Prepare{Query: "SELECT v FROM ks.t WHERE k = ?"},
		&Execute{ID: []byte{1, 2, 3, 4}, Params: QueryParams{Consistency: One, Values: []Value{{Bytes: []byte{0, 0, 0, 9}}}, PageSize: 100}},
		&Batch{Type: BatchUnlogged, Consistency: Quorum, SerialConsistency: Serial, Timestamp: -5, HasTimestamp: true, Children: []BatchChild{
			{Query: "INSERT INTO t (k) VALUES (1)"},
			{ID: []byte{9, 9}, Values: []Value{{Bytes: []byte("a")}, {}, {Unset: true}}},
		}},
		&Batch{Type: BatchLogged, Consistency: One, Children: []BatchChild{{Query: "DELETE FROM t WHERE k = 1"}}},
		&Error{Code: ErrServer, Message: "boom"},
		&Error{Code: ErrUnavailable, Message: "not enough replicas", Consistency: Quorum, BlockFor: 2, Received: 1},
		&Error{Code: ErrWriteTimeout, Message: "wt", Consistency: One, Received: 0, BlockFor: 1, WriteType: "SIMPLE"},
		&Error{Code: ErrReadTimeout, Message: "rt", Consistency: All, Received: 2, BlockFor: 3, DataPresent: true},
		&Error{Code: ErrReadFailure, Message: "rf", Consistency: Two, Received: 1, BlockFor: 2, NumFailures: 1, DataPresent: true},
		&Error{Code: ErrWriteFailure, Message: "wf", Consistency: Three, Received: 1, BlockFor: 3, NumFailures: 2, WriteType: "BATCH_LOG"},
		&Error{Code: ErrFunctionFailure, Message: "ff", Keyspace: "ks", Function: "f", ArgTypes: []string{"int", "text"}},
		&Error{Code: ErrAlreadyExists, Message: "exists", Keyspace: "ks", Table: "t"},
		&Error{Code: ErrUnprepared, Message: "unknown id", UnpreparedID: []byte{1, 2, 3}},
		&Error{Code: ErrRateLimit, Message: "rate limit reached", RateLimitOp: RateLimitWrite, RejectedByCoordinator: true},
		&Error{Code: ErrRateLimit, Message: "rate limit reached", RateLimitOp: RateLimitRead},
		Ready{},
		&Authenticate{Authenticator: "org.apache.cassandra.auth.PasswordAuthenticator"},
		&Supported{Options: map[string][]string{"CQL_VERSION": {"3.4.5"}, "COMPRESSION": {"lz4", "snappy"}, "SCYLLA_RATE_LIMIT_ERROR": {"ERROR_CODE=61440"}}},
		VoidResult{},
		&RowsResult{Metadata: RowsMetadata{ColumnCount: 3, Columns: cols}, Cells: [][]byte{{0, 0, 0, 1}, []byte("one"), nil, {0, 0, 0, 2}, {}, nil}},
		&RowsResult{Metadata: RowsMetadata{ColumnCount: 4, Columns: mixed, PagingState: []byte{7, 7, 7}}, Cells: [][]byte{{1}, {2}, {3}, {4}}},
		&RowsResult{Metadata: RowsMetadata{ColumnCount: 2, NoMetadata: true}, Cells: [][]byte{{1}, {2}}},
		&RowsResult{Metadata: RowsMetadata{ColumnCount: 3, Columns: cols}},
		&SetKeyspaceResult{Keyspace: "ks"},
		&PreparedResult{ID: []byte{0xde, 0xad}, Bind: cols[:2], PKIndexes: []uint16{0}, Result: RowsMetadata{ColumnCount: 1, Columns: cols[1:2]}},
		&PreparedResult{ID: []byte{1}, Bind: mixed, PKIndexes: []uint16{1, 0}, Result: RowsMetadata{ColumnCount: 0}},
		&SchemaChangeResult{SchemaChange{Change: "CREATED", Target: "KEYSPACE", Keyspace: "ks"}},
		&SchemaChangeResult{SchemaChange{Change: "UPDATED", Target: "TABLE", Keyspace: "ks", Name: "t"}},
		&SchemaChangeResult{SchemaChange{Change: "DROPPED", Target: "FUNCTION", Keyspace: "ks", Name: "f", ArgTypes: []string{"int"}}},
		&Event{Type: "TOPOLOGY_CHANGE", Change: "NEW_NODE", Addr: netip.MustParseAddrPort("127.0.0.2:9042")},
		&Event{Type: "STATUS_CHANGE", Change: "DOWN", Addr: netip.MustParseAddrPort("[::1]:9042")},
		&Event{Type: "SCHEMA_CHANGE", Schema: SchemaChange{Change: "CREATED", Target: "TYPE", Keyspace: "ks", Name: "addr"}},
		&AuthChallenge{Token: []byte("challenge")},
		&AuthSuccess{Token: nil},
	}
}

// roundTrip writes m as a frame and reads it back through a FrameReader.
func roundTrip(t *testing.T, m Message, opt FrameOptions) Frame {
	t.Helper()
	var scratch []byte
	opt.Scratch = &scratch
	wire := AppendFrame(nil, 42, m, opt)
	fr := NewFrameReader(bufio.NewReader(bytes.NewReader(wire)), ReaderOptions{Responses: m.Opcode().IsResponse()})
	fr.SetCompression(opt.Compression)
	h, body, err := fr.ReadFrame()
	if err != nil {
		t.Fatalf("%v: ReadFrame: %v", m.Opcode(), err)
	}
	if h.Stream != 42 || h.Opcode != m.Opcode() {
		t.Fatalf("header = %+v, want stream 42 opcode %v", h, m.Opcode())
	}
	f, err := DecodeFrame(h, body)
	if err != nil {
		t.Fatalf("%v: DecodeFrame: %v", m.Opcode(), err)
	}
	return f
}

func TestRoundTripEveryMessage(t *testing.T) {
	for _, comp := range []Compression{nil, LZ4{}, Snappy{}} {
		name := "none"
		if comp != nil {
			name = comp.Name()
		}
		t.Run(name, func(t *testing.T) {
			for i, m := range testMessages() {
				f := roundTrip(t, m, FrameOptions{Compression: comp})
				if !reflect.DeepEqual(f.Message, m) {
					t.Errorf("message %d %v: decoded\n%#v\nwant\n%#v", i, m.Opcode(), f.Message, m)
				}
			}
		})
	}
}

func TestRoundTripBodyPrefix(t *testing.T) {
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	opt := FrameOptions{TracingID: &id, Warnings: []string{"Aggregation query used without partition key"}, CustomPayload: map[string][]byte{"tablets-routing-v1": {1, 2}}}
	f := roundTrip(t, VoidResult{}, opt)
	if f.Header.Flags != FlagTracing|FlagWarning|FlagCustomPayload {
		t.Errorf("flags = %#x, want tracing|warning|custom payload", f.Header.Flags)
	}
	if f.TracingID == nil || *f.TracingID != id {
		t.Errorf("tracing id = %v, want %v", f.TracingID, id)
	}
	if !reflect.DeepEqual(f.Warnings, opt.Warnings) || !reflect.DeepEqual(f.CustomPayload, opt.CustomPayload) {
		t.Errorf("warnings %q payload %v, want %q %v", f.Warnings, f.CustomPayload, opt.Warnings, opt.CustomPayload)
	}
	// The prefix order is tracing id, warnings, custom payload, as gocql's
	// parseFrame and Cassandra's Message.Codec read it.
	wire := AppendFrame(nil, 0, VoidResult{}, FrameOptions{TracingID: &id, Warnings: []string{"w"}, CustomPayload: map[string][]byte{"k": {9}}})
	want := append(append([]byte{}, id[:]...), 0, 1, 0, 1, 'w', 0, 1, 0, 1, 'k', 0, 0, 0, 1, 9, 0, 0, 0, 1)
	if got := wire[HeaderSize:]; !bytes.Equal(got, want) {
		t.Errorf("body with prefix = % x, want % x", got, want)
	}
	// A request carries a custom payload but never a tracing id or warnings.
	f = roundTrip(t, &Prepare{Query: "SELECT 1"}, opt)
	if f.Header.Flags != FlagCustomPayload || f.TracingID != nil || f.Warnings != nil {
		t.Errorf("request frame flags %#x tracing %v warnings %q, want only a custom payload", f.Header.Flags, f.TracingID, f.Warnings)
	}
}

// TestGoldenBodies checks encodings against byte vectors from
// github.com/datastax/go-cassandra-native-protocol's own tests
// (message/query_test.go and message/error_test.go at commit 605a850e,
// protocol version 4), and a frame header against spec section 2.
func TestGoldenBodies(t *testing.T) {
	tests := []struct {
		name string
		m    Message
		want []byte
	}{
		{"query with default options", &Query{Query: "SELECT"}, []byte{0, 0, 0, 6, 'S', 'E', 'L', 'E', 'C', 'T', 0, 0, 0}},
		{"query with custom options and no values", &Query{Query: "SELECT", Params: QueryParams{
			Consistency: LocalQuorum, SkipMetadata: true, PageSize: 100, PagingState: []byte{0xca, 0xfe, 0xba, 0xbe},
			SerialConsistency: LocalSerial, Timestamp: 123, HasTimestamp: true}},
			[]byte{0, 0, 0, 6, 'S', 'E', 'L', 'E', 'C', 'T', 0, 6, 0b0011_1110, 0, 0, 0, 100,
				0, 0, 0, 4, 0xca, 0xfe, 0xba, 0xbe, 0, 9, 0, 0, 0, 0, 0, 0, 0, 123}},
		{"query with positional values", &Query{Query: "SELECT", Params: QueryParams{Values: []Value{{Bytes: []byte("hello")}, {}, {Unset: true}}}},
			[]byte{0, 0, 0, 6, 'S', 'E', 'L', 'E', 'C', 'T', 0, 0, 0b0000_0001, 0, 3,
				0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}},
		{"query with named values", &Query{Query: "SELECT", Params: QueryParams{Names: []string{"col1"}, Values: []Value{{Bytes: []byte("hello")}}}},
			[]byte{0, 0, 0, 6, 'S', 'E', 'L', 'E', 'C', 'T', 0, 0, 0b0100_0001, 0, 1,
				0, 4, 'c', 'o', 'l', '1', 0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'}},
		{"unavailable", &Error{Code: ErrUnavailable, Message: "BOOM", Consistency: LocalQuorum, BlockFor: 3, Received: 2},
			[]byte{0, 0, 0x10, 0, 0, 4, 'B', 'O', 'O', 'M', 0, 6, 0, 0, 0, 3, 0, 0, 0, 2}},
		{"read timeout", &Error{Code: ErrReadTimeout, Message: "BOOM", Consistency: LocalQuorum, Received: 1, BlockFor: 2, DataPresent: true},
			[]byte{0, 0, 0x12, 0, 0, 4, 'B', 'O', 'O', 'M', 0, 6, 0, 0, 0, 1, 0, 0, 0, 2, 1}},
		{"write timeout", &Error{Code: ErrWriteTimeout, Message: "BOOM", Consistency: LocalQuorum, Received: 1, BlockFor: 2, WriteType: "BATCH_LOG"},
			[]byte{0, 0, 0x11, 0, 0, 4, 'B', 'O', 'O', 'M', 0, 6, 0, 0, 0, 1, 0, 0, 0, 2, 0, 9, 'B', 'A', 'T', 'C', 'H', '_', 'L', 'O', 'G'}},
		// ScyllaDB docs/dev/protocol-extensions.md, "Rate limit error":
		// <code><message><op_type byte><rejected_by_coordinator byte>.
		{"scylla rate limit", &Error{Code: ErrRateLimit, Message: "BOOM", RateLimitOp: RateLimitWrite, RejectedByCoordinator: false},
			[]byte{0, 0, 0xf0, 0, 0, 4, 'B', 'O', 'O', 'M', 1, 0}},
	}
	for _, tt := range tests {
		got := tt.m.AppendBody(nil)
		if !bytes.Equal(got, tt.want) {
			t.Errorf("%s: AppendBody = % x, want % x", tt.name, got, tt.want)
		}
		var dec Message
		var err error
		if tt.m.Opcode().IsResponse() {
			dec, err = DecodeResponse(tt.m.Opcode(), tt.want)
		} else {
			dec, err = DecodeRequest(tt.m.Opcode(), tt.want)
		}
		if err != nil || !reflect.DeepEqual(dec, tt.m) {
			t.Errorf("%s: decode = %#v, %v; want %#v", tt.name, dec, err, tt.m)
		}
	}
	// OPTIONS on stream 1: version 4, no flags, stream 0x0001, opcode 5, length 0.
	if got, want := AppendFrame(nil, 1, Options{}, FrameOptions{}), []byte{0x04, 0, 0, 1, 5, 0, 0, 0, 0}; !bytes.Equal(got, want) {
		t.Errorf("OPTIONS frame = % x, want % x", got, want)
	}
	// READY answering stream 1: the response bit.
	if got, want := AppendFrame(nil, 1, Ready{}, FrameOptions{}), []byte{0x84, 0, 0, 1, 2, 0, 0, 0, 0}; !bytes.Equal(got, want) {
		t.Errorf("READY frame = % x, want % x", got, want)
	}
}

func TestVersionError(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		version byte
		stream  int16
		reply   []byte // header of the reply
	}{
		// A v3 STARTUP on stream 0x0102: answered with a v3 header.
		{"v3", []byte{0x03, 0, 1, 2, 1, 0, 0, 0, 0}, 3, 0x0102, []byte{0x83, 0, 1, 2, 0}},
		// A v5 frame: answered as v4.
		{"v5", []byte{0x05, 0, 0, 7, 5, 0, 0, 0, 0}, 5, 7, []byte{0x84, 0, 0, 7, 0}},
		// A v2 OPTIONS has an 8-byte header and a one-byte stream; the
		// reader must not wait for a ninth byte.
		{"v2", []byte{0x02, 0, 3, 5, 0, 0, 0, 0}, 2, 3, []byte{0x82, 0, 3, 0}},
		// A TLS ClientHello read as CQL.
		{"tls", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0, 0, 0}, 0x16, 0x0102, []byte{0x84, 0, 1, 2, 0}},
	}
	for _, tt := range tests {
		fr := NewFrameReader(bytes.NewReader(tt.in), ReaderOptions{})
		_, _, err := fr.ReadFrame()
		var ve *VersionError
		if !errors.As(err, &ve) || ve.Version != tt.version || ve.Stream != tt.stream {
			t.Errorf("%s: ReadFrame error = %v, want VersionError{%d, %d}", tt.name, err, tt.version, tt.stream)
			continue
		}
		reply := ve.AppendFrame(nil)
		if !bytes.HasPrefix(reply, tt.reply) {
			t.Errorf("%s: reply header = % x, want prefix % x", tt.name, reply, tt.reply)
		}
		body := reply[len(tt.reply)+4:]
		m, err := DecodeResponse(OpError, body)
		if err != nil {
			t.Fatalf("%s: reply body: %v", tt.name, err)
		}
		e := m.(*Error)
		want := "; the lowest supported version is 4 and the greatest is 4"
		if e.Code != ErrProtocol || !strings.HasPrefix(e.Message, "Invalid or unsupported protocol version (") || !strings.HasSuffix(e.Message, want) {
			t.Errorf("%s: reply = %#x %q, want PROTOCOL_ERROR ending %q", tt.name, e.Code, e.Message, want)
		}
	}
	if got, want := VersionErrorMessage(3), "Invalid or unsupported protocol version (3); the lowest supported version is 4 and the greatest is 4"; got != want {
		t.Errorf("VersionErrorMessage(3) = %q, want %q", got, want)
	}
}

func TestHostileFrames(t *testing.T) {
	hdr := func(flags Flags, op Opcode, length uint32) []byte {
		return AppendHeader(nil, Header{Flags: flags, Stream: 5, Opcode: op, Length: length})
	}
	tests := []struct {
		name    string
		in      []byte
		comp    Compression
		wantErr error
	}{
		{"oversized length", append(hdr(0, OpQuery, 1<<31), make([]byte, 10)...), nil, ErrFrameTooLarge},
		{"just over the limit", hdr(0, OpQuery, DefaultMaxFrameSize+1), nil, ErrFrameTooLarge},
		{"unknown opcode", hdr(0, 0x42, 0), nil, ErrUnknownOpcode},
		{"response opcode in a request", hdr(0, OpResult, 0), nil, ErrUnknownOpcode},
		{"response bit on a request", AppendHeader(nil, Header{Response: true, Opcode: OpQuery}), nil, ErrWrongDirection},
		{"truncated header", []byte{0x04, 0, 0}, nil, io.ErrUnexpectedEOF},
		{"truncated after 8 header bytes", []byte{0x04, 0, 0, 1, 7, 0, 0, 0}, nil, io.ErrUnexpectedEOF},
		{"truncated body", append(hdr(0, OpQuery, 100), 1, 2, 3), nil, io.ErrUnexpectedEOF},
		{"compressed without negotiation", append(hdr(FlagCompression, OpQuery, 4), 0, 0, 0, 0), nil, ErrCompression},
		{"lz4 claiming 1 GiB", append(hdr(FlagCompression, OpQuery, 8), 0x40, 0, 0, 0, 1, 2, 3, 4), LZ4{}, ErrFrameTooLarge},
		{"lz4 claiming more than it can expand to", append(hdr(FlagCompression, OpQuery, 8), 0, 0x10, 0, 0, 1, 2, 3, 4), LZ4{}, ErrCompression},
		{"lz4 garbage", append(hdr(FlagCompression, OpQuery, 8), 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff), LZ4{}, ErrCompression},
		{"snappy claiming 1 GiB", append(hdr(FlagCompression, OpQuery, 6), 0x80, 0x80, 0x80, 0x80, 0x04, 0), Snappy{}, ErrFrameTooLarge},
		{"snappy garbage", append(hdr(FlagCompression, OpQuery, 3), 0x10, 0xff, 0xff), Snappy{}, ErrCompression},
	}
	for _, tt := range tests {
		fr := NewFrameReader(bytes.NewReader(tt.in), ReaderOptions{})
		fr.SetCompression(tt.comp)
		_, _, err := fr.ReadFrame()
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: ReadFrame error = %v, want %v", tt.name, err, tt.wantErr)
			continue
		}
		var pe *ProtocolError
		if tt.wantErr == io.ErrUnexpectedEOF {
			continue
		}
		if !errors.As(err, &pe) || pe.Stream != 5 && tt.name != "response bit on a request" {
			t.Errorf("%s: error %v is not a ProtocolError on stream 5", tt.name, err)
			continue
		}
		// The answer is an ERROR 0x000A on the same stream.
		reply := pe.AppendFrame(nil)
		rf := NewFrameReader(bytes.NewReader(reply), ReaderOptions{Responses: true})
		h, body, rerr := rf.ReadFrame()
		if rerr != nil {
			t.Fatalf("%s: reply does not read back: %v", tt.name, rerr)
		}
		f, rerr := DecodeFrame(h, body)
		if rerr != nil || h.Stream != pe.Stream || f.Message.(*Error).Code != ErrProtocol || f.Message.(*Error).Message != err.Error() {
			t.Errorf("%s: reply = %+v %#v, %v; want ERROR 0x000A %q on stream %d", tt.name, h, f.Message, rerr, err.Error(), pe.Stream)
		}
	}
}

func TestHostileBodies(t *testing.T) {
	tests := []struct {
		name string
		op   Opcode
		body []byte
		want string
	}{
		{"empty QUERY", OpQuery, nil, "truncated"},
		{"query string longer than body", OpQuery, []byte{0, 0, 1, 0, 'x'}, "truncated"},
		{"negative query length", OpQuery, []byte{0xff, 0xff, 0xff, 0xf0}, "negative"},
		{"65535 values claimed", OpQuery, []byte{0, 0, 0, 0, 0, 1, 1, 0xff, 0xff, 0, 0, 0, 1}, "65535 elements claimed"},
		{"value length -3", OpQuery, []byte{0, 0, 0, 0, 0, 1, 1, 0, 1, 0xff, 0xff, 0xff, 0xfd}, "invalid [value] length -3"},
		{"unknown query flag", OpQuery, []byte{0, 0, 0, 0, 0, 1, 0x80}, "unknown query flags"},
		{"trailing bytes", OpOptions, []byte{1}, "trailing"},
		{"unknown batch type", OpBatch, []byte{7, 0, 0, 0, 1, 0}, "unknown batch type 7"},
		{"batch child kind 2", OpBatch, []byte{0, 0, 1, 2, 0, 0, 0, 0, 0, 1, 0}, "unknown kind 2"},
		{"batch with names", OpBatch, []byte{0, 0, 0, 0, 1, 0x40}, "named values"},
		{"startup map claims 1000 pairs", OpStartup, []byte{0x03, 0xe8, 0, 1, 'a', 0, 1, 'b'}, "1000 elements claimed"},
	}
	for _, tt := range tests {
		_, err := DecodeRequest(tt.op, tt.body)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DecodeRequest(%v, % x) error = %v, want one containing %q", tt.op, tt.body, err, tt.want)
		}
	}
	resp := []struct {
		name string
		op   Opcode
		body []byte
		want string
	}{
		{"rows claiming 2^31 rows", OpResult, []byte{0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff}, "2147483647 rows of 1 columns claimed"},
		{"unknown result kind", OpResult, []byte{0, 0, 0, 9}, "unknown result kind 9"},
		{"unknown type id", OpResult, []byte{0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 'k', 0, 1, 't', 0, 1, 'c', 0x77, 0x77, 0, 0, 0, 0}, "unknown type id 0x7777"},
		{"inet of 5 bytes", OpEvent, append(append([]byte{0, 13}, "STATUS_CHANGE"...), 0, 2, 'U', 'P', 5), "address length 5"},
	}
	for _, tt := range resp {
		_, err := DecodeResponse(tt.op, tt.body)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: DecodeResponse error = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	// A list nested 1000 deep is refused, not recursed into.
	deep := []byte{0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 'k', 0, 1, 't', 0, 1, 'c'}
	for range 1000 {
		deep = append(deep, 0, 0x20)
	}
	deep = append(deep, 0, 9, 0, 0, 0, 0)
	if _, err := DecodeResponse(OpResult, deep); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("1000-deep list type: error = %v, want a nesting error", err)
	}
}

// TestClaimedSizeIsNotAllocated checks that a frame claiming a large body
// costs memory only for the bytes that arrive.
func TestClaimedSizeIsNotAllocated(t *testing.T) {
	// Over the limit: refused before any allocation.
	in := append(AppendHeader(nil, Header{Opcode: OpQuery, Length: 2 << 30}), make([]byte, 10)...)
	rd := bytes.NewReader(in)
	fr := NewFrameReader(rd, ReaderOptions{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		rd.Reset(in)
		if _, _, err := fr.ReadFrame(); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("ReadFrame = %v, want ErrFrameTooLarge", err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 100; per > 1024 {
		t.Errorf("a frame claiming 2 GiB cost %d bytes of allocation, want at most 1 KiB (the error)", per)
	}
	// Within the limit (15 MiB) but only 10 bytes sent: the buffer grows
	// with what arrives, not to the claim.
	in = append(AppendHeader(nil, Header{Opcode: OpQuery, Length: 15 << 20}), make([]byte, 10)...)
	fr = NewFrameReader(bytes.NewReader(in), ReaderOptions{})
	if _, _, err := fr.ReadFrame(); err != io.ErrUnexpectedEOF {
		t.Fatalf("ReadFrame = %v, want io.ErrUnexpectedEOF", err)
	}
	if c := cap(fr.buf); c > 2*growChunk {
		t.Errorf("after 10 bytes of a 15 MiB frame the body buffer holds %d bytes, want at most %d", c, 2*growChunk)
	}
}

// TestEncodeDoesNotAllocate checks that answering with a reused buffer
// allocates nothing.
func TestEncodeDoesNotAllocate(t *testing.T) {
	rows := benchRows()
	buf := AppendFrame(nil, 1, rows, FrameOptions{})
	allocs := testing.AllocsPerRun(100, func() {
		buf = AppendFrame(buf[:0], 1, rows, FrameOptions{})
	})
	if allocs != 0 {
		t.Errorf("AppendFrame of a Rows result into a reused buffer: %v allocations, want 0", allocs)
	}
	var scratch []byte
	opt := FrameOptions{Compression: LZ4{}, Scratch: &scratch}
	buf = AppendFrame(buf[:0], 1, rows, opt)
	allocs = testing.AllocsPerRun(100, func() {
		buf = AppendFrame(buf[:0], 1, rows, opt)
	})
	if allocs != 0 {
		t.Errorf("lz4 AppendFrame into reused buffers: %v allocations, want 0", allocs)
	}
}

// TestReaderReusesBuffers checks that reading a stream of frames reuses the
// reader's buffers.
func TestReaderReusesBuffers(t *testing.T) {
	q := benchQuery()
	one := AppendFrame(nil, 3, q, FrameOptions{})
	in := bytes.Repeat(one, 200)
	rd := bytes.NewReader(in)
	fr := NewFrameReader(rd, ReaderOptions{})
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := fr.ReadFrame(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadFrame of same-sized frames: %v allocations, want 0", allocs)
	}
}

// TestEveryTruncationFails cuts every message body at every length short of
// its end: each cut must fail to decode with an error, never panic or
// succeed.
func TestEveryTruncationFails(t *testing.T) {
	for _, m := range testMessages() {
		body := m.AppendBody(nil)
		for n := range len(body) {
			var err error
			if m.Opcode().IsResponse() {
				_, err = DecodeResponse(m.Opcode(), body[:n])
			} else {
				_, err = DecodeRequest(m.Opcode(), body[:n])
			}
			if err == nil {
				t.Errorf("%v body cut to %d of %d bytes decoded without error", m.Opcode(), n, len(body))
			}
		}
	}
}

// TestStartupOptionsBounded checks that a STARTUP with more than MaxStartupOptions options is
// refused naming the bound, and that one with MaxStartupOptions decodes.
func TestStartupOptionsBounded(t *testing.T) {
	opts := func(n int) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m[fmt.Sprintf("OPTION_%d", i)] = "x"
		}
		return m
	}
	body := (&Startup{Options: opts(MaxStartupOptions)}).AppendBody(nil)
	m, err := DecodeRequest(OpStartup, body)
	if err != nil || len(m.(*Startup).Options) != MaxStartupOptions {
		t.Fatalf("STARTUP with %d options: %v, %v; want it decoded", MaxStartupOptions, m, err)
	}
	body = (&Startup{Options: opts(MaxStartupOptions + 1)}).AppendBody(nil)
	want := fmt.Sprintf("STARTUP options: %d entries, at most %d are accepted", MaxStartupOptions+1, MaxStartupOptions)
	if _, err := DecodeRequest(OpStartup, body); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("STARTUP with %d options: error %v, want one saying %q", MaxStartupOptions+1, err, want)
	}
}

// TestSetMaxFrameSize checks that a reader's bound changes from the next frame on: a frame
// over the lowered bound is refused from its header alone, before its body is read.
func TestSetMaxFrameSize(t *testing.T) {
	var in bytes.Buffer
	in.Write(AppendFrame(nil, 1, &Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}, FrameOptions{}))
	in.Write(AppendHeader(nil, Header{Stream: 2, Opcode: OpQuery, Length: 1 << 20})) // no body follows
	fr := NewFrameReader(&in, ReaderOptions{})
	fr.SetMaxFrameSize(64 << 10)
	if _, _, err := fr.ReadFrame(); err != nil {
		t.Fatalf("a small frame under a 64 KiB bound: %v", err)
	}
	_, _, err := fr.ReadFrame()
	if !errors.Is(err, ErrFrameTooLarge) || !strings.Contains(err.Error(), "limit of 65536") {
		t.Fatalf("a 1 MiB frame under a 64 KiB bound: error %v, want ErrFrameTooLarge naming the limit", err)
	}
}
