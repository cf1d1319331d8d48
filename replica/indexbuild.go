package replica

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/schema"
)

// IndexBuilder keeps this node's secondary indexes in step with the schema, in the background:
// it builds each index the schema has and this node has not built (the rows it held before it
// learned of the index; writes since index themselves), one at a time, and deletes the entries
// of indexes and tables dropped since. Its progress is a metric and Status.
type IndexBuilder struct {
	store  *Store
	schema func() *schema.Schema
	log    *slog.Logger
	loop   *loop.Loop

	seen     atomic.Pointer[schema.Schema] // the schema of the last round that left nothing to do
	rows     atomic.Uint64                 // rows indexed by builds, for the metric
	builds   atomic.Uint64                 // builds finished
	mu       sync.Mutex
	building IndexBuildStatus // the build running, if Index != ""
}

// IndexBuildStatus is the state of one index's build on this node.
type IndexBuildStatus struct {
	Keyspace, Table, Index string
	// Built says the index answers reads here; else Rows is the rows indexed so far.
	Built bool
	Rows  int
}

// indexBuildEvery is how often the builder looks for a schema change.
const indexBuildEvery = 50 * time.Millisecond

// StartIndexBuilder starts the builder of store's indexes against the schema current returns.
// Stop it before closing the store.
func StartIndexBuilder(store *Store, current func() *schema.Schema, log *slog.Logger) *IndexBuilder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &IndexBuilder{store: store, schema: current, log: log}
	b.loop = loop.Start(loop.Options{}, b.round)
	return b
}

// Stop stops the builder and waits for its round to end; a build it interrupts starts again
// from the start on the next start.
func (b *IndexBuilder) Stop() {
	if b != nil {
		b.loop.Stop()
	}
}

// round builds one index that needs it, or deletes the entries of dropped ones, and returns when
// the next round runs.
func (b *IndexBuilder) round(ctx context.Context) time.Duration {
	s := b.schema()
	if s == nil || b.seen.Load() == s {
		return indexBuildEvery
	}
	states, err := b.store.IndexStates()
	if err != nil {
		b.log.Warn("index builder: read the build states", "err", err)
		return indexBuildEvery
	}
	built := make(map[[2]schema.TableID]bool, len(states))
	for _, st := range states {
		built[[2]schema.TableID{st.Table, st.Index}] = st.Built
		t, ok := s.TableByID(st.Table)
		if _, has := indexOf(t, st.Index); ok && has {
			continue
		}
		// The index (or its table) was dropped since it was built here.
		if err := b.store.DropIndex(st.Table, st.Index); err != nil {
			b.log.Warn("index builder: drop index entries", "table", st.Table, "index", st.Index, "err", err)
			return indexBuildEvery
		}
	}
	for _, t := range s.Tables("") {
		for _, ix := range t.Indexes() {
			if built[[2]schema.TableID{t.ID, ix.ID}] {
				continue
			}
			if !b.build(ctx, t, &ix) {
				return indexBuildRetry
			}
			return time.Nanosecond // at once: the next index, or the next schema
		}
	}
	b.seen.Store(s)
	return indexBuildEvery
}

func indexOf(t *schema.Table, id schema.TableID) (*schema.Index, bool) {
	if t == nil {
		return nil, false
	}
	return t.IndexByID(id)
}

// indexBuildRetry is how long the builder waits after a failed build before it starts again.
const indexBuildRetry = time.Second

// build runs the build of index ix of t, and reports whether it finished.
func (b *IndexBuilder) build(ctx context.Context, t *schema.Table, ix *schema.Index) bool {
	st := IndexBuildStatus{Keyspace: t.Keyspace, Table: t.Name, Index: ix.Name}
	b.mu.Lock()
	b.building = st
	b.mu.Unlock()
	start := time.Now()
	last := 0
	err := b.store.BuildIndex(ctx, t, ix, func(rows int) {
		b.rows.Add(uint64(rows - last))
		last = rows
		b.mu.Lock()
		b.building.Rows = rows
		b.mu.Unlock()
	})
	b.mu.Lock()
	b.building = IndexBuildStatus{}
	b.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn("index build failed; it starts again", "index", ix.Name, "table", t.QualifiedName(), "err", err)
		}
		return false
	}
	b.builds.Add(1)
	b.log.Info("index built", "index", ix.Name, "table", t.QualifiedName(), "rows", last, "took", time.Since(start))
	return true
}

// Status returns the build state of every index of the schema on this node.
func (b *IndexBuilder) Status() []IndexBuildStatus {
	s := b.schema()
	if s == nil {
		return nil
	}
	b.mu.Lock()
	running := b.building
	b.mu.Unlock()
	var out []IndexBuildStatus
	for _, t := range s.Tables("") {
		for _, ix := range t.Indexes() {
			st := IndexBuildStatus{Keyspace: t.Keyspace, Table: t.Name, Index: ix.Name}
			st.Built, _, _ = b.store.IndexState(t.ID, ix.ID)
			if !st.Built && running.Index == ix.Name && running.Keyspace == t.Keyspace {
				st.Rows = running.Rows
			}
			out = append(out, st)
		}
	}
	return out
}

// Collector returns the builder's metrics.
func (b *IndexBuilder) Collector() prometheus.Collector {
	return indexCollector{b: b,
		pending: prometheus.NewDesc("kvnode_replica_index_builds_pending",
			"Secondary indexes of the schema this node has not built yet (their reads fail here until then).", nil, nil),
		rows: prometheus.NewDesc("kvnode_replica_index_build_rows_total",
			"Rows indexed by the builds of secondary indexes over the rows a node held when it learned of the index.", nil, nil),
		builds: prometheus.NewDesc("kvnode_replica_index_builds_total", "Builds of secondary indexes finished on this node.", nil, nil),
	}
}

type indexCollector struct {
	b                     *IndexBuilder
	pending, rows, builds *prometheus.Desc
}

func (c indexCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.rows
	ch <- c.builds
}

func (c indexCollector) Collect(ch chan<- prometheus.Metric) {
	pending := 0
	for _, st := range c.b.Status() {
		if !st.Built {
			pending++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(pending))
	ch <- prometheus.MustNewConstMetric(c.rows, prometheus.CounterValue, float64(c.b.rows.Load()))
	ch <- prometheus.MustNewConstMetric(c.builds, prometheus.CounterValue, float64(c.b.builds.Load()))
}
