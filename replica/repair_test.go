package replica

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/proto/replicapb"
)

func TestLeafRangesCoverTheRange(t *testing.T) {
	for _, r := range []TokenRange{{-10, 10}, {math.MinInt64, math.MaxInt64}, {5, 6}, {-3, 100}} {
		for _, n := range []int{1, 2, 3, 7, 64, 4096} {
			leaves := LeafRanges(r, n)
			if len(leaves) != n || leaves[0].Start != r.Start || leaves[n-1].End != r.End {
				t.Fatalf("LeafRanges(%v, %d) = %v…, want %d leaves from %d to %d", r, n, leaves[:1], n, r.Start, r.End)
			}
			for i := 1; i < n; i++ {
				if leaves[i].Start != leaves[i-1].End || leaves[i].End < leaves[i].Start {
					t.Fatalf("LeafRanges(%v, %d): leaf %d %v does not follow %v", r, n, i, leaves[i], leaves[i-1])
				}
			}
		}
	}
	if got := LeafRanges(TokenRange{0, 100}, 4); !slices.Equal(got, []TokenRange{{0, 25}, {25, 50}, {50, 75}, {75, 100}}) {
		t.Errorf("LeafRanges((0, 100], 4) = %v", got)
	}
}

// scanTokens returns the tokens ScanPartitions visits in r.
func scanTokens(t *testing.T, s *Store, r TokenRange) []int64 {
	t.Helper()
	var out []int64
	if err := s.ScanPartitions(context.Background(), testTable(t), r, func(m *replicapb.Mutation) error {
		out = append(out, m.Token)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestScanPartitionsBounds(t *testing.T) {
	s, _ := openMem(t)
	tbl := testTable(t)
	var tokens []int64
	for i := range 20 {
		pk := fmt.Sprintf("p%d", i)
		if err := s.Apply(tbl, mut(pk, row(1, "a", "v=1@10"))); err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tokenOf(pk))
	}
	slices.Sort(tokens)
	if got := scanTokens(t, s, TokenRange{math.MinInt64, math.MaxInt64}); !slices.Equal(got, tokens) {
		t.Fatalf("full range scanned %v, want %v", got, tokens)
	}
	// (tokens[3], tokens[7]]: the start is excluded, the end included.
	if got := scanTokens(t, s, TokenRange{tokens[3], tokens[7]}); !slices.Equal(got, tokens[4:8]) {
		t.Errorf("(t3, t7] scanned %v, want %v", got, tokens[4:8])
	}
	if err := s.ScanPartitions(context.Background(), tbl, TokenRange{5, 5}, func(*replicapb.Mutation) error { return nil }); err == nil {
		t.Error("an empty range (5, 5] scanned without error")
	}
}

func hashes(t *testing.T, s *Store, leaves int) ([][HashSize]byte, uint64) {
	t.Helper()
	h, n, err := s.RangeHashes(context.Background(), testTable(t), TokenRange{math.MinInt64, math.MaxInt64}, leaves)
	if err != nil {
		t.Fatal(err)
	}
	return h, n
}

func TestRangeHashesFindTheDifferingLeaf(t *testing.T) {
	a, _ := openMem(t)
	b, _ := openMem(t)
	tbl := testTable(t)
	for i := range 50 {
		m := mut(fmt.Sprintf("p%d", i), row(int32(i), "x", "v=1@10", "marker@10"))
		for _, s := range []*Store{a, b} {
			if err := s.Apply(tbl, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	ha, na := hashes(t, a, 64)
	hb, nb := hashes(t, b, 64)
	if na != 50 || nb != 50 || !slices.Equal(ha, hb) {
		t.Fatalf("equal replicas hash differently (%d and %d partitions)", na, nb)
	}

	// Shadowed data one replica holds and the other does not changes nothing: b gets a cell
	// then the row tombstone over it, a only the tombstone.
	if err := b.Apply(tbl, mut("p3", row(3, "x", "w=old@5"))); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{a, b} {
		if err := s.Apply(tbl, mut("p3", row(3, "x", "deleted@11"))); err != nil {
			t.Fatal(err)
		}
	}
	ha, _ = hashes(t, a, 64)
	hb, _ = hashes(t, b, 64)
	if !slices.Equal(ha, hb) {
		t.Fatal("replicas that read alike hash differently: shadowed data counts")
	}

	// One newer cell in p7 changes exactly p7's leaf; a tombstone too.
	leafOf := func(token int64) int {
		for i, lr := range LeafRanges(TokenRange{math.MinInt64, math.MaxInt64}, 64) {
			if lr.Contains(token) {
				return i
			}
		}
		t.Fatalf("token %d in no leaf", token)
		return -1
	}
	for _, m := range []*replicapb.Mutation{
		mut("p7", row(7, "x", "v=2@12")),
		mut("p9", row(9, "x", "v=null@12")),
		{TableId: testTableID, PartitionKey: [][]byte{[]byte("p11")}, Token: tokenOf("p11"), PartitionDeletion: ts(13)},
	} {
		if err := b.Apply(tbl, m); err != nil {
			t.Fatal(err)
		}
		hb, _ = hashes(t, b, 64)
		var differ []int
		for i := range ha {
			if ha[i] != hb[i] {
				differ = append(differ, i)
			}
		}
		if want := []int{leafOf(m.Token)}; !slices.Equal(differ, want) {
			t.Errorf("after writing %s to one replica, leaves %v differ, want %v", m.PartitionKey[0], differ, want)
		}
		// Streaming the partition to the other replica makes them equal again.
		got, err := b.FetchPartition(tbl, m.Token, m.PartitionKey)
		if err != nil || got == nil {
			t.Fatalf("FetchPartition: %v, %v", got, err)
		}
		if err := a.Apply(tbl, got); err != nil {
			t.Fatal(err)
		}
		ha, _ = hashes(t, a, 64)
		if !slices.Equal(ha, hb) {
			t.Errorf("after streaming %s, the replicas still differ", m.PartitionKey[0])
		}
	}
}

func TestAntiEntropyServiceErrors(t *testing.T) {
	s, _ := openMem(t)
	tbl := testTable(t)
	svc, err := NewService(Config{Store: s, Schema: tables{testTableID: tbl}})
	if err != nil {
		t.Fatal(err)
	}
	ae := svc.AntiEntropy()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  *replicapb.RangeHashesRequest
		code replicapb.Error_Code
	}{
		{"unknown table", &replicapb.RangeHashesRequest{TableId: 99, Range: &replicapb.RepairRange{Start: 0, End: 1}, Leaves: 1}, replicapb.Error_UNKNOWN_TABLE},
		{"no range", &replicapb.RangeHashesRequest{TableId: testTableID, Leaves: 1}, replicapb.Error_BAD_REQUEST},
		{"empty range", &replicapb.RangeHashesRequest{TableId: testTableID, Range: &replicapb.RepairRange{Start: 3, End: 3}, Leaves: 1}, replicapb.Error_BAD_REQUEST},
		{"no leaves", &replicapb.RangeHashesRequest{TableId: testTableID, Range: &replicapb.RepairRange{Start: 0, End: 1}}, replicapb.Error_BAD_REQUEST},
		{"too many leaves", &replicapb.RangeHashesRequest{TableId: testTableID, Range: &replicapb.RepairRange{Start: 0, End: 1}, Leaves: MaxLeaves + 1}, replicapb.Error_BAD_REQUEST},
	} {
		resp, err := ae.RangeHashes(ctx, tc.req)
		if err != nil || resp.Status != replicapb.Status_STATUS_ERROR || resp.Error.GetCode() != tc.code {
			t.Errorf("%s: %v, %v; want %v", tc.name, resp, err, tc.code)
		}
	}
	resp, err := ae.FetchPartitions(ctx, &replicapb.FetchPartitionsRequest{TableId: testTableID, Partitions: []*replicapb.PartitionRef{{Token: 1, PartitionKey: [][]byte{[]byte("p1")}}}})
	if err != nil || resp.Error.GetCode() != replicapb.Error_BAD_REQUEST {
		t.Errorf("fetch with a wrong token: %v, %v; want BAD_REQUEST", resp, err)
	}
}

// BenchmarkRangeHashes measures hashing a range of 10,000 one-row partitions into 64 leaves:
// what each replica does per range and table of a repair.
func BenchmarkRangeHashes(b *testing.B) {
	s, err := Open("db", Options{FS: vfs.NewMem(), CacheSize: 64 << 20, MemTableSize: 4 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tbl := testTable(b)
	const partitions = 10000
	for i := range partitions {
		if err := s.Apply(tbl, mut(fmt.Sprintf("p%d", i), row(int32(i), "x", "v=1@10", "w=abc@10", "marker@10"))); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if _, n, err := s.RangeHashes(context.Background(), tbl, TokenRange{math.MinInt64, math.MaxInt64}, 64); err != nil || n != partitions {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(partitions)*float64(b.N)/b.Elapsed().Seconds(), "partitions/s")
}
