package schema_test

import (
	"testing"

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
}
