package replica

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// scanAll pages through table l's token range (start, end] with range reads of at most limit
// rows and pageBytes bytes, resuming each page where the last stopped, and returns "pk:c1"
// for every live row, in the order the pages gave them.
func scanAll(t *testing.T, s *Store, l *schema.Table, start, end int64, limit, pageBytes uint32) []string {
	t.Helper()
	req := &replicapb.RangeReadRequest{TableId: testTableID, StartToken: start, EndToken: end, Limit: limit, PageBytes: pageBytes}
	var got []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("range read never reached the end of its range")
		}
		resp, err := s.ReadRange(l, req)
		if err != nil {
			t.Fatalf("ReadRange(%v): %v", req, err)
		}
		for _, p := range resp.Partitions {
			if p.Token <= start || p.Token > end {
				t.Fatalf("partition %q has token %d, outside (%d, %d]", p.PartitionKey[0], p.Token, start, end)
			}
			for _, r := range p.Page.Rows {
				if liveRow(r, 0) {
					got = append(got, fmt.Sprintf("%s:%d", p.PartitionKey[0], int32(binary.BigEndian.Uint32(r.Clustering[0]))))
				}
			}
		}
		if !resp.Stopped {
			return got
		}
		last := resp.Partitions[len(resp.Partitions)-1]
		req = &replicapb.RangeReadRequest{TableId: testTableID, StartToken: last.Token, StartPartitionKey: last.PartitionKey,
			EndToken: end, Limit: limit, PageBytes: pageBytes}
		if a := last.Page.StoppedAfter; a != nil {
			req.After = a
		}
	}
}

func TestReadRangeReturnsEveryRowOnceInTokenOrder(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	var want []string
	type part struct {
		pk    string
		token int64
	}
	var parts []part
	for i := range 30 {
		pk := fmt.Sprintf("p%02d", i)
		var rows []*replicapb.Row
		for c := range i % 4 { // some partitions hold no row
			rows = append(rows, row(int32(c), "x", "marker@5", "v=1@5"))
		}
		if i%4 == 0 {
			m := mut(pk)
			m.PartitionDeletion = ts(3) // a partition that holds only its tombstone
			mustApply(t, s, l, m)
		}
		if i == 7 { // a row deleted in place: returned as a tombstone, never as a row
			mustApply(t, s, l, mut(pk, row(9, "y", "deleted@9")))
		}
		if len(rows) > 0 {
			mustApply(t, s, l, mut(pk, rows...))
		}
		parts = append(parts, part{pk, tokenOf(pk)})
	}
	slices.SortFunc(parts, func(a, b part) int { // storage order: token, then key bytes
		if a.token != b.token {
			return cmpInt(a.token, b.token)
		}
		return strings.Compare(a.pk, b.pk)
	})
	for _, p := range parts {
		var i int
		fmt.Sscanf(p.pk, "p%d", &i)
		for c := range i % 4 {
			want = append(want, fmt.Sprintf("%s:%d", p.pk, c))
		}
	}
	for _, tc := range []struct {
		limit, bytes uint32
	}{{0, 0}, {1, 0}, {2, 0}, {5, 0}, {0, 1}, {0, 100}, {3, 200}} {
		got := scanAll(t, s, l, math.MinInt64, math.MaxInt64, tc.limit, tc.bytes)
		if !slices.Equal(got, want) {
			t.Errorf("a scan in pages of %d rows, %d bytes returned\n%v\nwant\n%v", tc.limit, tc.bytes, got, want)
		}
	}
	// A token range returns the rows of the partitions inside it only.
	mid := parts[len(parts)/2].token
	got := scanAll(t, s, l, math.MinInt64, mid, 2, 0)
	got = append(got, scanAll(t, s, l, mid, math.MaxInt64, 3, 0)...)
	if !slices.Equal(got, want) {
		t.Errorf("two scans split at token %d returned\n%v\nwant\n%v", mid, got, want)
	}
}

func TestReadRangeRefusesBadRequests(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	for _, tc := range []struct {
		req  *replicapb.RangeReadRequest
		want string
	}{
		{&replicapb.RangeReadRequest{TableId: 99}, "range read is for table id 99"},
		{&replicapb.RangeReadRequest{TableId: testTableID, StartToken: 5, EndToken: 4}, "ends at token 4, before its start 5"},
		{&replicapb.RangeReadRequest{TableId: testTableID, After: &replicapb.ClusteringKey{}}, "names no partition"},
		{&replicapb.RangeReadRequest{TableId: testTableID, StartToken: 1, StartPartitionKey: [][]byte{[]byte("a")}, EndToken: 9}, "is not the partition key's token"},
	} {
		if _, err := s.ReadRange(l, tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadRange(%v) = %v, want an error containing %q", tc.req, err, tc.want)
		}
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestReadRangeCarriesTombstones: a range read returns each partition as ReadPartition does,
// with its partition tombstone and range tombstones, whether or not the partition starts with
// a row.
func TestReadRangeCarriesTombstones(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	deleted := mut("a", row(1, "x", "marker@5", "v=1@5"), row(2, "x", "marker@5"))
	deleted.PartitionDeletion = ts(3) // older than its rows
	ranged := rangeDel("[2 .. 3]", 9)
	ranged.PartitionKey, ranged.Token = [][]byte{[]byte("b")}, tokenOf("b")
	mustApply(t, s, l, deleted, mut("b", row(1, "x", "marker@5"), row(2, "y", "marker@5")), ranged, mut("c", row(1, "x", "marker@5")))
	resp, err := s.ReadRange(l, &replicapb.RangeReadRequest{TableId: testTableID, StartToken: math.MinInt64, EndToken: math.MaxInt64})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range resp.Partitions {
		got[string(p.PartitionKey[0])] = format(l, p.Page) + " | " + formatRTs(l, p.Page)
		want, err := s.ReadPartition(l, readReq(string(p.PartitionKey[0])))
		if err != nil {
			t.Fatal(err)
		}
		if w := format(l, want) + " | " + formatRTs(l, want); got[string(p.PartitionKey[0])] != w {
			t.Errorf("partition %s: the range read has %q, ReadPartition %q", p.PartitionKey[0], got[string(p.PartitionKey[0])], w)
		}
	}
	if len(got) != 3 || !strings.Contains(got["a"], "partition deleted@3") || !strings.Contains(got["b"], "[2..3]@9") {
		t.Errorf("the range read returned %v, want partitions a (deleted@3), b (a range tombstone) and c", got)
	}
}
