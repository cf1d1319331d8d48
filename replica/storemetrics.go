package replica

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// stalls counts pebble's write stalls: the times it delayed writes because memtables or level 0
// filled faster than flushes and compactions drained them. pebble's event listener updates it.
type stalls struct {
	mu     sync.Mutex
	count  uint64
	total  time.Duration // of finished stalls
	active bool
	since  time.Time
}

func (s *stalls) begin(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.active, s.since = true, now
}

func (s *stalls) end(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active {
		s.total += now.Sub(s.since)
		s.active = false
	}
}

// read returns the number of stalls and their total duration up to now, a running stall
// included.
func (s *stalls) read(now time.Time) (count uint64, total time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	total = s.total
	if s.active {
		total += now.Sub(s.since)
	}
	return s.count, total
}

// eventListener returns pebble's event listener for the store: it counts write stalls and logs
// them (a stall delays every write of the node); it counts corrupt files and fails the store
// for them and for background errors that mean the disk is broken; and it asks the low-disk
// check to run when pebble reports low space or a flush or compaction meets a full disk.
func (s *Store) eventListener(log pebbleLogger) *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			switch {
			case brokenStorage(err):
				s.Fail(NewFailure(err))
			case errors.Is(err, syscall.ENOSPC):
				s.space.full() // pebble retries the job; writes stop until space is freed
			default:
				log.Errorf("background error: %v", err)
			}
		},
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			// Called on read paths too: it must not block, and does not.
			s.corruptions.Add(1)
			if log.l != nil {
				log.l.Error("storage: corrupt data found", "component", "pebble", "path", info.Path, "bounds", info.Bounds.String(), "err", info.Details)
			}
			s.Fail(&Failure{Kind: FailureCorruption, Err: fmt.Errorf("corrupt file %s: %w", info.Path, info.Details)})
		},
		LowDiskSpace: func(pebble.LowDiskSpaceInfo) { s.space.wake() },
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			s.stalls.begin(time.Now())
			if log.l != nil {
				log.l.Warn("storage write stall began: writes are delayed", "component", "pebble", "reason", info.Reason)
			}
		},
		WriteStallEnd: func() {
			s.stalls.end(time.Now())
			if log.l != nil {
				log.l.Info("storage write stall ended", "component", "pebble")
			}
		},
	}
}

// storeCollector exports the store's pebble metrics, read with DB.Metrics at scrape time.
type storeCollector struct {
	s *Store

	flushes, compactions, compactionDebt, stallCount, stallSeconds *prometheus.Desc
	diskUsage, readAmp, l0Sublevels, memtable, cacheSize           *prometheus.Desc
	cacheHits, cacheMisses                                         *prometheus.Desc
	// Read without pebble, so that they answer after a storage failure too.
	failed, corruptions, unrepaired                       *prometheus.Desc
	diskFree, diskTotal, diskReserve, lowDisk, lowRefused *prometheus.Desc
}

// Collector returns the store's Prometheus metrics (storage health: flushes, compactions, write
// stalls, disk usage, read amplification, block cache), for the node to register. They are read
// from pebble at scrape time; after Close the collector reports nothing.
func (s *Store) Collector() prometheus.Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("kvnode_storage_"+name, help, nil, nil)
	}
	return &storeCollector{
		s:              s,
		flushes:        d("flushes_total", "Memtable flushes to level 0 since the store opened."),
		compactions:    d("compactions_total", "Compactions since the store opened."),
		compactionDebt: d("compaction_debt_bytes", "Estimated bytes compactions still have to rewrite for the LSM to reach a stable shape."),
		stallCount:     d("write_stalls_total", "Write stalls since the store opened: times storage delayed every write because flushes and compactions fell behind."),
		stallSeconds:   d("write_stall_seconds_total", "Time writes spent stalled since the store opened, a running stall included."),
		diskUsage:      d("disk_usage_bytes", "Bytes the store occupies on disk: tables, blob files, write-ahead log and obsolete files not yet deleted."),
		readAmp:        d("read_amplification", "Sorted runs a point read may have to consult (level-0 sublevels plus non-empty lower levels)."),
		l0Sublevels:    d("l0_sublevels", "Level-0 sublevels; pebble stalls writes when they reach its L0StopWritesThreshold."),
		memtable:       d("memtable_bytes", "Bytes allocated by memtables."),
		cacheSize:      d("block_cache_bytes", "Bytes held in the block cache."),
		cacheHits:      d("block_cache_hits_total", "Block cache hits."),
		cacheMisses:    d("block_cache_misses_total", "Block cache misses."),
		failed: prometheus.NewDesc("kvnode_storage_failed",
			"1 for the kind of this node's storage failure (disk_full, io_error, corruption, fatal) once its storage failed, 0 for the others: the node stopped serving (disk_failure_policy) and must be restarted once the disk is fixed.",
			[]string{"kind"}, nil),
		corruptions: d("corruptions_total", "Corrupt files (sstables, blob files) storage found while reading or compacting; each fails the storage."),
		unrepaired:  d("unrepaired", "1 while this node, started despite a corrupt write-ahead log, counts toward no read consistency level until `kvnode repair` run on it completes."),
		diskFree:    d("disk_free_bytes", "Free bytes of the filesystem holding the storage, at the last check (0 when the filesystem cannot tell)."),
		diskTotal:   d("disk_total_bytes", "Size in bytes of the filesystem holding the storage, at the last check."),
		diskReserve: d("disk_reserve_bytes", "The free space this node keeps: the smaller of min_free_space and min_free_space_percent of the filesystem."),
		lowDisk:     d("low_disk", "1 while free space is under the reserve (data writes refused), 2 under half of it (batchlog entries and hints refused too), 0 otherwise."),
		lowRefused:  d("low_disk_refusals_total", "Writes, batchlog entries and hints refused because free space was under the reserve."),
	}
}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.flushes, c.compactions, c.compactionDebt, c.stallCount, c.stallSeconds,
		c.diskUsage, c.readAmp, c.l0Sublevels, c.memtable, c.cacheSize, c.cacheHits, c.cacheMisses,
		c.failed, c.corruptions, c.unrepaired, c.diskFree, c.diskTotal, c.diskReserve, c.lowDisk, c.lowRefused} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
		ch <- prometheus.MustNewConstMetric(d, t, v)
	}
	s := c.s
	f := s.failure.Load()
	for _, k := range FailureKinds {
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, b2f(f != nil && f.Kind == k), string(k))
	}
	metric(c.corruptions, prometheus.CounterValue, float64(s.corruptions.Load()))
	metric(c.unrepaired, prometheus.GaugeValue, b2f(s.unrepaired.Load()))
	metric(c.diskFree, prometheus.GaugeValue, float64(s.space.avail.Load()))
	metric(c.diskTotal, prometheus.GaugeValue, float64(s.space.total.Load()))
	metric(c.diskReserve, prometheus.GaugeValue, float64(s.space.reserve.Load()))
	metric(c.lowDisk, prometheus.GaugeValue, float64(s.space.level()))
	metric(c.lowRefused, prometheus.CounterValue, float64(s.space.refused.Load()))
	m, ok := s.metrics()
	if !ok {
		return
	}
	count, total := s.stalls.read(time.Now())
	metric(c.flushes, prometheus.CounterValue, float64(m.Flush.Count))
	metric(c.compactions, prometheus.CounterValue, float64(m.Compact.Count))
	metric(c.compactionDebt, prometheus.GaugeValue, float64(m.Compact.EstimatedDebt))
	metric(c.stallCount, prometheus.CounterValue, float64(count))
	metric(c.stallSeconds, prometheus.CounterValue, total.Seconds())
	metric(c.diskUsage, prometheus.GaugeValue, float64(m.DiskSpaceUsage()))
	metric(c.readAmp, prometheus.GaugeValue, float64(m.ReadAmp()))
	metric(c.l0Sublevels, prometheus.GaugeValue, float64(m.Levels[0].Sublevels))
	metric(c.memtable, prometheus.GaugeValue, float64(m.MemTable.Size))
	metric(c.cacheSize, prometheus.GaugeValue, float64(m.BlockCache.Size))
	metric(c.cacheHits, prometheus.CounterValue, float64(m.BlockCache.Hits))
	metric(c.cacheMisses, prometheus.CounterValue, float64(m.BlockCache.Misses))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
