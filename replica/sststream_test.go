package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/internal/faultfs"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// small makes StreamSSTables send many parts and several files per span.
var small = SSTStreamOptions{PartBytes: 512, FileBytes: 2 << 10}

func acceptAll(schema.TableID, int64, int64) error { return nil }

// streamSSTs streams table id's tokens [from, to] from src into dst as sstables, calling
// between after the first part (while the span is being received), and returns the error of the
// stream and of the ingest's Close.
func streamSSTs(t *testing.T, src, dst *Store, id schema.TableID, from, to int64, tables TableSource, between func()) error {
	t.Helper()
	g := dst.NewSSTIngest(acceptAll, tables)
	parts, files := 0, 0
	_, _, err := src.StreamSSTables(id, from, to, SSTableFormat(), small, func(p *replicapb.SSTablePart) error {
		if parts++; parts == 2 && between != nil {
			between()
		}
		if p.FileEnd {
			files++
		}
		return g.Add(context.Background(), p)
	})
	if between != nil && (parts < 2 || files < 2) {
		t.Fatalf("the stream sent %d parts in %d files: too few to write to the receiver while it streams", parts, files)
	}
	return errors.Join(err, g.Close())
}

// entriesOf returns every storage entry of the test table on s, as "key=value" in hex.
func entriesOf(t *testing.T, s *Store, id schema.TableID, skip ...string) []string {
	t.Helper()
	var out []string
	err := s.ScanTokens(id, math.MinInt64, math.MaxInt64, func(k, v []byte) error {
		for _, pk := range skip {
			if bytes.Contains(k, []byte(pk+"\x00")) {
				return nil
			}
		}
		out = append(out, fmt.Sprintf("%x=%x", k, v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ingestFiles lists the streamed sstables left in s's ingest directory.
func ingestFiles(s *Store) []string {
	names, _ := s.fs.List(ingestDir(s.fs, s.dir))
	return names
}

// A range streamed as sstables arrives whole (tombstones, TTLs and their local times, every
// entry byte for byte), and a write the receiver took while the range streamed keeps its place
// by last-write-wins: newer than the streamed cell it wins, older it loses.
func TestSSTStreamMergesWithTheReceiversWrites(t *testing.T) {
	tbl := testTable(t)
	src, _ := openMem(t)
	dst, _ := openMem(t)
	exp := time.Now().Unix() + 3600
	for i := range 60 {
		pk := fmt.Sprintf("p%d", i)
		mustApply(t, src, tbl, mut(pk, row(1, "a", "v=1@10", "w=old@10"), row(2, "b", "deleted@20")),
			mut(pk, expiring(row(3, "c", "marker@15", "w=ttl@15"), 600, exp)), mut(pk, row(4, "d", "w=null@12")))
	}
	err := streamSSTs(t, src, dst, tbl.ID, math.MinInt64, math.MaxInt64, nil, func() {
		// Writes sent to the pending replica while its range streams.
		mustApply(t, dst, tbl, mut("p0", row(1, "a", "w=new@30")), mut("p1", row(1, "a", "w=older@5")))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := format(tbl, mustRead(t, dst, tbl, readReq("p0"))); !strings.Contains(got, "w=new@30") {
		t.Errorf("p0 after the stream reads %s, want the receiver's newer w=new@30", got)
	}
	if got := format(tbl, mustRead(t, dst, tbl, readReq("p1"))); !strings.Contains(got, "w=old@10") || strings.Contains(got, "older") {
		t.Errorf("p1 after the stream reads %s, want the streamed w=old@10 over the receiver's older write", got)
	}
	if got, want := entriesOf(t, dst, tbl.ID, "p0", "p1"), entriesOf(t, src, tbl.ID, "p0", "p1"); !slices.Equal(got, want) {
		t.Errorf("the receiver holds %d entries unlike the source's %d (first %v, want %v)", len(got), len(want), got[:min(len(got), 1)], want[:min(len(want), 1)])
	}
	if got := format(tbl, mustRead(t, dst, tbl, readReq("p7"))); !strings.Contains(got, "deleted@20") || !strings.Contains(got, "w=ttl@15") {
		t.Errorf("p7 on the receiver reads %s, want its row tombstone and its TTL'd row", got)
	}
	if f := ingestFiles(dst); len(f) != 0 {
		t.Errorf("streamed sstables left after ingestion: %v", f)
	}
}

// Only the span's tokens stream, and a span without entries sends nothing.
func TestSSTStreamSendsTheSpanOnly(t *testing.T) {
	tbl := testTable(t)
	src, _ := openMem(t)
	dst, _ := openMem(t)
	var pks []string
	for i := range 40 {
		pks = append(pks, fmt.Sprintf("p%d", i))
		mustApply(t, src, tbl, mut(pks[i], row(1, "a", "v=1@10")))
	}
	mid := tokenOf(pks[0])
	if err := streamSSTs(t, src, dst, tbl.ID, math.MinInt64, mid, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, pk := range pks {
		got := format(tbl, mustRead(t, dst, tbl, readReq(pk)))
		if in := tokenOf(pk) <= mid; in != (got != "") {
			t.Errorf("partition %s (token %d, span ends at %d) reads %q on the receiver", pk, tokenOf(pk), mid, got)
		}
	}
	empty, _ := openMem(t)
	sent := 0
	if _, _, err := empty.StreamSSTables(tbl.ID, math.MinInt64, math.MaxInt64, SSTableFormat(), SSTStreamOptions{}, func(*replicapb.SSTablePart) error { sent++; return nil }); err != nil || sent != 0 {
		t.Errorf("an empty span sent %d parts (%v), want none", sent, err)
	}
}

// Counters merge shard by shard with the receiver's, and streamed rows are indexed.
func TestSSTStreamCountersAndIndexes(t *testing.T) {
	ctx := context.Background()
	n1, _ := counterService(t, "n1", 0)
	n2, _ := counterService(t, "n2", 0)
	for i := range 3 {
		n1.CounterUpdate(ctx, increment(nil, "p", 1, "hits", 10, int64(100+i)))
		n2.CounterUpdate(ctx, increment(nil, "p", 1, "hits", 1, int64(200+i)))
	}
	if err := streamSSTs(t, n2.store, n1.store, testTableID, math.MinInt64, math.MaxInt64, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := counterOf(t, n1, "p", "hits"); got != 33 {
		t.Errorf("after streaming n2's shard n1 reads hits = %d, want 33 (its own 30 and n2's 3)", got)
	}

	src, _ := openMem(t)
	dst, _ := openMem(t)
	sch, tbl := indexedTable(t)
	ix := tbl.Indexes()[0]
	for i := range 30 {
		color := []string{"red", "blue"}[i%2]
		mustApply(t, src, tbl, idxMut(tbl, fmt.Sprintf("p%02d", i), row(1, "a", "w="+color+"@5")))
	}
	if err := streamSSTs(t, src, dst, tbl.ID, math.MinInt64, math.MaxInt64, sch, nil); err != nil {
		t.Fatal(err)
	}
	if err := dst.setIndexState(tbl.ID, ix.ID, indexBuilt); err != nil {
		t.Fatal(err)
	}
	if got, _ := indexKeys(t, dst, tbl, "red", 0); len(got) != 15 {
		t.Errorf("red on the receiver = %v, want the 15 red partitions", got)
	}
}

// A stream that fails inside a span leaves no file behind and ingests nothing of the span.
func TestSSTStreamFailureLeavesNothing(t *testing.T) {
	tbl := testTable(t)
	src, _ := openMem(t)
	dst, _ := openMem(t)
	for i := range 400 {
		mustApply(t, src, tbl, mut(fmt.Sprintf("p%d", i), row(1, "a", "w=some-text-to-fill-a-block-of-the-sstable@10")))
	}
	g := dst.NewSSTIngest(acceptAll, nil)
	parts, files := 0, 0
	broken := errors.New("connection reset")
	_, _, err := src.StreamSSTables(tbl.ID, math.MinInt64, math.MaxInt64, SSTableFormat(), small, func(p *replicapb.SSTablePart) error {
		if parts++; parts == 4 {
			files = len(ingestFiles(dst))
			return broken
		}
		return g.Add(context.Background(), p)
	})
	if !errors.Is(err, broken) {
		t.Fatalf("StreamSSTables with a failing send = %v, want the send's error", err)
	}
	if files == 0 {
		t.Fatalf("no file was being received when the stream broke: the test proves nothing")
	}
	if err := g.Close(); !errors.Is(err, ErrBadSSTable) || !strings.Contains(err.Error(), "ended inside the span") {
		t.Errorf("Close after a broken stream = %v, want an error saying it ended inside the span", err)
	}
	if f := ingestFiles(dst); len(f) != 0 {
		t.Errorf("files left after a failed stream: %v", f)
	}
	if got := entriesOf(t, dst, tbl.ID); len(got) != 0 {
		t.Errorf("the receiver holds %d entries of a span whose stream failed, want none", len(got))
	}
}

// writeSST returns an sstable written by fill with the store's options.
func writeSST(t *testing.T, s *Store, fill func(w *sstable.Writer) error) []byte {
	t.Helper()
	fs := vfs.NewMem()
	f, err := fs.Create("x.sst", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), s.po.MakeWriterOptions(0, FormatMajorVersion.MaxTableFormat()))
	if err := errors.Join(fill(w), w.Close()); err != nil {
		t.Fatal(err)
	}
	r, _ := fs.Open("x.sst")
	var b bytes.Buffer
	b.ReadFrom(r)
	r.Close()
	return b.Bytes()
}

// Bytes that are not an sstable of the span's merge operands are refused with an error naming
// what is wrong, and nothing of them stays.
func TestSSTIngestRefusesBadFiles(t *testing.T) {
	tbl := testTable(t)
	src, _ := openMem(t)
	dst, _ := openMem(t)
	mustApply(t, src, tbl, mut("p1", row(1, "a", "v=1@10")))
	var key, value []byte
	src.ScanTokens(tbl.ID, math.MinInt64, math.MaxInt64, func(k, v []byte) error {
		key, value = bytes.Clone(k), bytes.Clone(v)
		return nil
	})
	crc := func(b []byte) uint32 { return crc32.Checksum(b, castagnoli()) }
	// Each part has its own copy of the bytes: pebble's MemFS under invariants (which -race
	// turns on) flips the bytes a Write was given, to catch callers that count on them after.
	part := func(data []byte) *replicapb.SSTablePart {
		return &replicapb.SSTablePart{TableId: uint64(tbl.ID), TokenFrom: math.MinInt64, TokenTo: math.MaxInt64, Data: bytes.Clone(data), FileEnd: true, Crc32C: crc(data), SpanEnd: true}
	}
	garbage := bytes.Repeat([]byte("not an sstable "), 100)
	good := writeSST(t, dst, func(w *sstable.Writer) error { return w.Merge(key, value) })
	tests := []struct {
		name string
		p    *replicapb.SSTablePart
		want string
	}{
		{"garbage bytes", part(garbage), "bad streamed sstable"},
		{"a wrong checksum", func() *replicapb.SSTablePart { p := part(good); p.Crc32C++; return p }(), "checksum"},
		{"a set", part(writeSST(t, dst, func(w *sstable.Writer) error { return w.Set(key, value) })), "not a merge operand"},
		{"a range deletion", part(writeSST(t, dst, func(w *sstable.Writer) error {
			return errors.Join(w.Merge(key, value), w.DeleteRange(key, append(bytes.Clone(key), 0xff)))
		})), "range deletions"},
		{"a value that does not decode", part(writeSST(t, dst, func(w *sstable.Writer) error { return w.Merge(key, []byte{0xff}) })), "entry 0"},
		{"a key outside the span", func() *replicapb.SSTablePart {
			p := part(good)
			p.TokenFrom, p.TokenTo = tokenOf("p1")+1, math.MaxInt64
			return p
		}(), "outside the span"},
		{"a token not its partition key's", part(writeSST(t, dst, func(w *sstable.Writer) error {
			k := bytes.Clone(key)
			k[15] ^= 1
			return w.Merge(k, value)
		})), "its partition key's is"},
		{"an entry kind of no partition's", part(writeSST(t, dst, func(w *sstable.Writer) error {
			_, _, _, rest, _ := decodePartitionPrefix(key)
			return w.Merge(append(bytes.Clone(key[:len(key)-len(rest)]), 0x33), value)
		})), "entry kind 33"},
		{"table id 0", func() *replicapb.SSTablePart { p := part(good); p.TableId = 0; return p }(), "batchlog"},
	}
	for _, tc := range tests {
		g := dst.NewSSTIngest(acceptAll, nil)
		err := g.Add(context.Background(), tc.p)
		if !errors.Is(err, ErrBadSSTable) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Add = %v, want ErrBadSSTable saying %q", tc.name, err, tc.want)
		}
		if err := g.Close(); err != nil {
			t.Errorf("%s: Close after a refused part = %v, want nil (the span was dropped)", tc.name, err)
		}
		if f := ingestFiles(dst); len(f) != 0 {
			t.Errorf("%s: files left: %v", tc.name, f)
		}
	}
	if got := entriesOf(t, dst, tbl.ID); len(got) != 0 {
		t.Errorf("the receiver holds %d entries after refusing every file", len(got))
	}
	g := dst.NewSSTIngest(func(schema.TableID, int64, int64) error { return errors.New("not asked for") }, nil)
	if err := g.Add(context.Background(), part(good)); err == nil || !strings.Contains(err.Error(), "not asked for") {
		t.Errorf("Add of a span not asked for = %v, want the refusal", err)
	}
	g = dst.NewSSTIngest(acceptAll, nil)
	if err := g.Add(context.Background(), part(good)); err != nil {
		t.Errorf("Add of a good file = %v", err)
	}
}

// Open removes the streamed sstables a stream left unfinished.
func TestOpenRemovesUnfinishedStreamedSSTables(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open("db", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	d := ingestDir(fs, "db")
	if err := fs.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	f, _ := fs.Create(fs.PathJoin(d, "000001.sst"), vfs.WriteCategoryUnspecified)
	f.Write([]byte("half a file"))
	f.Close()
	s.Close()
	s, err = Open("db", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if names := ingestFiles(s); len(names) != 0 {
		t.Errorf("after reopening, the ingest directory holds %v, want nothing", names)
	}
}

// A stream stops writing files on a disk under the reserve, as writes do: a peer streaming
// without end fills it no further.
func TestSSTIngestStopsOnLowDiskSpace(t *testing.T) {
	const total = 1 << 30
	fs := faultfs.New(vfs.NewMem())
	usage := func(free uint64) {
		fs.SetDiskUsage(&vfs.DiskUsage{AvailBytes: free, TotalBytes: total, UsedBytes: total - free})
	}
	usage(total / 2)
	dst, err := Open("db", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 1 << 20,
		MinFreeSpace: 100 << 20, MinFreeSpacePercent: 50, DiskCheckInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	tbl := testTable(t)
	src, _ := openMem(t)
	for i := range 200 {
		mustApply(t, src, tbl, mut(fmt.Sprintf("p%d", i), row(1, "a", "w=some-text-to-fill-a-block-of-the-sstable@10")))
	}
	g := dst.NewSSTIngest(acceptAll, nil)
	parts := 0
	_, _, err = src.StreamSSTables(tbl.ID, math.MinInt64, math.MaxInt64, SSTableFormat(), small, func(p *replicapb.SSTablePart) error {
		if parts++; parts == 2 {
			usage(60 << 20) // under the 100 MiB reserve
			poll.Must(t, 30*time.Second, "writes refused for low disk space", func() error {
				if dst.SpaceError() == nil {
					return errors.New("writes still accepted")
				}
				return nil
			})
		}
		return g.Add(context.Background(), p)
	})
	if !errors.Is(err, ErrLowDiskSpace) || parts != 2 {
		t.Errorf("a stream onto a disk under the reserve: part %d returned %v, want part 2 refused with ErrLowDiskSpace", parts, err)
	}
	g.Close()
	if f := ingestFiles(dst); len(f) != 0 {
		t.Errorf("files left after a refused stream: %v", f)
	}
}
