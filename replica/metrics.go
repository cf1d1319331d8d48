package replica

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/schema"
)

// The replica request counters' ops and statuses, as metric label values.
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

// The help texts of the service's metrics (tests compare exposition text with them).
const (
	helpOperations = "Operations counted in this node's per-partition limiter counters, by table and op: the offered load of limited tables as this replica sees it (rejected ones included; account-only deltas add their count)."
	helpRejections = "Operations this node's limiter rejected, by table, op and who rejected: coordinator (this node coordinated and rejected on its own counter before contacting anyone) or replica (this node was an enforcing replica)."
	helpRequests   = "Replica requests served by this node (from any coordinator, this one included), by op and status."
	helpLatency    = "Time replica requests admitted by the limiter spent in storage, by op (rejections return before storage and are not timed)."
	helpTracked    = "Partitions (token, table, op) whose limiter counter is above zero now."
	helpHot        = "Partitions of the table whose limiter counter on this node is above twice the limit now, where rejections begin (at most the 32 hottest are tracked per table and op; kvnode toppartitions lists them)."
	helpCapacity   = "Partitions the limiter table can track at once; when full, new partitions evict the coldest of their probe window."
	helpInserts    = "Partitions that began to be tracked by the limiter table."
	helpEvictions  = "Tracked partitions the limiter table evicted to make room because their probe window was full; a steady rate means the table is too small for the partitions in use."
	helpClamped    = "Limited operations and delta batches whose coordinator's clock stamp was more than the limiter's maximum stamp skew away from this node's clock and was clamped to it: a node's clock (this one's or a coordinator's) is off; see the KvnodeClockSkew alert."
)

// serviceMetrics exports the service's metrics to Prometheus. Per operation the service only
// adds to plain atomic counters it already holds (the request counters here, the per (table,
// op) ones in the interned opState): a rejection costs one atomic add. Collect turns them
// into metrics at scrape time, along with the gauges that need a scan.
type serviceMetrics struct {
	// requests counts replica requests by op and status. Rejections are not counted here: a
	// request is rate limited exactly when an enforcing replica rejects it, so the
	// rate_limited series are the sums of the opStates' replica rejections.
	requests   [numRequestOps][numStatuses]atomic.Uint64
	clamped    atomic.Uint64 // stamps clamped by Service.at
	latencyVec *prometheus.HistogramVec
	latency    [numRequestOps]prometheus.Observer

	svc                                      *Service
	operations, rejections, requestsDesc     *prometheus.Desc
	tracked, hot, capacity, inserts, evicted *prometheus.Desc
	clampedDesc                              *prometheus.Desc
}

// requestDurationBuckets span an in-memory read (tens of µs) to a synced write on a slow disk.
var requestDurationBuckets = []float64{
	.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1,
}

func newServiceMetrics(svc *Service) *serviceMetrics {
	m := &serviceMetrics{
		latencyVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kvnode", Subsystem: "replica", Name: "request_duration_seconds",
			Help: helpLatency, Buckets: requestDurationBuckets,
		}, []string{"op"}),
		svc:          svc,
		operations:   prometheus.NewDesc("kvnode_limiter_operations_total", helpOperations, []string{"keyspace", "table", "op"}, nil),
		rejections:   prometheus.NewDesc("kvnode_limiter_rejections_total", helpRejections, []string{"keyspace", "table", "op", "rejected_by"}, nil),
		requestsDesc: prometheus.NewDesc("kvnode_replica_requests_total", helpRequests, []string{"op", "status"}, nil),
		tracked:      prometheus.NewDesc("kvnode_limiter_tracked_partitions", helpTracked, nil, nil),
		hot:          prometheus.NewDesc("kvnode_limiter_hot_partitions", helpHot, []string{"keyspace", "table", "op"}, nil),
		capacity:     prometheus.NewDesc("kvnode_limiter_capacity_partitions", helpCapacity, nil, nil),
		inserts:      prometheus.NewDesc("kvnode_limiter_inserts_total", helpInserts, nil, nil),
		evicted:      prometheus.NewDesc("kvnode_limiter_evictions_total", helpEvictions, nil, nil),
		clampedDesc:  prometheus.NewDesc("kvnode_limiter_clamped_stamps_total", helpClamped, nil, nil),
	}
	for op := range numRequestOps {
		m.latency[op] = m.latencyVec.WithLabelValues(requestOpNames[op])
	}
	return m
}

// Describe implements prometheus.Collector.
func (m *serviceMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.latencyVec.Describe(ch)
	for _, d := range []*prometheus.Desc{m.operations, m.rejections, m.requestsDesc, m.tracked, m.hot, m.capacity, m.inserts, m.evicted, m.clampedDesc} {
		ch <- d
	}
}

// pairName is the metric labels of a (table, op) pair.
type pairName struct{ keyspace, table, op string }

// pairCounts are the counters of the pairs with one name: a table dropped and created again
// under its name has two ids, whose counts add up.
type pairCounts struct {
	operations uint64
	rejected   [numRejecters]uint64
}

// Collect implements prometheus.Collector. The limiter table's occupancy is counted here, at
// scrape time: it examines every slot (a few milliseconds per million).
func (m *serviceMetrics) Collect(ch chan<- prometheus.Metric) {
	m.latencyVec.Collect(ch)
	pairs := map[pairName]*pairCounts{}
	var replicaRejections [numRequestOps]uint64
	for _, st := range m.svc.ops.all() {
		n := pairName{st.keyspace, st.table, st.op.String()}
		c := pairs[n]
		if c == nil {
			c = &pairCounts{}
			pairs[n] = c
		}
		admitted := st.admitted.Load()
		c.operations += admitted
		for by := range numRejecters {
			r := st.rejected[by].Load()
			c.rejected[by] += r
			c.operations += r
		}
		req := reqWrite
		if st.op == schema.OpRead {
			req = reqRead
		}
		replicaRejections[req] += st.rejected[byReplica].Load()
	}
	for n, c := range pairs {
		ch <- prometheus.MustNewConstMetric(m.operations, prometheus.CounterValue, float64(c.operations), n.keyspace, n.table, n.op)
		for by := range numRejecters {
			ch <- prometheus.MustNewConstMetric(m.rejections, prometheus.CounterValue, float64(c.rejected[by]), n.keyspace, n.table, n.op, by.String())
		}
	}
	for op := range numRequestOps {
		for status := range numStatuses {
			v := m.requests[op][status].Load()
			if status == statusRateLimited {
				v = replicaRejections[op]
			}
			ch <- prometheus.MustNewConstMetric(m.requestsDesc, prometheus.CounterValue, float64(v), requestOpNames[op], statusNames[status])
		}
	}
	now := m.svc.now()
	st := m.svc.limits.Stats(now)
	ch <- prometheus.MustNewConstMetric(m.tracked, prometheus.GaugeValue, float64(st.Entries))
	ch <- prometheus.MustNewConstMetric(m.capacity, prometheus.GaugeValue, float64(st.Capacity))
	ch <- prometheus.MustNewConstMetric(m.inserts, prometheus.CounterValue, float64(st.Inserts))
	ch <- prometheus.MustNewConstMetric(m.evicted, prometheus.CounterValue, float64(st.Evictions))
	ch <- prometheus.MustNewConstMetric(m.clampedDesc, prometheus.CounterValue, float64(m.clamped.Load()))
	m.svc.collectHot(ch, m.hot, now)
}

// opState is what the service keeps per (table, op): the limiter label the counters are keyed
// by, the pair's metric counters, and its hot partitions.
type opState struct {
	label           uint32
	keyspace, table string // the table's names, for metric labels
	op              schema.Op

	// admitted counts operations counted in the limiter and not rejected (account-only ones,
	// admitted enforced ones, and account deltas by their count); rejected counts rejections
	// by rejecter. Their sum is the operations counted.
	admitted atomic.Uint64
	rejected [numRejecters]atomic.Uint64

	hot hotSet
}

// opStates interns (table id, op) pairs into their opState. Lookups of known pairs read a
// copy-on-write map without locking or allocating; a new pair copies the map once. A dropped
// table's pairs are forgotten (their metric series vanish); labels are never reused, so a
// counter of a dropped table still decaying in the limiter never counts for another one.
type opStates struct {
	m  atomic.Pointer[map[labelKey]*opState]
	mu sync.Mutex // serialises writers

	next    uint32                  // the next label; guarded by mu
	dropped map[schema.TableID]bool // tables forgotten; guarded by mu
}

type labelKey struct {
	table schema.TableID
	op    schema.Op
}

// get returns the state of (t, op), creating it on first use. It fails once the labels up to
// partitionlimit.MaxLabel are all handed out (2^30 pairs since the node started; labels are
// never reused), rather than give two pairs one counter.
func (l *opStates) get(t *schema.Table, op schema.Op) (*opState, error) {
	k := labelKey{t.ID, op}
	if m := l.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v, nil
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.m.Load()
	var n int
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v, nil
		}
		n = len(*old)
	}
	if l.next > partitionlimit.MaxLabel {
		return nil, fmt.Errorf("replica: no limiter label left for %s of table %s.%s: this node has counted %d (table, op) pairs since it started, the most the limiter tells apart; restart the node",
			op, t.Keyspace, t.Name, uint64(partitionlimit.MaxLabel)+1)
	}
	st := &opState{label: l.next, keyspace: t.Keyspace, table: t.Name, op: op}
	l.next++
	if l.dropped[t.ID] {
		// A request that resolved the table before its drop: count it into a state nobody
		// exports, rather than bring the dropped table's series back.
		return st, nil
	}
	next := make(map[labelKey]*opState, n+1)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	next[k] = st
	l.m.Store(&next)
	return st, nil
}

// forget removes the states of table id and keeps it from getting new ones.
func (l *opStates) forget(id schema.TableID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped == nil {
		l.dropped = map[schema.TableID]bool{}
	}
	l.dropped[id] = true
	old := l.m.Load()
	if old == nil {
		return
	}
	next := make(map[labelKey]*opState, len(*old))
	for k, v := range *old {
		if k.table != id {
			next[k] = v
		}
	}
	l.m.Store(&next)
}

// lookup returns the state of (id, op) if it exists.
func (l *opStates) lookup(id schema.TableID, op schema.Op) (*opState, bool) {
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
