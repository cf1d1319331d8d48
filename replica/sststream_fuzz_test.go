package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// fuzzEntries returns the storage entries of a few partitions of the test table (rows, cells,
// tombstones, a partition deletion), sorted, to build the fuzz tests' sstables from.
func fuzzEntries(tb testing.TB) (keys, values [][]byte) {
	tb.Helper()
	tbl := testTable(tb)
	src, _ := openMem(tb)
	for i := range 4 {
		pk := fmt.Sprintf("p%d", i)
		for _, m := range []*replicapb.Mutation{mut(pk, row(1, "a", "v=1@10", "w=x@11"), row(2, "b\x00c", "deleted@20")),
			mut(pk, row(3, "c", "marker@15", "w=null@16"))} {
			if err := src.Apply(tbl, m); err != nil {
				tb.Fatal(err)
			}
		}
	}
	del := int64(30)
	if err := src.Apply(tbl, &replicapb.Mutation{TableId: testTableID, PartitionKey: [][]byte{[]byte("pd")}, Token: tokenOf("pd"), PartitionDeletion: &del}); err != nil {
		tb.Fatal(err)
	}
	err := src.ScanTokens(testTableID, math.MinInt64, math.MaxInt64, func(k, v []byte) error {
		keys, values = append(keys, bytes.Clone(k)), append(values, bytes.Clone(v))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return keys, values
}

// sstBytes returns the bytes of an sstable written by fill with s's options, or false when the
// writer refused what fill wrote (keys out of order, say).
func sstBytes(s *Store, fill func(w *sstable.Writer) error) ([]byte, bool) {
	fs := vfs.NewMem()
	f, err := fs.Create("x.sst", vfs.WriteCategoryUnspecified)
	if err != nil {
		panic(err)
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), s.po.MakeWriterOptions(0, FormatMajorVersion.MaxTableFormat()))
	if err := errors.Join(fill(w), w.Close()); err != nil {
		return nil, false
	}
	r, err := fs.Open("x.sst")
	if err != nil {
		panic(err)
	}
	defer r.Close()
	var b bytes.Buffer
	b.ReadFrom(r)
	return b.Bytes(), true
}

// ingestFuzzed sends file to a new store's SSTIngest as the one file of table testTableID's
// span [from, to], in parts of partBytes (0: one part), with its checksum, and checks what the
// receiver promises: a refused file leaves no file and no entry behind; an accepted one leaves
// only well-formed entries of the span: keys of the table's partitions in the span, whose
// tokens are their partition keys', rows with their clustering, values that decode.
func ingestFuzzed(t *testing.T, file []byte, from, to int64, partBytes int) {
	dst, _ := openMem(t)
	tbl := testTable(t)
	g := dst.NewSSTIngest(acceptAll, tables{tbl.ID: tbl})
	crc := crc32.Checksum(file, castagnoli())
	var err error
	for off := 0; err == nil; {
		n := len(file) - off
		if partBytes > 0 {
			n = min(n, partBytes)
		}
		end := off+n == len(file)
		p := &replicapb.SSTablePart{TableId: testTableID, TokenFrom: from, TokenTo: to, Data: bytes.Clone(file[off : off+n]), FileEnd: end, SpanEnd: end}
		if end {
			p.Crc32C = crc
		}
		err = g.Add(context.Background(), p)
		if off += n; end {
			break
		}
	}
	if cerr := g.Close(); cerr != nil && err == nil {
		t.Fatalf("Close after an accepted span: %v", cerr)
	}
	if f := ingestFiles(dst); len(f) != 0 {
		t.Fatalf("files left in the ingest directory (Add: %v): %v", err, f)
	}
	var entries int
	scanErr := dst.ScanTokens(testTableID, math.MinInt64, math.MaxInt64, func(k, v []byte) error {
		entries++
		table, token, pk, rest, err := decodePartitionPrefix(k)
		switch {
		case err != nil:
			return fmt.Errorf("key %x: %v", k, err)
		case table != testTableID || token < from || token > to:
			return fmt.Errorf("key %x: table %d token %d, outside table %d tokens [%d, %d]", k, table, token, testTableID, from, to)
		case partitioner.Token(pk) != token:
			return fmt.Errorf("key %x: token %d, its partition key's is %d", k, token, partitioner.Token(pk))
		case len(rest) == 0:
			return fmt.Errorf("key %x: a partition prefix alone", k)
		case rest[0] == kindRow:
			if _, entry, err := splitRowKey(tbl, rest[1:]); err != nil || len(entry) == 0 {
				return fmt.Errorf("key %x: a row key without its clustering or entry (%v)", k, err)
			}
		}
		if _, err := decodeValue(v); err != nil {
			return fmt.Errorf("key %x: value %x: %v", k, v, err)
		}
		return nil
	})
	if err != nil && entries > 0 {
		t.Fatalf("Add refused the file (%v), yet the receiver holds %d entries", err, entries)
	}
	if scanErr != nil {
		t.Fatalf("Add accepted an sstable with an entry it promises to refuse: %v", scanErr)
	}
}

// FuzzSSTIngestBytes gives the receiver of a streamed sstable arbitrary bytes with their right
// checksum (a source with a bug, or a hostile one, computes it): they are refused or ingested as
// they should, never a crash, a hang or garbage in the store.
func FuzzSSTIngestBytes(f *testing.F) {
	keys, values := fuzzEntries(f)
	s, _ := openMem(f)
	good, _ := sstBytes(s, func(w *sstable.Writer) error {
		for i := range keys {
			if err := w.Merge(keys[i], values[i]); err != nil {
				return err
			}
		}
		return nil
	})
	set, _ := sstBytes(s, func(w *sstable.Writer) error { return w.Set(keys[0], values[0]) })
	f.Add(good, int64(math.MinInt64), int64(math.MaxInt64), uint16(0))
	f.Add(good, int64(math.MinInt64), int64(math.MaxInt64), uint16(100))
	f.Add(good, tokenOf("p1"), tokenOf("p1"), uint16(0))
	f.Add(good[:len(good)-10], int64(math.MinInt64), int64(math.MaxInt64), uint16(0))
	f.Add(good[10:], int64(math.MinInt64), int64(math.MaxInt64), uint16(0))
	f.Add(set, int64(math.MinInt64), int64(math.MaxInt64), uint16(0))
	f.Add([]byte("not an sstable"), int64(math.MinInt64), int64(math.MaxInt64), uint16(0))
	f.Fuzz(func(t *testing.T, file []byte, from, to int64, partBytes uint16) {
		if from > to {
			from, to = to, from
		}
		ingestFuzzed(t, file, from, to, int(partBytes))
	})
}

// FuzzSSTIngestEntries writes sstables of what a source with a bug, or a hostile one, could put
// in them (sets, deletions, range deletions and range key deletions beside merge operands; keys cut
// short, grown, or of another table or token; values that do not decode) and gives them to the
// receiver, which must refuse those that hold anything but merge operands of the span's
// well-formed keys with values that decode.
//
// ops is read 4 bytes at a time: the entry's kind, the key it starts from, how the key is
// changed, and its value.
func FuzzSSTIngestEntries(f *testing.F) {
	keys, values := fuzzEntries(f)
	s, _ := openMem(f)
	valid := make([]byte, 0, 4*len(keys))
	for i := range keys {
		valid = append(valid, 0, byte(i), 0, byte(i))
	}
	f.Add(valid, []byte{}, int64(math.MinInt64), int64(math.MaxInt64))
	f.Add(valid, []byte{}, tokenOf("p0"), tokenOf("p0"))
	f.Add([]byte{1, 0, 0, 0}, []byte{}, int64(math.MinInt64), int64(math.MaxInt64))              // a set
	f.Add([]byte{0, 0, 1, 0, 0, 1, 0, 1}, []byte{0}, int64(math.MinInt64), int64(math.MaxInt64)) // a key grown
	f.Add([]byte{0, 0, 2, 0}, []byte{3}, int64(math.MinInt64), int64(math.MaxInt64))             // a key cut short
	f.Add([]byte{0, 0, 3, 0}, []byte{0xff}, int64(math.MinInt64), int64(math.MaxInt64))          // another token
	f.Add([]byte{0, 0, 0, 0xff}, []byte{1, 2}, int64(math.MinInt64), int64(math.MaxInt64))       // a garbage value
	f.Add([]byte{0, 0, 0, 0, 4, 1, 0, 0}, []byte{}, int64(math.MinInt64), int64(math.MaxInt64))  // a range deletion
	f.Fuzz(func(t *testing.T, ops, extra []byte, from, to int64) {
		if from > to {
			from, to = to, from
		}
		type entry struct {
			kind   byte
			k, v   []byte
			tokens bool
		}
		var es []entry
		for ; len(ops) >= 4; ops = ops[4:] {
			e := entry{kind: ops[0] % 6, k: bytes.Clone(keys[int(ops[1])%len(keys)]), v: values[int(ops[3])%len(values)]}
			switch ops[2] % 6 {
			case 1:
				e.k = append(e.k, extra...)
			case 2:
				e.k = e.k[:max(0, len(e.k)-1-len(extra))]
			case 3:
				if len(extra) > 0 {
					e.k[8+int(extra[0])%8] ^= 1 + extra[len(extra)-1]%255
				}
			case 4:
				binary.BigEndian.PutUint64(e.k, binary.BigEndian.Uint64(e.k)+1) // another table
			case 5:
				e.k = append(e.k[:16], extra...) // any partition key and rest
			}
			if ops[3] >= 0xf0 {
				e.v = extra
			}
			es = append(es, e)
		}
		slices.SortStableFunc(es, func(a, b entry) int { return bytes.Compare(a.k, b.k) })
		file, ok := sstBytes(s, func(w *sstable.Writer) error {
			var prev []byte
			for i, e := range es {
				if i > 0 && bytes.Equal(e.k, prev) {
					continue
				}
				prev = e.k
				var err error
				switch e.kind {
				case 0, 5:
					err = w.Merge(e.k, e.v)
				case 1:
					err = w.Set(e.k, e.v)
				case 2:
					err = w.Delete(e.k)
				case 3:
					err = w.RangeKeyDelete(e.k, append(bytes.Clone(e.k), 0))
				case 4:
					err = w.DeleteRange(e.k, append(bytes.Clone(e.k), 0))
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if !ok {
			return // the writer refused it: no source sends it
		}
		ingestFuzzed(t, file, from, to, 0)
	})
}
