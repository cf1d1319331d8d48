package grpcapi

import (
	"encoding/binary"
	"math/big"
	"net/netip"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/schema"
)

func TestColumnTypeCoversEveryType(t *testing.T) {
	for _, typ := range schema.Types() {
		ct := ColumnType(typ)
		if ct == kvnodepb.ColumnType_COLUMN_TYPE_UNSPECIFIED {
			t.Errorf("ColumnType(%v) = UNSPECIFIED, want its own column type", typ)
			continue
		}
		// The client API names each type as CQL does (collections spelled with underscores).
		want := strings.NewReplacer("<", "_", ", ", "_", ">", "").Replace(typ.String())
		if got := strings.ToLower(strings.TrimPrefix(ct.String(), "COLUMN_TYPE_")); got != want {
			t.Errorf("ColumnType(%v) = %v, want COLUMN_TYPE_%s", typ, ct, strings.ToUpper(want))
		}
	}
}

func TestValueOfNewTypes(t *testing.T) {
	u, _ := schema.ParseUUID("123e4567-e89b-42d3-a456-426614174000")
	tu := schema.MakeTimeUUID(time.Unix(1700000000, 0), 7, 0x0102030405)
	d, _ := schema.ParseDecimal("-1.50")
	tod, _ := schema.EncodeTime(time.Hour + 500*time.Millisecond)
	tests := []struct {
		typ  schema.Type
		b    []byte
		want *kvnodepb.Value
	}{
		{schema.TypeASCII, []byte("hi"), &kvnodepb.Value{Kind: &kvnodepb.Value_Ascii{Ascii: "hi"}}},
		{schema.TypeFloat, schema.EncodeFloat(-1.25), &kvnodepb.Value{Kind: &kvnodepb.Value_Float{Float: -1.25}}},
		{schema.TypeSmallInt, schema.EncodeSmallInt(-32768), &kvnodepb.Value{Kind: &kvnodepb.Value_Smallint{Smallint: -32768}}},
		{schema.TypeTinyInt, schema.EncodeTinyInt(-128), &kvnodepb.Value{Kind: &kvnodepb.Value_Tinyint{Tinyint: -128}}},
		{schema.TypeUUID, schema.EncodeUUID(u), &kvnodepb.Value{Kind: &kvnodepb.Value_Uuid{Uuid: "123e4567-e89b-42d3-a456-426614174000"}}},
		{schema.TypeTimeUUID, schema.EncodeUUID(tu), &kvnodepb.Value{Kind: &kvnodepb.Value_Timeuuid{Timeuuid: tu.String()}}},
		{schema.TypeInet, schema.EncodeInet(netip.MustParseAddr("2001:db8::1")), &kvnodepb.Value{Kind: &kvnodepb.Value_Inet{Inet: "2001:db8::1"}}},
		{schema.TypeInet, []byte{192, 0, 2, 1}, &kvnodepb.Value{Kind: &kvnodepb.Value_Inet{Inet: "192.0.2.1"}}},
		{schema.TypeDate, schema.EncodeDate(-1), &kvnodepb.Value{Kind: &kvnodepb.Value_Date{Date: -1}}},
		{schema.TypeDate, schema.EncodeDate(schema.MaxDate), &kvnodepb.Value{Kind: &kvnodepb.Value_Date{Date: 1<<31 - 1}}},
		{schema.TypeTime, tod, &kvnodepb.Value{Kind: &kvnodepb.Value_Time{Time: int64(time.Hour + 500*time.Millisecond)}}},
		{schema.TypeDecimal, schema.EncodeDecimal(d), &kvnodepb.Value{Kind: &kvnodepb.Value_Decimal{Decimal: "-1.50"}}},
		{schema.TypeVarint, schema.EncodeVarint(new(big.Int).Lsh(big.NewInt(-1), 100)), &kvnodepb.Value{Kind: &kvnodepb.Value_Varint{Varint: "-1267650600228229401496703205376"}}},
		{schema.TypeSetText, schema.EncodeSetText([]string{"b", "a"}), &kvnodepb.Value{Kind: &kvnodepb.Value_SetText{SetText: &kvnodepb.TextList{Values: []string{"a", "b"}}}}},
		{schema.TypeListText, schema.EncodeListText([]string{"b", "a"}), &kvnodepb.Value{Kind: &kvnodepb.Value_ListText{ListText: &kvnodepb.TextList{Values: []string{"b", "a"}}}}},
		{schema.TypeMapTextText, schema.EncodeMapTextText(map[string]string{"k": "v"}), &kvnodepb.Value{Kind: &kvnodepb.Value_MapTextText{MapTextText: &kvnodepb.TextMap{Entries: map[string]string{"k": "v"}}}}},
		{schema.TypeMapTextBlob, schema.EncodeMapTextBlob(map[string][]byte{"k": {1}}), &kvnodepb.Value{Kind: &kvnodepb.Value_MapTextBlob{MapTextBlob: &kvnodepb.BlobMap{Entries: map[string][]byte{"k": {1}}}}}},
		{schema.TypeDuration, schema.EncodeDuration(schema.Duration{Months: -1, Days: -2, Nanoseconds: -3}), &kvnodepb.Value{Kind: &kvnodepb.Value_Duration{Duration: &kvnodepb.Duration{Months: -1, Days: -2, Nanoseconds: -3}}}},
		{schema.TypeUUID, nil, &kvnodepb.Value{}},
	}
	for _, tt := range tests {
		got, err := Value(tt.typ, tt.b)
		if err != nil || !proto.Equal(got, tt.want) {
			t.Errorf("Value(%v, %x) = %v, %v; want %v", tt.typ, tt.b, got, err, tt.want)
		}
	}
	// Frozen collections and tuples nest values of their element types.
	tup, _ := schema.LookupType("tuple<int, frozen<map<text, frozen<set<int>>>>>")
	elem := func(b, e []byte) []byte {
		if e == nil {
			return binary.BigEndian.AppendUint32(b, ^uint32(0))
		}
		return append(binary.BigEndian.AppendUint32(b, uint32(len(e))), e...)
	}
	set := elem(elem(binary.BigEndian.AppendUint32(nil, 2), schema.EncodeInt(1)), schema.EncodeInt(2))
	m := elem(elem(binary.BigEndian.AppendUint32(nil, 1), []byte("k")), set)
	i32 := func(n int32) *kvnodepb.Value { return &kvnodepb.Value{Kind: &kvnodepb.Value_Int{Int: n}} }
	wantSet := &kvnodepb.Value{Kind: &kvnodepb.Value_Set{Set: &kvnodepb.Values{Values: []*kvnodepb.Value{i32(1), i32(2)}}}}
	wantMap := &kvnodepb.Value{Kind: &kvnodepb.Value_Map{Map: &kvnodepb.MapEntries{Entries: []*kvnodepb.MapEntry{{Key: &kvnodepb.Value{Kind: &kvnodepb.Value_Text{Text: "k"}}, Value: wantSet}}}}}
	for _, tt := range []struct {
		b    []byte
		want *kvnodepb.Value
	}{
		{elem(elem(nil, nil), m), &kvnodepb.Value{Kind: &kvnodepb.Value_Tuple{Tuple: &kvnodepb.Values{Values: []*kvnodepb.Value{{}, wantMap}}}}},
		{elem(elem(nil, schema.EncodeInt(7)), nil), &kvnodepb.Value{Kind: &kvnodepb.Value_Tuple{Tuple: &kvnodepb.Values{Values: []*kvnodepb.Value{i32(7), {}}}}}},
	} {
		got, err := Value(tup, tt.b)
		if err != nil || !proto.Equal(got, tt.want) {
			t.Errorf("Value(%v, %x) = %v, %v; want %v", tup, tt.b, got, err, tt.want)
		}
	}
	if ct := ColumnType(tup); ct != kvnodepb.ColumnType_COLUMN_TYPE_TUPLE {
		t.Errorf("ColumnType(%v) = %v", tup, ct)
	}
	// A non-frozen collection's values are its frozen collection's.
	nonFrozen, _ := schema.LookupType("set<int>")
	if got, err := Value(nonFrozen, set); err != nil || !proto.Equal(got, wantSet) || ColumnType(nonFrozen) != kvnodepb.ColumnType_COLUMN_TYPE_SET {
		t.Errorf("Value(%v, %x) = %v, %v (column type %v); want %v, SET", nonFrozen, set, got, err, ColumnType(nonFrozen), wantSet)
	}
	for _, bad := range []struct {
		typ schema.Type
		b   []byte
	}{{tup, elem(nil, nil)}, {schema.TypeTimeUUID, schema.EncodeUUID(u)}, {schema.TypeVarint, []byte{0, 1}}, {schema.TypeInet, []byte{1}}, {schema.TypeTime, schema.EncodeBigInt(-1)}, {schema.TypeDuration, []byte{2, 1, 0}}} {
		if got, err := Value(bad.typ, bad.b); err == nil {
			t.Errorf("Value(%v, %x) = %v, want an error", bad.typ, bad.b, got)
		}
	}
}

func TestValueOfUserType(t *testing.T) {
	frozen, err := schema.UserTypeOf("ks", "addr", []string{"street", "zip", "tags"}, []schema.Type{schema.TypeText, schema.TypeInt, schema.TypeSetText})
	if err != nil {
		t.Fatal(err)
	}
	field := func(b, e []byte) []byte {
		if e == nil {
			return binary.BigEndian.AppendUint32(b, ^uint32(0))
		}
		return append(binary.BigEndian.AppendUint32(b, uint32(len(e))), e...)
	}
	text := func(s string) *kvnodepb.Value { return &kvnodepb.Value{Kind: &kvnodepb.Value_Text{Text: s}} }
	udt := func(street, zip, tags *kvnodepb.Value) *kvnodepb.Value {
		return &kvnodepb.Value{Kind: &kvnodepb.Value_Udt{Udt: &kvnodepb.UserTypeValue{Fields: []*kvnodepb.UserTypeField{
			{Name: "street", Value: street}, {Name: "zip", Value: zip}, {Name: "tags", Value: tags},
		}}}}
	}
	tags := &kvnodepb.Value{Kind: &kvnodepb.Value_Set{Set: &kvnodepb.Values{Values: []*kvnodepb.Value{text("a")}}}}
	for _, tt := range []struct {
		b    []byte
		want *kvnodepb.Value
	}{
		{field(field(field(nil, []byte("Main")), schema.EncodeInt(7)), schema.EncodeSetText([]string{"a"})),
			udt(text("Main"), &kvnodepb.Value{Kind: &kvnodepb.Value_Int{Int: 7}}, tags)},
		// Null fields, and fields missing from the end (a value written before ALTER TYPE ADD).
		{[]byte{}, udt(&kvnodepb.Value{}, &kvnodepb.Value{}, &kvnodepb.Value{})},
		{field(nil, []byte("x")), udt(text("x"), &kvnodepb.Value{}, &kvnodepb.Value{})},
		{field(field(nil, nil), schema.EncodeInt(1)), udt(&kvnodepb.Value{}, &kvnodepb.Value{Kind: &kvnodepb.Value_Int{Int: 1}}, &kvnodepb.Value{})},
	} {
		got, err := Value(frozen, tt.b)
		if err != nil || !proto.Equal(got, tt.want) {
			t.Errorf("Value(%v, %x) = %v, %v; want %v", frozen, tt.b, got, err, tt.want)
		}
	}
	if ct := ColumnType(frozen); ct != kvnodepb.ColumnType_COLUMN_TYPE_UDT {
		t.Errorf("ColumnType(%v) = %v, want UDT", frozen, ct)
	}
	// A field's bytes that do not fit its type are an error naming the field.
	if got, err := Value(frozen, field(field(nil, []byte("x")), []byte{1})); err == nil || !strings.Contains(err.Error(), "zip") {
		t.Errorf("Value with a 1-byte int field = %v, %v; want an error naming zip", got, err)
	}
}
