package cluster

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// collector exports the node's view of the cluster, read at scrape time.
type collector struct {
	c                                  *Cluster
	live, down, agreement, disagreeing *prometheus.Desc
	memberUp, memberFormat             *prometheus.Desc
	clockOffset, clockSkew             *prometheus.Desc
	gossipJunk                         *prometheus.Desc
}

// Collector returns the Prometheus collector of c's view of the cluster: its live and down
// members, schema agreement, members' data formats, clock offsets and junk gossip, read at
// scrape time.
func (c *Cluster) Collector() prometheus.Collector {
	return &collector{
		c: c,
		live: prometheus.NewDesc("kvnode_cluster_live_members",
			"Ring members this node's failure detector considers up, itself included.", nil, nil),
		down: prometheus.NewDesc("kvnode_cluster_down_members",
			"Ring members this node's failure detector considers down. A down member still owns its token ranges: its replicas are missing until it returns or is removed.", nil, nil),
		agreement: prometheus.NewDesc("kvnode_cluster_schema_agreement",
			"1 when every live member gossips the same schema digest as this node, 0 otherwise.", nil, nil),
		disagreeing: prometheus.NewDesc("kvnode_cluster_schema_disagreeing_members",
			"Live members whose schema digest differs from this node's.", nil, nil),
		memberUp: prometheus.NewDesc("kvnode_cluster_member_up",
			"One series per ring member, labelled with its node id: 1 while this node's failure detector considers it up (this node included), 0 while down. Tools and tests read membership from it.",
			[]string{"member"}, nil),
		memberFormat: prometheus.NewDesc("kvnode_cluster_member_data_format",
			"One series per ring member, labelled with its node id: the data format version it gossips (this node's included), 0 while it reports none (a release before data format versions, which is format 1, or a member not heard from since this node started). Writes with a TTL are refused while any member is below 2.",
			[]string{"member"}, nil),
		clockOffset: prometheus.NewDesc("kvnode_cluster_clock_offset_seconds",
			"How far a live peer's clock is ahead of this node's (negative: behind), measured through gossip probes: the median of the last 8 samples, each within about half a probe round trip. Peers that are down or have left have no series.",
			[]string{"peer"}, nil),
		clockSkew: prometheus.NewDesc("kvnode_cluster_clock_skew_seconds",
			"The spread of the live nodes' clocks as this node measures them: the largest kvnode_cluster_clock_offset_seconds minus the smallest, this node counting as 0. Last-write-wins drops writes coordinated by a node behind by up to this much.",
			nil, nil),
		gossipJunk: prometheus.NewDesc("kvnode_gossip_junk_messages_total",
			"Inbound UDP packets and TCP streams on the gossip port that were not this cluster's gossip and were dropped: undecodable, another cluster's name, unencrypted or under a key this node does not hold, a bad checksum. Logged at WARN at most once a minute.",
			nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.live
	ch <- c.down
	ch <- c.agreement
	ch <- c.disagreeing
	ch <- c.memberUp
	ch <- c.memberFormat
	ch <- c.clockOffset
	ch <- c.clockSkew
	ch <- c.gossipJunk
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	var live, down int
	for _, m := range c.c.Members() {
		up := 0.0
		if m.Live {
			live++
			up = 1
		} else {
			down++
		}
		ch <- prometheus.MustNewConstMetric(c.memberUp, prometheus.GaugeValue, up, string(m.ID))
		ch <- prometheus.MustNewConstMetric(c.memberFormat, prometheus.GaugeValue, float64(m.DataFormat), string(m.ID))
	}
	disagreeing := len(c.c.SchemaDisagreement())
	agreement := 0.0
	if disagreeing == 0 {
		agreement = 1
	}
	ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(live))
	ch <- prometheus.MustNewConstMetric(c.down, prometheus.GaugeValue, float64(down))
	ch <- prometheus.MustNewConstMetric(c.agreement, prometheus.GaugeValue, agreement)
	ch <- prometheus.MustNewConstMetric(c.disagreeing, prometheus.GaugeValue, float64(disagreeing))
	var lo, hi time.Duration // this node's own offset is 0
	for _, o := range c.c.ClockOffsets() {
		lo, hi = min(lo, o.Offset), max(hi, o.Offset)
		ch <- prometheus.MustNewConstMetric(c.clockOffset, prometheus.GaugeValue, o.Offset.Seconds(), string(o.ID))
	}
	ch <- prometheus.MustNewConstMetric(c.clockSkew, prometheus.GaugeValue, (hi - lo).Seconds())
	ch <- prometheus.MustNewConstMetric(c.gossipJunk, prometheus.CounterValue, float64(c.c.JunkMessages()))
}
