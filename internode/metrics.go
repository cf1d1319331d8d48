package internode

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// senderStats counts what a Sender sent across data centers, once CountCrossDataCenter gave it
// the nodes' data centers.
type senderStats struct {
	// dcOf returns a node's data center ("" when unknown); nil until CountCrossDataCenter.
	dcOf atomic.Pointer[func(NodeID) string]
	// crossDC counts, by kind index, the requests sent to a node of another data center.
	crossDC []atomic.Uint64
	// relayed counts the forwarded writes' targets this node sent a write to as forwarder
	// (RelayMutations), itself not included.
	relayed atomic.Uint64
}

// CountCrossDataCenter starts counting the requests s sends to nodes of another data center than
// its own, as dc places them (dc returns "" for a node it does not know: not counted). A node
// calls it once membership knows the data centers; dc must be safe for concurrent use and cheap.
func (s *Sender) CountCrossDataCenter(dc func(NodeID) string) {
	s.stats.dcOf.Store(&dc)
}

// count counts a request of kind i to node to when to is in another data center.
func (s *Sender) count(i int, to NodeID) {
	p := s.stats.dcOf.Load()
	if p == nil {
		return
	}
	dc := *p
	if theirs := dc(to); theirs != "" && theirs != dc(s.self) {
		s.stats.crossDC[i].Add(1)
	}
}

// CrossDataCenter returns how many requests of the kind named (the Request oneof's field name,
// as "mutate" or "forward_mutate") s sent to nodes of another data center.
func (s *Sender) CrossDataCenter(kind string) uint64 {
	for i := range s.kinds.req {
		if s.kinds.name(i) == kind {
			return s.stats.crossDC[i].Load()
		}
	}
	return 0
}

// Collector returns the Prometheus collector of s's counts:
// kvnode_internode_cross_dc_requests_total{kind} and
// kvnode_internode_forwarded_mutations_total.
func (s *Sender) Collector() prometheus.Collector {
	return senderCollector{s: s, crossDC: prometheus.NewDesc("kvnode_internode_cross_dc_requests_total",
		"Internode requests this node sent to nodes of another data center, by kind (a write's copies for a remote data center go as one forward_mutate).",
		[]string{"kind"}, nil),
		relayed: prometheus.NewDesc("kvnode_internode_forwarded_mutations_total",
			"Writes this node sent on to the other replicas of its data center as the forwarder of a coordinator in another data center (one per replica).",
			nil, nil)}
}

type senderCollector struct {
	s                *Sender
	crossDC, relayed *prometheus.Desc
}

func (c senderCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.crossDC
	ch <- c.relayed
}

func (c senderCollector) Collect(ch chan<- prometheus.Metric) {
	for i := range c.s.stats.crossDC {
		if n := c.s.stats.crossDC[i].Load(); n > 0 {
			ch <- prometheus.MustNewConstMetric(c.crossDC, prometheus.CounterValue, float64(n), c.s.kinds.name(i))
		}
	}
	ch <- prometheus.MustNewConstMetric(c.relayed, prometheus.CounterValue, float64(c.s.stats.relayed.Load()))
}
