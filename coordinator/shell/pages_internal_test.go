package shell

import (
	"reflect"
	"testing"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
	"google.golang.org/protobuf/proto"
)

// TestPageConversions checks that a replica's answer reaches the merger whole (every field of
// ReadResponse the merge uses) and that a repair set leaves as the mutation that carries all of
// it, with absent markers, deletions and partition tombstone left absent.
func TestPageConversions(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	one, two := schema.EncodeInt(1), schema.EncodeInt(2)
	resp := &replicapb.ReadResponse{
		Rows: []*replicapb.Row{
			{Clustering: [][]byte{one}, Marker: i64(3), Cells: []*replicapb.Cell{
				{Column: "v", Value: []byte("a"), Timestamp: 4},
				{Column: "w", Value: []byte("ignored"), Timestamp: 5, Tombstone: true},
			}},
			{Clustering: [][]byte{two}, Deletion: i64(6)},
		},
		PartitionDeletion: i64(2),
		RangeTombstones: []*replicapb.RangeTombstone{{
			Start: &replicapb.ClusteringBound{Prefix: [][]byte{one}, Inclusive: true}, End: &replicapb.ClusteringBound{}, Timestamp: 7,
		}},
		StoppedAfter: &replicapb.ClusteringKey{Components: [][]byte{two}},
		Tombstones:   9,
	}
	rows := []coordinator.ClusteredRow{
		{Clustering: [][]byte{one}, Row: cell.Row{Marker: 3, Deletion: cell.NoTimestamp, Columns: []cell.Column{
			{Name: "v", Cell: cell.Cell{Value: []byte("a"), Timestamp: 4}},
			{Name: "w", Cell: cell.Cell{Timestamp: 5, Tombstone: true}},
		}}},
		{Clustering: [][]byte{two}, Row: cell.Row{Marker: cell.NoTimestamp, Deletion: 6}},
	}
	rts := []coordinator.RangeTombstone{{Start: coordinator.Bound{Prefix: [][]byte{one}, Inclusive: true}, Timestamp: 7}}
	want := coordinator.Page{Rows: rows, PartitionDeletion: 2, RangeTombstones: rts, StoppedAfter: [][]byte{two}, Stopped: true, Tombstones: 9}
	if got := pageOf(resp); !reflect.DeepEqual(got, want) {
		t.Errorf("pageOf =\n%+v\nwant\n%+v", got, want)
	}
	if got := pageOf(&replicapb.ReadResponse{}); got.PartitionDeletion != cell.NoTimestamp || got.Stopped || len(got.Rows) != 0 {
		t.Errorf("pageOf(an empty answer) = %+v, want no rows, no partition tombstone, not stopped", got)
	}

	tbl := &schema.Table{ID: 7}
	wantMutation := &replicapb.Mutation{
		TableId: 7, PartitionKey: [][]byte{[]byte("k")}, Token: 11,
		Rows: []*replicapb.Row{
			{Clustering: [][]byte{one}, Marker: i64(3), Cells: []*replicapb.Cell{
				{Column: "v", Value: []byte("a"), Timestamp: 4},
				{Column: "w", Timestamp: 5, Tombstone: true},
			}},
			{Clustering: [][]byte{two}, Deletion: i64(6)},
		},
		RangeTombstones: []*replicapb.RangeTombstone{{
			Start: &replicapb.ClusteringBound{Prefix: [][]byte{one}, Inclusive: true}, End: &replicapb.ClusteringBound{}, Timestamp: 7,
		}},
		PartitionDeletion: i64(2),
	}
	rs := &coordinator.RepairSet{Rows: rows, RangeTombstones: rts, PartitionDeletion: true}
	if got := repairMutation(tbl, [][]byte{[]byte("k")}, 11, rs, 2); !proto.Equal(got, wantMutation) {
		t.Errorf("repairMutation =\n%v\nwant\n%v", got, wantMutation)
	}
	rs.PartitionDeletion = false
	if got := repairMutation(tbl, [][]byte{[]byte("k")}, 11, rs, 2); got.PartitionDeletion != nil {
		t.Errorf("repairMutation of a replica that holds the partition tombstone sends it: %v", got.PartitionDeletion)
	}
}
