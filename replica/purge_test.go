package replica

import (
	"context"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/proto/replicapb"
)

func TestPurge(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	s, _ := openMem(t)
	s.now = func() time.Time { return clock }
	tbl := newTable(t, testTableDDL+" WITH gc_grace_seconds = 100")
	apply := func(ms ...*replicapb.Mutation) {
		t.Helper()
		for _, m := range ms {
			if err := s.Apply(tbl, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Partition p: row (1,a) written at 10 and deleted at 20; row (2,b)'s w deleted at 15 and
	// its v live at 50; rows (3,*) under a range tombstone at 40 over a cell at 35, and a row
	// (3,z) written after it at 47; row (4,d) deleted at 60, and row (5,e) deleted with the old
	// write timestamp 6, both stored after the repair started.
	// Partition q: data at 25 under a partition tombstone at 30.
	apply(
		mut("p", row(1, "a", "marker@10", "v=1@10")), mut("p", row(1, "a", "deleted@20")),
		mut("p", row(2, "b", "w=null@15", "v=2@50")),
		mut("p", row(3, "c", "v=3@35")), rangeDel("[3 .. 3]", 40), mut("p", row(3, "z", "v=9@47")),
		mut("p", row(4, "d", "v=4@55")), mut("p", row(5, "e", "v=5@5")),
		mut("q", row(1, "a", "v=5@25", "marker@25")),
		&replicapb.Mutation{TableId: testTableID, PartitionKey: [][]byte{[]byte("q")}, Token: tokenOf("q"), PartitionDeletion: ts(30)},
	)
	repairedAt := clock.Add(5 * time.Second)
	clock = clock.Add(10 * time.Second)
	apply(mut("p", row(4, "d", "deleted@60")), mut("p", row(5, "e", "deleted@6")))
	read := func(pk string) string {
		t.Helper()
		resp, err := s.ReadPartition(tbl, readReq(pk))
		if err != nil {
			t.Fatal(err)
		}
		return format(tbl, resp)
	}
	keys := func() int {
		n, err := s.TableKeys(tbl.ID)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	beforeP, beforeQ, beforeKeys := read("p"), read("q"), keys()
	ctx := context.Background()
	later := repairedAt.Add(200 * time.Second)

	// Never repaired: the tombstones stay, whatever their age; shadowed data goes, and no read
	// changes.
	st, err := s.Purge(ctx, tbl, later)
	if err != nil {
		t.Fatal(err)
	}
	if st.Tombstones != 0 || st.Shadowed != 7 || st.Partitions != 2 {
		t.Errorf("purge before any repair: %+v, want 7 shadowed keys and no tombstone purged", st)
	}
	if got := read("p"); got != beforeP {
		t.Errorf("purging shadowed data changed p from\n%s\nto\n%s", beforeP, got)
	}
	if got := read("q"); got != beforeQ {
		t.Errorf("purging shadowed data changed q from\n%s\nto\n%s", beforeQ, got)
	}
	if got := keys(); got != beforeKeys-7 {
		t.Errorf("%d keys after the purge, want %d", got, beforeKeys-7)
	}

	// Repaired, but gc_grace_seconds (100 s) has not passed: nothing more.
	if err := s.SetRepairedAt(tbl.ID, repairedAt); err != nil {
		t.Fatal(err)
	}
	if st, err = s.Purge(ctx, tbl, repairedAt.Add(50*time.Second)); err != nil || st.Tombstones+st.Shadowed != 0 {
		t.Errorf("purge within gc_grace_seconds: %+v, %v; want nothing purged", st, err)
	}
	// An older repair time does not move the record back.
	if err := s.SetRepairedAt(tbl.ID, repairedAt.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if at, ok, err := s.RepairedAt(tbl.ID); err != nil || !ok || !at.Equal(repairedAt) {
		t.Errorf("RepairedAt = %v, %v, %v; want %v", at, ok, err, repairedAt)
	}

	// Past gc_grace_seconds: the tombstones stored before the repair go (row at 20, cell at 15,
	// range at 40, partition at 30); those stored after it stay, even the one written with the
	// old timestamp 6, and so does everything live.
	if st, err = s.Purge(ctx, tbl, later); err != nil {
		t.Fatal(err)
	}
	if st.Tombstones != 4 {
		t.Errorf("purge after the repair and gc_grace_seconds: %+v, want 4 tombstones purged", st)
	}
	if got, want := read("p"), "(2,b) [v=2@50]; (3,z) [v=9@47]; (4,d) deleted@60; (5,e) deleted@6"; got != want {
		t.Errorf("p after the purge: %s\nwant %s", got, want)
	}
	if got := read("q"); got != "" {
		t.Errorf("q after the purge: %q, want nothing", got)
	}
	// A second pass has nothing left to do.
	if st, err = s.Purge(ctx, tbl, later); err != nil || st.Tombstones+st.Shadowed != 0 {
		t.Errorf("second purge: %+v, %v; want nothing", st, err)
	}
}

func TestTombstoneLocalTime(t *testing.T) {
	v := appendTombstone(nil, 42, 7_000)
	c, err := decodeValue(v)
	if err != nil || !c.Tombstone || c.Timestamp != 42 || c.Value != nil {
		t.Fatalf("decodeValue(tombstone with local time) = %+v, %v", c, err)
	}
	if local, ok := localTime(v); !ok || local != 7_000 {
		t.Errorf("localTime = %d, %v; want 7000", local, ok)
	}
	if _, ok := localTime(appendValue(nil, cellTombstone(42), 0)); ok {
		t.Error("a tombstone stored without a local time has one")
	}
	for _, bad := range [][]byte{
		append([]byte{flagLocalTime}, make([]byte, 16)...),                 // a live cell with a local time
		append([]byte{flagTombstone | flagLocalTime}, make([]byte, 12)...), // truncated
		append([]byte{flagTombstone | flagLocalTime}, make([]byte, 20)...), // too long
		append([]byte{1 << 2}, make([]byte, 8)...),                         // an unknown flag
	} {
		if _, err := decodeValue(bad); err == nil {
			t.Errorf("decodeValue(%x) succeeded", bad)
		}
	}
	// The same tombstone stored twice merges to the later local time, in either order.
	m := newLWWMerger()
	for _, order := range [][2][]byte{{appendTombstone(nil, 42, 1), appendTombstone(nil, 42, 9)}, {appendTombstone(nil, 42, 9), appendTombstone(nil, 42, 1)}} {
		vm, err := m.Merge(nil, order[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := vm.MergeNewer(order[1]); err != nil {
			t.Fatal(err)
		}
		got, _, _ := vm.Finish(true)
		if local, _ := localTime(got); local != 9 {
			t.Errorf("merging local times 1 and 9 kept %d, want 9", local)
		}
	}
}

func cellTombstone(ts int64) cell.Cell { return cell.Cell{Timestamp: ts, Tombstone: true} }
