package shell

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// readBytes counts what scan pacing weighs of a replica's page: the partition key, and each
// row's (and the static row's) clustering components, column names and values.
func TestReadBytesSumsKeysNamesAndValues(t *testing.T) {
	row := func(value int) *replicapb.Row {
		return &replicapb.Row{
			Clustering: [][]byte{make([]byte, 4)},
			Cells:      []*replicapb.Cell{{Column: "v", Value: make([]byte, value), Timestamp: 1}},
		}
	}
	page := func(value int) *replicapb.RangePartition {
		return &replicapb.RangePartition{PartitionKey: [][]byte{make([]byte, 8)}, Page: &replicapb.ReadResponse{
			Rows:      []*replicapb.Row{row(value), row(value)},
			StaticRow: &replicapb.Row{Cells: []*replicapb.Cell{{Column: "s", Value: make([]byte, 3)}}},
		}}
	}
	// 8 of key, 1+3 of static row, 2 rows of 4+1+value.
	if got, want := readBytes(page(100)), 8+4+2*(5+100); got != want {
		t.Errorf("readBytes of two 100-byte rows = %d, want %d", got, want)
	}
	if got, want := readBytes(page(1024)), 8+4+2*(5+1024); got != want {
		t.Errorf("readBytes of two 1 KiB rows = %d, want %d", got, want)
	}
	if got := readBytes(&replicapb.RangePartition{}); got != 0 {
		t.Errorf("readBytes of an empty page = %d, want 0", got)
	}
}

// BenchmarkReadBytes weighs a replica's page of 1,000 rows of 1 KiB as scan pacing does
// (readBytes), against encoding its size (proto.Size), which the pacing does not use.
func BenchmarkReadBytes(b *testing.B) {
	rows := make([]*replicapb.Row, 1000)
	for i := range rows {
		rows[i] = &replicapb.Row{Clustering: [][]byte{make([]byte, 4)}, Cells: []*replicapb.Cell{{Column: "v", Value: make([]byte, 1024), Timestamp: 1}}}
	}
	rp := &replicapb.RangePartition{PartitionKey: [][]byte{make([]byte, 4)}, Page: &replicapb.ReadResponse{Rows: rows}}
	b.Run("readBytes", func(b *testing.B) {
		for b.Loop() {
			readBytes(rp)
		}
	})
	b.Run("proto.Size", func(b *testing.B) {
		for b.Loop() {
			proto.Size(rp)
		}
	})
}
