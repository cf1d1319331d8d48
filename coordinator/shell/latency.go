package shell

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/schema"
)

// This file keeps the replicas' recent read latencies, per table, for the speculative delay of
// speculative_retry = 'Np': a read that has waited longer than the table's Nth percentile asks
// a spare replica (see speculation).

// The latency histogram: bucket 0 holds latencies up to latencyBase, bucket i > 0 those up to
// latencyBase·latencyGrowth^i, the last one everything longer. 64 buckets of 25 % reach 16 s.
const (
	latencyBuckets = 64
	latencyBase    = 10 * time.Microsecond
	latencyGrowth  = 1.25
	// latencyWindow is how long one window of the histogram counts; a percentile is taken over
	// the current and the previous window, so over the last 30 to 60 seconds.
	latencyWindow = 30 * time.Second
	// latencyMinSamples is how many samples a percentile needs; with fewer, the executor's
	// histogram of every table stands in, and with fewer there too, fallbackSpeculativeDelay.
	latencyMinSamples = 20
	// maxTrackedTables bounds the tables with a histogram (each about 600 bytes); beyond it
	// they all start over.
	maxTrackedTables = 4096
)

// Bounds of the speculative delay of a percentile (speculative_retry = 'Np'): kvnode does not
// speculate sooner than minSpeculativeDelay, so that a table whose reads are mostly local
// ones does not speculate on most of its reads from remote replicas, nor later than half the
// read's timeout. fallbackSpeculativeDelay stands in for the percentile until the node has
// seen latencyMinSamples reads within a window.
const (
	minSpeculativeDelay      = time.Millisecond
	fallbackSpeculativeDelay = 50 * time.Millisecond
)

// latencyBucket returns the bucket of latency d.
func latencyBucket(d time.Duration) int {
	if d <= latencyBase {
		return 0
	}
	i := int(math.Ceil(math.Log(float64(d)/float64(latencyBase)) / math.Log(latencyGrowth)))
	return min(i, latencyBuckets-1)
}

// latencyBound returns the largest latency bucket i holds (the last holds everything longer).
func latencyBound(i int) time.Duration {
	return time.Duration(float64(latencyBase) * math.Pow(latencyGrowth, float64(i)))
}

// window is one window of a histogram: the counts of the samples taken in epoch.
type window struct {
	epoch  atomic.Int64 // 0: never used
	counts [latencyBuckets]atomic.Uint32
}

// latencies is a decaying histogram of read latencies: two windows of latencyWindow, the
// current and the previous one, reused in turn. Recording is an atomic add (and, once per
// window, a reset under mu); it is safe for concurrent use. Time enters as now, a monotonic
// offset.
type latencies struct {
	mu      sync.Mutex // serialises window resets
	windows [2]window
}

// epochAt returns the window epoch of now, from 1.
func epochAt(now time.Duration) int64 { return int64(now/latencyWindow) + 1 }

// record adds one latency sample d taken at now.
func (l *latencies) record(now, d time.Duration) {
	e := epochAt(now)
	w := &l.windows[e%2]
	if w.epoch.Load() != e {
		l.mu.Lock()
		if w.epoch.Load() != e {
			for i := range w.counts {
				w.counts[i].Store(0)
			}
			w.epoch.Store(e)
		}
		l.mu.Unlock()
	}
	w.counts[latencyBucket(d)].Add(1)
}

// percentile returns the latency that p percent of the samples of the last 30 to 60 seconds did
// not exceed (rounded up to its bucket's bound, so at most 25 % over), and false when fewer
// than latencyMinSamples were taken.
func (l *latencies) percentile(now time.Duration, p float64) (time.Duration, bool) {
	e := epochAt(now)
	var counts [latencyBuckets]uint64
	var total uint64
	for i := range l.windows {
		w := &l.windows[i]
		if we := w.epoch.Load(); we != e && we != e-1 {
			continue
		}
		for b := range w.counts {
			n := uint64(w.counts[b].Load())
			counts[b] += n
			total += n
		}
	}
	if total < latencyMinSamples {
		return 0, false
	}
	rank := uint64(math.Ceil(p / 100 * float64(total)))
	var seen uint64
	for b, n := range counts {
		seen += n
		if seen >= rank {
			return latencyBound(b), true
		}
	}
	return latencyBound(latencyBuckets - 1), true
}

// tableLatencies holds a histogram per table, and one of every table's reads.
type tableLatencies struct {
	all    latencies
	tables sync.Map // schema.TableID → *latencies
	n      atomic.Int32
}

// of returns table id's histogram, creating it on the table's first read.
func (t *tableLatencies) of(id schema.TableID) *latencies {
	if l, ok := t.tables.Load(id); ok {
		return l.(*latencies)
	}
	if t.n.Load() >= maxTrackedTables {
		// Tables come and go with DDL only: a node that saw this many has dropped most of
		// them. Start over rather than keep them.
		t.tables.Clear()
		t.n.Store(0)
	}
	l, loaded := t.tables.LoadOrStore(id, new(latencies))
	if !loaded {
		t.n.Add(1)
	}
	return l.(*latencies)
}

// record adds a replica's read latency d on table l (taken at now) to l and to all.
func (t *tableLatencies) record(l *latencies, now, d time.Duration) {
	l.record(now, d)
	t.all.record(now, d)
}

// delay returns the speculative delay of percentile p for table l: its own percentile, or
// every table's while l has too few samples, or fallbackSpeculativeDelay while the node has
// too few, bounded to [minSpeculativeDelay, limit].
func (t *tableLatencies) delay(l *latencies, now time.Duration, p float64, limit time.Duration) time.Duration {
	d, ok := l.percentile(now, p)
	if !ok {
		if d, ok = t.all.percentile(now, p); !ok {
			d = fallbackSpeculativeDelay
		}
	}
	return min(max(d, minSpeculativeDelay), limit)
}
