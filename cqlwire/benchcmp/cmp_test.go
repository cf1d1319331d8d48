package benchcmp

import (
	"bytes"
	"testing"

	"github.com/datastax/go-cassandra-native-protocol/datatype"
	dsframe "github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"

	"github.com/kvnode/kvnode/cqlwire"
)

var uuid = []byte{0x55, 0x0e, 0x84, 0x00, 0xe2, 0x9b, 0x41, 0xd4, 0xa7, 0x16, 0x44, 0x66, 0x55, 0x44, 0x00, 0x00}

// The three representative frames, once per codec.

func kvQuery() cqlwire.Message {
	return &cqlwire.Query{
		Query: "INSERT INTO ks.users (id, name, age) VALUES (?, ?, ?)",
		Params: cqlwire.QueryParams{
			Consistency:  cqlwire.LocalQuorum,
			Values:       []cqlwire.Value{{Bytes: uuid}, {Bytes: []byte("Ada Lovelace")}, {Bytes: []byte{0, 0, 0, 36}}},
			HasTimestamp: true, Timestamp: 1700000000000000,
		},
	}
}

func dsQuery() message.Message {
	ts := int64(1700000000000000)
	return &message.Query{
		Query: "INSERT INTO ks.users (id, name, age) VALUES (?, ?, ?)",
		Options: &message.QueryOptions{
			Consistency: primitive.ConsistencyLevelLocalQuorum,
			PositionalValues: []*primitive.Value{
				primitive.NewValue(uuid), primitive.NewValue([]byte("Ada Lovelace")), primitive.NewValue([]byte{0, 0, 0, 36}),
			},
			DefaultTimestamp: &ts,
		},
	}
}

func rowCells(i int) [][]byte {
	id := append([]byte(nil), uuid...)
	id[15] = byte(i)
	return [][]byte{id, []byte("user name number " + string(rune('a'+i))), {0, 0, 0, byte(20 + i)}}
}

func kvRows() cqlwire.Message {
	m := &cqlwire.RowsResult{Metadata: cqlwire.RowsMetadata{ColumnCount: 3, Columns: []cqlwire.ColumnSpec{
		{Keyspace: "ks", Table: "users", Name: "id", Type: cqlwire.Type{ID: cqlwire.TypeUUID}},
		{Keyspace: "ks", Table: "users", Name: "name", Type: cqlwire.Type{ID: cqlwire.TypeVarchar}},
		{Keyspace: "ks", Table: "users", Name: "age", Type: cqlwire.Type{ID: cqlwire.TypeInt}},
	}}}
	for i := range 10 {
		m.Cells = append(m.Cells, rowCells(i)...)
	}
	return m
}

func dsRows() message.Message {
	m := &message.RowsResult{Metadata: &message.RowsMetadata{ColumnCount: 3, Columns: []*message.ColumnMetadata{
		{Keyspace: "ks", Table: "users", Name: "id", Index: 0, Type: datatype.Uuid},
		{Keyspace: "ks", Table: "users", Name: "name", Index: 1, Type: datatype.Varchar},
		{Keyspace: "ks", Table: "users", Name: "age", Index: 2, Type: datatype.Int},
	}}}
	for i := range 10 {
		m.Data = append(m.Data, rowCells(i))
	}
	return m
}

const timeoutMsg = "Operation timed out - received only 1 responses."

func kvError() cqlwire.Message {
	return &cqlwire.Error{Code: cqlwire.ErrWriteTimeout, Message: timeoutMsg, Consistency: cqlwire.Quorum, Received: 1, BlockFor: 2, WriteType: "SIMPLE"}
}

func dsError() message.Message {
	return &message.WriteTimeout{ErrorMessage: timeoutMsg, Consistency: primitive.ConsistencyLevelQuorum, Received: 1, BlockFor: 2, WriteType: primitive.WriteTypeSimple}
}

var cases = []struct {
	name string
	kv   func() cqlwire.Message
	ds   func() message.Message
}{
	{"Query3Values", kvQuery, dsQuery},
	{"Rows10x3", kvRows, dsRows},
	{"ErrorWriteTimeout", kvError, dsError},
}

func dsEncode(t testing.TB, codec dsframe.Codec, m message.Message) []byte {
	var buf bytes.Buffer
	if err := codec.EncodeFrame(dsframe.NewFrame(primitive.ProtocolVersion4, 1, m), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSameBytes checks cqlwire's encoding against the library's, byte for
// byte, and that each decodes the other's frames.
func TestSameBytes(t *testing.T) {
	codec := dsframe.NewCodec()
	for _, c := range cases {
		kv := cqlwire.AppendFrame(nil, 1, c.kv(), cqlwire.FrameOptions{})
		ds := dsEncode(t, codec, c.ds())
		if !bytes.Equal(kv, ds) {
			t.Errorf("%s: cqlwire encodes\n% x\nthe library\n% x", c.name, kv, ds)
		}
		fr := cqlwire.NewFrameReader(bytes.NewReader(ds), cqlwire.ReaderOptions{Responses: c.kv().Opcode().IsResponse()})
		h, body, err := fr.ReadFrame()
		if err == nil {
			_, err = cqlwire.DecodeFrame(h, body)
		}
		if err != nil {
			t.Errorf("%s: cqlwire cannot decode the library's frame: %v", c.name, err)
		}
		if _, err := codec.DecodeFrame(bytes.NewReader(kv)); err != nil {
			t.Errorf("%s: the library cannot decode cqlwire's frame: %v", c.name, err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, c := range cases {
		b.Run(c.name+"/cqlwire", func(b *testing.B) {
			m := c.kv()
			buf := cqlwire.AppendFrame(nil, 1, m, cqlwire.FrameOptions{})
			b.ReportAllocs()
			for b.Loop() {
				buf = cqlwire.AppendFrame(buf[:0], 1, m, cqlwire.FrameOptions{})
			}
		})
		b.Run(c.name+"/datastax", func(b *testing.B) {
			codec := dsframe.NewCodec()
			m := c.ds()
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				// A frame per response, as a server builds one.
				if err := codec.EncodeFrame(dsframe.NewFrame(primitive.ProtocolVersion4, 1, m), &buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, c := range cases {
		wire := cqlwire.AppendFrame(nil, 1, c.kv(), cqlwire.FrameOptions{})
		b.Run(c.name+"/cqlwire", func(b *testing.B) {
			rd := bytes.NewReader(wire)
			fr := cqlwire.NewFrameReader(rd, cqlwire.ReaderOptions{Responses: c.kv().Opcode().IsResponse()})
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(wire)
				h, body, err := fr.ReadFrame()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := cqlwire.DecodeFrame(h, body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/datastax", func(b *testing.B) {
			codec := dsframe.NewCodec()
			rd := bytes.NewReader(wire)
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(wire)
				if _, err := codec.DecodeFrame(rd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
