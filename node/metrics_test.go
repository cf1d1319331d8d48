package node_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/replica"
)

// metricValue returns the value of the counter or gauge name in g whose labels include the
// given name, value pairs, or 0 when there is none (a child never touched is not exported).
func metricValue(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabels(m, labels) {
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == labels[i] && l.GetValue() == labels[i+1]
		}) {
			return false
		}
	}
	return true
}

// limitedCluster is a 3-node cluster with a frozen clock (counters never decay, so every count
// is exact) and two tables limited to 20 writes/s: rf3.limited, replicated by every node (the
// coordinator decides), and rf1.limited, replicated by one node per partition.
func limitedCluster(t *testing.T) (*testCluster, time.Time) {
	t.Helper()
	frozen := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	tc := startClusterWith(t, 3, func(c *node.Config) {
		c.Testing = &node.TestingKnobs{Now: func() time.Time { return frozen }}
		c.Listen.MetricsAddr = "127.0.0.1:0"
		c.Coordinator.Learning = true
	})
	c := tc.client(0)
	for _, stmt := range []string{
		"CREATE KEYSPACE rf3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE rf3.limited (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 20}",
		"CREATE KEYSPACE rf1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE rf1.limited (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 20}",
	} {
		exec(t, c, client.One, stmt)
	}
	return tc, frozen
}

// keyNotOn returns a partition key of the form prefix-i that node i of tc does not replicate at
// RF 1, and the index of the node that does.
func keyNotOn(t *testing.T, tc *testCluster, i int, prefix string) (string, int) {
	t.Helper()
	ring := tc.nodes[i].Cluster().Ring()
	for j := range 1000 {
		key := fmt.Sprintf("%s-%d", prefix, j)
		owner := ring.Replicas(partitioner.Token([]byte(key)), 1)[0]
		if owner != cluster.NodeID(tc.nodes[i].ID()) {
			for k, nd := range tc.nodes {
				if cluster.NodeID(nd.ID()) == owner {
					return key, k
				}
			}
		}
	}
	t.Fatalf("no key among 1000 avoids node %d", i)
	return "", 0
}

// TestMetricsCountRejectionsOnBothLimiterPaths hammers a partition through node 0 on each
// limiter path and checks that the coordinator's and the limiter's counters moved by exactly
// the rejections the client saw, under the right labels, on the right nodes.
func TestMetricsCountRejectionsOnBothLimiterPaths(t *testing.T) {
	tc, _ := limitedCluster(t)
	c := tc.client(0)
	reg0 := tc.nodes[0].Registry()

	// Coordinator path: node 0 replicates every rf3 partition and decides alone.
	ok, byCoord, byRepl := hammerTable(t, c, "rf3.limited", "hot", 100)
	if byCoord == 0 || byRepl != 0 {
		t.Fatalf("100 writes to rf3.limited through node 0: %d ok, %d rejected by coordinator, %d by replicas; want rejections by the coordinator only", ok, byCoord, byRepl)
	}
	rf3 := []string{"keyspace", "rf3", "table", "limited", "op", "write"}
	checks := []struct {
		what   string
		got    float64
		want   int
		reason string
	}{
		{`node 0 kvnode_coordinator_rate_limited_total{rejected_by="coordinator"}`,
			metricValue(t, reg0, "kvnode_coordinator_rate_limited_total", append(rf3, "rejected_by", "coordinator")...), byCoord, "the client's coordinator rejections"},
		{`node 0 kvnode_limiter_rejections_total{rejected_by="coordinator"}`,
			metricValue(t, reg0, "kvnode_limiter_rejections_total", append(rf3, "rejected_by", "coordinator")...), byCoord, "its local check rejected them"},
		{`node 0 kvnode_limiter_rejections_total{rejected_by="replica"}`,
			metricValue(t, reg0, "kvnode_limiter_rejections_total", append(rf3, "rejected_by", "replica")...), 0, "no replica enforced"},
		{`node 0 kvnode_coordinator_table_requests_total{result="ok"}`,
			metricValue(t, reg0, "kvnode_coordinator_table_requests_total", append(rf3, "result", "ok")...), ok, "the accepted writes"},
		{`node 0 kvnode_coordinator_table_requests_total{result="rate_limited"}`,
			metricValue(t, reg0, "kvnode_coordinator_table_requests_total", append(rf3, "result", "rate_limited")...), byCoord, "every rejection"},
		{`node 0 kvnode_coordinator_requests_total{op="write",consistency="QUORUM",result="rate_limited"}`,
			metricValue(t, reg0, "kvnode_coordinator_requests_total", "op", "write", "consistency", "QUORUM", "result", "rate_limited"), byCoord, "every rejection"},
	}

	// Replicas path: node 0 does not replicate the key at RF 1; its owner enforces.
	key, owner := keyNotOn(t, tc, 0, "hot")
	// The owner rejects. (On the frozen clock its counter stays in its first second, from which
	// node 0 learns nothing: coordinator.Request.Learn.)
	ok1, byCoord1, byRepl1 := hammerTable(t, c, "rf1.limited", key, 100)
	if byRepl1 == 0 || byCoord1 != 0 {
		t.Fatalf("100 writes to rf1.limited %q through non-replica node 0: %d ok, %d rejected by coordinator, %d by replicas; want rejections by replicas only", key, ok1, byCoord1, byRepl1)
	}
	rf1Labels := []string{"keyspace", "rf1", "table", "limited", "op", "write"}
	poll.Must(t, 10*time.Second, "the owner's limiter counting all 100 writes (the learned rejections through propagation)", func() error {
		if got := metricValue(t, tc.nodes[owner].Registry(), "kvnode_limiter_operations_total", rf1Labels...); got != 100 {
			return fmt.Errorf("it counted %v", got)
		}
		return nil
	})
	rf1 := []string{"keyspace", "rf1", "table", "limited", "op", "write"}
	regOwner := tc.nodes[owner].Registry()
	checks = append(checks, []struct {
		what   string
		got    float64
		want   int
		reason string
	}{
		{`node 0 kvnode_coordinator_rate_limited_total{rejected_by="replica"}`,
			metricValue(t, reg0, "kvnode_coordinator_rate_limited_total", append(rf1, "rejected_by", "replica")...), byRepl1, "the client's replica rejections"},
		{`node 0 kvnode_coordinator_rate_limited_total{rejected_by="coordinator"}`,
			metricValue(t, reg0, "kvnode_coordinator_rate_limited_total", append(rf1, "rejected_by", "coordinator")...), byCoord1, "node 0 is no replica and learned nothing"},
		{`node 0 kvnode_coordinator_learned_rejections_total`,
			metricValue(t, reg0, "kvnode_coordinator_learned_rejections_total", rf1...), byCoord1, "every coordinator rejection was on the learned copy"},
		{fmt.Sprintf(`owner node %d kvnode_limiter_rejections_total{rejected_by="replica"}`, owner),
			metricValue(t, regOwner, "kvnode_limiter_rejections_total", append(rf1, "rejected_by", "replica")...), byRepl1, "the owner rejected each one"},
		{fmt.Sprintf("owner node %d kvnode_limiter_operations_total", owner),
			metricValue(t, regOwner, "kvnode_limiter_operations_total", rf1...), 100, "it counted every write"},
	}...)
	for _, c := range checks {
		if c.got != float64(c.want) {
			t.Errorf("%s = %v, want %d (%s)", c.what, c.got, c.want, c.reason)
		}
	}
	if n, err := testutil.GatherAndCount(reg0, "kvnode_limiter_replica_disagreements_total"); err != nil || n == 0 {
		t.Errorf("node 0 exports %d kvnode_limiter_replica_disagreements_total series (err %v), want the zeros of the tables it coordinated", n, err)
	}
	if v := metricValue(t, reg0, "kvnode_limiter_replica_disagreements_total", rf1...); v != 0 {
		t.Errorf("kvnode_limiter_replica_disagreements_total for rf1.limited = %v, want 0: one enforcing replica cannot disagree with itself", v)
	}
}

// hammerTable sends n writes to key of table through c at QUORUM and counts the outcomes.
func hammerTable(t *testing.T, c *client.Client, table, key string, n int) (ok, byCoordinator, byReplicas int) {
	t.Helper()
	return hammer(t, c, table, key, n, 20)
}

// TestMetricsEndpointServesValidExposition scrapes /metrics of a node that served traffic and
// parses the answer as the Prometheus text exposition format.
func TestMetricsEndpointServesValidExposition(t *testing.T) {
	tc, _ := limitedCluster(t)
	c := tc.client(0)
	hammerTable(t, c, "rf3.limited", "hot", 60)
	exec(t, c, client.Quorum, "SELECT v FROM rf3.limited WHERE k = 'hot'")

	resp, err := http.Get("http://" + tc.nodes[0].MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %s, want 200 OK:\n%s", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); expfmt.ResponseFormat(resp.Header).FormatType() != expfmt.TypeTextPlain {
		t.Fatalf("GET /metrics Content-Type %q, want the text exposition format", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics does not parse as the text exposition format: %v", err)
	}
	for _, name := range []string{
		"go_goroutines", "process_cpu_seconds_total",
		"kvnode_coordinator_requests_total", "kvnode_coordinator_request_duration_seconds",
		"kvnode_coordinator_unavailable_total", "kvnode_coordinator_timeouts_total",
		"kvnode_coordinator_table_requests_total", "kvnode_coordinator_rate_limited_total",
		"kvnode_coordinator_read_repairs_total", "kvnode_coordinator_read_repaired_replicas_total",
		"kvnode_coordinator_speculative_reads_total",
		"kvnode_limiter_operations_total", "kvnode_limiter_rejections_total",
		"kvnode_limiter_tracked_partitions", "kvnode_limiter_capacity_partitions",
		"kvnode_limiter_inserts_total", "kvnode_limiter_evictions_total",
		"kvnode_limiter_hot_partitions", "kvnode_limiter_replica_disagreements_total",
		"kvnode_replica_requests_total", "kvnode_replica_request_duration_seconds",
		"kvnode_storage_flushes_total", "kvnode_storage_compactions_total",
		"kvnode_storage_write_stalls_total", "kvnode_storage_write_stall_seconds_total",
		"kvnode_storage_disk_usage_bytes",
		"kvnode_cluster_live_members", "kvnode_cluster_down_members",
		"kvnode_cluster_schema_agreement", "kvnode_cluster_schema_disagreeing_members",
		"kvnode_cluster_member_up", "kvnode_cluster_member_data_format",
	} {
		if _, ok := families[name]; !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
	for name, mf := range families {
		if !strings.HasPrefix(name, "kvnode_") && !strings.HasPrefix(name, "go_") &&
			!strings.HasPrefix(name, "process_") && !strings.HasPrefix(name, "promhttp_") {
			t.Errorf("/metrics exports %s, outside the kvnode_ namespace and the Go, process and handler collectors", name)
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "key" || l.GetName() == "token" || l.GetName() == "partition" {
					t.Errorf("%s has a %s label: partition keys and tokens must never be labels", name, l.GetName())
				}
			}
		}
	}
	if v := families["kvnode_cluster_live_members"].GetMetric()[0].GetGauge().GetValue(); v != 3 {
		t.Errorf("kvnode_cluster_live_members = %v, want 3", v)
	}
	if v := families["kvnode_cluster_schema_agreement"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("kvnode_cluster_schema_agreement = %v, want 1 (the DDL waited for agreement)", v)
	}
}

// TestClusterMetricsSeeADownNode stops a node and checks the survivors' membership gauges.
func TestClusterMetricsSeeADownNode(t *testing.T) {
	tc := startCluster(t, 3)
	reg := tc.nodes[0].Registry()
	if live, down := metricValue(t, reg, "kvnode_cluster_live_members"), metricValue(t, reg, "kvnode_cluster_down_members"); live != 3 || down != 0 {
		t.Fatalf("with every node up: live %v, down %v; want 3 and 0", live, down)
	}
	for i := range 3 {
		if up, ok := gaugeOf(t, reg, "kvnode_cluster_member_up", "member", tc.nodeID(i)); !ok || up != 1 {
			t.Fatalf("with every node up: kvnode_cluster_member_up{member=node %d} = %v (present %v), want 1", i, up, ok)
		}
	}
	poll.Must(t, 10*time.Second, "node 0 sees every member at the release's data format in kvnode_cluster_member_data_format", func() error {
		for i := range 3 {
			if v, ok := gaugeOf(t, reg, "kvnode_cluster_member_data_format", "member", tc.nodeID(i)); !ok || v != replica.FormatVersion {
				return fmt.Errorf("kvnode_cluster_member_data_format{member=node %d} = %v (present %v), want %d", i, v, ok, replica.FormatVersion)
			}
		}
		return nil
	})
	tc.stop(2)
	poll.Must(t, 10*time.Second, "node 0 counts node 2 down in kvnode_cluster_down_members", poll.Bool(func() bool {
		return metricValue(t, reg, "kvnode_cluster_down_members") == 1 && metricValue(t, reg, "kvnode_cluster_live_members") == 2
	}))
	for i, want := range []float64{1, 1, 0} {
		if up, ok := gaugeOf(t, reg, "kvnode_cluster_member_up", "member", tc.nodeID(i)); !ok || up != want {
			t.Errorf("node 0 reports kvnode_cluster_member_up{member=node %d} = %v (present %v), want %v", i, up, ok, want)
		}
	}
}

// TestGossipJunkMetric: junk sent to a node's gossip port shows in
// kvnode_gossip_junk_messages_total.
func TestGossipJunkMetric(t *testing.T) {
	tc := startCluster(t, 1)
	reg := tc.nodes[0].Registry()
	if got := metricValue(t, reg, "kvnode_gossip_junk_messages_total"); got != 0 {
		t.Fatalf("kvnode_gossip_junk_messages_total = %v before any junk, want 0", got)
	}
	c, err := net.Dial("udp", tc.nodes[0].GossipAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 5 {
		fmt.Fprintf(c, "junk %d", i)
	}
	poll.Must(t, 10*time.Second, "5 junk packets counted", poll.Bool(func() bool {
		return metricValue(t, reg, "kvnode_gossip_junk_messages_total") == 5
	}))
}
