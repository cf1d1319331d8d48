package shell

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/schema"
)

func TestScanPagingStateRoundTripAndRefusals(t *testing.T) {
	tb := pagingTable(t)
	ring := schema.FullRing
	for _, pos := range []scanPos{
		{Token: math.MinInt64},
		{Token: -5},
		{Token: 7, Key: [][]byte{[]byte("a")}},
		{Token: 7, Key: [][]byte{[]byte("")}, After: [][]byte{schema.EncodeInt(3), []byte("x")}},
	} {
		for _, taken := range []int{0, 3} {
			state := encodeScanPagingState(99, 12, taken, pos)
			got, returned, partTaken, err := decodeScanPagingState(state, 99, tb, ring)
			if err != nil || returned != 12 || partTaken != taken || !reflect.DeepEqual(got, pos) {
				t.Errorf("decode(encode(%+v, %d taken)) = %+v, %d, %d, %v", pos, taken, got, returned, partTaken, err)
			}
		}
		state := encodeScanPagingState(99, 12, 3, pos)
		if _, _, _, err := decodeScanPagingState(state, 98, tb, ring); err != errPagingForeign {
			t.Errorf("a scan's state for another statement: %v, want errPagingForeign", err)
		}
		if _, _, _, err := decodeScanPagingState(state[:len(state)-1], 99, tb, ring); err == nil {
			t.Errorf("a truncated state of %+v decoded", pos)
		}
	}
	if pos, n, _, err := decodeScanPagingState(nil, 1, tb, schema.TokenRange{Start: 5, End: 9}); err != nil || n != 0 || pos.Token != 5 || pos.Key != nil {
		t.Errorf("no state: %+v %d %v, want the start of the range", pos, n, err)
	}
	for _, tt := range []struct {
		state []byte
		want  string
	}{
		{[]byte{1, 0, 0, 0, 0, 0, 0, 0, 1}, "not a paging state of a scan"},
		{append(encodeScanPagingState(1, 0, 0, scanPos{Token: 3}), 0), "trailing garbage"},
		{encodeScanPagingState(1, 0, 0, scanPos{Token: 3, Key: [][]byte{[]byte("a"), []byte("b")}}), "partition key has the wrong number of components"},
		{encodeScanPagingState(1, 0, 0, scanPos{Token: 3, Key: [][]byte{[]byte("a")}, After: [][]byte{{1}, []byte("x")}}), "clustering key column c1"},
		{encodeScanPagingState(1, 0, 0, scanPos{Token: 100}), "outside the statement's token range"},
	} {
		_, _, _, err := decodeScanPagingState(tt.state, 1, tb, schema.TokenRange{Start: 0, End: 50})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("decodeScanPagingState(%x) = %v, want an error containing %q", tt.state, err, tt.want)
		}
	}
}
