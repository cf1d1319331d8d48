package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Streaming as sstables: the source writes a table's entries in a token span as pebble sstables,
// each entry a merge operand of the last-write-wins merge (never a set), and sends their bytes
// as they are written (StreamSSTables); the receiver writes them to files beside its database,
// checks them, and ingests a span's files together at its end (SSTIngest). Pebble gives an
// ingested file a sequence number newer than every key the receiver holds, so a set in it would
// shadow a newer write the receiver already has (a write sent to it as a pending replica while
// the range streamed); a merge operand is merged with it by the same rule as a write, so the
// newer cell wins whichever arrived first. Ingestion never excises: a pending range may hold such
// writes. A file's index entries (index.go) are written before its span is ingested: an entry
// without its row is skipped by reads, a row without its entry would be missed.

// SSTStreamOptions bound the sstables StreamSSTables writes; the zero value means the defaults.
type SSTStreamOptions struct {
	// PartBytes is the bytes of a file sent at a time (default 256 KiB).
	PartBytes int
	// FileBytes is the size past which a span's sstable ends and the next begins (default 64 MiB).
	FileBytes int
}

const (
	defaultSSTPartBytes = 256 << 10
	defaultSSTFileBytes = 64 << 20
	// maxIngestFileBytes bounds one streamed sstable a receiver accepts.
	maxIngestFileBytes = 1 << 30
)

// ErrBadSSTable is wrapped by the error of a streamed sstable a receiver refuses: it does not
// decode, fails its checksum, or holds something other than merge operands of the span's rows.
var ErrBadSSTable = errors.New("replica: bad streamed sstable")

// ingestDir returns the directory of the streamed sstables of the store in dir, inside it. Open
// empties it: a file a stream left there unfinished is never ingested.
func ingestDir(fs vfs.FS, dir string) string { return fs.PathJoin(dir, "stream-ingest") }

// SSTableFormat returns the newest sstable format the store writes and ingests, for a receiver's
// request (replicapb.PullRequest.sstable_format).
func SSTableFormat() uint32 { return uint32(FormatMajorVersion.MaxTableFormat()) }

// sstFormat returns the table format to write for a receiver that ingests formats up to f: the
// older of f and the store's newest, or false when f is older than every format the store writes.
func sstFormat(f uint32) (sstable.TableFormat, bool) {
	tf := min(sstable.TableFormat(f), FormatMajorVersion.MaxTableFormat())
	return tf, tf >= FormatMajorVersion.MinTableFormat() && tf > sstable.TableFormatUnspecified
}

// CanStreamSSTables reports whether the store can write sstables a receiver that ingests formats
// up to f can ingest.
func CanStreamSSTables(f uint32) bool { _, ok := sstFormat(f); return ok }

// partWritable is the objstorage.Writable of a streamed sstable: it hands the file's bytes to
// send in parts of about partBytes, the last one with the file's CRC-32C.
type partWritable struct {
	buf       []byte
	partBytes int
	crc       uint32
	send      func(data []byte, end bool, crc uint32) error
	err       error
}

func (w *partWritable) Write(p []byte) error {
	if w.err != nil {
		return w.err
	}
	w.crc = crc32.Update(w.crc, castagnoli(), p)
	w.buf = append(w.buf, p...)
	if len(w.buf) >= w.partBytes {
		w.err = w.send(w.buf, false, 0)
		w.buf = make([]byte, 0, w.partBytes+w.partBytes/4) // send may keep the slice
	}
	return w.err
}

func (w *partWritable) Finish() error {
	if w.err != nil {
		return w.err
	}
	w.err = w.send(w.buf, true, w.crc)
	w.buf = nil
	return w.err
}

func (w *partWritable) Abort() { w.buf = nil }

// castagnoli returns the CRC-32C table (crc32 builds it once).
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// errAbandoned stops the writes of an sstable whose stream failed.
var errAbandoned = errors.New("replica: streamed sstable abandoned")

// StreamSSTables writes the entries of table id whose partition token t has from ≤ t ≤ to as
// sstables of merge operands in table format (see CanStreamSSTables), handing their bytes to send
// in order as they are written: parts of a file, its last one with file_end and its checksum, the
// span's last one with span_end. A span without entries sends nothing. It returns the entries and
// their key and value bytes. The parts send gets are its own.
func (s *Store) StreamSSTables(id schema.TableID, from, to int64, format uint32, o SSTStreamOptions, send func(*replicapb.SSTablePart) error) (entries, kvBytes int64, err error) {
	tf, ok := sstFormat(format)
	if !ok {
		return 0, 0, fmt.Errorf("replica: stream table id %d as sstables: the receiver ingests sstable formats up to %d, older than this store writes", id, format)
	}
	if o.PartBytes <= 0 {
		o.PartBytes = defaultSSTPartBytes
	}
	if o.FileBytes <= 0 {
		o.FileBytes = defaultSSTFileBytes
	}
	wo := s.po.MakeWriterOptions(0, tf)
	var (
		w      *sstable.Writer
		pw     *partWritable
		rotate bool
	)
	open := func() {
		pw = &partWritable{partBytes: o.PartBytes, buf: make([]byte, 0, o.PartBytes+o.PartBytes/4)}
		pw.send = func(data []byte, end bool, crc uint32) error {
			return send(&replicapb.SSTablePart{TableId: uint64(id), TokenFrom: from, TokenTo: to, Data: data, FileEnd: end, Crc32C: crc, SpanEnd: end && !rotate})
		}
		w, rotate = sstable.NewWriter(pw, wo), false
	}
	defer func() {
		if w != nil { // an error: abandon the file, sending nothing more of it
			pw.err = errAbandoned
			_ = w.Close()
		}
	}()
	err = s.ScanTokens(id, from, to, func(k, v []byte) error {
		if rotate {
			err := w.Close() // rotate is set: the part it sends does not end the span
			if w = nil; err != nil {
				return err
			}
		}
		if w == nil {
			open()
		}
		if err := w.Merge(k, v); err != nil {
			return err
		}
		entries, kvBytes = entries+1, kvBytes+int64(len(k)+len(v))
		rotate = w.Raw().EstimatedSize() >= uint64(o.FileBytes)
		return nil
	})
	if err == nil && w != nil {
		rotate = false // the last file ends the span
		err = w.Close()
		w = nil
	}
	if err != nil {
		return entries, kvBytes, fmt.Errorf("replica: stream table id %d tokens [%d, %d] as sstables: %w", id, from, to, err)
	}
	return entries, kvBytes, nil
}

// SSTIngest receives the streamed sstables of one stream (StreamSSTables' parts, in order) and
// ingests each span's files at its end. It is not safe for concurrent use. Close removes the files
// of a span that did not end.
type SSTIngest struct {
	s      *Store
	accept func(id schema.TableID, from, to int64) error
	tables TableSource
	dir    string

	// The span being received: its table, tokens and files (the last one open while its parts
	// arrive).
	spanOpen bool
	table    schema.TableID
	from, to int64
	files    []string
	f        vfs.File
	path     string
	size     int64
	crc      uint32
	index    *pebble.Batch // the index entries of the file being checked

	entries, kvBytes uint64
}

// NewSSTIngest returns an SSTIngest for one stream. accept says whether a span (table id, tokens
// from to to, inclusive) is one the receiver asked for; tables, when set, is the receiver's schema,
// whose indexes a span's rows are indexed by.
func (s *Store) NewSSTIngest(accept func(id schema.TableID, from, to int64) error, tables TableSource) *SSTIngest {
	return &SSTIngest{s: s, accept: accept, tables: tables, dir: ingestDir(s.fs, s.dir)}
}

// Received returns the entries ingested so far and their key and value bytes.
func (g *SSTIngest) Received() (entries, kvBytes uint64) { return g.entries, g.kvBytes }

// Add takes the next part of the stream: it appends its bytes to the span's current file, checks
// a file that ends (checksum, format, every point a merge operand of the span's keys with a value
// that decodes) and ingests the span's files once it ends, durably.
func (g *SSTIngest) Add(ctx context.Context, p *replicapb.SSTablePart) error {
	if err := g.add(ctx, p); err != nil {
		g.abort()
		return err
	}
	return nil
}

func (g *SSTIngest) add(ctx context.Context, p *replicapb.SSTablePart) error {
	id, from, to := schema.TableID(p.GetTableId()), p.GetTokenFrom(), p.GetTokenTo()
	if !g.spanOpen {
		if id == 0 {
			return fmt.Errorf("%w: table id 0 is the batchlog's key space", ErrBadSSTable)
		}
		if from > to {
			return fmt.Errorf("%w: token span [%d, %d] is empty", ErrBadSSTable, from, to)
		}
		if err := g.accept(id, from, to); err != nil {
			return fmt.Errorf("%w: table id %d tokens [%d, %d]: %v", ErrBadSSTable, id, from, to, err)
		}
		g.spanOpen, g.table, g.from, g.to = true, id, from, to
	} else if id != g.table || from != g.from || to != g.to {
		return fmt.Errorf("%w: a part of table id %d tokens [%d, %d] inside the span of table id %d tokens [%d, %d]",
			ErrBadSSTable, id, from, to, g.table, g.from, g.to)
	}
	if err := g.s.SpaceError(); err != nil {
		return err // a stream fills the disk no further than a write would
	}
	if g.f == nil {
		if err := g.s.fs.MkdirAll(g.dir, 0o755); err != nil {
			return fmt.Errorf("replica: streamed sstable: %w", err)
		}
		g.path = g.s.fs.PathJoin(g.dir, fmt.Sprintf("%06d.sst", g.s.ingestSeq.Add(1)))
		f, err := g.s.fs.Create(g.path, vfs.WriteCategoryUnspecified)
		if err != nil {
			return fmt.Errorf("replica: streamed sstable: %w", err)
		}
		g.f, g.size, g.crc = f, 0, 0
		g.files = append(g.files, g.path)
	}
	if g.size += int64(len(p.GetData())); g.size > maxIngestFileBytes {
		return fmt.Errorf("%w: table id %d tokens [%d, %d]: a file of more than %d bytes", ErrBadSSTable, id, from, to, maxIngestFileBytes)
	}
	g.crc = crc32.Update(g.crc, castagnoli(), p.GetData())
	if _, err := g.f.Write(p.GetData()); err != nil {
		return fmt.Errorf("replica: streamed sstable: %w", err)
	}
	if !p.GetFileEnd() {
		if p.GetSpanEnd() {
			return fmt.Errorf("%w: table id %d tokens [%d, %d]: the span ends inside a file", ErrBadSSTable, id, from, to)
		}
		return nil
	}
	if g.crc != p.GetCrc32C() {
		return fmt.Errorf("%w: table id %d tokens [%d, %d]: checksum %08x, the source sent %08x", ErrBadSSTable, id, from, to, g.crc, p.GetCrc32C())
	}
	err := g.f.Sync()
	if cerr := g.f.Close(); err == nil {
		err = cerr
	}
	g.f = nil
	if err != nil {
		return fmt.Errorf("replica: streamed sstable: %w", err)
	}
	if err := g.check(ctx, g.path); err != nil {
		return err
	}
	if err := g.writeIndex(); err != nil {
		return err
	}
	if !p.GetSpanEnd() {
		return nil
	}
	return g.ingest(ctx)
}

// check reads the streamed sstable at path: it must be an sstable in a format the store ingests,
// without range deletions or range keys, whose points are merge operands of table g.table's keys
// in the span's tokens, in order, each a storage key (checkStreamedKey) with a value that decodes. It adds their index entries to
// g.index.
func (g *SSTIngest) check(ctx context.Context, path string) (err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: table id %d tokens [%d, %d]: %s", ErrBadSSTable, g.table, g.from, g.to, fmt.Sprintf(format, args...))
	}
	f, err := g.s.fs.Open(path)
	if err != nil {
		return fmt.Errorf("replica: streamed sstable: %w", err)
	}
	readable, err := objstorageprovider.NewFileReadable(f, g.s.fs, objstorageprovider.NewReadaheadConfig(), path)
	if err != nil {
		f.Close()
		return fmt.Errorf("replica: streamed sstable: %w", err)
	}
	r, err := sstable.NewReader(ctx, readable, g.s.po.MakeReaderOptions()) // closes readable
	if err != nil {
		return bad("%v", err)
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	if tf, err := r.TableFormat(); err != nil || tf > FormatMajorVersion.MaxTableFormat() {
		return bad("table format %v (%v), newer than this store ingests", tf, err)
	}
	if it, err := r.NewRawRangeDelIter(ctx, sstable.FragmentIterTransforms{}, sstable.NoReadEnv); err != nil || it != nil {
		if it != nil {
			it.Close()
		}
		return bad("it holds range deletions (%v)", err)
	}
	if it, err := r.NewRawRangeKeyIter(ctx, sstable.FragmentIterTransforms{}, sstable.NoReadEnv); err != nil || it != nil {
		if it != nil {
			it.Close()
		}
		return bad("it holds range keys (%v)", err)
	}
	it, err := r.NewIter(sstable.NoTransforms, nil, nil, sstable.AssertNoBlobHandles)
	if err != nil {
		return bad("%v", err)
	}
	defer func() { err = errors.Join(err, it.Close()) }()
	lower, upper := tokenSpan(g.table, g.from, g.to)
	var t, tbl *schema.Table // t when the table has indexes
	if g.tables != nil {
		if tb, ok := g.tables.TableByID(g.table); ok {
			if tbl = tb; len(tb.Indexes()) > 0 {
				t = tb
			}
		}
	}
	var prev, partition []byte
	var n, kv uint64
	for e := it.First(); e != nil; e = it.Next() {
		k := e.K.UserKey
		if e.Kind() != pebble.InternalKeyKindMerge || e.SeqNum() != 0 {
			return bad("entry %d (key %x) is a %v, not a merge operand", n, k[:min(len(k), 24)], e.Kind())
		}
		if bytes.Compare(k, lower) < 0 || (upper != nil && bytes.Compare(k, upper) >= 0) || (prev != nil && bytes.Compare(k, prev) <= 0) {
			return bad("entry %d (key %x) is out of order or outside the span", n, k[:min(len(k), 24)])
		}
		prev = append(prev[:0], k...)
		if partition, err = checkStreamedKey(k, partition, tbl); err != nil {
			return bad("entry %d (key %x): %v", n, k[:min(len(k), 24)], err)
		}
		v, _, err := e.Value(nil)
		if err == nil {
			_, err = decodeValue(v)
		}
		if err != nil {
			return bad("entry %d (key %x): %v", n, k[:min(len(k), 24)], err)
		}
		if t != nil {
			if g.index == nil {
				g.index = g.s.db.NewBatch()
			}
			if err := indexStreamed(g.index, t, k, v); err != nil {
				return bad("entry %d (key %x): index: %v", n, k[:min(len(k), 24)], err)
			}
		}
		n, kv = n+1, kv+uint64(len(k)+len(v))
	}
	if err := it.Error(); err != nil {
		return bad("%v", err)
	}
	if n == 0 {
		return bad("it holds no entries")
	}
	g.entries, g.kvBytes = g.entries+n, g.kvBytes+kv
	return nil
}

// writeIndex writes the index entries of the file just checked, durably: before its rows are
// ingested (an entry without its row is skipped by reads), and a file at a time, so that they
// never hold more memory than a file's rows.
func (g *SSTIngest) writeIndex() error {
	if g.index == nil {
		return nil
	}
	b := g.index
	g.index = nil
	defer b.Close()
	g.s.closeMu.RLock()
	defer g.s.closeMu.RUnlock()
	if g.s.closed {
		return errStoreClosed
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("replica: streamed sstables of table id %d tokens [%d, %d]: index: %w", g.table, g.from, g.to, err)
	}
	return nil
}

// ingest ingests the span's files, durably, and ends the span.
func (g *SSTIngest) ingest(ctx context.Context) error {
	if err := g.s.usable(); err != nil {
		return err
	}
	if err := g.s.SpaceError(); err != nil {
		return err
	}
	g.s.closeMu.RLock()
	defer g.s.closeMu.RUnlock()
	if g.s.closed {
		return errStoreClosed
	}
	if err := g.s.db.Ingest(ctx, g.files); err != nil {
		return fmt.Errorf("replica: ingest streamed sstables of table id %d tokens [%d, %d]: %w", g.table, g.from, g.to, err)
	}
	for _, f := range g.files { // pebble linked them into the database
		_ = g.s.fs.Remove(f)
	}
	g.files, g.spanOpen = g.files[:0], false
	return nil
}

// abort drops the span being received: its files and index entries.
func (g *SSTIngest) abort() {
	if g.f != nil {
		g.f.Close()
		g.f = nil
	}
	for _, f := range g.files {
		_ = g.s.fs.Remove(f)
	}
	if g.index != nil {
		g.index.Close()
		g.index = nil
	}
	g.files, g.spanOpen = nil, false
}

// Close ends the stream: it removes the files of a span that did not end and returns an error
// saying so (a stream that ended inside a span lost its end).
func (g *SSTIngest) Close() error {
	open := g.spanOpen
	g.abort()
	if open {
		return fmt.Errorf("%w: the stream ended inside the span of table id %d tokens [%d, %d]", ErrBadSSTable, g.table, g.from, g.to)
	}
	return nil
}

// checkStreamedKey checks that k, a streamed key of table tbl (nil when the receiver does not
// know it), is a storage key (key.go): a partition prefix whose token is its partition key's,
// then an entry kind, and for a row of a known table its clustering and row entry. A key that
// is not would be garbage no read finds (a token that is not its partition key's) or fails on.
// partition is the prefix of the last key checked, whose token was checked already; it returns
// k's.
func checkStreamedKey(k, partition []byte, tbl *schema.Table) ([]byte, error) {
	var rest []byte
	if len(partition) > 0 && bytes.HasPrefix(k, partition) {
		rest = k[len(partition):] // escaped partition keys are prefix-free: the same partition
	} else {
		_, token, pk, r, err := decodePartitionPrefix(k)
		if err != nil {
			return nil, errors.New("its partition key does not decode")
		}
		if pt := partitioner.Token(pk); pt != token {
			return nil, fmt.Errorf("token %d, its partition key's is %d", token, pt)
		}
		partition, rest = append(partition[:0], k[:len(k)-len(r)]...), r // k is the iterator's
	}
	switch {
	case len(rest) == 1 && rest[0] == kindPartitionDeletion:
	case len(rest) > 1 && (rest[0] == kindStatic || rest[0] == kindRangeTombstone):
	case len(rest) > 1 && rest[0] == kindRow:
		if tbl == nil {
			break
		}
		_, entry, err := splitRowKey(tbl, rest[1:])
		if err != nil {
			return nil, fmt.Errorf("its clustering key does not decode: %v", err)
		}
		switch {
		case len(entry) == 1 && (entry[0] == rowDeletion || entry[0] == rowMarker):
		case len(entry) > 1 && entry[0] >= rowCell && entry[0] <= rowElement:
		default:
			return nil, fmt.Errorf("row entry %x is none of a row's", entry[:min(len(entry), 8)])
		}
	default:
		return nil, fmt.Errorf("entry kind %x is none of a partition's", rest[:min(len(rest), 8)])
	}
	return partition, nil
}
