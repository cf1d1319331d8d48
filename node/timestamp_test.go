package node_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
)

// metricSum returns the sum of every sample of the counter or gauge name in g.
func metricSum(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			} else {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// TestFarFutureTimestampRefused is issue 13's repro: USING TIMESTAMP 9223372036854775807 used to
// store a row that no DELETE could remove. The coordinator now refuses it, and every timestamp
// beyond its bound, before any replica sees it.
func TestFarFutureTimestampRefused(t *testing.T) {
	i := 0
	tc := startClusterWith(t, 2, func(cfg *node.Config) {
		if i == 1 {
			cfg.Coordinator.MaxTimestampAhead = time.Minute
		}
		i++
	})
	c0, c1 := tc.client(0), tc.client(1)
	exec(t, c0, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	exec(t, c0, client.One, "CREATE TABLE ks.kv (k text PRIMARY KEY, v text)")

	replicaRequests := func() float64 {
		return metricSum(t, tc.nodes[0].Registry(), "kvnode_replica_requests_total") + metricSum(t, tc.nodes[1].Registry(), "kvnode_replica_requests_total")
	}
	refused := func(c *client.Client, stmt, want string) {
		t.Helper()
		before := replicaRequests()
		_, err := c.Execute(context.Background(), client.All, stmt)
		var ie *client.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(ie.Message, want) {
			t.Errorf("%s: %v, want an invalid-statement error containing %q", stmt, err, want)
		}
		if after := replicaRequests(); after != before {
			t.Errorf("%s was refused after %v replica requests, want none", stmt, after-before)
		}
	}
	for _, stmt := range []string{
		"INSERT INTO ks.kv (k, v) VALUES ('a', 'forever') USING TIMESTAMP 9223372036854775807",
		"UPDATE ks.kv USING TIMESTAMP 9223372036854775807 SET v = 'forever' WHERE k = 'a'",
		"DELETE FROM ks.kv USING TIMESTAMP 9223372036854775807 WHERE k = 'a'",
	} {
		refused(c0, stmt, "USING TIMESTAMP 9223372036854775807 is ")
		refused(c0, stmt, " years ahead of this coordinator's clock; the limit is 1h0m0s (max_timestamp_ahead;")
	}
	_, rows, err := c0.Query(context.Background(), client.All, "SELECT v FROM ks.kv WHERE k = 'a'")
	if err != nil || len(rows) != 0 {
		t.Errorf("after the refused writes, SELECT = %v, %v; want no row", rows, err)
	}

	// Within the bound the timestamp is taken, and the row still yields to a later DELETE.
	soon := time.Now().Add(10 * time.Second).UnixMicro()
	exec(t, c0, client.All, fmt.Sprintf("INSERT INTO ks.kv (k, v) VALUES ('b', 'soon') USING TIMESTAMP %d", soon))
	exec(t, c0, client.All, fmt.Sprintf("DELETE FROM ks.kv USING TIMESTAMP %d WHERE k = 'b'", soon+1))
	if _, rows, err := c0.Query(context.Background(), client.All, "SELECT v FROM ks.kv WHERE k = 'b'"); err != nil || len(rows) != 0 {
		t.Errorf("after DELETE at a later timestamp, SELECT = %v, %v; want no row", rows, err)
	}

	// Node 1 was started with a one-minute bound: a timestamp half an hour ahead passes node 0
	// and is refused by node 1, naming its own bound.
	half := time.Now().Add(30 * time.Minute).UnixMicro()
	refused(c1, fmt.Sprintf("INSERT INTO ks.kv (k, v) VALUES ('c', 'x') USING TIMESTAMP %d", half), "the limit is 1m0s (max_timestamp_ahead;")
	exec(t, c0, client.All, fmt.Sprintf("INSERT INTO ks.kv (k, v) VALUES ('c', 'x') USING TIMESTAMP %d", half))
}
