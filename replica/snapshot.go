package replica

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/schema"
)

// Snapshots (package snapshot manages them): a snapshot of the store is a pebble checkpoint, a
// directory that pebble can open as a database of its own, whose sstables are hard links to the
// store's, so that taking one copies no data. The store is flushed first, so that everything
// acknowledged before is in sstables; the checkpoint's write-ahead logs, which pebble copies
// whole (a recycled log is as large as a memtable), then hold only writes made during the
// checkpoint, and are left out: the checkpoint is the store as of the flush.

// ErrCheckpointExists reports a checkpoint into a directory that already exists.
var ErrCheckpointExists = errors.New("the directory already exists")

// Checkpoint writes a checkpoint of the store into dir, which must not exist: every table's data
// when ids is empty, else the sstables holding keys of the tables ids (it may hold other keys
// too: readers of the checkpoint read only the tables they were taken for). Writes acknowledged
// before the call are in it; writes made during it may be.
func (s *Store) Checkpoint(dir string, ids []schema.TableID) error {
	if err := s.usable(); err != nil {
		return err
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	if _, err := s.fs.Stat(dir); err == nil {
		return fmt.Errorf("replica: checkpoint into %s: %w", dir, ErrCheckpointExists)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replica: checkpoint into %s: %w", dir, err)
	}
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("replica: checkpoint into %s: flush: %w", dir, err)
	}
	var opts []pebble.CheckpointOption
	if len(ids) > 0 {
		spans := make([]pebble.CheckpointSpan, 0, len(ids))
		for _, id := range ids {
			start, end := tableSpan(id)
			if end == nil {
				end = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
			}
			spans = append(spans, pebble.CheckpointSpan{Start: start, End: end})
		}
		opts = append(opts, pebble.WithRestrictToSpans(spans))
	}
	if err := s.db.Checkpoint(dir, opts...); err != nil {
		return fmt.Errorf("replica: checkpoint into %s: %w", dir, err)
	}
	// The logs hold writes newer than every sstable: without them the checkpoint is the store
	// as of the flush, a consistent state.
	names, err := s.fs.List(dir)
	if err != nil {
		return fmt.Errorf("replica: checkpoint into %s: %w", dir, err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, ".log") {
			if err := s.fs.Remove(s.fs.PathJoin(dir, name)); err != nil {
				return fmt.Errorf("replica: checkpoint into %s: %w", dir, err)
			}
		}
	}
	d, err := s.fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("replica: checkpoint into %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("replica: checkpoint into %s: %w", dir, err)
	}
	return nil
}

// OpenCheckpoint opens a checkpoint written by Checkpoint read-only, to read its tables (for
// example with ScanPartitions, given each table as it was when the checkpoint was taken, with
// its id then). Close it when done; it never changes the directory. fs nil means the operating
// system's filesystem.
func OpenCheckpoint(dir string, fs vfs.FS) (*Store, error) {
	// A checkpoint is read once, in order: a small block cache does.
	opts := Options{FS: fs, CacheSize: 8 << 20}
	opts.EnsureDefaults()
	if _, err := opts.FS.Stat(dir); err != nil {
		return nil, fmt.Errorf("replica: open checkpoint %s: %w", dir, err)
	}
	s := &Store{fs: opts.FS, dir: dir, writeOpts: pebble.Sync, now: time.Now, failed: make(chan struct{}), policy: PolicyStop}
	po := opts.pebbleOptions(opts.FS, pebbleLogger{fail: s.Fail})
	po.ReadOnly = true
	db, err := s.openDB(dir, po)
	if err != nil {
		return nil, fmt.Errorf("replica: open checkpoint %s: %w", dir, err)
	}
	s.db = db
	return s, nil
}
