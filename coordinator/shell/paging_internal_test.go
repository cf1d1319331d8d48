package shell

import (
	"bytes"
	"testing"

	"github.com/kvnode/kvnode/schema"
)

func pagingTable(t testing.TB) *schema.Table {
	s, err := schema.Build(`CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
CREATE TABLE ks.t (k text, c1 int, c2 text, PRIMARY KEY (k, c1, c2));`)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := s.Table("ks", "t")
	return tb
}

func TestPagingStateRoundTrip(t *testing.T) {
	tb := pagingTable(t)
	key := [][]byte{schema.EncodeInt(-7), []byte("")}
	state := encodePagingState(42, 300, key)
	cur, err := decodePagingState(state, 42, tb)
	if err != nil || cur.returned != 300 || len(cur.after) != 2 || !bytes.Equal(cur.after[0], key[0]) || cur.after[1] == nil || len(cur.after[1]) != 0 {
		t.Fatalf("decodePagingState(encodePagingState(42, 300, %x)) = %+v, %v", key, cur, err)
	}
	if _, err := decodePagingState(state, 43, tb); err != errPagingForeign {
		t.Errorf("a state decoded for another fingerprint: error %v, want errPagingForeign", err)
	}
	if _, err := decodePagingState(encodePagingState(42, 1, [][]byte{[]byte("xy"), []byte("a")}), 42, tb); err == nil {
		t.Error("a state whose int component has 2 bytes decoded without error")
	}
	if _, err := decodePagingState(encodePagingState(42, 1, key[:1]), 42, tb); err == nil {
		t.Error("a state with 1 component for 2 clustering columns decoded without error")
	}
}

// FuzzPagingState feeds arbitrary bytes to the paging state decoder: it must never panic, and
// what it accepts must encode back to the same bytes.
func FuzzPagingState(f *testing.F) {
	tb := pagingTable(f)
	f.Add(encodePagingState(7, 100, [][]byte{schema.EncodeInt(1), []byte("x")}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, state []byte) {
		cur, err := decodePagingState(state, 7, tb)
		if err != nil || len(state) == 0 {
			return
		}
		if again := encodePagingState(7, cur.returned, cur.after); !bytes.Equal(again, state) {
			t.Fatalf("decoded %x as %+v, which encodes as %x", state, cur, again)
		}
	})
}
