package replica

import (
	"sync"
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
// them (a stall delays every write of the node).
func (s *Store) eventListener(log pebbleLogger) *pebble.EventListener {
	return &pebble.EventListener{
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
	}
}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.flushes, c.compactions, c.compactionDebt, c.stallCount, c.stallSeconds,
		c.diskUsage, c.readAmp, c.l0Sublevels, c.memtable, c.cacheSize, c.cacheHits, c.cacheMisses} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	m, ok := c.s.metrics()
	if !ok {
		return
	}
	count, total := c.s.stalls.read(time.Now())
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
		ch <- prometheus.MustNewConstMetric(d, t, v)
	}
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
