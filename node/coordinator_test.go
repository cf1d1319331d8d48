package node_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// These are the coordinator's acceptance tests: three real nodes in one process, real pebble,
// memberlist and gRPC on loopback, driven through the real client.

func TestQuorumReadsAndWritesAcrossNodesAndFailures(t *testing.T) {
	tc := startCluster(t, 3)
	clients := []*client.Client{tc.client(0), tc.client(1), tc.client(2)}
	exec(t, clients[0], client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, clients[0], client.One, "CREATE TABLE ks.kv (k text, c int, v text, PRIMARY KEY (k, c))")

	exec(t, clients[0], client.Quorum, "INSERT INTO ks.kv (k, c, v) VALUES ('a', 1, 'one')")
	for i, c := range clients {
		_, rows, err := c.Query(context.Background(), client.Quorum, "SELECT v FROM ks.kv WHERE k = 'a' AND c = 1")
		if err != nil {
			t.Fatalf("QUORUM read from node %d: %v", i, err)
		}
		if len(rows) != 1 || rows[0][0] != "one" {
			t.Errorf("QUORUM read from node %d = %v, want [[one]]", i, rows)
		}
	}

	tc.stop(2)
	// Coordinators pick replicas by what their failure detector says, so wait until both live
	// nodes know; until then a read may be sent to the closed node and fail.
	poll.Must(t, 10*time.Second, "nodes 0 and 1 see node 2 down", poll.Bool(func() bool {
		return !tc.nodes[0].Cluster().IsLive(cluster.NodeID(tc.nodeID(2))) && !tc.nodes[1].Cluster().IsLive(cluster.NodeID(tc.nodeID(2)))
	}))
	exec(t, clients[0], client.Quorum, "INSERT INTO ks.kv (k, c, v) VALUES ('a', 2, 'two')")
	_, rows, err := clients[1].Query(context.Background(), client.Quorum, "SELECT c, v FROM ks.kv WHERE k = 'a'")
	if err != nil {
		t.Fatalf("QUORUM read with one node down: %v", err)
	}
	if len(rows) != 2 {
		t.Errorf("QUORUM read with one node down returned %d rows, want 2: %v", len(rows), rows)
	}
	for _, stmt := range []string{"INSERT INTO ks.kv (k, c, v) VALUES ('a', 3, 'three')", "SELECT v FROM ks.kv WHERE k = 'a'"} {
		_, err := clients[0].Execute(context.Background(), client.All, stmt)
		var un *client.UnavailableError
		if !errors.As(err, &un) || un.Live != 2 || un.Required != 3 {
			t.Errorf("%s at ALL with one node down: err = %v, want UnavailableError live 2 required 3", stmt, err)
		}
	}

	tc.stop(1)
	poll.Must(t, 10*time.Second, "node 0 sees node 1 down", poll.Bool(func() bool {
		return !tc.nodes[0].Cluster().IsLive(cluster.NodeID(tc.nodeID(1)))
	}))
	_, err = clients[0].Execute(context.Background(), client.Quorum, "INSERT INTO ks.kv (k, c, v) VALUES ('a', 4, 'four')")
	var un *client.UnavailableError
	if !errors.As(err, &un) || un.Live != 1 || un.Required != 2 {
		t.Errorf("QUORUM write with two nodes down: err = %v, want UnavailableError live 1 required 2", err)
	}
}

func (tc *testCluster) nodeID(i int) string { return tc.ids[i] }

// hammer sends n writes to partition key through c at QUORUM as fast as it can and counts what
// happened. Every rate-limit error must name the table's write limit.
func hammer(t *testing.T, c *client.Client, table, key string, n int, limit uint32) (ok int, byCoordinator, byReplicas int) {
	t.Helper()
	for i := 0; i < n; i++ {
		_, err := c.Execute(context.Background(), client.Quorum, fmt.Sprintf("INSERT INTO %s (k, v) VALUES ('%s', %d)", table, key, i))
		var rl *client.RateLimitError
		switch {
		case err == nil:
			ok++
		case errors.As(err, &rl):
			switch rl.RejectedBy {
			case client.RejectedByCoordinator:
				byCoordinator++
			case client.RejectedByReplicas:
				byReplicas++
			}
			if rl.Limit != limit || rl.Op != client.OpWrite || rl.Table != "limited" {
				t.Fatalf("rate-limit error %+v: want limit %d on writes to table limited", rl, limit)
			}
		default:
			t.Fatalf("write %d to %s: %v", i, key, err)
		}
	}
	return ok, byCoordinator, byReplicas
}

// frozenClock is a node clock stopped at a second boundary: the limiter's counters never decay,
// so a test's writes all fall in one second however slowly a loaded machine sends them.
func frozenClock(c *node.Config) {
	frozen := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	c.Testing = &node.TestingKnobs{Now: func() time.Time { return frozen }}
}

// TestRateLimitRejectedByCoordinatorThenLifted runs on a frozen clock: on the wall clock, 400
// writes sent slower than 50 a second by a busy machine would never reach the limit.
func TestRateLimitRejectedByCoordinatorThenLifted(t *testing.T) {
	tc := startClusterWith(t, 3, frozenClock)
	c := tc.client(0)
	exec(t, c, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, c, client.One, "CREATE TABLE ks.limited (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 50}")

	// RF=3 on 3 nodes: node 0 replicates every partition, so it decides first.
	ok, byCoord, byReplicas := hammer(t, c, "ks.limited", "hot", 400, 50)
	if byCoord == 0 || byReplicas != 0 {
		t.Fatalf("400 fast writes to one partition at limit 50 through a replica coordinator: %d ok, %d rejected by coordinator, %d by replicas; want rejections by the coordinator only", ok, byCoord, byReplicas)
	}
	t.Logf("hot partition: %d accepted, %d rejected by coordinator", ok, byCoord)
	for i := 0; i < 20; i++ {
		if ok, rc, rr := hammer(t, c, "ks.limited", fmt.Sprintf("cold-%d", i), 3, 50); rc+rr != 0 {
			t.Fatalf("cold partition %d saw %d rejections (%d accepted), want none", i, rc+rr, ok)
		}
	}

	exec(t, c, client.One, "ALTER TABLE ks.limited WITH per_partition_rate_limit = {}")
	poll.Must(t, 10*time.Second, "writes to the hot partition are accepted again after ALTER ... = {}", poll.Bool(func() bool {
		ok, rc, rr := hammer(t, c, "ks.limited", "hot", 50, 50)
		return ok == 50 && rc+rr == 0
	}))
}

// TestRateLimitRejectedByReplicas runs on a frozen clock, as TestRateLimitRejectedByCoordinatorThenLifted.
// Through a coordinator that is not a replica, the replicas reject. On the frozen clock the
// partition's counter never leaves its first second, so the coordinator learns nothing from
// them (coordinator.Request.Learn; coordinator/shell's TestCoordinatorOutsideReplicasLearnsHotPartition
// covers learning) and every rejection is the replicas'.
func TestRateLimitRejectedByReplicas(t *testing.T) {
	tc := startClusterWith(t, 3, func(c *node.Config) {
		frozenClock(c)
		c.Coordinator.Learning = true
	})
	c0 := tc.client(0)
	exec(t, c0, client.One, "CREATE KEYSPACE rf1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c0, client.One, "CREATE TABLE rf1.limited (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 50}")

	// Find a coordinator that does not replicate the hot key at RF=1.
	token := partitioner.Token([]byte("hot"))
	owner := tc.nodes[0].Cluster().Ring().Replicas(token, 1)[0]
	coord := -1
	for i, nd := range tc.nodes {
		if cluster.NodeID(nd.ID()) != owner {
			coord = i
			break
		}
	}
	c := tc.client(coord)
	ok, byCoord, byReplicas := hammer(t, c, "rf1.limited", "hot", 400, 50)
	if byReplicas == 0 || byCoord != 0 {
		t.Fatalf("400 fast writes through non-replica node %d: %d ok, %d rejected by coordinator, %d by replicas; want rejections by replicas only", coord, ok, byCoord, byReplicas)
	}
	labels := []string{"keyspace", "rf1", "table", "limited", "op", "write"}
	if got := metricValue(t, tc.nodes[coord].Registry(), "kvnode_coordinator_learned_rejections_total", labels...); got != float64(byCoord) {
		t.Errorf("node %d kvnode_coordinator_learned_rejections_total = %v, want %d (its rejections on the learned copy)", coord, got, byCoord)
	}
	var ownerNode int
	for i, nd := range tc.nodes {
		if cluster.NodeID(nd.ID()) == owner {
			ownerNode = i
		}
	}
	poll.Must(t, 10*time.Second, "the owner's limiter counting all 400 writes", func() error {
		if got := metricValue(t, tc.nodes[ownerNode].Registry(), "kvnode_limiter_operations_total", labels...); got != 400 {
			return fmt.Errorf("it counted %v", got)
		}
		return nil
	})
	t.Logf("hot partition via non-replica coordinator: %d accepted, %d rejected by replicas, %d by the coordinator", ok, byReplicas, byCoord)
}

// TestRejectionsReachTheOtherReplicas checks account propagation between real nodes: when the
// coordinator rejects an operation locally, the other replicas never see it, so the coordinator
// sends them account-only deltas. Without them each replica counts only part of a partition's
// load and coordinators spread over the replicas admit up to RF × limit (docs/architecture.md, the limiter). The clock
// is frozen so that counters do not decay and every count is exact.
func TestRejectionsReachTheOtherReplicas(t *testing.T) {
	const writes = 300
	frozen := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	tc := startClusterWith(t, 3, func(c *node.Config) { c.Testing = &node.TestingKnobs{Now: func() time.Time { return frozen }} })
	c := tc.client(0)
	exec(t, c, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, c, client.One, "CREATE TABLE ks.limited (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 20}")

	ok, byCoordinator, _ := hammer(t, c, "ks.limited", "hot", writes, 20)
	if byCoordinator == 0 {
		t.Fatalf("%d writes at a limit of 20/s on a frozen clock: none rejected by the coordinator", writes)
	}
	table, _ := tc.nodes[0].Schema().Table("ks", "limited")
	token := partitioner.Token([]byte("hot"))
	for i := 1; i < 3; i++ {
		poll.Must(t, 5*time.Second, fmt.Sprintf("node %d counts all %d writes (%d it applied, %d rejected by node 0)", i, writes, ok, byCoordinator), poll.Bool(func() bool {
			return tc.nodes[i].Replica().Count(table.ID, token, schema.OpWrite, frozen) == writes
		}))
	}
}
