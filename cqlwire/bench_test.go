package cqlwire

import (
	"bytes"
	"testing"
)

// The representative frames of the comparison in docs/cql-protocol.md: a
// QUERY with three bound values, a Rows result of 10 rows of 3 columns, and
// a WriteTimeout ERROR. cmd in cqlwire/benchcmp encodes the same frames with
// github.com/datastax/go-cassandra-native-protocol.

func benchQuery() *Query {
	return &Query{
		Query: "INSERT INTO ks.users (id, name, age) VALUES (?, ?, ?)",
		Params: QueryParams{
			Consistency: LocalQuorum,
			Values: []Value{
				{Bytes: []byte{0x55, 0x0e, 0x84, 0x00, 0xe2, 0x9b, 0x41, 0xd4, 0xa7, 0x16, 0x44, 0x66, 0x55, 0x44, 0x00, 0x00}},
				{Bytes: []byte("Ada Lovelace")},
				{Bytes: []byte{0, 0, 0, 36}},
			},
			HasTimestamp: true, Timestamp: 1700000000000000,
		},
	}
}

func benchRows() *RowsResult {
	m := &RowsResult{Metadata: RowsMetadata{ColumnCount: 3, Columns: []ColumnSpec{
		{Keyspace: "ks", Table: "users", Name: "id", Type: Type{ID: TypeUUID}},
		{Keyspace: "ks", Table: "users", Name: "name", Type: Type{ID: TypeVarchar}},
		{Keyspace: "ks", Table: "users", Name: "age", Type: Type{ID: TypeInt}},
	}}}
	for i := range 10 {
		m.Cells = append(m.Cells,
			[]byte{0x55, 0x0e, 0x84, 0x00, 0xe2, 0x9b, 0x41, 0xd4, 0xa7, 0x16, 0x44, 0x66, 0x55, 0x44, 0x00, byte(i)},
			[]byte("user name number "+string(rune('a'+i))),
			[]byte{0, 0, 0, byte(20 + i)})
	}
	return m
}

func benchError() *Error {
	return &Error{Code: ErrWriteTimeout, Message: "Operation timed out - received only 1 responses.", Consistency: Quorum, Received: 1, BlockFor: 2, WriteType: "SIMPLE"}
}

func benchEncode(b *testing.B, m Message) {
	buf := AppendFrame(nil, 1, m, FrameOptions{})
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFrame(buf[:0], 1, m, FrameOptions{})
	}
}

func benchDecode(b *testing.B, m Message) {
	wire := AppendFrame(nil, 1, m, FrameOptions{})
	rd := bytes.NewReader(wire)
	fr := NewFrameReader(rd, ReaderOptions{Responses: m.Opcode().IsResponse()})
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(wire)
		h, body, err := fr.ReadFrame()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeFrame(h, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeQuery(b *testing.B) { benchEncode(b, benchQuery()) }
func BenchmarkEncodeRows(b *testing.B)  { benchEncode(b, benchRows()) }
func BenchmarkEncodeError(b *testing.B) { benchEncode(b, benchError()) }
func BenchmarkDecodeQuery(b *testing.B) { benchDecode(b, benchQuery()) }
func BenchmarkDecodeRows(b *testing.B)  { benchDecode(b, benchRows()) }
func BenchmarkDecodeError(b *testing.B) { benchDecode(b, benchError()) }
