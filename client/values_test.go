package client

import (
	"context"
	"math/big"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/kvnode/kvnode/proto/kvnodepb"
)

func TestExecuteDecodesNewTypes(t *testing.T) {
	fake, c := startFake(t)
	cols := []*kvnodepb.Column{
		{Name: "a", Type: kvnodepb.ColumnType_COLUMN_TYPE_ASCII},
		{Name: "f", Type: kvnodepb.ColumnType_COLUMN_TYPE_FLOAT},
		{Name: "s", Type: kvnodepb.ColumnType_COLUMN_TYPE_SMALLINT},
		{Name: "y", Type: kvnodepb.ColumnType_COLUMN_TYPE_TINYINT},
		{Name: "u", Type: kvnodepb.ColumnType_COLUMN_TYPE_UUID},
		{Name: "tu", Type: kvnodepb.ColumnType_COLUMN_TYPE_TIMEUUID},
		{Name: "ip", Type: kvnodepb.ColumnType_COLUMN_TYPE_INET},
		{Name: "d", Type: kvnodepb.ColumnType_COLUMN_TYPE_DATE},
		{Name: "tm", Type: kvnodepb.ColumnType_COLUMN_TYPE_TIME},
		{Name: "dec", Type: kvnodepb.ColumnType_COLUMN_TYPE_DECIMAL},
		{Name: "v", Type: kvnodepb.ColumnType_COLUMN_TYPE_VARINT},
		{Name: "st", Type: kvnodepb.ColumnType_COLUMN_TYPE_SET_TEXT},
		{Name: "lt", Type: kvnodepb.ColumnType_COLUMN_TYPE_LIST_TEXT},
		{Name: "mt", Type: kvnodepb.ColumnType_COLUMN_TYPE_MAP_TEXT_TEXT},
		{Name: "mb", Type: kvnodepb.ColumnType_COLUMN_TYPE_MAP_TEXT_BLOB},
	}
	fake.set(&kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_Rows{Rows: &kvnodepb.Rows{
		Columns: cols,
		Rows: []*kvnodepb.Row{{Values: []*kvnodepb.Value{
			{Kind: &kvnodepb.Value_Ascii{Ascii: "abc"}},
			{Kind: &kvnodepb.Value_Float{Float: 1.5}},
			{Kind: &kvnodepb.Value_Smallint{Smallint: -300}},
			{Kind: &kvnodepb.Value_Tinyint{Tinyint: 127}},
			{Kind: &kvnodepb.Value_Uuid{Uuid: "123e4567-e89b-42d3-a456-426614174000"}},
			{Kind: &kvnodepb.Value_Timeuuid{Timeuuid: "6ba7b810-9dad-11d1-80b4-00c04fd430c8"}},
			{Kind: &kvnodepb.Value_Inet{Inet: "::1"}},
			{Kind: &kvnodepb.Value_Date{Date: 19782}},
			{Kind: &kvnodepb.Value_Time{Time: int64(time.Hour)}},
			{Kind: &kvnodepb.Value_Decimal{Decimal: "-1.2E+10"}},
			{Kind: &kvnodepb.Value_Varint{Varint: "-123456789012345678901234567890"}},
			{Kind: &kvnodepb.Value_SetText{SetText: &kvnodepb.TextList{Values: []string{"a", "b"}}}},
			{Kind: &kvnodepb.Value_ListText{ListText: &kvnodepb.TextList{Values: []string{"b", "a"}}}},
			{Kind: &kvnodepb.Value_MapTextText{MapTextText: &kvnodepb.TextMap{Entries: map[string]string{"k": "v"}}}},
			{Kind: &kvnodepb.Value_MapTextBlob{MapTextBlob: &kvnodepb.BlobMap{Entries: map[string][]byte{"k": {1}}}}},
		}}},
	}}}, nil)
	gotCols, rows, err := c.Query(context.Background(), One, "SELECT * FROM ks.t")
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []string{"ascii", "float", "smallint", "tinyint", "uuid", "timeuuid", "inet", "date", "time", "decimal", "varint", "set<text>", "list<text>", "map<text, text>", "map<text, blob>"}
	for i, col := range gotCols {
		if col.Type != wantTypes[i] {
			t.Errorf("column %s has type %q, want %q", col.Name, col.Type, wantTypes[i])
		}
	}
	vi, _ := new(big.Int).SetString("-123456789012345678901234567890", 10)
	want := []any{
		"abc", float32(1.5), int16(-300), int8(127),
		UUID{0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x42, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00},
		UUID{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8},
		netip.MustParseAddr("::1"), Date(19782), time.Hour,
		Decimal{Unscaled: big.NewInt(-12), Scale: -9}, vi,
		[]string{"a", "b"}, []string{"b", "a"}, map[string]string{"k": "v"}, map[string][]byte{"k": {1}},
	}
	for i, w := range want {
		if !reflect.DeepEqual(rows[0][i], w) {
			t.Errorf("column %s decoded as %#v, want %#v", cols[i].Name, rows[0][i], w)
		}
	}
	if s := rows[0][9].(Decimal).String(); s != "-1.2E+10" {
		t.Errorf("decimal prints as %s, want -1.2E+10", s)
	}
	if s := rows[0][7].(Date).String(); s != "2024-02-29" {
		t.Errorf("date prints as %s, want 2024-02-29", s)
	}

	// A malformed value from a server is an error naming the row and column, not a silent nil.
	for _, bad := range []*kvnodepb.Value{
		{Kind: &kvnodepb.Value_Uuid{Uuid: "not-a-uuid"}},
		{Kind: &kvnodepb.Value_Smallint{Smallint: 40000}},
		{Kind: &kvnodepb.Value_Time{Time: -1}},
		{Kind: &kvnodepb.Value_Varint{Varint: "1.5"}},
		{Kind: &kvnodepb.Value_Decimal{Decimal: "abc"}},
		{Kind: &kvnodepb.Value_Inet{Inet: "1.2.3"}},
	} {
		fake.set(&kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_Rows{Rows: &kvnodepb.Rows{
			Columns: []*kvnodepb.Column{{Name: "c"}},
			Rows:    []*kvnodepb.Row{{Values: []*kvnodepb.Value{bad}}},
		}}}, nil)
		if _, rows, err := c.Query(context.Background(), One, "SELECT c FROM ks.t"); err == nil {
			t.Errorf("value %v decoded as %#v, want an error", bad, rows)
		}
	}
}

func TestDecimalStringAndParse(t *testing.T) {
	for _, s := range []string{"0", "1.50", "-0.001", "1.2E+10", "1E-10", "123456789012345678901234567890.5"} {
		d, err := ParseDecimal(s)
		if err != nil || d.String() != s {
			t.Errorf("ParseDecimal(%q) = %v, %v; want it back", s, d, err)
		}
	}
	if r := (Decimal{Unscaled: big.NewInt(150), Scale: 2}).Rat(); r.Cmp(big.NewRat(3, 2)) != 0 {
		t.Errorf("Decimal{150, 2}.Rat() = %v, want 3/2", r)
	}
}
