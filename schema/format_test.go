package schema_test

import (
	"testing"
	"time"

	"github.com/kvnode/kvnode/schema"
)

func TestFormatKey(t *testing.T) {
	cols := []schema.Column{{Name: "k", Type: schema.TypeText}, {Name: "Odd Name", Type: schema.TypeInt}, {Name: "b", Type: schema.TypeBlob}}
	tests := []struct {
		values [][]byte
		want   string
	}{
		{[][]byte{[]byte("a"), schema.EncodeInt(3), {0xca, 0xfe}}, `(k="a", "Odd Name"=3, b=0xcafe)`},
		{[][]byte{[]byte("a")}, `(k="a", "Odd Name"=?, b=?)`},
		{[][]byte{[]byte("a"), {1}, {}}, `(k="a", "Odd Name"=0x01 (invalid int value: 1 bytes, want 4), b=0x)`},
	}
	for _, tt := range tests {
		if got := schema.FormatKey(cols, tt.values); got != tt.want {
			t.Errorf("FormatKey(%q) = %s, want %s", tt.values, got, tt.want)
		}
	}

	u, _ := schema.ParseUUID("123e4567-e89b-42d3-a456-426614174000")
	d, _ := schema.ParseDecimal("-1.50")
	tod, _ := schema.EncodeTime(time.Hour + 1)
	cols = []schema.Column{{Name: "u", Type: schema.TypeUUID}, {Name: "ip", Type: schema.TypeInet}, {Name: "d", Type: schema.TypeDate},
		{Name: "t", Type: schema.TypeTime}, {Name: "dec", Type: schema.TypeDecimal}, {Name: "v", Type: schema.TypeVarint},
		{Name: "f", Type: schema.TypeFloat}, {Name: "ts", Type: schema.TypeTimestamp}}
	values := [][]byte{schema.EncodeUUID(u), {10, 0, 0, 1}, schema.EncodeDate(-1), tod, schema.EncodeDecimal(d), {0xff, 0x7f}, schema.EncodeFloat(0.5), schema.EncodeBigInt(1500)}
	want := `(u=123e4567-e89b-42d3-a456-426614174000, ip=10.0.0.1, d=1969-12-31, t=01:00:00.000000001, dec=-1.50, v=-129, f=0.5, ts=1970-01-01T00:00:01.500Z)`
	if got := schema.FormatKey(cols, values); got != want {
		t.Errorf("FormatKey of the new types = %s, want %s", got, want)
	}
}
