package replica

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// rtBound builds a bound of the test table from "1" (c1 = 1) or "1,a"
// (c1 = 1, c2 = 'a'); "" is the open bound.
func rtBound(s string, inclusive bool) *replicapb.ClusteringBound {
	b := &replicapb.ClusteringBound{Inclusive: inclusive}
	if s == "" {
		return b
	}
	c1, c2, two := strings.Cut(s, ",")
	var i int32
	fmt.Sscan(c1, &i)
	b.Prefix = append(b.Prefix, schema.EncodeInt(i))
	if two {
		b.Prefix = append(b.Prefix, []byte(c2))
	}
	return b
}

// rangeDel builds a mutation of partition p writing one range tombstone,
// written like an interval: "[1,a .. 3)" (start inclusive, end exclusive),
// "(.. 2]" (open start), ...
func rangeDel(spec string, at int64) *replicapb.Mutation {
	return &replicapb.Mutation{TableId: testTableID, PartitionKey: [][]byte{[]byte("p")}, Token: tokenOf("p"),
		RangeTombstones: []*replicapb.RangeTombstone{parseRT(spec, at)}}
}

func parseRT(spec string, at int64) *replicapb.RangeTombstone {
	lo, hi, _ := strings.Cut(spec[1:len(spec)-1], "..")
	return &replicapb.RangeTombstone{
		Start:     rtBound(strings.TrimSpace(lo), spec[0] == '['),
		End:       rtBound(strings.TrimSpace(hi), spec[len(spec)-1] == ']'),
		Timestamp: at,
	}
}

// formatRTs renders a response's range tombstones like parseRT's input.
func formatRTs(l *schema.Table, resp *replicapb.ReadResponse) string {
	var parts []string
	for _, rt := range resp.RangeTombstones {
		bound := func(b *replicapb.ClusteringBound) string {
			var vs []string
			for i, c := range b.Prefix {
				v, _ := l.Clustering[i].Type.Decode(c)
				vs = append(vs, fmt.Sprint(v))
			}
			return strings.Join(vs, ",")
		}
		open, end := "(", ")"
		if rt.Start.Inclusive {
			open = "["
		}
		if rt.End.Inclusive {
			end = "]"
		}
		parts = append(parts, fmt.Sprintf("%s%s..%s%s@%d", open, bound(rt.Start), bound(rt.End), end, rt.Timestamp))
	}
	return strings.Join(parts, " ")
}

func TestStoreRangeTombstones(t *testing.T) {
	rows := mut("p", row(1, "a", "marker@5", "v=1@5"), row(1, "b", "marker@5", "v=2@5"), row(2, "a", "marker@5", "v=3@5"),
		row(3, "a", "marker@5", "v=4@5"), row(4, "a", "marker@5", "v=5@5"))
	tests := []struct {
		name    string
		muts    []*replicapb.Mutation
		filter  *replicapb.ClusteringFilter
		want    string
		wantRTs string
	}{
		{
			name:    "a clustering prefix deletes the rows under it",
			muts:    []*replicapb.Mutation{rows, rangeDel("[1..1]", 10)},
			want:    "(2,a) marker@5 [v=3@5]; (3,a) marker@5 [v=4@5]; (4,a) marker@5 [v=5@5]",
			wantRTs: "[1..1]@10",
		},
		{
			name:    "exclusive and inclusive ends",
			muts:    []*replicapb.Mutation{rows, rangeDel("(1..3]", 10)},
			want:    "(1,a) marker@5 [v=1@5]; (1,b) marker@5 [v=2@5]; (4,a) marker@5 [v=5@5]",
			wantRTs: "(1..3]@10",
		},
		{
			name:    "open ends",
			muts:    []*replicapb.Mutation{rows, rangeDel("[..2)", 10), rangeDel("(3..]", 10)},
			want:    "(2,a) marker@5 [v=3@5]; (3,a) marker@5 [v=4@5]",
			wantRTs: "[..2)@10 (3..]@10",
		},
		{
			name:    "a range on the second clustering column",
			muts:    []*replicapb.Mutation{rows, rangeDel("(1,a..1,z]", 10)},
			want:    "(1,a) marker@5 [v=1@5]; (2,a) marker@5 [v=3@5]; (3,a) marker@5 [v=4@5]; (4,a) marker@5 [v=5@5]",
			wantRTs: "(1,a..1,z]@10",
		},
		{
			name: "cells newer than the tombstone survive, as in Cassandra; the row lives on through them",
			muts: []*replicapb.Mutation{rows, rangeDel("[1..2]", 10), mut("p", row(1, "b", "w=new@12"))},
			want: "(1,b) [w=new@12]; (3,a) marker@5 [v=4@5]; (4,a) marker@5 [v=5@5]",
			// (1,b)'s marker and v are shadowed; its newer cell is not.
			wantRTs: "[1..2]@10",
		},
		{
			name:    "a row written at a later timestamp is not deleted, whatever the arrival order",
			muts:    []*replicapb.Mutation{rows, rangeDel("[1..2]", 4)},
			want:    "(1,a) marker@5 [v=1@5]; (1,b) marker@5 [v=2@5]; (2,a) marker@5 [v=3@5]; (3,a) marker@5 [v=4@5]; (4,a) marker@5 [v=5@5]",
			wantRTs: "[1..2]@4",
		},
		{
			name: "the newest of overlapping tombstones wins, and a row tombstone under a newer range one is dropped",
			muts: []*replicapb.Mutation{rows, rangeDel("[1..3]", 6), rangeDel("[2..4]", 10),
				mut("p", row(1, "a", "deleted@7"), row(1, "b", "deleted@4"))},
			want:    "(1,a) deleted@7",
			wantRTs: "[1..3]@6 [2..4]@10",
		},
		{
			name:    "the same range written twice keeps the newer timestamp",
			muts:    []*replicapb.Mutation{rows, rangeDel("[2..3]", 10), rangeDel("[2..3]", 4)},
			want:    "(1,a) marker@5 [v=1@5]; (1,b) marker@5 [v=2@5]; (4,a) marker@5 [v=5@5]",
			wantRTs: "[2..3]@10",
		},
		{
			name:    "a read returns only the tombstones over its range",
			muts:    []*replicapb.Mutation{rows, rangeDel("[1..1]", 10), rangeDel("[4..4]", 10)},
			filter:  &replicapb.ClusteringFilter{Lower: &replicapb.Bound{Value: schema.EncodeInt(2), Inclusive: true}, Upper: &replicapb.Bound{Value: schema.EncodeInt(3), Inclusive: true}},
			want:    "(2,a) marker@5 [v=3@5]; (3,a) marker@5 [v=4@5]",
			wantRTs: "",
		},
		{
			name: "a partition tombstone hides older range tombstones",
			muts: []*replicapb.Mutation{rows, rangeDel("[1..1]", 3),
				{TableId: testTableID, PartitionKey: [][]byte{[]byte("p")}, Token: tokenOf("p"), PartitionDeletion: ts(4)}},
			want:    "partition deleted@4; (1,a) marker@5 [v=1@5]; (1,b) marker@5 [v=2@5]; (2,a) marker@5 [v=3@5]; (3,a) marker@5 [v=4@5]; (4,a) marker@5 [v=5@5]",
			wantRTs: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openMem(t)
			l := testTable(t)
			mustApply(t, s, l, tt.muts...)
			req := readReq("p")
			req.Filter = tt.filter
			resp, err := s.ReadPartition(l, req)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if got, gotRTs := format(l, resp), formatRTs(l, resp); got != tt.want || gotRTs != tt.wantRTs {
				t.Errorf("reading partition p returned\n  %s\n  range tombstones %s\nwant\n  %s\n  range tombstones %s", got, gotRTs, tt.want, tt.wantRTs)
			}
		})
	}
}

func TestStoreRejectsBadRangeTombstones(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	tests := []struct {
		name string
		rt   *replicapb.RangeTombstone
		want string
	}{
		{"too many components", &replicapb.RangeTombstone{Start: &replicapb.ClusteringBound{Prefix: [][]byte{schema.EncodeInt(1), {'a'}, {'b'}}}, End: &replicapb.ClusteringBound{}, Timestamp: 5},
			"start bound has 3 clustering components, the table has 2 (c1, c2)"},
		{"a malformed component", &replicapb.RangeTombstone{Start: &replicapb.ClusteringBound{}, End: &replicapb.ClusteringBound{Prefix: [][]byte{{1}}}, Timestamp: 5},
			`end bound: clustering column "c1"`},
		{"the reserved timestamp", parseRT("[1..2]", cell.NoTimestamp), "is reserved"},
		{"nil", nil, "range tombstone 0 is nil"},
	}
	for _, tt := range tests {
		m := &replicapb.Mutation{TableId: testTableID, PartitionKey: [][]byte{[]byte("p")}, Token: tokenOf("p"), RangeTombstones: []*replicapb.RangeTombstone{tt.rt}}
		err := s.Apply(l, m)
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Apply = %v, want a bad request containing %q", tt.name, err, tt.want)
		}
	}
	if n := keyCount(t, s); n != 0 {
		t.Errorf("the rejected mutations left %d keys, want none", n)
	}
}

func TestStoreSkipsEmptyRangeTombstones(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	for _, spec := range []string{"(3..2]", "(2..2]", "(2..3)", "[2,b..2,a]"} {
		mustApply(t, s, l, rangeDel(spec, 5))
	}
	if n := keyCount(t, s); n != 0 {
		t.Errorf("empty range tombstones left %d keys, want none", n)
	}
}

func TestCoverOf(t *testing.T) {
	k := func(s string) []byte { return []byte(s) }
	spans := []rtSpan{
		{lo: k("b"), hi: k("f"), ts: 5},
		{lo: k("d"), hi: k("h"), ts: 9},
		{lo: k("a"), hi: k("z"), ts: 1},
		{lo: k("e"), hi: k("g"), ts: 3}, // under the newer one
	}
	frags := coverOf(spans)
	var got []string
	for _, f := range frags {
		got = append(got, fmt.Sprintf("[%s,%s)@%d", f.lo, f.hi, f.ts))
	}
	if want := "[a,b)@1 [b,d)@5 [d,h)@9 [h,z)@1"; strings.Join(got, " ") != want {
		t.Errorf("coverOf = %s, want %s", strings.Join(got, " "), want)
	}
	for _, c := range []struct {
		key  string
		want int64
	}{{"0", cell.NoTimestamp}, {"a", 1}, {"c", 5}, {"d", 9}, {"gz", 9}, {"h", 1}, {"y", 1}, {"z", cell.NoTimestamp}} {
		if got := coverAt(frags, k(c.key)); got != c.want {
			t.Errorf("coverAt(%q) = %d, want %d", c.key, got, c.want)
		}
	}
}

// TestRangeTombstoneKeys checks the key layout: a partition's range tombstones sort after its
// partition tombstone and before its rows, by where they end, and decode to what was written.
func TestRangeTombstoneKeys(t *testing.T) {
	l := testTable(t)
	prefix := appendPartitionPrefix(nil, testTableID, tokenOf("p"), []byte("p"))
	rows := append(bytes.Clone(prefix), kindRow)
	var keys [][]byte
	for _, spec := range []string{"[..]", "[1..3)", "(1,a..1,b]", "[0..1,a]", "[5..]"} {
		rt := parseRT(spec, 7)
		_, hi, err := rangeSpan(l, rows, rt)
		if err != nil {
			t.Fatal(err)
		}
		k := appendRangeTombstoneKey(l, bytes.Clone(prefix), hi[len(prefix):], rt)
		got, err := decodeRangeTombstone(l, k[len(prefix)+1:], 7)
		if err != nil || !proto.Equal(got, rt) {
			t.Errorf("%s: decoded %v, %v; want %v", spec, got, err, rt)
		}
		keys = append(keys, k)
	}
	sorted := slices.SortedFunc(slices.Values(keys), bytes.Compare)
	var order []string
	for _, k := range sorted {
		rt, _ := decodeRangeTombstone(l, k[len(prefix)+1:], 7)
		order = append(order, formatRTs(l, &replicapb.ReadResponse{RangeTombstones: []*replicapb.RangeTombstone{rt}}))
	}
	if want := "[0..1,a]@7 (1,a..1,b]@7 [1..3)@7 [..]@7 [5..]@7"; strings.Join(order, " ") != want {
		t.Errorf("range tombstone keys sort as %s, want by their ends: %s", strings.Join(order, " "), want)
	}
	partKey := append(bytes.Clone(prefix), kindPartitionDeletion)
	firstRow := append(bytes.Clone(rows), 0)
	for _, k := range keys {
		if bytes.Compare(k, partKey) <= 0 || bytes.Compare(k, firstRow) >= 0 {
			t.Errorf("range tombstone key %x is not between the partition tombstone and the rows", k)
		}
	}
}

// TestStoreRangeTombstonesOnDescendingColumns checks that range tombstone bounds follow the
// table's clustering order: on a DESC column the larger values come first, so c1 > 3 is the
// range from the partition's start to c1 = 3, exclusive.
func TestStoreRangeTombstonesOnDescendingColumns(t *testing.T) {
	s, _ := openMem(t)
	l := newTable(t, "CREATE TABLE ks.t (k text, c1 int, c2 text, v int, w text, b blob, PRIMARY KEY ((k), c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)")
	var rows []*replicapb.Row
	for i := range 6 {
		rows = append(rows, row(int32(i), "a", "marker@5"))
	}
	mustApply(t, s, l, mut("p", rows...), rangeDel("[..3)", 10), rangeDel("[1..0]", 10))
	resp, err := s.ReadPartition(l, readReq("p"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := format(l, resp), "(3,a) marker@5; (2,a) marker@5"; got != want {
		t.Errorf("after deleting c1 > 3 and c1 <= 1 on a DESC column: %s, want %s", got, want)
	}
	req := readReq("p")
	req.Reversed, req.PageBytes = true, 1
	var got []string
	for _, p := range readAllPages(t, s, l, req, 1) {
		if f := format(l, p); f != "" {
			got = append(got, f)
		}
	}
	if want := "(2,a) marker@5; (3,a) marker@5"; strings.Join(got, "; ") != want {
		t.Errorf("reversed, in pages: %s, want %s", strings.Join(got, "; "), want)
	}
}
