package replica

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
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
	// DefaultMinFreeSpace is the default Options.MinFreeSpace.
	DefaultMinFreeSpace = 256 << 20
	// DefaultMinFreeSpacePercent is the default Options.MinFreeSpacePercent.
	DefaultMinFreeSpacePercent = 5
	// DefaultDiskCheckInterval is the default Options.DiskCheckInterval.
	DefaultDiskCheckInterval = time.Second
)

// Clock tells the time.
type Clock interface{ Now() time.Time }

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
	// Clock is the store's clock: it stamps tombstones and expiring values with the time they
	// were stored and decides which expiring cells have expired. Nil means the system clock;
	// tests set it to share a fake clock with coordinators.
	Clock Clock `yaml:"-"`
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
	// DiskFailurePolicy is what the node does when its storage fails (a write or sync the disk
	// refused, a corrupt file, pebble's fatal errors): PolicyStop ("stop": stop serving clients
	// and peers, keep metrics and logs up until stopped) or PolicyDie ("die": end the process at
	// once). Empty means PolicyStop. The node runs it (OnFailure); the store only stops serving.
	DiskFailurePolicy string `yaml:"disk_failure_policy"`
	// MinFreeSpace and MinFreeSpacePercent set the reserve of free space on the store's
	// filesystem: the smaller of MinFreeSpace bytes and MinFreeSpacePercent of the filesystem's
	// size. Below it the store refuses data writes (ErrLowDiskSpace) while it still deletes, drops
	// tables and compacts; below half of it, the batchlog refuses entries and the node its hints
	// (ReserveError) too. Writes resume once free space is back above the reserve and a tenth.
	// Zero means DefaultMinFreeSpace and DefaultMinFreeSpacePercent; MinFreeSpacePercent 100
	// leaves MinFreeSpace alone to decide.
	MinFreeSpace        int64   `yaml:"min_free_space"`
	MinFreeSpacePercent float64 `yaml:"min_free_space_percent"`
	// DiskCheckInterval is how often the store reads its filesystem's free space. Zero means
	// DefaultDiskCheckInterval.
	DiskCheckInterval time.Duration `yaml:"-"`
	// StartDespiteCorruptLog opens a store whose write-ahead log pebble finds corrupt (damage
	// followed by data that was synced after it) anyway: the damaged log is moved into the
	// quarantine directory beside the store (QuarantineDir) and the store is marked unrepaired
	// (Unrepaired) until SetRepaired. Without it Open refuses with a *CorruptLogError.
	StartDespiteCorruptLog bool `yaml:"start_despite_corrupt_log"`
	// OnFailure, if set, is told once, when the store's storage fails, of the failure (after it
	// is logged): the node's disk failure policy.
	OnFailure FailureHandler `yaml:"-"`
	// OnSpaceChange, if set, is told each time the store starts or stops refusing data writes
	// for lack of space (SpaceError): the node tells its peers.
	OnSpaceChange SpaceWatcher `yaml:"-"`
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
	if o.DiskFailurePolicy == "" {
		o.DiskFailurePolicy = PolicyStop
	}
	if o.MinFreeSpace == 0 {
		o.MinFreeSpace = DefaultMinFreeSpace
	}
	if o.MinFreeSpacePercent == 0 {
		o.MinFreeSpacePercent = DefaultMinFreeSpacePercent
	}
	if o.DiskCheckInterval == 0 {
		o.DiskCheckInterval = DefaultDiskCheckInterval
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
	if p := o.DiskFailurePolicy; p != PolicyStop && p != PolicyDie {
		return fmt.Errorf("replica: Options.DiskFailurePolicy (disk_failure_policy) is %q, want %q or %q", p, PolicyStop, PolicyDie)
	}
	if o.MinFreeSpace < 0 {
		return fmt.Errorf("replica: Options.MinFreeSpace (min_free_space) is %d, want a positive number of bytes", o.MinFreeSpace)
	}
	if p := o.MinFreeSpacePercent; !(p > 0 && p <= 100) {
		return fmt.Errorf("replica: Options.MinFreeSpacePercent (min_free_space_percent) is %v, want more than 0 and at most 100", p)
	}
	if o.DiskCheckInterval < 0 {
		return fmt.Errorf("replica: Options.DiskCheckInterval is %v, want a positive duration", o.DiskCheckInterval)
	}
	return nil
}

// pebbleOptions translates o (with defaults filled in) into pebble's options, on fs.
func (o *Options) pebbleOptions(fs vfs.FS, log pebbleLogger) *pebble.Options {
	po := &pebble.Options{
		CacheSize:          o.CacheSize,
		MemTableSize:       o.MemTableSize,
		FormatMajorVersion: FormatMajorVersion,
		Merger:             newLWWMerger(),
		FS:                 fs,
		Logger:             log,
	}
	// Bloom filters on every level (the later levels inherit L0's): a point read of a key the
	// store does not hold, such as a Paxos prepare's state load for a partition no lightweight
	// transaction touched lately, skips a table on its filter instead of reading a block of it.
	// Tables written without one stay readable (they are read unfiltered).
	po.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	return po
}
