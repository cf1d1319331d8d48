package node

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/coordinator/shell"
)

// The label values of the coordinator's metrics, as shell.Observer reports them. A value
// outside these lists (a newer coordinator) is counted under the last entry of its list.
var (
	opNames          = []string{"read", "write", "schema", "other"}
	consistencyNames = []string{"ONE", "QUORUM", "ALL", "none"} // "none": schema and other statements
	resultNames      = []string{"ok", "rate_limited", "unavailable", "timeout", "failed", "invalid", "canceled", "error"}
	limitedOpNames   = []string{"read", "write"}
	// rejecterNames are the rejected_by label values, the same as the limiter's: the Observer's
	// "replicas" is counted as "replica".
	rejecterNames = []string{"coordinator", "replica"}
	repairResults = []string{"ok", "timeout", "failed", "additional"}
)

const (
	numOps, numConsistencies, numResults = 4, 4, 8
	opRead, opWrite                      = 0, 1
	resultUnavailable, resultTimeout     = 2, 3
)

// coordinatorLatencyBuckets span a local read (100 µs) to the default read timeout (5 s).
var coordinatorLatencyBuckets = []float64{
	.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5,
}

// coordinatorMetrics is the node's shell.Observer: it counts what the coordinator tells
// it in Prometheus metrics. Every labelled child the request path uses is resolved in advance,
// per (op, consistency, result) at construction and per table on the table's first request,
// so an observed request costs a few atomic adds and no allocation.
type coordinatorMetrics struct {
	requestsVec, unavailableVec, timeoutsVec *prometheus.CounterVec
	latencyVec                               *prometheus.HistogramVec
	tableRequestsVec, rateLimitedVec         *prometheus.CounterVec
	repairsVec, repairedVec, disagreeVec     *prometheus.CounterVec
	wouldRejectVec, speculativeVec           *prometheus.CounterVec

	requests    [numOps][numConsistencies][numResults]prometheus.Counter
	unavailable [numOps][numConsistencies]prometheus.Counter
	timeouts    [numOps][numConsistencies]prometheus.Counter
	latency     [numOps][numConsistencies]prometheus.Observer

	tables   atomic.Pointer[map[tableName]*tableMetrics] // copy-on-write
	tablesMu sync.Mutex                                  // serialises writers

	// isTable reports whether a table exists in the node's current schema; nil means every
	// table does. A table's children are created only while it exists, so a request still in
	// flight when its table is dropped does not bring back the series forgetTable removed.
	isTable func(keyspace, table string) bool
}

type tableName struct{ keyspace, table string }

// tableMetrics are the children of one table. All of them exist from the table's first
// request on, so that rates and alerts over rare events (repairs, disagreements) see zeros
// rather than missing series.
type tableMetrics struct {
	requests    [2][numResults]prometheus.Counter // by limited op (read, write) and result
	rateLimited [2][2]prometheus.Counter          // by limited op and rejecter
	repairs     [4]prometheus.Counter             // by repair result
	repaired    prometheus.Counter
	disagree    [2]prometheus.Counter // by limited op
	wouldReject [2]prometheus.Counter // by limited op
	speculative prometheus.Counter
}

func newCoordinatorMetrics() *coordinatorMetrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "kvnode", Subsystem: "coordinator", Name: name, Help: help}, labels)
	}
	m := &coordinatorMetrics{
		requestsVec: counter("requests_total",
			"Statements this node coordinated, by op (read, write, schema, other), consistency level (none for schema and other) and result.",
			"op", "consistency", "result"),
		unavailableVec: counter("unavailable_total",
			"Reads and writes that failed at once because fewer replicas were live than the consistency level needs (the requests_total result unavailable).",
			"op", "consistency"),
		timeoutsVec: counter("timeouts_total",
			"Reads and writes whose replicas did not answer before the timeout (the requests_total result timeout).",
			"op", "consistency"),
		latencyVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kvnode", Subsystem: "coordinator", Name: "request_duration_seconds",
			Help:    "Time to execute statements that succeeded, by op and consistency level, from receipt to answer on this coordinator.",
			Buckets: coordinatorLatencyBuckets,
		}, []string{"op", "consistency"}),
		tableRequestsVec: counter("table_requests_total",
			"Reads and writes this node coordinated, by table, op and result: result ok are the accepted operations, rate_limited the rejected ones.",
			"keyspace", "table", "op", "result"),
		rateLimitedVec: counter("rate_limited_total",
			"Reads and writes rejected by a per-partition rate limit, by table, op and who rejected: coordinator (this node, a replica of the partition, decided alone) or replica (the enforcing replicas' rejections made the consistency level unreachable).",
			"keyspace", "table", "op", "rejected_by"),
		repairsVec: counter("read_repairs_total",
			"Read repairs: reads at QUORUM or ALL that found stale replicas and wrote the newest data back to them, by table and result (ok; additional: a stale replica refused and the result went to replicas the read had not asked instead; timeout; failed).",
			"keyspace", "table", "result"),
		repairedVec: counter("read_repaired_replicas_total",
			"Replicas written to by read repairs, by table.",
			"keyspace", "table"),
		speculativeVec: counter("speculative_reads_total",
			"Speculative reads: replicas a read at ONE or QUORUM asked beyond the ones its level needs because the table's speculative_retry delay passed without their answers (or it is 'ALWAYS'), by table.",
			"keyspace", "table"),
		disagreeVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kvnode", Subsystem: "limiter", Name: "replica_disagreements_total",
			Help: "Operations this node coordinated on the replicas-decide path whose enforcing replicas disagreed: some admitted, some rejected (their counters for the partition differ).",
		}, []string{"keyspace", "table", "op"}),
		wouldRejectVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kvnode", Subsystem: "limiter", Name: "would_reject_total",
			Help: "Operations this node coordinated that a per_partition_rate_limit in shadow mode ('mode': 'shadow') would have rejected in enforce mode, by table and op: they were counted and decided as in enforce mode, admitted, and the client got a warning. Each operation counts once, on its coordinator, when enforce mode would have rejected it: its own check said so, or the enforcing replicas' would-be rejections would have put the consistency level out of reach (replicas that disagree count as enforce mode counts them).",
		}, []string{"keyspace", "table", "op"}),
	}
	for op := range numOps {
		for cl := range numConsistencies {
			if (op == opRead || op == opWrite) != (cl != numConsistencies-1) {
				continue // reads and writes have a level; schema and other statements have none
			}
			for r := range numResults {
				m.requests[op][cl][r] = m.requestsVec.WithLabelValues(opNames[op], consistencyNames[cl], resultNames[r])
			}
			m.latency[op][cl] = m.latencyVec.WithLabelValues(opNames[op], consistencyNames[cl])
			if op == opRead || op == opWrite {
				m.unavailable[op][cl] = m.unavailableVec.WithLabelValues(opNames[op], consistencyNames[cl])
				m.timeouts[op][cl] = m.timeoutsVec.WithLabelValues(opNames[op], consistencyNames[cl])
			}
		}
	}
	return m
}

// index returns the position of s in names, or the last position when s is not there.
func index(names []string, s string) int {
	for i, n := range names {
		if n == s {
			return i
		}
	}
	return len(names) - 1
}

// OnRequest implements shell.Observer.
func (m *coordinatorMetrics) OnRequest(keyspace, table, op, cl, result string, d time.Duration) {
	o, r := index(opNames, op), index(resultNames, result)
	c := numConsistencies - 1 // none: schema and other statements have no level
	if o == opRead || o == opWrite {
		c = min(index(consistencyNames, cl), numConsistencies-2) // an unknown level counts as ALL
	}
	m.requests[o][c][r].Inc()
	if r == 0 {
		m.latency[o][c].Observe(d.Seconds())
	}
	if o != opRead && o != opWrite {
		return
	}
	switch r {
	case resultUnavailable:
		m.unavailable[o][c].Inc()
	case resultTimeout:
		m.timeouts[o][c].Inc()
	}
	if table != "" {
		m.table(keyspace, table).requests[o][r].Inc()
	}
}

// OnRateLimited implements shell.Observer.
func (m *coordinatorMetrics) OnRateLimited(keyspace, table, op, rejectedBy string) {
	by := 1 // replica: the Observer's "replicas"
	if rejectedBy == "coordinator" {
		by = 0
	}
	m.table(keyspace, table).rateLimited[index(limitedOpNames, op)][by].Inc()
}

// OnReadRepair implements shell.Observer.
func (m *coordinatorMetrics) OnReadRepair(keyspace, table string, replicas int, result string) {
	t := m.table(keyspace, table)
	t.repairs[index(repairResults, result)].Inc()
	t.repaired.Add(float64(replicas))
}

// OnWouldReject implements shell.Observer.
func (m *coordinatorMetrics) OnWouldReject(keyspace, table, op string) {
	m.table(keyspace, table).wouldReject[index(limitedOpNames, op)].Inc()
}

// OnSpeculativeReads implements shell.Observer.
func (m *coordinatorMetrics) OnSpeculativeReads(keyspace, table string, reads int) {
	m.table(keyspace, table).speculative.Add(float64(reads))
}

// OnReplicasDisagree implements shell.Observer.
func (m *coordinatorMetrics) OnReplicasDisagree(keyspace, table, op string) {
	m.table(keyspace, table).disagree[index(limitedOpNames, op)].Inc()
}

// table returns the children of a table, creating them on its first request. Tables are created
// by a DBA, so their number, and the series they add, stay small.
func (m *coordinatorMetrics) table(keyspace, table string) *tableMetrics {
	k := tableName{keyspace, table}
	if cur := m.tables.Load(); cur != nil {
		if t, ok := (*cur)[k]; ok {
			return t
		}
	}
	m.tablesMu.Lock()
	defer m.tablesMu.Unlock()
	cur := m.tables.Load()
	if cur != nil {
		if t, ok := (*cur)[k]; ok {
			return t
		}
	}
	if m.isTable != nil && !m.isTable(keyspace, table) {
		return detachedTableMetrics()
	}
	t := &tableMetrics{}
	for o, op := range limitedOpNames {
		for r, res := range resultNames {
			t.requests[o][r] = m.tableRequestsVec.WithLabelValues(keyspace, table, op, res)
		}
		for by, name := range rejecterNames {
			t.rateLimited[o][by] = m.rateLimitedVec.WithLabelValues(keyspace, table, op, name)
		}
		t.disagree[o] = m.disagreeVec.WithLabelValues(keyspace, table, op)
		t.wouldReject[o] = m.wouldRejectVec.WithLabelValues(keyspace, table, op)
	}
	for r, res := range repairResults {
		t.repairs[r] = m.repairsVec.WithLabelValues(keyspace, table, res)
	}
	t.repaired = m.repairedVec.WithLabelValues(keyspace, table)
	t.speculative = m.speculativeVec.WithLabelValues(keyspace, table)
	var next map[tableName]*tableMetrics
	if cur == nil {
		next = make(map[tableName]*tableMetrics, 1)
	} else {
		next = make(map[tableName]*tableMetrics, len(*cur)+1)
		for k, v := range *cur {
			next[k] = v
		}
	}
	next[k] = t
	m.tables.Store(&next)
	return t
}

// detachedTableMetrics returns children that count into no exported series: for a request that
// reports on a table dropped since it began.
func detachedTableMetrics() *tableMetrics {
	c := func() prometheus.Counter { return prometheus.NewCounter(prometheus.CounterOpts{Name: "detached"}) }
	t := &tableMetrics{repaired: c(), speculative: c()}
	for o := range t.requests {
		for r := range t.requests[o] {
			t.requests[o][r] = c()
		}
		for by := range t.rateLimited[o] {
			t.rateLimited[o][by] = c()
		}
		t.disagree[o] = c()
		t.wouldReject[o] = c()
	}
	for r := range t.repairs {
		t.repairs[r] = c()
	}
	return t
}

// forgetTable deletes the series of table keyspace.table, once it is dropped: a table created
// again under the name starts from zero.
func (m *coordinatorMetrics) forgetTable(keyspace, table string) {
	m.tablesMu.Lock()
	defer m.tablesMu.Unlock()
	labels := prometheus.Labels{"keyspace": keyspace, "table": table}
	for _, v := range []*prometheus.CounterVec{m.tableRequestsVec, m.rateLimitedVec, m.repairsVec, m.repairedVec, m.disagreeVec, m.wouldRejectVec, m.speculativeVec} {
		v.DeletePartialMatch(labels)
	}
	cur := m.tables.Load()
	if cur == nil {
		return
	}
	k := tableName{keyspace, table}
	if _, ok := (*cur)[k]; !ok {
		return
	}
	next := make(map[tableName]*tableMetrics, len(*cur))
	for n, t := range *cur {
		if n != k {
			next[n] = t
		}
	}
	m.tables.Store(&next)
}

// Describe implements prometheus.Collector.
func (m *coordinatorMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *coordinatorMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

func (m *coordinatorMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requestsVec, m.unavailableVec, m.timeoutsVec, m.latencyVec,
		m.tableRequestsVec, m.rateLimitedVec, m.repairsVec, m.repairedVec, m.disagreeVec, m.wouldRejectVec, m.speculativeVec}
}

var _ shell.Observer = (*coordinatorMetrics)(nil)
