package shell

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/schema"
)

// learner keeps the partitions this coordinator learned are hot from the rejections of their
// replicas, when it is not one of them (docs/architecture.md, the limiter, issue 16): a small partitionlimit.Table of
// learned copies of the replicas' counters, which the core's Request.Learn fills and
// Params.Learned consults. While a partition's copy has not decayed to zero, its limited
// operations are checked here first with the replicas' own rule and draw; a rejection there
// contacts no replica, and account propagation counts it on every replica, so their counters
// still measure the whole load. The copy only takes the replicas' counts (never more) and this
// coordinator's own operations (which the replicas count too), and runs
// coordinator.LearnedLead ahead of this node's clock, so it stays at or under the replicas'
// counters and rejects only what they would reject. A partition that cools down decays out of
// the table like any counter and is forwarded again.
type learner struct {
	table *partitionlimit.Table

	mu     sync.RWMutex
	states map[labelKey]*learnedState
	next   uint32 // the next label; guarded by mu

	rejections, partitions *prometheus.Desc
	now                    func() time.Time
}

// labelKey names a (table, op) pair of the learned table.
type labelKey struct {
	table schema.TableID
	op    coordinator.Op
}

// learnedState is what the learner keeps per (table, op): the learned table's label and the
// rejections made on it, for metrics.
type learnedState struct {
	label           uint32
	keyspace, table string
	op              coordinator.Op
	rejected        atomic.Uint64
}

func newLearner(now func() time.Time) (*learner, error) {
	t, err := partitionlimit.New(partitionlimit.Options{Capacity: coordinator.DefaultLearnedCapacity, LearnedCopies: true})
	if err != nil {
		return nil, err
	}
	return &learner{
		table:  t,
		states: make(map[labelKey]*learnedState),
		now:    now,
		rejections: prometheus.NewDesc("kvnode_coordinator_learned_rejections_total",
			"Operations this node rejected as a coordinator that is not a replica of their partition, on the counter it learned from the replicas' earlier rejections (no replica request was sent; propagation counts them on the replicas), by table and op.",
			[]string{"keyspace", "table", "op"}, nil),
		partitions: prometheus.NewDesc("kvnode_coordinator_learned_partitions",
			"Partitions (token, table, op) this coordinator currently knows are hot from their replicas' rejections and checks itself.",
			nil, nil),
	}, nil
}

// state returns the state of (t, op), creating it on first use, and false once the labels up
// to partitionlimit.MaxLabel are all handed out (2^30 pairs since the node started): the
// learner then learns nothing of the pair, whose operations go to the replicas, rather than
// give two pairs one counter.
func (l *learner) state(t *schema.Table, op coordinator.Op) (*learnedState, bool) {
	k := labelKey{t.ID, op}
	l.mu.RLock()
	st, ok := l.states[k]
	l.mu.RUnlock()
	if ok {
		return st, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st, ok := l.states[k]; ok {
		return st, true
	}
	if l.next >= partitionlimit.MaxLabel {
		return nil, false
	}
	l.next++
	st = &learnedState{label: l.next, keyspace: t.Keyspace, table: t.Name, op: op}
	l.states[k] = st
	return st, true
}

// lookup returns the state of (table, op) if the learner has one.
func (l *learner) lookup(table schema.TableID, op coordinator.Op) (*learnedState, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	st, ok := l.states[labelKey{table, op}]
	return st, ok
}

// hot reports whether the partition with token of table t holds a learned copy for op at the
// operation's stamp.
func (l *learner) hot(t *schema.Table, op coordinator.Op, token int64, stamp time.Time) bool {
	st, ok := l.state(t, op)
	return ok && l.table.Peek(token, st.label, coordinator.LearnedTime(stamp)) > 0
}

// decide accounts an operation stamped stamp on the partition's learned copy and decides it
// with the replicas' rule and the operation's draw.
func (l *learner) decide(key partitionKey, op coordinator.Op, limit uint32, draw float64, stamp time.Time) partitionlimit.Decision {
	st, ok := l.lookup(key.table, op)
	if !ok {
		return partitionlimit.Decision{Admitted: true}
	}
	d := l.table.Decide(key.token, st.label, limit, draw, coordinator.LearnedTime(stamp))
	if !d.Admitted {
		st.rejected.Add(1)
	}
	return d
}

// learn keeps what a finished request taught about its partition.
func (l *learner) learn(key partitionKey, op coordinator.Op, what coordinator.Learned) {
	st, ok := l.lookup(key.table, op)
	if !ok {
		return
	}
	count, resid, at := what.Copy()
	l.table.Learn(key.token, st.label, count, what.Born, resid, at)
}

// appendShadowWarning appends to warnings the client's warning for an operation on table t
// that the limit in shadow mode would have rejected (o is a Success with WouldReject).
func appendShadowWarning(warnings []string, o coordinator.Outcome, t *schema.Table) []string {
	if s, ok := o.(coordinator.Success); ok && s.WouldReject {
		warnings = append(warnings, s.Warning(t.Keyspace, t.Name))
	}
	return warnings
}

// Describe implements prometheus.Collector.
func (l *learner) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.rejections
	ch <- l.partitions
}

// Collect implements prometheus.Collector.
func (l *learner) Collect(ch chan<- prometheus.Metric) {
	type name struct{ keyspace, table, op string }
	sums := map[name]uint64{}
	l.mu.RLock()
	for _, st := range l.states {
		sums[name{st.keyspace, st.table, st.op.String()}] += st.rejected.Load()
	}
	l.mu.RUnlock()
	for n, v := range sums {
		ch <- prometheus.MustNewConstMetric(l.rejections, prometheus.CounterValue, float64(v), n.keyspace, n.table, n.op)
	}
	st := l.table.Stats(coordinator.LearnedTime(l.now()))
	ch <- prometheus.MustNewConstMetric(l.partitions, prometheus.GaugeValue, float64(st.Entries))
}

// Collector returns the executor's own metrics, for the node to register: the rejections it
// made on partitions it learned are hot from their replicas, and how many it knows now. It is
// nil when account propagation is off (Config.Deltas), since learning needs it.
func (e *Executor) Collector() prometheus.Collector {
	if e.learn == nil {
		return nil
	}
	return e.learn
}

// learnedHot sets p.Learned, and stamps p, when the local node is not a replica of the
// partition with token of table t and has learned that the partition is hot for p.Op. A table
// whose limit is in shadow mode is never checked here: its replicas decide, admit, and say
// what they would have rejected (a learned copy from before an ALTER to shadow mode would
// otherwise keep rejecting).
func (e *Executor) learnedHot(p *coordinator.Params, t *schema.Table, token int64) {
	if e.learn == nil || p.Limit == 0 || p.Exempt || t.RateLimit.Mode == schema.Shadow {
		return
	}
	for _, r := range p.Replicas {
		if r.ID == e.localID {
			return
		}
	}
	if p.Stamp.IsZero() {
		p.Stamp = e.now()
	}
	p.Learned = e.learn.hot(t, p.Op, token, p.Stamp)
}
