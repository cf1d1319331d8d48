package replica

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Metric label values of the replica request counters.
const (
	numRequestOps = 3 // read, write, account_delta
	numStatuses   = 3 // ok, rate_limited, error

	reqRead, reqWrite, reqAccountDelta       = 0, 1, 2
	statusOK, statusRateLimited, statusError = 0, 1, 2
)

var (
	requestOpNames = [numRequestOps]string{"read", "write", "account_delta"}
	statusNames    = [numStatuses]string{"ok", "rate_limited", "error"}
)

// serviceMetrics are the service's Prometheus metrics. Labelled children used per operation
// are resolved once (per status, per op, per table and op) so that the request path only adds
// to counters: no label hashing, no allocation.
type serviceMetrics struct {
	accountedVec *prometheus.CounterVec
	rejectedVec  *prometheus.CounterVec
	requestsVec  *prometheus.CounterVec
	latencyVec   *prometheus.HistogramVec

	requests [numRequestOps][numStatuses]prometheus.Counter
	latency  [numRequestOps]prometheus.Observer

	svc      *Service // for the scrape-time gauges
	tracked  *prometheus.Desc
	hot      *prometheus.Desc
	capacity *prometheus.Desc
	inserts  *prometheus.Desc
	evicted  *prometheus.Desc
}

// requestDurationBuckets span an in-memory read (tens of µs) to a synced write on a slow disk.
var requestDurationBuckets = []float64{
	.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1,
}

func newServiceMetrics(svc *Service) *serviceMetrics {
	m := &serviceMetrics{
		accountedVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kvnode", Subsystem: "limiter", Name: "operations_total",
			Help: "Operations counted in this node's per-partition limiter counters, by table and op: the offered load of limited tables as this replica sees it (rejected ones included; account-only deltas add their count).",
		}, []string{"keyspace", "table", "op"}),
		rejectedVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kvnode", Subsystem: "limiter", Name: "rejections_total",
			Help: "Operations this node's limiter rejected, by table, op and who rejected: coordinator (this node coordinated and rejected on its own counter before contacting anyone) or replica (this node was an enforcing replica).",
		}, []string{"keyspace", "table", "op", "rejected_by"}),
		requestsVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kvnode", Subsystem: "replica", Name: "requests_total",
			Help: "Replica requests served by this node (from any coordinator, this one included), by op and status.",
		}, []string{"op", "status"}),
		latencyVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kvnode", Subsystem: "replica", Name: "request_duration_seconds",
			Help:    "Time replica requests admitted by the limiter spent in storage, by op (rejections return before storage and are not timed).",
			Buckets: requestDurationBuckets,
		}, []string{"op"}),
		svc: svc,
		tracked: prometheus.NewDesc("kvnode_limiter_tracked_partitions",
			"Partitions (token, table, op) whose limiter counter is above zero now.", nil, nil),
		hot: prometheus.NewDesc("kvnode_limiter_hot_partitions",
			"Partitions of the table whose limiter counter on this node is above twice the limit now, where rejections begin (at most the 32 hottest are tracked per table and op; kvnode toppartitions lists them).",
			[]string{"keyspace", "table", "op"}, nil),
		capacity: prometheus.NewDesc("kvnode_limiter_capacity_partitions",
			"Partitions the limiter table can track at once; when full, new partitions evict the coldest of their probe window.", nil, nil),
		inserts: prometheus.NewDesc("kvnode_limiter_inserts_total",
			"Partitions that began to be tracked by the limiter table.", nil, nil),
		evicted: prometheus.NewDesc("kvnode_limiter_evictions_total",
			"Tracked partitions the limiter table evicted to make room because their probe window was full; a steady rate means the table is too small for the partitions in use.", nil, nil),
	}
	for op := range numRequestOps {
		for st := range numStatuses {
			m.requests[op][st] = m.requestsVec.WithLabelValues(requestOpNames[op], statusNames[st])
		}
		m.latency[op] = m.latencyVec.WithLabelValues(requestOpNames[op])
	}
	return m
}

// Describe implements prometheus.Collector.
func (m *serviceMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.accountedVec.Describe(ch)
	m.rejectedVec.Describe(ch)
	m.requestsVec.Describe(ch)
	m.latencyVec.Describe(ch)
	ch <- m.tracked
	ch <- m.hot
	ch <- m.capacity
	ch <- m.inserts
	ch <- m.evicted
}

// Collect implements prometheus.Collector. The limiter table's occupancy is counted here, at
// scrape time: it examines every slot (a few milliseconds per million).
func (m *serviceMetrics) Collect(ch chan<- prometheus.Metric) {
	m.accountedVec.Collect(ch)
	m.rejectedVec.Collect(ch)
	m.requestsVec.Collect(ch)
	m.latencyVec.Collect(ch)
	now := m.svc.now()
	st := m.svc.limits.Stats(now)
	ch <- prometheus.MustNewConstMetric(m.tracked, prometheus.GaugeValue, float64(st.Entries))
	m.svc.collectHot(ch, m.hot, now)
	ch <- prometheus.MustNewConstMetric(m.capacity, prometheus.GaugeValue, float64(st.Capacity))
	ch <- prometheus.MustNewConstMetric(m.inserts, prometheus.CounterValue, float64(st.Inserts))
	ch <- prometheus.MustNewConstMetric(m.evicted, prometheus.CounterValue, float64(st.Evictions))
}

// opState is what the service keeps per (table, op): the limiter label the counters are keyed
// by, the metric children of the pair, and its hot partitions.
type opState struct {
	label     uint32
	accounted prometheus.Counter
	rejected  [numRejecters]prometheus.Counter
	hot       hotSet
}

// opStates interns (table id, op) pairs into their opState. Lookups of known pairs read a
// copy-on-write map without locking or allocating; a new pair copies the map once. Labels of
// dropped tables are never reused.
type opStates struct {
	m  atomic.Pointer[map[labelKey]*opState]
	mu sync.Mutex // serialises writers
}

type labelKey struct {
	table schema.TableID
	op    replicapb.Op
}

// get returns the state of (t, op), creating it on first use with metric labels from t and
// metrics m.
func (l *opStates) get(t *schema.Table, op replicapb.Op, m *serviceMetrics) *opState {
	k := labelKey{t.ID, op}
	if m := l.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.m.Load()
	var n int
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
		n = len(*old)
	}
	opName := opLabel(op)
	st := &opState{
		label:     uint32(n),
		accounted: m.accountedVec.WithLabelValues(t.Keyspace, t.Name, opName),
	}
	for by := range numRejecters {
		st.rejected[by] = m.rejectedVec.WithLabelValues(t.Keyspace, t.Name, opName, by.String())
	}
	next := make(map[labelKey]*opState, n+1)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	next[k] = st
	l.m.Store(&next)
	return st
}

// lookup returns the state of (id, op) if it exists.
func (l *opStates) lookup(id schema.TableID, op replicapb.Op) (*opState, bool) {
	m := l.m.Load()
	if m == nil {
		return nil, false
	}
	st, ok := (*m)[labelKey{id, op}]
	return st, ok
}

// all returns the current states (keyed by pair); the caller must not modify the map.
func (l *opStates) all() map[labelKey]*opState {
	if m := l.m.Load(); m != nil {
		return *m
	}
	return nil
}

// opLabel is the metric label of a limiter op.
func opLabel(op replicapb.Op) string {
	if op == replicapb.Op_OP_READ {
		return "read"
	}
	return "write"
}
