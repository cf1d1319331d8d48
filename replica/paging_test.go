package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// readAllPages reads partition p of the test table in pages of pageBytes,
// each resuming after the last, and returns every page's response.
func readAllPages(t *testing.T, s *Store, l *schema.Table, req *replicapb.ReadRequest, pageBytes uint32) []*replicapb.ReadResponse {
	t.Helper()
	var pages []*replicapb.ReadResponse
	var tombstones uint32
	for {
		r := proto.Clone(req).(*replicapb.ReadRequest)
		r.PageBytes, r.TombstonesScanned = pageBytes, tombstones
		if n := len(pages); n > 0 {
			r.After = pages[n-1].StoppedAfter
		}
		resp, err := s.ReadPartition(l, r)
		if err != nil {
			t.Fatalf("page %d: %v", len(pages), err)
		}
		pages = append(pages, resp)
		tombstones += resp.Tombstones
		if resp.StoppedAfter == nil {
			return pages
		}
		if len(pages) > 10_000 {
			t.Fatal("the read never ends")
		}
	}
}

func TestStoreReadsInPages(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	var rows []*replicapb.Row
	for i := range 100 {
		rows = append(rows, row(int32(i), strings.Repeat("x", 100), fmt.Sprintf("v=%d@5", i)))
	}
	mustApply(t, s, l, mut("p", rows...), rangeDel("[10..20]", 10), rangeDel("[55..57]", 10),
		mut("p", row(30, strings.Repeat("x", 100), "w=null@6")))
	whole, err := s.ReadPartition(l, readReq("p"))
	if err != nil {
		t.Fatal(err)
	}
	if whole.StoppedAfter != nil {
		t.Fatalf("an unbounded read stopped after %v", whole.StoppedAfter)
	}
	pages := readAllPages(t, s, l, readReq("p"), 1000)
	if len(pages) < 10 {
		t.Fatalf("100 rows of 100-byte keys took %d pages of 1000 bytes, want at least 10", len(pages))
	}
	var got []string
	var tombstones uint32
	rts := map[string]bool{}
	for i, p := range pages {
		if len(p.Rows) == 0 && p.StoppedAfter != nil {
			t.Fatalf("page %d is empty but says it stopped early", i)
		}
		if f := format(l, p); f != "" {
			got = append(got, f)
		}
		for _, rt := range strings.Fields(formatRTs(l, p)) {
			rts[rt] = true
		}
		tombstones += p.Tombstones
	}
	if want := format(l, whole); strings.Join(got, "; ") != want {
		t.Errorf("the pages hold\n  %s\nwant what one read returns\n  %s", strings.Join(got, "; "), want)
	}
	if len(rts) != 2 || !rts["[10..20]@10"] || !rts["[55..57]@10"] {
		t.Errorf("the pages returned range tombstones %v, want both", rts)
	}
	// The cell tombstone and the two range tombstones, each counted once.
	if tombstones != 3 || whole.Tombstones != 3 {
		t.Errorf("the pages counted %d tombstones and one read %d, want 3", tombstones, whole.Tombstones)
	}
}

func TestStorePageStraddlingRangeTombstone(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	var rows []*replicapb.Row
	for i := range 10 {
		rows = append(rows, row(int32(i), "a", "marker@5"), row(int32(i), "b", "marker@12"))
	}
	mustApply(t, s, l, mut("p", rows...), rangeDel("[2..7]", 10))
	pages := readAllPages(t, s, l, readReq("p"), 1) // one row per page
	withRT := 0
	for _, p := range pages {
		if len(p.Rows) == 0 {
			continue
		}
		c1 := decodeInt(p.Rows[0].Clustering[0])
		has := formatRTs(l, p) == "[2..7]@10"
		// The page after (7,b) starts inside the tombstone's range (a row
		// (7,c) would be under it), so it may carry it too.
		if (c1 >= 2 && c1 <= 7 && !has) || ((c1 < 2 || c1 > 8) && has) {
			t.Errorf("page with row %s has range tombstones %q", format(l, p), formatRTs(l, p))
		}
		if has {
			withRT++
		}
	}
	if withRT != 7 { // (2,b) ... (7,b) (the (x,a) rows are shadowed), and the page after (7,b)
		t.Errorf("%d pages carried the tombstone over [2..7], want the 6 pages of rows under it and the one after", withRT)
	}
}

// TestStoreLimitStopsTheScan checks that a read with a limit stops scanning at
// the limit: every row carries a cell tombstone, and the read counts only the
// ones it scanned.
func TestStoreLimitStopsTheScan(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	var rows []*replicapb.Row
	for i := range 1000 {
		rows = append(rows, row(int32(i), "a", "marker@5", "w=null@5"))
	}
	mustApply(t, s, l, mut("p", rows...))
	req := readReq("p")
	req.Limit = 5
	resp, err := s.ReadPartition(l, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Rows) != 5 || resp.Tombstones != 5 {
		t.Errorf("a read with LIMIT 5 returned %d rows and scanned %d tombstones, want 5 and 5 (it scanned past the limit)", len(resp.Rows), resp.Tombstones)
	}
	if resp.StoppedAfter == nil || decodeInt(resp.StoppedAfter.Components[0]) != 4 {
		t.Errorf("StoppedAfter = %v, want row (4,a)", resp.StoppedAfter)
	}
}

func TestStoreTombstoneThreshold(t *testing.T) {
	s, err := Open(t.TempDir(), Options{CacheSize: 1 << 20, MemTableSize: 1 << 20, NoSync: true, TombstoneFailureThreshold: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := testTable(t)
	var rows []*replicapb.Row
	for i := range 60 {
		rows = append(rows, row(int32(i), "a", "deleted@5"))
	}
	rows = append(rows, row(100, "a", "marker@5"))
	mustApply(t, s, l, mut("p", rows...))

	req := readReq("p")
	_, err = s.ReadPartition(l, req)
	want := `replica: too many tombstones: table ks.t: the read of partition (k="p") scanned more than 50 tombstones (the tombstone failure threshold)`
	if !errors.Is(err, ErrTooManyTombstones) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("reading 60 row tombstones with a threshold of 50: %v, want %q", err, want)
	}
	// Pages count together: the earlier pages' tombstones are in the request.
	req.PageBytes = 1
	req.After = &replicapb.ClusteringKey{Components: [][]byte{schema.EncodeInt(44), []byte("a")}}
	req.TombstonesScanned = 45
	resp, err := s.ReadPartition(l, req)
	if err != nil || resp.Tombstones != 1 {
		t.Fatalf("a page with one tombstone after 45: %v, %d tombstones; want it to pass and count 1", err, resp.GetTombstones())
	}
	req.TombstonesScanned = 50
	if _, err := s.ReadPartition(l, req); !errors.Is(err, ErrTooManyTombstones) {
		t.Errorf("a page with one tombstone after 50: %v, want ErrTooManyTombstones", err)
	}
	// Rows under a tombstone are not tombstones; only the range tombstone counts.
	mustApply(t, s, l, rangeDel("[0..59]", 6))
	req = readReq("p")
	if resp, err := s.ReadPartition(l, req); err != nil || resp.Tombstones != 1 || len(resp.Rows) != 1 {
		t.Errorf("after a range tombstone over the deleted rows: %v, %d tombstones and %d rows; want 1 and 1", err, resp.GetTombstones(), len(resp.GetRows()))
	}
}

func TestStoreRejectsBadResume(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	for _, tt := range []struct {
		after [][]byte
		want  string
	}{
		{[][]byte{schema.EncodeInt(1)}, "read resumes after a clustering key of 1 components, want 2 (c1, c2)"},
		{[][]byte{{1}, []byte("a")}, `read resumes after: clustering column "c1"`},
	} {
		req := readReq("p")
		req.After = &replicapb.ClusteringKey{Components: tt.after}
		if _, err := s.ReadPartition(l, req); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("resuming after %x: %v, want a bad request containing %q", tt.after, err, tt.want)
		}
	}
}

func decodeInt(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }

// TestStoreTombstoneCountDoesNotWrap resumes a read whose earlier pages claim nearly 2^32
// tombstones: the count must not wrap around to a small number and pass the threshold.
func TestStoreTombstoneCountDoesNotWrap(t *testing.T) {
	s, _ := openMem(t)
	l := testTable(t)
	mustApply(t, s, l, mut("p", row(1, "a", "deleted@5"), row(2, "a", "deleted@5")))
	req := readReq("p")
	req.TombstonesScanned = math.MaxUint32
	if _, err := s.ReadPartition(l, req); !errors.Is(err, ErrTooManyTombstones) {
		t.Errorf("a read after 2^32-1 tombstones that scans 2 more: %v, want ErrTooManyTombstones", err)
	}
}
