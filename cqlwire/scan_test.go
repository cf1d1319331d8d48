package cqlwire

import (
	"bytes"
	"testing"
)

// TestScanExecuteReadsWhatDecodeDoes scans EXECUTE bodies in place and checks the id, the
// consistency and every value against the full decoder's.
func TestScanExecuteReadsWhatDecodeDoes(t *testing.T) {
	for _, m := range []*Execute{
		{ID: []byte{1, 2, 3}, Params: QueryParams{Consistency: Quorum}},
		{ID: bytes.Repeat([]byte{7}, 16), Params: QueryParams{Consistency: LocalOne, Values: []Value{
			{Bytes: []byte("key")}, {}, {Unset: true}, {Bytes: []byte{}}, {Bytes: []byte{0, 0, 0, 9}},
		}, PageSize: 100, HasTimestamp: true, Timestamp: 42}},
	} {
		body := m.AppendBody(nil)
		h, ok := ScanExecute(0, body)
		if !ok {
			t.Fatalf("ScanExecute(%x) = false, want true", body)
		}
		if !bytes.Equal(h.ID, m.ID) || h.Consistency != m.Params.Consistency || h.NumValues != len(m.Params.Values) {
			t.Fatalf("ScanExecute = id %x, %v, %d values; want %x, %v, %d", h.ID, h.Consistency, h.NumValues, m.ID, m.Params.Consistency, len(m.Params.Values))
		}
		for i, want := range m.Params.Values {
			v, unset, ok := h.Value(i)
			if !ok || unset != want.Unset || !bytes.Equal(v, want.Bytes) || (v == nil) != (want.Bytes == nil) {
				t.Errorf("Value(%d) = %q, unset %v, %v; want %q, unset %v", i, v, unset, ok, want.Bytes, want.Unset)
			}
		}
		if _, _, ok := h.Value(len(m.Params.Values)); ok {
			t.Errorf("Value(%d) past the last value = true, want false", len(m.Params.Values))
		}
	}
}

// TestScanExecuteRefusesWhatItDoesNotRead checks that malformed heads, named values and custom
// payloads are left to the full decoder, and that a value running past the body is refused.
func TestScanExecuteRefusesWhatItDoesNotRead(t *testing.T) {
	named := (&Execute{ID: []byte{1}, Params: QueryParams{Values: []Value{{Bytes: []byte("a")}}, Names: []string{"k"}}}).AppendBody(nil)
	plain := (&Execute{ID: []byte{1}, Params: QueryParams{Values: []Value{{Bytes: []byte("abc")}}}}).AppendBody(nil)
	for name, c := range map[string]struct {
		flags Flags
		body  []byte
	}{
		"empty":          {0, nil},
		"short id":       {0, []byte{0, 5, 1}},
		"named values":   {0, named},
		"custom payload": {FlagCustomPayload, plain},
		"unknown flags":  {0, []byte{0, 1, 1, 0, 1, 0x80}},
	} {
		if _, ok := ScanExecute(c.flags, c.body); ok {
			t.Errorf("ScanExecute(%s) = true, want false", name)
		}
	}
	h, ok := ScanExecute(0, plain[:len(plain)-1]) // the value's last byte is missing
	if !ok {
		t.Fatal("ScanExecute of a body cut in its values = false, want true (the values are read lazily)")
	}
	if _, _, ok := h.Value(0); ok {
		t.Error("Value(0) of a value running past the body = true, want false")
	}
}

func BenchmarkScanExecute(b *testing.B) {
	body := (&Execute{ID: bytes.Repeat([]byte{7}, 16), Params: QueryParams{Consistency: One, Values: []Value{
		{Bytes: []byte("hot")}, {Bytes: []byte{0, 0, 0, 0, 0, 0, 0, 1}}}}}).AppendBody(nil)
	b.ReportAllocs()
	for b.Loop() {
		h, _ := ScanExecute(0, body)
		h.Value(0)
	}
}
