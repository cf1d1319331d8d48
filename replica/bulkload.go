package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// DefaultBulkChunkBytes is how many bytes of keys and values a BulkLoader holds before it
// sorts them and writes them out as one sstable.
const DefaultBulkChunkBytes = 64 << 20

// BulkLoader loads rows of one table into a closed store by ingestion, not through the write
// path: it encodes each mutation into the keys and values Store.Apply writes (the same
// encoders), as merge operands of the store's last-write-wins merge, writes them in key order
// as sstables with the store's comparer, merger and table format, and Ingest hands those to
// pebble. Pebble gives an ingested file a newer sequence number than everything the store
// holds, but merge operands carry their write timestamps, so a row the store already holds
// with a newer timestamp still wins, as does a write made after the ingestion with a newer
// one. It is meant for tools and measurements that need a large store quickly.
//
// Mutations may come in any order; each chunk of DefaultBulkChunkBytes is sorted, and
// entries of one key within a chunk are merged. Chunks that come in key order (the
// mutations sorted by token and partition key) are ingested into the lowest level at once;
// overlapping ones are ingested one after another.
//
// A BulkLoader takes every mutation Apply takes, but refuses tables with secondary indexes
// (their entries are plain keys beside the rows) or with truncated or dropped data. It is not
// safe for concurrent use.
type BulkLoader struct {
	dir   string
	opts  Options
	t     *schema.Table
	tmp   string // the sstables' directory, beside dir
	wo    sstable.WriterOptions
	chunk int
	now   func() time.Time

	batch   pebble.Batch // of no store: a mutation's entries, encoded (add)
	arena   []byte       // the buffered entries' keys and values
	entries []bulkEntry  // indexes into arena
	files   []bulkFile
	stats   BulkStats
	closed  bool
}

// bulkEntry is one buffered key and value: arena[off:off+klen] and the vlen bytes after it.
type bulkEntry struct {
	off, klen, vlen int
}

// bulkFile is one sstable written, with its key bounds.
type bulkFile struct {
	path              string
	smallest, largest []byte
}

// BulkStats is what a BulkLoader wrote.
type BulkStats struct {
	Mutations int64 // mutations added
	Entries   int64 // keys written (entries of one key in one chunk merged)
	Bytes     int64 // key and value bytes written
	Files     int   // sstables
	FileBytes int64 // their size
	// Ingests is how many ingest calls it took: 1 when the files do not overlap.
	Ingests int
}

// NewBulkLoader returns a loader of table t's rows into the store in dir, which must be
// closed (the store is opened by Ingest). opts are the store's options (its filesystem, and
// its clock for tombstones' local deletion time); its sstables are written under dir's parent
// directory, in dir's name with ".bulkload" appended, which must not exist.
func NewBulkLoader(dir string, t *schema.Table, opts Options) (*BulkLoader, error) {
	if t == nil {
		return nil, errors.New("replica: bulk load: no table")
	}
	if len(t.Indexes()) > 0 {
		return nil, fmt.Errorf("replica: bulk load into %s: the table has secondary indexes, whose entries a bulk load does not write", t.QualifiedName())
	}
	if t.HasShadows() {
		return nil, fmt.Errorf("replica: bulk load into %s: the table was truncated or lost columns, whose shadows a bulk load does not apply", t.QualifiedName())
	}
	opts.EnsureDefaults()
	l := &BulkLoader{dir: dir, opts: opts, t: t, tmp: filepath.Clean(dir) + ".bulkload", chunk: DefaultBulkChunkBytes, now: time.Now}
	if opts.Clock != nil {
		l.now = opts.Clock.Now
	}
	if _, err := opts.FS.Stat(l.tmp); err == nil {
		return nil, fmt.Errorf("replica: bulk load into %s: %s exists (a bulk load in progress, or left over from one)", dir, l.tmp)
	}
	if err := opts.FS.MkdirAll(l.tmp, 0o755); err != nil {
		return nil, fmt.Errorf("replica: bulk load into %s: %w", dir, err)
	}
	po := opts.pebbleOptions(opts.FS, pebbleLogger{})
	po.EnsureDefaults()
	l.wo = po.MakeWriterOptions(0, FormatMajorVersion.MaxTableFormat())
	return l, nil
}

// Add encodes m, a mutation of the loader's table, into its entries; they are written once a
// chunk fills up, or by Ingest. A mutation the loader refuses (see BulkLoader) or that Apply
// would refuse returns an error wrapping ErrBadRequest and adds nothing.
func (l *BulkLoader) Add(m *replicapb.Mutation) error {
	if l.closed {
		return errors.New("replica: bulk load: Add after Ingest or Abort")
	}
	t := l.t
	if m.GetTableId() != uint64(t.ID) {
		return badRequest(t, "mutation is for table id %d", m.GetTableId())
	}
	if len(m.Rows) == 0 && m.PartitionDeletion == nil && len(m.RangeTombstones) == 0 && m.StaticRow == nil {
		return badRequest(t, "mutation writes nothing: no rows, range tombstones or partition deletion")
	}
	mark := len(l.entries)
	arenaMark := len(l.arena)
	if err := l.add(m); err != nil {
		l.entries, l.arena = l.entries[:mark], l.arena[:arenaMark]
		return err
	}
	l.stats.Mutations++
	if len(l.arena) >= l.chunk {
		return l.flush()
	}
	return nil
}

// add appends m's entries, encoded as Apply encodes them (encodeMutation, into the loader's
// batch of no store, read back).
func (l *BulkLoader) add(m *replicapb.Mutation) error {
	local := l.now().UnixNano()
	l.batch.Reset()
	if err := encodeMutation(l.t, m, func() int64 { return local }, &l.batch); err != nil {
		return err
	}
	r := l.batch.Reader()
	for {
		kind, key, val, ok, err := r.Next()
		switch {
		case err != nil:
			return fmt.Errorf("replica: bulk load into %s: read back an encoded mutation: %w", l.t.QualifiedName(), err)
		case !ok:
			return nil
		case kind != pebble.InternalKeyKindMerge:
			return fmt.Errorf("replica: bulk load into %s: an entry of kind %s, where the loader writes merge operands only", l.t.QualifiedName(), kind)
		}
		l.put(key, val)
	}
}

// put buffers one entry.
func (l *BulkLoader) put(key, val []byte) {
	off := len(l.arena)
	l.arena = append(append(l.arena, key...), val...)
	l.entries = append(l.entries, bulkEntry{off: off, klen: len(key), vlen: len(val)})
}

func (l *BulkLoader) key(e bulkEntry) []byte { return l.arena[e.off : e.off+e.klen] }
func (l *BulkLoader) value(e bulkEntry) []byte {
	return l.arena[e.off+e.klen : e.off+e.klen+e.vlen]
}

// flush sorts the buffered entries and writes them as one sstable of merge operands, the
// entries of one key merged by last-write-wins first (an sstable holds a key once).
func (l *BulkLoader) flush() (err error) {
	if len(l.entries) == 0 {
		return nil
	}
	slices.SortStableFunc(l.entries, func(a, b bulkEntry) int { return bytes.Compare(l.key(a), l.key(b)) })
	path := filepath.Join(l.tmp, fmt.Sprintf("%06d.sst", len(l.files)))
	f, err := l.opts.FS.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("replica: bulk load: %w", err)
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), l.wo)
	defer func() {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("replica: bulk load: %s: %w", path, cerr)
		}
	}()
	merger := newLWWMerger()
	for i := 0; i < len(l.entries); {
		e := l.entries[i]
		k, v := l.key(e), l.value(e)
		j := i + 1
		if j < len(l.entries) && bytes.Equal(l.key(l.entries[j]), k) {
			vm, err := merger.Merge(k, v)
			if err != nil {
				return fmt.Errorf("replica: bulk load: %w", err)
			}
			for ; j < len(l.entries) && bytes.Equal(l.key(l.entries[j]), k); j++ {
				if err := vm.MergeNewer(l.value(l.entries[j])); err != nil {
					return fmt.Errorf("replica: bulk load: %w", err)
				}
			}
			if v, _, err = vm.Finish(true); err != nil {
				return fmt.Errorf("replica: bulk load: %w", err)
			}
		}
		if err := w.Merge(k, v); err != nil {
			return fmt.Errorf("replica: bulk load: %s: %w", path, err)
		}
		l.stats.Entries++
		l.stats.Bytes += int64(len(k) + len(v))
		i = j
	}
	first, last := l.key(l.entries[0]), l.key(l.entries[len(l.entries)-1])
	l.files = append(l.files, bulkFile{path: path, smallest: bytes.Clone(first), largest: bytes.Clone(last)})
	l.entries, l.arena = l.entries[:0], l.arena[:0]
	return nil
}

// Ingest writes what is still buffered, opens the store in dir (with the loader's options),
// ingests every sstable written, closes the store and removes the sstables' directory. Files
// whose key spans do not overlap go in one ingestion; otherwise each goes in its own, in the
// order written. The loader is done after it, whatever it returns.
func (l *BulkLoader) Ingest(ctx context.Context) (BulkStats, error) {
	if l.closed {
		return l.stats, errors.New("replica: bulk load: Ingest after Ingest or Abort")
	}
	defer l.Abort()
	if err := l.flush(); err != nil {
		return l.stats, err
	}
	l.stats.Files = len(l.files)
	for _, f := range l.files {
		info, err := l.opts.FS.Stat(f.path)
		if err != nil {
			return l.stats, fmt.Errorf("replica: bulk load: %w", err)
		}
		l.stats.FileBytes += info.Size()
	}
	if len(l.files) == 0 {
		return l.stats, nil
	}
	batches := [][]string{}
	if disjoint(l.files) {
		var all []string
		for _, f := range l.files {
			all = append(all, f.path)
		}
		batches = append(batches, all)
	} else {
		for _, f := range l.files {
			batches = append(batches, []string{f.path})
		}
	}
	s, err := Open(l.dir, l.opts)
	if err != nil {
		return l.stats, err
	}
	for _, b := range batches {
		if err = s.db.Ingest(ctx, b); err != nil {
			err = fmt.Errorf("replica: bulk load into %s: ingest: %w", l.dir, err)
			break
		}
		l.stats.Ingests++
	}
	return l.stats, errors.Join(err, s.Close())
}

// disjoint reports whether files, in the order written, cover increasing key spans that do
// not overlap.
func disjoint(files []bulkFile) bool {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b bulkFile) int { return bytes.Compare(a.smallest, b.smallest) })
	for i := 1; i < len(sorted); i++ {
		if bytes.Compare(sorted[i-1].largest, sorted[i].smallest) >= 0 {
			return false
		}
	}
	return true
}

// Abort drops what the loader buffered and removes its sstables' directory (Ingest calls it).
func (l *BulkLoader) Abort() error {
	l.closed = true
	l.entries, l.arena, l.files = nil, nil, nil
	return l.opts.FS.RemoveAll(l.tmp)
}

// BulkLoad loads mutations of table t into the closed store in dir with a BulkLoader and
// returns what it wrote.
func BulkLoad(ctx context.Context, dir string, t *schema.Table, opts Options, mutations iter.Seq[*replicapb.Mutation]) (BulkStats, error) {
	l, err := NewBulkLoader(dir, t, opts)
	if err != nil {
		return BulkStats{}, err
	}
	for m := range mutations {
		if err = l.Add(m); err != nil {
			break
		}
	}
	if err != nil {
		return l.stats, errors.Join(err, l.Abort())
	}
	return l.Ingest(ctx)
}
