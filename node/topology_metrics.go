package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/cluster"
)

// topologyCollector exports streaming progress and the node's own state.
type topologyCollector struct {
	t                              *topology
	entriesSent, bytesSent         *prometheus.Desc
	entriesReceived, bytesReceived *prometheus.Desc
	state                          *prometheus.Desc
	cleanupRanges                  *prometheus.Desc
}

func newTopologyCollector(t *topology) *topologyCollector {
	return &topologyCollector{
		t: t,
		entriesSent: prometheus.NewDesc("kvnode_stream_entries_sent_total",
			"Storage entries (cells, markers, tombstones) this node streamed to nodes that bootstrap or take over ranges.", nil, nil),
		bytesSent: prometheus.NewDesc("kvnode_stream_bytes_sent_total",
			"Bytes of storage entries this node streamed to other nodes.", nil, nil),
		entriesReceived: prometheus.NewDesc("kvnode_stream_entries_received_total",
			"Storage entries this node received by streaming (bootstrap, decommission or removenode of another node).", nil, nil),
		bytesReceived: prometheus.NewDesc("kvnode_stream_bytes_received_total",
			"Bytes of storage entries this node received by streaming.", nil, nil),
		cleanupRanges: prometheus.NewDesc("kvnode_cleanup_ranges_deleted_total",
			"Token ranges of a table whose data this node deleted because it no longer replicates them (cleanup after a topology change, or kvnode cleanup).", nil, nil),
		state: prometheus.NewDesc("kvnode_node_state",
			"1 for this node's state in the ring (joining, normal, leaving or left), 0 for the others.", []string{"state"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *topologyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.entriesSent, c.bytesSent, c.entriesReceived, c.bytesReceived, c.cleanupRanges, c.state} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *topologyCollector) Collect(ch chan<- prometheus.Metric) {
	t := c.t
	ch <- prometheus.MustNewConstMetric(c.entriesSent, prometheus.CounterValue, float64(t.entriesSent.Load()))
	ch <- prometheus.MustNewConstMetric(c.bytesSent, prometheus.CounterValue, float64(t.bytesSent.Load()))
	ch <- prometheus.MustNewConstMetric(c.entriesReceived, prometheus.CounterValue, float64(t.entriesReceived.Load()))
	ch <- prometheus.MustNewConstMetric(c.bytesReceived, prometheus.CounterValue, float64(t.bytesReceived.Load()))
	ch <- prometheus.MustNewConstMetric(c.cleanupRanges, prometheus.CounterValue, float64(t.cleanupRanges.Load()))
	cur := t.n.cluster.State()
	for st := cluster.StateNormal; st <= cluster.StateLeft; st++ {
		v := 0.0
		if st == cur {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, v, st.String())
	}
}
