package replica

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// BenchmarkReadLargePartition reads the partition, 4,200 rows with 1 KB clustering
// keys, whole (one answer of 4.4 MB) and in pages of 1 MiB, and with a range tombstone over
// half of it. One op is the whole partition.
func BenchmarkReadLargePartition(b *testing.B) {
	s, err := Open(b.TempDir(), Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	l := testTable(b)
	pad := strings.Repeat("x", 1000)
	var rows []*replicapb.Row
	for i := range 4200 {
		rows = append(rows, row(int32(i), pad, "marker@5", "v=1@5"))
	}
	if err := s.Apply(l, mut("p", rows...)); err != nil {
		b.Fatal(err)
	}
	read := func(b *testing.B, pageBytes uint32, wantRows int, reversed bool) {
		for b.Loop() {
			n, pages := 0, 0
			var after *replicapb.ClusteringKey
			for {
				req := readReq("p")
				req.PageBytes, req.After, req.Reversed = pageBytes, after, reversed
				resp, err := s.ReadPartition(l, req)
				if err != nil {
					b.Fatal(err)
				}
				n += len(resp.Rows)
				pages++
				if pages == 1 {
					b.ReportMetric(float64(proto.Size(resp)), "bytes/page")
				}
				if after = resp.StoppedAfter; after == nil {
					break
				}
			}
			if n != wantRows {
				b.Fatalf("read %d rows, want %d", n, wantRows)
			}
			b.ReportMetric(float64(pages), "pages")
		}
	}
	b.Run("whole", func(b *testing.B) { read(b, 0, 4200, false) })
	b.Run("pages=1MiB", func(b *testing.B) { read(b, 1<<20, 4200, false) })
	b.Run("pages=1MiB/reversed", func(b *testing.B) { read(b, 1<<20, 4200, true) })
	if err := s.Apply(l, rangeDel("[1000..3099]", 10)); err != nil {
		b.Fatal(err)
	}
	b.Run("pages=1MiB/half-deleted", func(b *testing.B) { read(b, 1<<20, 2100, false) })
	b.Run("pages=1MiB/half-deleted/reversed", func(b *testing.B) { read(b, 1<<20, 2100, true) })
}
