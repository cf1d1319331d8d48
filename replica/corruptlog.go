package replica

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A corrupt write-ahead log. pebble replays the logs at Open. A log that ends in a torn or
// half-written chunk is what a crash leaves, and pebble stops there, keeping what came before.
// But when a damaged chunk is followed, in a later 32 KiB block of the same log, by a chunk
// that records a sync point past the damage (pebble writes one into every chunk of the logs it
// creates since FormatWALSyncChunks), the damaged bytes had been synced: the damage is
// corruption, not a crash, and stopping there would silently drop acknowledged writes. pebble
// then fails Open with its corruption error, naming the log and the offset, and Open refuses with
// a *CorruptLogError unless Options.StartDespiteCorruptLog moves the log aside.

// unrepairedFile marks a store opened despite a corrupt log, until SetRepaired removes it. It
// lives in the store's directory (pebble ignores names it does not know), so that a restart
// before the repair keeps the node out of reads.
const unrepairedFile = "UNREPAIRED"

// maxQuarantined bounds how many logs one Open moves aside.
const maxQuarantined = 16

// CorruptLogError is Open's error when pebble found a write-ahead log corrupt: damaged, with data
// synced after the damage. Its message names the log, the offset, and what the operator can do.
type CorruptLogError struct {
	// Log is the damaged log's path and Offset the offset in it where the damage begins (the
	// last record pebble could read).
	Log    string
	Offset int64
	// Quarantine is where Options.StartDespiteCorruptLog moves the log.
	Quarantine string
	// Err is pebble's error.
	Err error
}

func (e *CorruptLogError) Error() string {
	return fmt.Sprintf("replica: the write-ahead log %s is corrupt at offset %d: data synced after that point is intact, so this is damage, not a write torn by a crash, and "+
		"the acknowledged writes the log holds past it would be lost. The node refuses to start. Restore the data directory from a backup, or start the node with "+
		"--start-despite-corrupt-log (start_despite_corrupt_log: true): the log is then moved into %s, the writes it held are lost on this node, and the node takes "+
		"writes but counts toward no read consistency level for its ranges until `kvnode repair` run on it completes (docs/operations.md, \"A corrupt write-ahead log\"). pebble: %v",
		e.Log, e.Offset, e.Quarantine, e.Err)
}

func (e *CorruptLogError) Unwrap() error { return e.Err }

// walOffset matches the detail pebble's replay attaches to its error: "replaying wal 6, offset
// (db/000006.log: 118057)". The detail shows only in the error's verbose form.
var walOffset = regexp.MustCompile(`replaying wal \d+, offset \(([^()]+\.log): (\d+)\)`)

// corruptLog returns the log and offset of err, pebble.Open's error, when it is a corruption pebble
// found replaying a write-ahead log.
func corruptLog(err error) (path string, offset int64, ok bool) {
	if !pebble.IsCorruptionError(err) {
		return "", 0, false
	}
	m := walOffset.FindStringSubmatch(fmt.Sprintf("%+v", err))
	if m == nil {
		return "", 0, false
	}
	off, perr := strconv.ParseInt(m[2], 10, 64)
	if perr != nil {
		return "", 0, false
	}
	return m[1], off, true
}

// QuarantineDir returns where Open moves the corrupt logs of the store in dir: quarantine/ beside
// it.
func QuarantineDir(fs vfs.FS, dir string) string {
	if fs == nil {
		fs = vfs.Default
	}
	return fs.PathJoin(fs.PathDir(dir), "quarantine")
}

// quarantine moves the log at path into qdir, under a name stamped with the time, and syncs both
// directories. It returns the log's new path.
func quarantine(fs vfs.FS, path, qdir string) (string, error) {
	if err := fs.MkdirAll(qdir, 0o755); err != nil {
		return "", err
	}
	to := fs.PathJoin(qdir, time.Now().UTC().Format("20060102T150405.000Z")+"-"+fs.PathBase(path))
	if err := fs.Rename(path, to); err != nil {
		return "", err
	}
	for _, d := range []string{qdir, fs.PathDir(path)} {
		if err := syncDir(fs, d); err != nil {
			return "", err
		}
	}
	return to, nil
}

// markUnrepaired writes the store's unrepaired marker, durably.
func markUnrepaired(fs vfs.FS, dir, why string) error {
	f, err := fs.Create(fs.PathJoin(dir, unrepairedFile), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, why+"\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return syncDir(fs, dir)
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Unrepaired reports whether the store was opened despite a corrupt write-ahead log and no repair
// has completed since (SetRepaired): its data may lack acknowledged writes, so it must count
// toward no read consistency level.
func (s *Store) Unrepaired() bool { return s.unrepaired.Load() }

// SetRepaired records that a repair of every range the node replicates completed: it removes the
// unrepaired marker, durably. It does nothing on a store that is not unrepaired.
func (s *Store) SetRepaired() error {
	if !s.unrepaired.Load() {
		return nil
	}
	if err := s.fs.Remove(s.fs.PathJoin(s.dir, unrepairedFile)); err != nil && !oserrorNotExist(err) {
		return fmt.Errorf("replica: clear the unrepaired mark: %w", err)
	}
	if err := syncDir(s.fs, s.dir); err != nil {
		return fmt.Errorf("replica: clear the unrepaired mark: %w", err)
	}
	s.unrepaired.Store(false)
	return nil
}

// hasUnrepairedMark reports whether the store in dir carries the unrepaired marker.
func hasUnrepairedMark(fs vfs.FS, dir string) (bool, error) {
	_, err := fs.Stat(fs.PathJoin(dir, unrepairedFile))
	switch {
	case err == nil:
		return true, nil
	case oserrorNotExist(err):
		return false, nil
	}
	return false, err
}

func oserrorNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
