package replica

import (
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// FormatMajorVersion is the pebble on-disk format the store creates and
// upgrades existing databases to: the newest pebble v2 supports. It is pinned
// so that a pebble upgrade never changes the format silently; raising it is a
// one-way migration (older binaries cannot open the directory afterwards).
const FormatMajorVersion = pebble.FormatValueSeparation

// Default sizes, for a server with a few GiB of memory.
const (
	// DefaultCacheSize is the default block cache size (pebble's own default
	// is 8 MiB).
	DefaultCacheSize = 256 << 20
	// DefaultMemTableSize is the default memtable size (pebble's own default
	// is 4 MiB).
	DefaultMemTableSize = 64 << 20
	// DefaultTombstoneFailureThreshold is the default
	// Options.TombstoneFailureThreshold: Cassandra's
	// tombstone_failure_threshold.
	DefaultTombstoneFailureThreshold = 100_000
)

// Options configures a Store. The zero value of each field means its default (EnsureDefaults).
// The YAML tags name the keys of kvnode's configuration file (node.Config nests Options); the
// fields tagged "-" are set in code.
type Options struct {
	// CacheSize is the block cache size in bytes. Zero means
	// DefaultCacheSize.
	CacheSize int64 `yaml:"cache_size"`
	// MemTableSize is the size of one memtable in bytes. Zero means
	// DefaultMemTableSize.
	MemTableSize uint64 `yaml:"memtable_size"`
	// NoSync acknowledges writes once they are in the write-ahead log's OS
	// buffers instead of after an fsync: a machine crash (not a process
	// crash) can then lose acknowledged writes. The default syncs every
	// write batch; pebble group-commits concurrent writes into one sync.
	NoSync bool `yaml:"-"`
	// Logger receives pebble's log lines. Nil discards them.
	Logger *slog.Logger `yaml:"-"`
	// FS is the filesystem the store lives on. Nil means the operating
	// system's. Tests pass vfs.NewMem().
	FS vfs.FS `yaml:"-"`
	// TombstoneFailureThreshold is how many tombstones one read of a
	// partition may scan (over all its pages) before it fails with
	// ErrTooManyTombstones instead of exhausting memory: cell tombstones,
	// row tombstones of rows without cell tombstones, range tombstones and
	// the partition tombstone. Zero means DefaultTombstoneFailureThreshold.
	TombstoneFailureThreshold uint32 `yaml:"tombstone_failure_threshold"`
}

// EnsureDefaults replaces zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.TombstoneFailureThreshold == 0 {
		o.TombstoneFailureThreshold = DefaultTombstoneFailureThreshold
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, describes a store Open can open. Each error
// names the field, its configuration key and the values allowed.
func (o *Options) Validate() error {
	if o.CacheSize < 0 {
		return fmt.Errorf("replica: Options.CacheSize (cache_size) is %d, want ≥ 0 bytes", o.CacheSize)
	}
	// pebble requires a memtable of at least 1 KiB and below 4 GiB.
	if m := o.MemTableSize; m < 1<<10 || m >= 4<<30 {
		return fmt.Errorf("replica: Options.MemTableSize (memtable_size) is %d, want 1024 to %d bytes", m, uint64(4<<30-1))
	}
	if o.TombstoneFailureThreshold < 1 {
		return fmt.Errorf("replica: Options.TombstoneFailureThreshold (tombstone_failure_threshold) is %d, want ≥ 1", o.TombstoneFailureThreshold)
	}
	return nil
}

// pebbleOptions translates o (with defaults filled in) into pebble's options.
func (o *Options) pebbleOptions() *pebble.Options {
	return &pebble.Options{
		CacheSize:          o.CacheSize,
		MemTableSize:       o.MemTableSize,
		FormatMajorVersion: FormatMajorVersion,
		Merger:             newLWWMerger(),
		FS:                 o.FS,
		Logger:             pebbleLogger{o.Logger},
	}
}

// pebbleLogger adapts a *slog.Logger (nil: discard) to pebble's Logger.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l != nil {
		p.l.Info(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	if p.l != nil {
		p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

// Fatalf is called by pebble on unrecoverable corruption and must not
// return.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if p.l != nil {
		p.l.Error(msg, "component", "pebble", "fatal", true)
	}
	panic("replica: pebble: " + msg)
}
