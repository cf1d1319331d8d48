package replica

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Store is a node's replica storage: one pebble database holding every
// table's partitions under the key layout documented in key.go. It is safe
// for concurrent use.
type Store struct {
	db        *pebble.DB
	fs        vfs.FS // the filesystem the store lives on (Options.FS)
	dir       string
	log       *slog.Logger
	writeOpts *pebble.WriteOptions
	stalls    stalls
	// tombstoneFailure is Options.TombstoneFailureThreshold.
	tombstoneFailure uint32
	// now stamps tombstones with their local deletion time: time.Now, but for tests.
	now func() time.Time

	// stripes serialise a partition's tombstone purge with writes to it (purge.go).
	stripes purgeStripes

	// failure is the store's storage failure (failure.go), set once; failed is closed then.
	failure     atomic.Pointer[Failure]
	failed      chan struct{}
	onFailure   FailureHandler
	policy      string
	corruptions atomic.Uint64 // corrupt files pebble reported (DataCorruption)
	// space watches the filesystem's free space (diskspace.go).
	space *diskSpace
	// unrepaired is set while the store, opened despite a corrupt log, awaits a repair
	// (corruptlog.go).
	unrepaired atomic.Bool

	// paxosStates caches the Paxos states written last (paxos.go).
	paxosStates paxosCache
	// paxosFence is the durable bound on the ballots of unsynced promises (paxos.go).
	paxosFence paxosFence

	// po is the options the database was opened with: streamed sstables are written and read
	// with its comparer, merger and block settings (sststream.go).
	po *pebble.Options
	// ingestSeq numbers the streamed sstables written under ingestDir.
	ingestSeq atomic.Uint64

	// closeMu keeps Close from closing the database under a metrics scrape.
	closeMu sync.RWMutex
	closed  bool
}

// Open opens (creating it if needed) the store in directory dir. A write-ahead log pebble finds
// corrupt makes it fail with a *CorruptLogError, unless Options.StartDespiteCorruptLog.
func Open(dir string, opts Options) (*Store, error) {
	if err := opts.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	s := &Store{
		fs: opts.FS, dir: dir, log: opts.Logger, writeOpts: pebble.Sync, tombstoneFailure: opts.TombstoneFailureThreshold, now: time.Now,
		failed: make(chan struct{}), onFailure: opts.OnFailure, policy: opts.DiskFailurePolicy,
	}
	if opts.Clock != nil {
		s.now = opts.Clock.Now
	}
	s.space = newDiskSpace(opts.FS, dir, &opts)
	log := pebbleLogger{l: opts.Logger, fail: s.Fail}
	// A write that meets a full disk raises the low-disk level at once, before the next check.
	po := opts.pebbleOptions(vfs.OnDiskFull(opts.FS, s.space.full), log)
	po.EventListener = s.eventListener(log)
	po.EnsureDefaults()
	s.po = po
	fresh := fresh(opts.FS, dir)
	format := 0 // a new store: record the version
	if !fresh {
		v, err := checkFormatVersion(opts.FS, dir)
		if err != nil {
			return nil, fmt.Errorf("replica: open store in %s: %w", dir, err)
		}
		format = v
	}
	if fresh {
		// A new database's first log predates its format's sync offsets, without which damage
		// in a log cannot be told from a torn tail (corruptlog.go): create it, then reopen.
		db, err := s.openDB(dir, po)
		if err != nil {
			return nil, fmt.Errorf("replica: create store in %s: %w", dir, err)
		}
		if err := db.Close(); err != nil {
			return nil, fmt.Errorf("replica: create store in %s: %w", dir, err)
		}
	}
	for moved := 0; ; moved++ {
		db, err := s.openDB(dir, po)
		if err == nil {
			s.db = db
			break
		}
		path, off, ok := corruptLog(err)
		if !ok {
			return nil, fmt.Errorf("replica: open store in %s: %w", dir, err)
		}
		cerr := &CorruptLogError{Log: path, Offset: off, Quarantine: QuarantineDir(opts.FS, dir), Err: err}
		if !opts.StartDespiteCorruptLog || moved == maxQuarantined {
			return nil, cerr
		}
		// The mark first: a crash between the two must not leave a store that lost the log's
		// writes and counts toward reads.
		why := fmt.Sprintf("opened at %s despite the corrupt write-ahead log %s (offset %d); cleared by a completed `kvnode repair`",
			time.Now().UTC().Format(time.RFC3339), path, off)
		if err := markUnrepaired(opts.FS, dir, why); err != nil {
			return nil, fmt.Errorf("replica: mark the store in %s unrepaired: %w (%v)", dir, err, cerr)
		}
		to, err := quarantine(opts.FS, path, cerr.Quarantine)
		if err != nil {
			return nil, fmt.Errorf("replica: move the corrupt write-ahead log %s aside: %w (%v)", path, err, cerr)
		}
		if opts.Logger != nil {
			opts.Logger.Error("storage: moved a corrupt write-ahead log aside (start_despite_corrupt_log): the writes it held are lost on this node, which counts toward no read consistency level until `kvnode repair` run on it completes",
				"component", "pebble", "log", path, "offset", off, "moved_to", to, "err", err)
		}
	}
	if err := upgradeFormat(opts.FS, dir, format); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("replica: open store in %s: %w", dir, err)
	}
	if format != FormatVersion && !fresh && opts.Logger != nil {
		opts.Logger.Info("storage: upgraded the data format", "component", "pebble", "dir", dir, "from", format, "to", FormatVersion)
	}
	// Streamed sstables a stream that did not finish left (a crash, a kill) are never ingested.
	if err := opts.FS.RemoveAll(ingestDir(opts.FS, dir)); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("replica: open store in %s: remove unfinished streamed sstables: %w", dir, err)
	}
	marked, err := hasUnrepairedMark(opts.FS, dir)
	if err != nil {
		s.db.Close()
		return nil, fmt.Errorf("replica: open store in %s: %w", dir, err)
	}
	s.unrepaired.Store(marked)
	if opts.NoSync {
		s.writeOpts = pebble.NoSync
	}
	s.space.check()
	s.space.start(opts.DiskCheckInterval)
	return s, nil
}

// fresh reports whether dir holds no pebble database yet.
func fresh(fs vfs.FS, dir string) bool {
	names, err := fs.List(dir)
	if err != nil {
		return true // missing: pebble creates it
	}
	for _, name := range names {
		if strings.HasPrefix(name, "MANIFEST-") {
			return false
		}
	}
	return true
}

// openDB opens pebble's database. A storage failure during the open (pebble's Fatalf blocks the
// goroutine that meets it) fails it instead of hanging it.
func (s *Store) openDB(dir string, po *pebble.Options) (*pebble.DB, error) {
	type result struct {
		db  *pebble.DB
		err error
	}
	done := make(chan result, 1)
	go func() {
		db, err := pebble.Open(dir, po)
		done <- result{db, err}
	}()
	select {
	case r := <-done:
		return r.db, r.err
	case <-s.failed:
		return nil, s.failure.Load()
	}
}

// Close closes the database and releases its block cache. Every
// acknowledged write is already in the write-ahead log. After a storage
// failure it leaves the database as it is (pebble may hold its locks in the
// goroutine that failed, and its state is undefined): the process is to exit.
func (s *Store) Close() error {
	if s.space != nil { // nil for a checkpoint (OpenCheckpoint)
		s.space.stop()
	}
	if s.failure.Load() != nil {
		return nil
	}
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("replica: close store: %w", err)
	}
	return nil
}

// metrics returns pebble's metrics, or false once the store is closed or failed.
func (s *Store) metrics() (*pebble.Metrics, bool) {
	if s.failure.Load() != nil {
		return nil, false
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return nil, false
	}
	return s.db.Metrics(), true
}

// Apply validates m against table t and writes it as one pebble batch, so a
// mutation of a partition is atomic; it returns once the batch is durable
// (unless Options.NoSync). An invalid mutation writes nothing and returns an
// error wrapping ErrBadRequest that names the table and what was wrong. A
// range tombstone whose start bound is after its end bound deletes nothing
// and is not stored. Apply ignores the limiter: the Service consults it
// first.
func (s *Store) Apply(t *schema.Table, m *replicapb.Mutation) error {
	return s.applyWith(t, m, nil, nil)
}

// applyWith is Apply, setting extraKey to extraVal in the same batch when extraKey is not nil:
// one write, durable together (a Paxos commit's mutation and the partition's Paxos state).
func (s *Store) applyWith(t *schema.Table, m *replicapb.Mutation, extraKey, extraVal []byte) error {
	if m.GetTableId() != uint64(t.ID) {
		return badRequest(t, "mutation is for table id %d", m.GetTableId())
	}
	if len(m.Rows) == 0 && m.PartitionDeletion == nil && len(m.RangeTombstones) == 0 && m.StaticRow == nil {
		return badRequest(t, "mutation writes nothing: no rows, range tombstones or partition deletion")
	}
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.SpaceError(); err != nil {
		return err
	}
	var local int64 // the local deletion time of the mutation's tombstones, read once
	deletedAt := func() int64 {
		if local == 0 {
			local = s.now().UnixNano()
		}
		return local
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := encodeMutation(t, m, deletedAt, b); err != nil {
		return err
	}
	if extraKey != nil {
		if err := b.Set(extraKey, extraVal, nil); err != nil {
			return err
		}
	}
	mu := s.stripes.of(m.Token) // a purge of the partition decides under it
	mu.RLock()
	err := b.Commit(s.writeOpts)
	mu.RUnlock()
	if err != nil {
		return fmt.Errorf("replica: table %s: commit: %w", t.QualifiedName(), err)
	}
	return nil
}

// encodeMutation checks m, a mutation of t, and writes its entries to b: every row, cell and
// tombstone a last-write-wins merge operand, and the index entries of an indexed table's cells.
// deletedAt gives the local deletion time of its tombstones. Writes at or before t's
// truncation, or of a column at or before its drop, are left out (they arrive late). A mutation
// it refuses returns an error wrapping ErrBadRequest, and b may hold part of it. b is a store's
// batch, or one of no store whose entries a BulkLoader reads back.
func encodeMutation(t *schema.Table, m *replicapb.Mutation, deletedAt func() int64, b *pebble.Batch) error {
	var pkBuf, keyBuf, valBuf [128]byte
	pk, err := serializePartitionKey(t, pkBuf[:0], m.PartitionKey, m.Token)
	if err != nil {
		return err
	}
	key := appendPartitionPrefix(keyBuf[:0], uint64(t.ID), m.Token, pk)
	prefixLen := len(key)
	val := valBuf[:0]

	// Writes at or before the table's TRUNCATE, or of a column at or before its drop, arrive
	// late (in-flight writes, hints, batchlog replays, repair): they are gone, and not stored.
	shadows := t.HasShadows()
	indexed := len(t.Indexes()) > 0 // index.go: entries in the row's batch
	if m.PartitionDeletion != nil {
		if err := checkTimestamp(*m.PartitionDeletion); err != nil {
			return badRequest(t, "partition deletion: %v", err)
		}
	}
	if m.PartitionDeletion != nil && !(shadows && t.Shadowed("", *m.PartitionDeletion)) {
		key = append(key[:prefixLen], kindPartitionDeletion)
		val = appendTombstone(val[:0], *m.PartitionDeletion, deletedAt())
		if err := b.Merge(key, val, nil); err != nil {
			return err
		}
	}
	for i, rt := range m.RangeTombstones {
		if rt == nil {
			return badRequest(t, "range tombstone %d is nil", i)
		}
		if err := checkTimestamp(rt.Timestamp); err != nil {
			return badRequest(t, "range tombstone %d: %v", i, err)
		}
		rows := append(bytes.Clone(key[:prefixLen]), kindRow)
		lo, hi, err := rangeSpan(t, rows, rt)
		if err != nil {
			return badRequest(t, "range tombstone %d: %v", i, err)
		}
		if bytes.Compare(lo, hi) >= 0 || (shadows && t.Shadowed("", rt.Timestamp)) {
			// Its start bound is after its end bound (c > 3 AND c < 4 on an
			// int, say): it deletes nothing, like the DELETE that wrote it.
			// Or it is older than the table's truncation.
			continue
		}
		key = appendRangeTombstoneKey(t, key[:prefixLen], hi[prefixLen:], rt)
		val = appendTombstone(val[:0], rt.Timestamp, deletedAt())
		if err := b.Merge(key, val, nil); err != nil {
			return err
		}
	}
	for i, row := range withStaticRow(m) {
		if row == nil || (len(row.Cells) == 0 && row.Marker == nil && row.Deletion == nil && len(row.Collections) == 0) {
			return badRequest(t, "row %d writes nothing: no cells, marker or deletion", i)
		}
		static := i == len(m.Rows) // the static row (static.go)
		if static {
			if err := checkStaticRow(t, row); err != nil {
				return err
			}
			key = append(key[:prefixLen], kindStatic)
		} else {
			if len(row.Clustering) != len(t.Clustering) {
				return badRequest(t, "row %d has %d clustering components, want %d (%s)", i, len(row.Clustering), len(t.Clustering), names(t.Clustering))
			}
			key = append(key[:prefixLen], kindRow)
			if key, err = appendClusteringKey(t, key, row.Clustering); err != nil {
				return badRequest(t, "row %d: %v", i, err)
			}
		}
		rowLen := len(key)
		if row.Deletion != nil {
			if err := checkTimestamp(*row.Deletion); err != nil {
				return badRequest(t, "row %d deletion: %v", i, err)
			}
		}
		if row.Deletion != nil && !(shadows && t.Shadowed("", *row.Deletion)) {
			key = append(key[:rowLen], rowDeletion)
			val = appendTombstone(val[:0], *row.Deletion, deletedAt())
			if err := b.Merge(key, val, nil); err != nil {
				return err
			}
		}
		if row.Marker != nil {
			if err := checkTimestamp(*row.Marker); err != nil {
				return badRequest(t, "row %d marker: %v", i, err)
			}
			marker := cell.Cell{Timestamp: *row.Marker, TTL: row.MarkerTtl, Expires: row.MarkerExpires}
			if err := cell.CheckExpiry(marker); err != nil {
				return badRequest(t, "row %d marker: %v", i, err)
			}
			if !(shadows && t.Shadowed("", *row.Marker)) {
				key = append(key[:rowLen], rowMarker)
				val = appendValue(val[:0], marker, deletedAt())
				if err := b.Merge(key, val, nil); err != nil {
					return err
				}
			}
		}
		for _, d := range row.Collections {
			typ, err := regularType(t, d.GetColumn())
			if err != nil {
				if _, dropped := t.DroppedColumn(d.GetColumn()); dropped && shadows {
					continue
				}
				return err
			}
			if !typ.MultiCell() {
				return badRequest(t, "row %d: a collection tombstone for column %q, which is no non-frozen collection", i, d.GetColumn())
			}
			if !static && t.IsStatic(d.GetColumn()) {
				return badRequest(t, "row %d writes static column %q: static cells belong to the static row", i, d.GetColumn())
			}
			if err := checkTimestamp(d.GetTimestamp()); err != nil {
				return badRequest(t, "row %d column %q collection tombstone: %v", i, d.GetColumn(), err)
			}
			if shadows && t.Shadowed(d.GetColumn(), d.GetTimestamp()) {
				continue
			}
			key = append(key[:rowLen], rowCollectionDeletion)
			key = append(key, d.GetColumn()...)
			val = appendTombstone(val[:0], d.GetTimestamp(), deletedAt())
			if err := b.Merge(key, val, nil); err != nil {
				return err
			}
		}
		for _, c := range row.Cells {
			if c == nil {
				return badRequest(t, "row %d has a nil cell", i)
			}
			typ, err := regularType(t, c.Column)
			if err != nil {
				if _, dropped := t.DroppedColumn(c.Column); dropped && shadows {
					// A late write (a hint, a batchlog replay, a coordinator behind on the
					// schema) of a column dropped since: its cells are gone, the rest stays.
					continue
				}
				return err
			}
			if err := checkTimestamp(c.Timestamp); err != nil {
				return badRequest(t, "row %d column %q: %v", i, c.Column, err)
			}
			if !static && t.IsStatic(c.Column) {
				return badRequest(t, "row %d writes static column %q: static cells belong to the static row", i, c.Column)
			}
			switch {
			case c.Counter || typ == schema.TypeCounter:
				if err := checkCounterCell(c, typ); err != nil {
					return badRequest(t, "row %d column %q: %v", i, c.Column, err)
				}
			case c.Path != nil || typ.MultiCell():
				if c.Path == nil {
					return badRequest(t, "row %d column %q: a cell without an element path for a non-frozen collection", i, c.Column)
				}
				if err := typ.CheckElement(c.Path, c.Value, c.Tombstone); err != nil {
					return badRequest(t, "row %d column %q: %v", i, c.Column, err)
				}
			case !c.Tombstone:
				if err := typ.Check(nonNil(c.Value)); err != nil {
					return badRequest(t, "row %d column %q: %v", i, c.Column, err)
				}
			}
			if err := cell.CheckExpiry(cell.Cell{Timestamp: c.Timestamp, Tombstone: c.Tombstone, TTL: c.Ttl, Expires: c.Expires}); err != nil {
				return badRequest(t, "row %d column %q: %v", i, c.Column, err)
			}
			if shadows && t.Shadowed(c.Column, c.Timestamp) {
				continue
			}
			if c.Path != nil {
				key = appendElementKey(key[:rowLen], c.Column, c.Path)
			} else {
				key = append(key[:rowLen], rowCell)
				key = append(key, c.Column...)
			}
			if c.Tombstone {
				val = appendTombstone(val[:0], c.Timestamp, deletedAt())
			} else {
				val = appendValue(val[:0], cell.Cell{Timestamp: c.Timestamp, Value: c.Value, TTL: c.Ttl, Expires: c.Expires, Counter: c.Counter}, deletedAt())
			}
			if err := b.Merge(key, val, nil); err != nil {
				return err
			}
			if indexed { // a static row's entries have no clustering key (index.go)
				if err := indexCell(b, t, m.Token, pk, key[:rowLen], prefixLen, c); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ReadPartition serves req, a read of one partition of table t, from
// storage, ignoring req's limiter. The response has STATUS_OK and holds the
// partition tombstone, the range tombstones over the rows scanned and the
// selected rows in clustering order (in reverse with req.Reversed, reading
// backwards from the end of the range): live rows (at most req.Limit of them, if
// set) and, between them, deleted rows that carry tombstones, with cell
// tombstones and write timestamps, for a coordinator to reconcile replicas
// with. Cells, markers and row tombstones that newer tombstones shadow are
// left out.
//
// The read starts after req.After (in the read's order) when set, and stops
// early, saying where in
// StoppedAfter, once it holds req.Limit live rows or req.PageBytes bytes of
// rows. A read that scans more tombstones than the store's threshold
// (counting req.TombstonesScanned, the earlier pages' count) fails with an
// error wrapping ErrTooManyTombstones. An invalid request returns an error
// wrapping ErrBadRequest.
func (s *Store) ReadPartition(t *schema.Table, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error) {
	return s.readPartition(t, req, s.tombstoneFailure, nil, false)
}

// readPartition is ReadPartition failing past threshold tombstones (0: no limit). With reuse
// set it reads through that iterator, setting its bounds (a range read's partitions, one after
// the other: a new iterator per partition costs more than the read of a small one), else
// through a new one. rowsOnly says the caller knows the partition has neither a partition
// tombstone nor range tombstones (its first key is a row's): their lookups are skipped.
func (s *Store) readPartition(t *schema.Table, req *replicapb.ReadRequest, threshold uint32, reuse *pebble.Iterator, rowsOnly bool) (*replicapb.ReadResponse, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if req.GetTableId() != uint64(t.ID) {
		return nil, badRequest(t, "read is for table id %d", req.GetTableId())
	}
	for _, name := range req.Columns {
		if _, err := regularType(t, name); err != nil {
			return nil, err
		}
	}
	pk, err := serializePartitionKey(t, nil, req.PartitionKey, req.Token)
	if err != nil {
		return nil, err
	}
	prefix := appendPartitionPrefix(nil, uint64(t.ID), req.Token, pk)
	prefixLen := len(prefix)
	// The partition's three kinds of keys start with prefix: its tombstone,
	// its range tombstones and its rows. One allocation holds the three.
	kinds := make([]byte, 3*(prefixLen+1))
	kindKey := func(i int, kind byte) []byte {
		k := kinds[i*(prefixLen+1) : (i+1)*(prefixLen+1) : (i+1)*(prefixLen+1)]
		copy(k, prefix)
		k[prefixLen] = kind
		return k
	}
	partKey, rtStart, rows := kindKey(0, kindPartitionDeletion), kindKey(1, kindRangeTombstone), kindKey(2, kindRow)
	lower, upper, err := rowBounds(t, prefix, req.GetFilter())
	if err != nil {
		return nil, err
	}
	resuming := req.After != nil
	if resuming {
		after := req.After.GetComponents()
		if len(after) != len(t.Clustering) {
			return nil, badRequest(t, "read resumes after a clustering key of %d components, want %d (%s)", len(after), len(t.Clustering), names(t.Clustering))
		}
		k, err := appendClusteringKey(t, rows[:len(rows):len(rows)], after)
		if err != nil {
			return nil, badRequest(t, "read resumes after: %v", err)
		}
		switch {
		case req.Reversed: // the rows before it
			if bytes.Compare(k, upper) < 0 {
				upper = k
			}
		default: // the rows after it
			if k = prefixEnd(k); bytes.Compare(k, lower) > 0 {
				lower = k
			}
		}
	}

	it := reuse
	if it != nil {
		it.SetBounds(partKey, upper)
	} else {
		var err error
		if it, err = s.db.NewIter(&pebble.IterOptions{LowerBound: partKey, UpperBound: upper}); err != nil {
			return nil, fmt.Errorf("replica: table %s: read: %w", t.QualifiedName(), err)
		}
		defer it.Close()
	}

	resp := &replicapb.ReadResponse{Status: replicapb.Status_STATUS_OK}
	r := rowReader{t: t, req: req, resp: resp, rowsStart: len(rows), shadows: t.HasShadows(), now: s.now().Unix(),
		tc: tombstoneCount{t: t, req: req, threshold: threshold, n: uint64(req.TombstonesScanned)}}
	partDel := cell.NoTimestamp
	if !rowsOnly && it.First() && bytes.Equal(it.Key(), partKey) {
		c, err := iterCell(it)
		if err != nil {
			return nil, corrupt(t, it.Key(), err)
		}
		if r.shadows && t.Shadowed("", c.Timestamp) {
			// Truncated: what it deleted is gone as well, so it is not there either.
			c.Timestamp = cell.NoTimestamp
		}
		partDel = c.Timestamp
	}
	if partDel != cell.NoTimestamp {
		resp.PartitionDeletion = &partDel
		if !resuming {
			if err := r.tc.add(1); err != nil {
				return nil, err
			}
		}
	}
	if !rowsOnly && t.HasStatic() {
		r.partDel = partDel
		if resp.StaticRow, err = s.readStatic(it, &r, prefix); err != nil {
			return nil, err
		}
	}
	if bytes.Compare(lower, upper) >= 0 {
		return resp, nil
	}
	var spans []rtSpan
	if !rowsOnly {
		if spans, err = s.rangeTombstones(it, t, rtStart, rows, partDel, lower, upper); err != nil {
			return nil, err
		}
	}

	r.partDel, r.cover = partDel, coverOf(spans)
	stopped := false
	sc := scan{it: it, lower: lower, reversed: req.Reversed}
	for valid := sc.first(); valid; valid = sc.next() {
		done, err := r.add(it)
		if err != nil {
			return nil, err
		}
		if done {
			stopped = true
			break
		}
	}
	if !stopped {
		if err := it.Error(); err != nil {
			return nil, fmt.Errorf("replica: table %s: read: %w", t.QualifiedName(), err)
		}
		if _, err := r.flush(); err != nil { // the range's last row: nothing follows it
			return nil, err
		}
	}
	scanLo, scanHi := lower, upper // the row keys scanned
	if stopped {
		// Rows after the last one returned (in the read's order) were not
		// scanned (or, when the limit was reached on the range's last row,
		// may not exist).
		resp.StoppedAfter = &replicapb.ClusteringKey{Components: r.lastClustering}
		if req.Reversed {
			scanLo = r.lastRowKey
		} else {
			scanHi = prefixEnd(r.lastRowKey)
		}
	}
	for _, sp := range spans {
		if bytes.Compare(sp.hi, scanLo) <= 0 || bytes.Compare(sp.lo, scanHi) >= 0 {
			continue
		}
		resp.RangeTombstones = append(resp.RangeTombstones, sp.pb)
		// A range tombstone over several pages is counted on the page where
		// the read meets it first: where it starts (ends, reversed), or the
		// first page if the read starts inside it.
		if !resuming || !req.Reversed && bytes.Compare(sp.lo, lower) >= 0 || req.Reversed && bytes.Compare(sp.hi, upper) <= 0 {
			if err := r.tc.add(1); err != nil {
				return nil, err
			}
		}
	}
	resp.Tombstones = uint32(min(r.tc.n-uint64(req.TombstonesScanned), math.MaxUint32))
	return resp, nil
}

// rangeTombstones returns the partition's range tombstones (whose keys start
// with start) newer than the partition tombstone partDel that overlap the row
// keys [lower, upper), as spans of rows (whose keys start with rows),
// positioning it anywhere.
func (s *Store) rangeTombstones(it *pebble.Iterator, t *schema.Table, start, rows []byte, partDel int64, lower, upper []byte) ([]rtSpan, error) {
	// Those that end at or before lower cover none of the rows read.
	var seekBuf [128]byte
	seek := appendEscaped(append(seekBuf[:0], start...), lower[len(start)-1:])
	var spans []rtSpan
	for valid := it.SeekGE(seek); valid && bytes.HasPrefix(it.Key(), start); valid = it.Next() {
		c, err := iterCell(it)
		if err != nil {
			return nil, corrupt(t, it.Key(), err)
		}
		if c.Timestamp <= partDel || (t.HasShadows() && t.Shadowed("", c.Timestamp)) {
			continue
		}
		rt, err := decodeRangeTombstone(t, it.Key()[len(start):], c.Timestamp)
		if err != nil {
			return nil, corrupt(t, it.Key(), err)
		}
		lo, hi, err := rangeSpan(t, rows, rt)
		if err != nil {
			return nil, corrupt(t, it.Key(), err)
		}
		if bytes.Compare(hi, lower) <= 0 || bytes.Compare(lo, upper) >= 0 {
			continue
		}
		spans = append(spans, rtSpan{lo: lo, hi: hi, ts: c.Timestamp, pb: rt})
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("replica: table %s: read range tombstones: %w", t.QualifiedName(), err)
	}
	return spans, nil
}

// tombstoneCount counts the tombstones one read scans against the threshold.
type tombstoneCount struct {
	t         *schema.Table
	req       *replicapb.ReadRequest
	threshold uint32
	n         uint64 // wide enough that no count wraps
}

// add counts k more tombstones and fails once the count passes the threshold.
func (c *tombstoneCount) add(k uint32) error {
	c.n += uint64(k)
	if c.threshold == 0 || c.n <= uint64(c.threshold) {
		return nil
	}
	return fmt.Errorf("%w: table %s: the read of partition %s scanned more than %d tombstones (the tombstone failure threshold); delete less in place, or raise the threshold",
		ErrTooManyTombstones, c.t.QualifiedName(), schema.FormatKey(c.t.PartitionKey, c.req.PartitionKey), c.threshold)
}

// scan steps it, an iterator whose upper bound is the end of the rows read,
// over the keys from lower up to that end: forwards, or backwards for a
// reversed read, so that a limit stops the scan at the rows it needs.
type scan struct {
	it       *pebble.Iterator
	lower    []byte
	reversed bool
}

func (s scan) first() bool {
	if s.reversed {
		return s.inRange(s.it.Last())
	}
	return s.it.SeekGE(s.lower)
}

func (s scan) next() bool {
	if s.reversed {
		return s.inRange(s.it.Prev())
	}
	return s.it.Next()
}

func (s scan) inRange(valid bool) bool { return valid && bytes.Compare(s.it.Key(), s.lower) >= 0 }

// rowBounds returns the key range [lower, upper) of the rows filter selects
// in the partition with key prefix prefix. A bound on a DESC column bounds
// the keys from the other side: its values are stored in reverse.
func rowBounds(t *schema.Table, prefix []byte, f *replicapb.ClusteringFilter) (lower, upper []byte, err error) {
	rows := append(prefix[:len(prefix):len(prefix)], kindRow)
	if f == nil {
		return rows, prefixEnd(rows), nil
	}
	if f.Lower != nil || f.Upper != nil {
		if len(f.Equal) >= len(t.Clustering) {
			return nil, nil, badRequest(t, "filter restricts %d clustering columns by equality and one more by range, the table has %d (%s)", len(f.Equal), len(t.Clustering), names(t.Clustering))
		}
	}
	if rows, err = appendClusteringKey(t, rows, f.Equal); err != nil {
		return nil, nil, badRequest(t, "filter: %v", err)
	}
	lower, upper = rows, prefixEnd(rows)
	if f.Lower == nil && f.Upper == nil {
		return lower, upper, nil
	}
	col := &t.Clustering[len(f.Equal)]
	bound := func(b *replicapb.Bound, what string) ([]byte, error) {
		v := nonNil(b.Value)
		if err := col.Check(v); err != nil {
			return nil, badRequest(t, "filter %s bound on clustering column %q: %v", what, col.Name, err)
		}
		return appendClustering(rows[:len(rows):len(rows)], col.Type, col.Descending, v), nil
	}
	// The bounds on the column's values, as bounds on its keys.
	keyLower, keyUpper, lowerWhat, upperWhat := f.Lower, f.Upper, "lower", "upper"
	if col.Descending {
		keyLower, keyUpper, lowerWhat, upperWhat = f.Upper, f.Lower, "upper", "lower"
	}
	if keyLower != nil {
		k, err := bound(keyLower, lowerWhat)
		if err != nil {
			return nil, nil, err
		}
		if lower = k; !keyLower.Inclusive {
			lower = prefixEnd(k)
		}
	}
	if keyUpper != nil {
		k, err := bound(keyUpper, upperWhat)
		if err != nil {
			return nil, nil, err
		}
		if upper = k; keyUpper.Inclusive {
			upper = prefixEnd(k)
		}
	}
	return lower, upper, nil
}

// rowReader assembles the rows of a partition from its keys, in order or
// (req.Reversed) in reverse order.
type rowReader struct {
	t         *schema.Table
	req       *replicapb.ReadRequest
	partDel   int64
	cover     []coverFragment // the range tombstones over the read
	resp      *replicapb.ReadResponse
	rowsStart int  // offset of the clustering key in a row's keys
	shadows   bool // t.HasShadows()
	tc        tombstoneCount
	now       int64 // seconds since the Unix epoch: expiring cells at or before it have expired
	static    bool  // reading the static row: its keys have no clustering key (static.go)

	rowKey     []byte // the current row's key up to its clustering key; empty between rows
	clustering [][]byte
	row        cell.Row
	live       uint32 // live rows added to resp
	bytes      int    // the approximate size of the rows added to resp

	lastRowKey     []byte // the row key and clustering key of the last row added to resp
	lastClustering [][]byte
}

// add adds the key and value at it to the current row, finishing the row
// before it if it belongs to a new one. It reports done when the read's limit
// or page size is reached.
func (r *rowReader) add(it *pebble.Iterator) (done bool, err error) {
	k := it.Key()
	if len(r.rowKey) == 0 || len(k) <= len(r.rowKey) || !bytes.HasPrefix(k, r.rowKey) {
		if done, err := r.flush(); done || err != nil {
			return done, err
		}
		rest := k[r.rowsStart:]
		r.clustering = make([][]byte, len(r.t.Clustering))
		for i, c := range r.t.Clustering {
			if r.static {
				r.clustering = nil
				break
			}
			if r.clustering[i], rest, err = decodeClustering(rest, c.Type, c.Descending); err != nil {
				return false, corrupt(r.t, k, err)
			}
		}
		if len(rest) == 0 {
			return false, corrupt(r.t, k, errBadKey)
		}
		r.rowKey = append(r.rowKey[:0], k[:len(k)-len(rest)]...)
		r.row = cell.EmptyRow()
	}
	c, err := iterCell(it)
	if err != nil {
		return false, corrupt(r.t, k, err)
	}
	entry := k[len(r.rowKey):]
	if r.shadows {
		// Truncated data, and the cells of a dropped column, as if they were not there.
		col, _ := entryColumn(entry)
		if r.t.Shadowed(col, c.Timestamp) {
			return false, nil
		}
	}
	switch entry[0] {
	case rowDeletion:
		r.row.Deletion = c.Timestamp
	case rowMarker:
		r.row.Marker, r.row.MarkerTTL, r.row.MarkerExpires = c.Timestamp, c.TTL, c.Expires
	case rowCell:
		name := entry[1:]
		if col, ok := r.t.Column(string(name)); !ok || col.Kind != schema.RegularColumn {
			return false, nil // a dropped column: not part of the row any more
		}
		if !c.Tombstone {
			c.Value = bytes.Clone(c.Value)
		}
		r.row.Columns = append(r.row.Columns, cell.Column{Name: string(name), Cell: c})
	case rowCollectionDeletion:
		name := string(entry[1:])
		if col, ok := r.t.Column(name); !ok || col.Kind != schema.RegularColumn {
			return false, nil
		}
		r.row.Collections = append(r.row.Collections, cell.ColumnDeletion{Name: name, Timestamp: c.Timestamp})
	case rowElement:
		name, path, err := decodeElementEntry(entry)
		if err != nil {
			return false, corrupt(r.t, k, err)
		}
		if col, ok := r.t.Column(name); !ok || col.Kind != schema.RegularColumn {
			return false, nil
		}
		if !c.Tombstone {
			c.Value = bytes.Clone(c.Value)
		}
		r.row.Columns = append(r.row.Columns, cell.Column{Name: name, Path: path, Cell: c})
	default:
		return false, corrupt(r.t, k, errBadKey)
	}
	return false, nil
}

// flush adds the current row, if any, to the response, and reports whether
// the limit or the page size is now reached. It fails when the row's
// tombstones take the read past the tombstone threshold.
func (r *rowReader) flush() (done bool, err error) {
	if len(r.rowKey) == 0 {
		return false, nil
	}
	if r.req.Reversed {
		// A backward scan meets a row's cells last column first.
		slices.Reverse(r.row.Columns)
		slices.Reverse(r.row.Collections)
	}
	// Elements are stored after every simple cell of the row (key.go).
	if !slices.IsSortedFunc(r.row.Columns, cell.CompareColumns) {
		slices.SortFunc(r.row.Columns, cell.CompareColumns)
	}
	del := max(r.partDel, coverAt(r.cover, r.rowKey))
	row := r.row.Purge(del)
	// An expired cell travels as the tombstone at its timestamp it now is:
	// it still beats every older version elsewhere, and never shows a value.
	for i := range row.Columns {
		if c := &row.Columns[i]; c.Expired(r.now) {
			c.Cell = cell.Cell{Timestamp: c.Timestamp, Tombstone: true}
		}
	}
	live := row.Live(r.now, del)
	rowKey := r.rowKey
	r.rowKey = r.rowKey[:0]
	// Counted as Cassandra counts: every cell tombstone, and the row
	// tombstone of a row without cell tombstones.
	var dead uint32
	for _, c := range row.Columns {
		if c.Tombstone {
			dead++
		}
	}
	if dead == 0 && row.Deletion != cell.NoTimestamp {
		dead = 1
	}
	if dead > 0 {
		if err := r.tc.add(dead); err != nil {
			return false, err
		}
	}
	out := &replicapb.Row{Clustering: r.clustering}
	if row.Marker != cell.NoTimestamp {
		out.Marker = &row.Marker
		out.MarkerTtl, out.MarkerExpires = row.MarkerTTL, row.MarkerExpires
	}
	if row.Deletion != cell.NoTimestamp {
		out.Deletion = &row.Deletion
	}
	for _, c := range row.Columns {
		if !r.selected(c.Name) {
			continue
		}
		out.Cells = append(out.Cells, &replicapb.Cell{Column: c.Name, Value: c.Value, Timestamp: c.Timestamp, Tombstone: c.Tombstone, Ttl: c.TTL, Expires: c.Expires, Path: c.Path, Counter: c.Counter})
	}
	for _, d := range row.Collections {
		if r.selected(d.Name) {
			out.Collections = append(out.Collections, &replicapb.CollectionDeletion{Column: d.Name, Timestamp: d.Timestamp})
		}
	}
	if !live && out.Marker == nil && out.Deletion == nil && len(out.Cells) == 0 && len(out.Collections) == 0 {
		return false, nil
	}
	r.resp.Rows = append(r.resp.Rows, out)
	// The row's key becomes the last row's, and the last row's buffer
	// serves the next row.
	r.rowKey, r.lastRowKey = r.lastRowKey[:0], rowKey
	r.lastClustering = r.clustering
	r.bytes += rowSize(out)
	if live {
		r.live++
	}
	return (r.req.Limit > 0 && r.live >= r.req.Limit) || (r.req.PageBytes > 0 && r.bytes >= int(r.req.PageBytes)), nil
}

// rowSize approximates the bytes row takes in a response. Rows that only
// carry tombstones count too: they travel like any other.
func rowSize(row *replicapb.Row) int {
	n := 24
	for _, c := range row.Clustering {
		n += len(c) + 2
	}
	for _, c := range row.Cells {
		n += len(c.Column) + len(c.Value) + len(c.Path) + 16
	}
	for _, d := range row.Collections {
		n += len(d.Column) + 12
	}
	return n
}

func (r *rowReader) selected(name string) bool {
	if len(r.req.Columns) == 0 {
		return true
	}
	for _, c := range r.req.Columns {
		if c == name {
			return true
		}
	}
	return false
}

// iterCell decodes the value at it. The cell's Value aliases the iterator's
// memory.
func iterCell(it *pebble.Iterator) (cell.Cell, error) {
	v, err := it.ValueAndErr()
	if err != nil {
		return cell.Cell{}, err
	}
	return decodeValue(v)
}

// errCorrupt is wrapped by errors about stored data that does not decode.
var errCorrupt = errors.New("replica: corrupt data")

func corrupt(t *schema.Table, key []byte, err error) error {
	return fmt.Errorf("%w: table %s: key %x: %w", errCorrupt, t.QualifiedName(), key, err)
}
