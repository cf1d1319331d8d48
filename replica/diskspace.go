package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/internal/loop"
)

// ErrLowDiskSpace is wrapped by the error of a write refused because the store's filesystem has
// less free space than its reserve (Options.MinFreeSpace, MinFreeSpacePercent). The error names
// the directory, the free space and the reserve.
var ErrLowDiskSpace = errors.New("replica: low disk space")

// SpaceWatcher is told when a store starts or stops refusing data writes for lack of space
// (Options.OnSpaceChange).
type SpaceWatcher interface {
	// SpaceChanged is called on each change, which SpaceError then reflects. It may run on one
	// of pebble's goroutines holding its locks (a write that met a full disk), so it must not
	// call the store and must not block.
	SpaceChanged()
}

// spaceLevel is how full the store's filesystem is.
type spaceLevel int32

const (
	spaceOK       spaceLevel = iota
	spaceLow                 // under the reserve: data writes refused
	spaceCritical            // under half the reserve, or a write met ENOSPC: the batchlog and hints too
)

// diskSpace watches the free space of the store's filesystem: a loop reads it every
// Options.DiskCheckInterval (and at once when pebble reports low space or a write meets ENOSPC),
// and writes read the level it left, an atomic load.
type diskSpace struct {
	fs         vfs.FS
	dir        string
	minFree    int64
	minPercent float64
	memtable   uint64 // Options.MemTableSize: what a flush writes
	log        *slog.Logger
	onChange   SpaceWatcher // Options.OnSpaceChange: writes start or stop being refused

	// state is the level (a spaceLevel) and, in its bit metFull, whether a write met ENOSPC:
	// writes then stay refused until free space also covers what the job that failed needs
	// (see check). One word, so that full, which runs on a writing goroutine without mu, and a
	// check under way cannot undo each other's change.
	state   atomic.Int32
	avail   atomic.Uint64 // at the last check
	total   atomic.Uint64
	reserve atomic.Uint64
	refused atomic.Uint64 // writes refused for lack of space
	// warned is set once a refusal was logged, until writes are accepted again: a disk that
	// hovers between the two refusal levels, or meets ENOSPC again and again, logs once.
	warned atomic.Bool
	kick   chan struct{}
	loop   *loop.Loop

	mu      sync.Mutex // serialises checks, and guards lastErr
	lastErr string     // the last error reading the free space, logged once
}

func newDiskSpace(fs vfs.FS, dir string, o *Options) *diskSpace {
	return &diskSpace{fs: fs, dir: dir, minFree: o.MinFreeSpace, minPercent: o.MinFreeSpacePercent, memtable: o.MemTableSize, log: o.Logger,
		onChange: o.OnSpaceChange, kick: make(chan struct{}, 1)}
}

// start runs the periodic check until stop.
func (d *diskSpace) start(every time.Duration) {
	d.loop = loop.Start(loop.Options{Every: every, Wake: []func() <-chan struct{}{func() <-chan struct{} { return d.kick }}},
		func(context.Context) time.Duration {
			d.check()
			return 0
		})
}

func (d *diskSpace) stop() { d.loop.Stop() }

// metFull is diskSpace.state's bit set while a write met ENOSPC and writes were not accepted
// since.
const metFull = 1 << 8

// level returns the current level.
func (d *diskSpace) level() spaceLevel { return spaceLevel(d.state.Load() &^ metFull) }

// wake asks for a check now, without waiting for it. It never blocks.
func (d *diskSpace) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// full is vfs.OnDiskFull's callback: a write met ENOSPC. Every write of the store waits while it
// runs, so it only raises the level and asks for a check.
func (d *diskSpace) full() {
	if spaceLevel(d.state.Swap(int32(spaceCritical)|metFull)&^metFull) == spaceOK {
		d.changed()
	}
	if !d.warned.Swap(true) && d.log != nil {
		d.log.Warn("storage: a write found the disk full; writes are refused until space is freed", "dir", d.dir)
	}
	d.wake()
}

// check reads the free space and sets the level: critical under half the reserve, low under the
// reserve, and back to ok only above the reserve and a tenth, so that a disk hovering at the
// reserve does not flip writes on and off at each check. After a write met a full disk, back to
// ok takes twice the reserve and a memtable more: pebble deletes the output of the flush or
// compaction that failed, and letting writes in on that space alone would fill the disk again
// (a 64 MiB filesystem flipped every half second without it).
func (d *diskSpace) check() {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.state.Load() // before the reading: a full() during it makes this check stand down
	u, err := d.fs.GetDiskUsage(d.dir)
	if err != nil {
		if errors.Is(err, vfs.ErrUnsupported) {
			return // an in-memory filesystem (vfs.NewMem): never low
		}
		if msg := err.Error(); msg != d.lastErr && d.log != nil {
			d.log.Warn("storage: cannot read the disk's free space; the low-disk check keeps its last reading", "dir", d.dir, "err", err)
			d.lastErr = msg
		}
		return
	}
	d.lastErr = ""
	reserve := min(uint64(d.minFree), uint64(float64(u.TotalBytes)*d.minPercent/100))
	d.avail.Store(u.AvailBytes)
	d.total.Store(u.TotalBytes)
	d.reserve.Store(reserve)
	prev := spaceLevel(old &^ metFull)
	clear := reserve + reserve/10
	if old&metFull != 0 {
		clear = 2*reserve + d.memtable
	}
	next := spaceOK
	switch {
	case u.AvailBytes < reserve/2:
		next = spaceCritical
	case u.AvailBytes < reserve:
		next = spaceLow
	case prev != spaceOK && u.AvailBytes < clear:
		next = spaceLow // not yet clear of the reserve
	}
	state := int32(next) | old&metFull
	if next == spaceOK {
		state = int32(next) // clear of a full disk
	}
	if state == old || !d.state.CompareAndSwap(old, state) {
		// Unchanged, or a write met ENOSPC since the reading (full), which also asked for
		// the next check: its reading decides, not this older one.
		return
	}
	if next == prev {
		return
	}
	if (next == spaceOK) != (prev == spaceOK) {
		d.changed()
	}
	if d.log == nil || (next != spaceOK && d.warned.Swap(true)) {
		return // a refusal was logged already; the metric follows its level
	}
	if next == spaceOK {
		d.warned.Store(false)
	}
	attrs := []any{"dir", d.dir, "free_bytes", u.AvailBytes, "total_bytes", u.TotalBytes, "reserve_bytes", reserve, "clear_bytes", clear}
	switch next {
	case spaceOK:
		d.log.Info("storage: free space is back above the reserve; writes are accepted again", attrs...)
	case spaceLow:
		d.log.Warn("storage: free space is under the reserve (min_free_space, min_free_space_percent), or not yet clear of it; data writes are refused until space is freed (DROP TABLE, deleting other files)", attrs...)
	case spaceCritical:
		d.log.Error("storage: free space is under half the reserve; data writes, batchlog entries and hints are refused until space is freed", attrs...)
	}
}

// changed calls Options.OnSpaceChange: data writes start or stop being refused.
func (d *diskSpace) changed() {
	if d.onChange != nil {
		d.onChange.SpaceChanged()
	}
}

// refusal returns the error of a write refused at level at or above, or nil.
func (d *diskSpace) refusal(at spaceLevel, what string) error {
	if d.level() < at {
		return nil
	}
	d.refused.Add(1)
	reserve := d.reserve.Load()
	if at == spaceCritical {
		reserve /= 2
	}
	return fmt.Errorf("%w: the disk of %s has %s free of %s, under the %s this node keeps free: %s refused until space is freed",
		ErrLowDiskSpace, d.dir, formatBytes(d.avail.Load()), formatBytes(d.total.Load()), formatBytes(reserve), what)
}

// SpaceError returns an error wrapping ErrLowDiskSpace while the store's filesystem has less free
// space than the reserve (data writes are refused then), or nil.
func (s *Store) SpaceError() error { return s.space.refusal(spaceLow, "writes are") }

// ReserveError returns an error wrapping ErrLowDiskSpace while the store's filesystem has less
// free space than half the reserve, or a write met a full disk: the batchlog refuses entries
// then, and the node's hints should be refused too. Nil otherwise.
func (s *Store) ReserveError() error {
	return s.space.refusal(spaceCritical, "batchlog entries and hints are")
}

// formatBytes renders n bytes in binary units: "812 B", "3.4 MiB".
func formatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
