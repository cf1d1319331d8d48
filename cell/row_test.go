package cell

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

func v(ts int64, s string) Cell { return Cell{Timestamp: ts, Value: []byte(s)} }
func tomb(ts int64) Cell        { return Cell{Timestamp: ts, Tombstone: true} }

func TestMergeRows(t *testing.T) {
	a := Row{Marker: 5, Deletion: NoTimestamp, Columns: []Column{{Name: "a", Cell: v(5, "a1")}, {Name: "c", Cell: v(7, "c1")}}}
	b := Row{Marker: 3, Deletion: 4, Columns: []Column{{Name: "b", Cell: v(6, "b2")}, {Name: "c", Cell: tomb(7)}}}
	want := Row{Marker: 5, Deletion: 4, Columns: []Column{{Name: "a", Cell: v(5, "a1")}, {Name: "b", Cell: v(6, "b2")}, {Name: "c", Cell: tomb(7)}}}
	if got := MergeRows(a, b); !reflect.DeepEqual(got, want) {
		t.Errorf("MergeRows(a, b) = %+v, want %+v", got, want)
	}
	if got := MergeRows(b, a); !reflect.DeepEqual(got, want) {
		t.Errorf("MergeRows(b, a) = %+v, want %+v", got, want)
	}
	if got := MergeRows(EmptyRow(), EmptyRow()); !got.IsEmpty() {
		t.Errorf("MergeRows(empty, empty) = %+v, want an empty row", got)
	}
}

func randomRow(r *rand.Rand) Row {
	row := EmptyRow()
	if r.IntN(2) == 0 {
		row.Marker = int64(r.IntN(4))
		if r.IntN(2) == 0 {
			row.MarkerTTL, row.MarkerExpires = int32(1+r.IntN(2)), int64(100+r.IntN(2))
		}
	}
	if r.IntN(3) == 0 {
		row.Deletion = int64(r.IntN(4))
	}
	for _, name := range []string{"a", "b", "c"} {
		if r.IntN(2) == 0 {
			row.Columns = append(row.Columns, Column{Name: name, Cell: smallCell(r)})
		}
	}
	// Column "s" is a non-frozen collection: elements and a collection
	// tombstone, which shadows elements but not simple cells.
	if r.IntN(3) == 0 {
		row.Collections = []ColumnDeletion{{Name: "s", Timestamp: int64(r.IntN(4) - 1)}}
	}
	for _, path := range [][]byte{{}, {1}, {2}} {
		if r.IntN(2) == 0 {
			row.Columns = append(row.Columns, Column{Name: "s", Path: path, Cell: smallCell(r)})
		}
	}
	return row
}

func TestCollectionElements(t *testing.T) {
	el := func(path string, c Cell) Column { return Column{Name: "s", Path: []byte(path), Cell: c} }
	a := Row{Marker: NoTimestamp, Deletion: NoTimestamp, Columns: []Column{el("x", v(5, "")), el("y", v(5, "1"))}}
	// A whole-value assignment at 10: collection tombstone at 9, then its elements.
	b := Row{Marker: NoTimestamp, Deletion: NoTimestamp, Collections: []ColumnDeletion{{Name: "s", Timestamp: 9}},
		Columns: []Column{el("y", v(10, "2")), el("z", v(10, ""))}}
	// An element update at 7, older than the assignment: shadowed.
	c := Row{Marker: NoTimestamp, Deletion: NoTimestamp, Columns: []Column{el("w", v(7, ""))}}
	got := MergeRows(MergeRows(a, b), c).Purge(NoTimestamp)
	want := Row{Marker: NoTimestamp, Deletion: NoTimestamp, Collections: []ColumnDeletion{{Name: "s", Timestamp: 9}},
		Columns: []Column{el("y", v(10, "2")), el("z", v(10, ""))}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged and purged = %+v, want %+v", got, want)
	}
	if !got.Live(0, NoTimestamp) {
		t.Errorf("%+v.Live = false, want true (it has live elements)", got)
	}
	// A DELETE of the column at 11 leaves nothing live.
	d := Row{Marker: NoTimestamp, Deletion: NoTimestamp, Collections: []ColumnDeletion{{Name: "s", Timestamp: 11}}}
	if m := MergeRows(got, d); m.Live(0, NoTimestamp) {
		t.Errorf("%+v.Live = true after a collection tombstone over every element, want false", m)
	}
	// A replica that has only a's elements lacks the tombstone and b's elements.
	miss := Missing(want, a)
	if miss.CollectionDeletion("s") != 9 || len(miss.Columns) != 2 {
		t.Errorf("Missing(want, a) = %+v, want the tombstone at 9 and two elements", miss)
	}
	// A simple cell and an empty-path element are different cells.
	if CompareColumns(Column{Name: "s"}, el("", Cell{})) >= 0 {
		t.Errorf("CompareColumns(simple, empty path) >= 0, want the simple cell first")
	}
}

func TestMergeRowsIsCommutativeAndAssociative(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		a, b, c := randomRow(r), randomRow(r), randomRow(r)
		if ab, ba := MergeRows(a, b), MergeRows(b, a); !reflect.DeepEqual(ab, ba) {
			t.Fatalf("MergeRows(%+v, %+v) = %+v but reversed = %+v, want equal (commutative)", a, b, ab, ba)
		}
		if l, rr := MergeRows(MergeRows(a, b), c), MergeRows(a, MergeRows(b, c)); !reflect.DeepEqual(l, rr) {
			t.Fatalf("MergeRows is not associative on %+v, %+v, %+v: %+v vs %+v", a, b, c, l, rr)
		}
		// Purging commutes with merging: reconciling purged replicas gives
		// the same live data as purging the reconciled row.
		for _, pd := range []int64{NoTimestamp, 1} {
			l := MergeRows(a.Purge(pd), b.Purge(pd)).Purge(pd)
			rr := MergeRows(a, b).Purge(pd)
			if !reflect.DeepEqual(l, rr) {
				t.Fatalf("purge then merge = %+v but merge then purge = %+v for %+v, %+v, partition deletion %d", l, rr, a, b, pd)
			}
		}
	}
}

func TestPurgeAndLive(t *testing.T) {
	tests := []struct {
		name    string
		row     Row
		partDel int64
		want    Row
		live    bool
	}{
		{
			name: "a row tombstone shadows older and equal cells and the marker",
			row:  Row{Marker: 3, Deletion: 5, Columns: []Column{{Name: "a", Cell: v(5, "x")}, {Name: "b", Cell: v(6, "y")}, {Name: "c", Cell: v(2, "z")}}},
			want: Row{Marker: NoTimestamp, Deletion: 5, Columns: []Column{{Name: "b", Cell: v(6, "y")}}},
			live: true, partDel: NoTimestamp,
		},
		{
			name: "a partition tombstone shadows the row tombstone it covers",
			row:  Row{Marker: 3, Deletion: 5, Columns: []Column{{Name: "a", Cell: v(5, "x")}}},
			want: Row{Marker: NoTimestamp, Deletion: NoTimestamp},
			live: false, partDel: 8,
		},
		{
			name: "an INSERTed row with only deleted cells still exists through its marker",
			row:  Row{Marker: 3, Deletion: NoTimestamp, Columns: []Column{{Name: "a", Cell: tomb(4)}}},
			want: Row{Marker: 3, Deletion: NoTimestamp, Columns: []Column{{Name: "a", Cell: tomb(4)}}},
			live: true, partDel: NoTimestamp,
		},
		{
			name: "an UPDATEd row whose cells are all deleted does not exist",
			row:  Row{Marker: NoTimestamp, Deletion: NoTimestamp, Columns: []Column{{Name: "a", Cell: tomb(4)}}},
			want: Row{Marker: NoTimestamp, Deletion: NoTimestamp, Columns: []Column{{Name: "a", Cell: tomb(4)}}},
			live: false, partDel: NoTimestamp,
		},
		{
			name: "a cell newer than the partition tombstone keeps the row alive",
			row:  Row{Marker: 1, Deletion: NoTimestamp, Columns: []Column{{Name: "a", Cell: v(9, "x")}}},
			want: Row{Marker: NoTimestamp, Deletion: NoTimestamp, Columns: []Column{{Name: "a", Cell: v(9, "x")}}},
			live: true, partDel: 8,
		},
	}
	for _, tt := range tests {
		before := MergeRows(tt.row, EmptyRow()) // a copy, to check Purge leaves tt.row alone
		got := tt.row.Purge(tt.partDel)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Purge(%d) = %+v, want %+v", tt.name, tt.partDel, got, tt.want)
		}
		if !reflect.DeepEqual(MergeRows(tt.row, EmptyRow()), before) {
			t.Errorf("%s: Purge modified its receiver", tt.name)
		}
		if l := tt.row.Live(0, tt.partDel); l != tt.live {
			t.Errorf("%s: Live(%d) = %t, want %t", tt.name, tt.partDel, l, tt.live)
		}
		if l := got.Live(0, tt.partDel); l != tt.live {
			t.Errorf("%s: after Purge, Live(%d) = %t, want %t", tt.name, tt.partDel, l, tt.live)
		}
	}
}

func TestMissing(t *testing.T) {
	want := Row{Marker: 5, Deletion: 2, Columns: []Column{{Name: "a", Cell: v(5, "a")}, {Name: "b", Cell: tomb(6)}, {Name: "c", Cell: v(3, "c")}}}
	have := Row{Marker: 5, Deletion: NoTimestamp, Columns: []Column{{Name: "a", Cell: v(4, "old")}, {Name: "c", Cell: v(3, "c")}}}
	exp := Row{Marker: NoTimestamp, Deletion: 2, Columns: []Column{{Name: "a", Cell: v(5, "a")}, {Name: "b", Cell: tomb(6)}}}
	got := Missing(want, have)
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("Missing(want, have) = %+v, want %+v", got, exp)
	}
	if m := MergeRows(have, got); !reflect.DeepEqual(m.Purge(NoTimestamp), want.Purge(NoTimestamp)) {
		t.Errorf("have merged with Missing(want, have) = %+v, want it to reconcile to %+v", m, want)
	}
	if m := Missing(want, want); !m.IsEmpty() {
		t.Errorf("Missing(want, want) = %+v, want empty", m)
	}

	r := rand.New(rand.NewPCG(5, 6))
	for range 10000 {
		a, b := randomRow(r), randomRow(r)
		w := MergeRows(a, b)
		if got, exp := MergeRows(a, Missing(w, a)), w; !reflect.DeepEqual(got, exp) {
			t.Fatalf("MergeRows(a, Missing(MergeRows(a, b), a)) = %+v, want %+v (a=%+v b=%+v)", got, exp, a, b)
		}
	}
}

func TestExpiringMarker(t *testing.T) {
	insert := Row{Marker: 5, MarkerTTL: 10, MarkerExpires: 100, Deletion: NoTimestamp}
	if !insert.Live(99, NoTimestamp) || insert.Live(100, NoTimestamp) {
		t.Errorf("a row with only a marker expiring at 100 is live at 99 and not at 100: got %t, %t", insert.Live(99, NoTimestamp), insert.Live(100, NoTimestamp))
	}
	// An older INSERT without TTL on another replica does not outlive the
	// newer expiring marker.
	older := Row{Marker: 4, Deletion: NoTimestamp}
	if m := MergeRows(insert, older); m.Live(100, NoTimestamp) {
		t.Errorf("MergeRows(%+v, %+v) = %+v is live after the newer marker expired", insert, older, m)
	}
	if miss := Missing(MergeRows(insert, older), older); miss.Marker != 5 || miss.MarkerExpires != 100 {
		t.Errorf("Missing(merged, older) = %+v, want the expiring marker", miss)
	}
	// At equal timestamps the expiring marker wins.
	same := Row{Marker: 5, Deletion: NoTimestamp}
	if m := MergeRows(same, insert); m.MarkerExpires != 100 {
		t.Errorf("MergeRows(%+v, %+v) = %+v, want the expiring marker", same, insert, m)
	}
	// A cell written later without TTL keeps the row alive after the marker expired.
	updated := insert
	updated.Columns = []Column{{Name: "a", Cell: v(6, "x")}}
	if !updated.Live(200, NoTimestamp) {
		t.Errorf("%+v is not live at 200, want live through its cell", updated)
	}
}
