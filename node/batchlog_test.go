package node_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
	"github.com/kvnode/kvnode/partitioner"
)

// batchlogKeys are the partitions the tests' batch writes: with RF 2 on three nodes each has a
// node that is not its replica, and a node replicates some of them but for odds of 1 in 6561.
var batchlogKeys = []string{"a", "b", "c", "d", "e", "f", "g", "h"}

// batchOver returns a LOGGED batch writing row (k, 1, v) of every partition in keys.
func batchOver(v string) coordinator.BatchStatement {
	b := coordinator.BatchStatement{Type: coordinator.BatchLogged, Keyspace: "ks", Consistency: coordinator.Quorum}
	for _, k := range batchlogKeys {
		b.Children = append(b.Children, coordinator.BatchChild{Text: fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('%s', 1, '%s')", k, v)})
	}
	return b
}

func sumMetric(t *testing.T, c *localcluster.Cluster, name string) float64 {
	t.Helper()
	sum := 0.0
	for _, n := range c.Running() {
		sum += metricValue(t, n.Node().Registry(), name)
	}
	return sum
}

func startBatchlogCluster(t *testing.T, adjust func(i int, cfg *node.Config)) *localcluster.Cluster {
	t.Helper()
	c, err := localcluster.Start(context.Background(), localcluster.Options{Dir: t.TempDir(), Nodes: 3, Adjust: func(i int, cfg *node.Config) {
		cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout
		adjust(i, cfg)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	for _, ddl := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.t (k text, c int, v text, PRIMARY KEY (k, c))",
	} {
		if _, err := c.Node(0).Node().Executor().Execute(ctx, coordinator.Statement{Text: ddl}); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	return c
}

// TestLoggedBatchSurvivesItsCoordinator kills a batch's coordinator between its batchlog write
// and its first partition write; the nodes holding the batchlog replay it, so every partition
// of the batch becomes readable at ALL through every node, replicas or not.
func TestLoggedBatchSurvivesItsCoordinator(t *testing.T) {
	died := errors.New("the coordinator died before applying the batch")
	c := startBatchlogCluster(t, func(i int, cfg *node.Config) {
		cfg.Batchlog.ReplayInterval = 20 * time.Millisecond
		cfg.Batchlog.ReplayAge = time.Millisecond
		if i == 0 {
			cfg.Testing = &node.TestingKnobs{BeforeBatchApply: func() error { return died }}
		}
	})
	ctx := context.Background()
	if _, err := c.Node(0).Node().Executor().ExecuteBatch(ctx, batchOver("x")); !errors.Is(err, died) {
		t.Fatalf("the batch returned %v, want the coordinator's death", err)
	}
	// Every key has a node that is not its replica, so the reads below go through both paths.
	ring := c.Node(0).Node().Cluster().Ring()
	for _, k := range batchlogKeys {
		if n := len(ring.Replicas(partitioner.Token(partitioner.AppendKey(nil, [][]byte{[]byte(k)})), 2)); n != 2 {
			t.Fatalf("partition %s has %d replicas, want 2", k, n)
		}
	}
	poll.Must(t, 60*time.Second, "every partition of the batch readable at ALL through every node", func() error {
		for _, n := range c.Nodes() {
			for _, k := range batchlogKeys {
				res, err := n.Node().Executor().Execute(ctx, coordinator.Statement{Text: "SELECT v FROM t WHERE k = '" + k + "'", Keyspace: "ks", Consistency: coordinator.All})
				if err != nil {
					return fmt.Errorf("%s reading %s: %w", n.Name, k, err)
				}
				if res.Rows == nil || len(res.Rows.Values) != 1 || string(res.Rows.Values[0][0]) != "x" {
					return fmt.Errorf("%s reads partition %s as %v", n.Name, k, res.Rows)
				}
			}
		}
		return nil
	})
	poll.Must(t, 60*time.Second, "every batchlog emptied by replay", func() error {
		if p, r := sumMetric(t, c, "kvnode_batchlog_pending"), sumMetric(t, c, "kvnode_batchlog_replayed_total"); p != 0 || r < 1 {
			return fmt.Errorf("%v entries pending, %v replayed", p, r)
		}
		return nil
	})
	if s := sumMetric(t, c, "kvnode_batchlog_stored_total"); s != 2 {
		t.Errorf("the batch was stored in %v batchlogs, want 2", s)
	}
	if s := metricValue(t, c.Node(0).Node().Registry(), "kvnode_batchlog_stored_total"); s != 0 {
		t.Errorf("the coordinator stored the batch in its own batchlog (%v), want only the two other nodes", s)
	}
}

// TestLoggedBatchBatchlogRemovedAndUnavailable checks that a batch that succeeds leaves no
// batchlog entry behind (its coordinator removes them, no replay needed), and that a batch whose
// batchlog cannot be written (every other node down) fails before any partition is written.
func TestLoggedBatchBatchlogRemovedAndUnavailable(t *testing.T) {
	var applies atomic.Int32
	c := startBatchlogCluster(t, func(i int, cfg *node.Config) {
		cfg.Batchlog.ReplayInterval = time.Hour // replay must not be what removes the entries
		if i == 0 {
			cfg.Testing = &node.TestingKnobs{BeforeBatchApply: func() error { applies.Add(1); return nil }}
		}
	})
	ctx := context.Background()
	e := c.Node(0).Node().Executor()
	res, err := e.ExecuteBatch(ctx, batchOver("y"))
	if err != nil || len(res.Warnings) != 0 {
		t.Fatalf("the batch returned %v, warnings %q; want success without warnings", err, res.Warnings)
	}
	poll.Must(t, 30*time.Second, "the batchlog entries removed", func() error {
		if p, rm := sumMetric(t, c, "kvnode_batchlog_pending"), sumMetric(t, c, "kvnode_batchlog_removed_total"); p != 0 || rm != 2 {
			return fmt.Errorf("%v entries pending, %v removed", p, rm)
		}
		return nil
	})
	if s, r := sumMetric(t, c, "kvnode_batchlog_stored_total"), sumMetric(t, c, "kvnode_batchlog_replayed_total"); s != 2 || r != 0 || applies.Load() != 1 {
		t.Errorf("stored %v, replayed %v, applied after the batchlog %d times; want 2, 0, 1", s, r, applies.Load())
	}

	// With both other nodes down no batchlog can hold the batch: it fails at once, even at ONE
	// where the coordinator alone could have written the partitions it replicates.
	for _, i := range []int{1, 2} {
		if err := c.Stop(i); err != nil {
			t.Fatal(err)
		}
	}
	poll.Must(t, 30*time.Second, "n1 sees n2 and n3 down", poll.Bool(func() bool {
		cl := c.Node(0).Node().Cluster()
		return !cl.IsLive(cluster.NodeID(c.Node(1).ID)) && !cl.IsLive(cluster.NodeID(c.Node(2).ID))
	}))
	b := batchOver("z")
	b.Consistency = coordinator.One
	var unavailable *coordinator.UnavailableError
	if _, err := e.ExecuteBatch(ctx, b); !errors.As(err, &unavailable) {
		t.Fatalf("the batch with no live batchlog node returned %v, want an *UnavailableError", err)
	}
	if applies.Load() != 1 {
		t.Errorf("the batch went on to its partitions after its batchlog write failed")
	}
	ring := c.Node(0).Node().Cluster().Ring()
	self := cluster.NodeID(c.Node(0).ID)
	checked := 0
	for _, k := range batchlogKeys {
		if !slices.Contains(ring.Replicas(partitioner.Token(partitioner.AppendKey(nil, [][]byte{[]byte(k)})), 2), self) {
			continue
		}
		checked++
		res, err := e.Execute(ctx, coordinator.Statement{Text: "SELECT v FROM t WHERE k = '" + k + "'", Keyspace: "ks", Consistency: coordinator.One})
		if err != nil || res.Rows == nil || len(res.Rows.Values) != 1 || string(res.Rows.Values[0][0]) != "y" {
			t.Errorf("partition %s on its replica n1 after the failed batch: %v, %v; want the first batch's 'y'", k, res.Rows, err)
		}
	}
	if checked == 0 {
		t.Fatalf("n1 replicates none of the partitions %v: nothing was checked", batchlogKeys)
	}
}

// TestBatchlogSurvivesRestart stores a batch whose coordinator dies, restarts the two nodes
// holding it (their replay had not run), and checks that they replay it from disk.
func TestBatchlogSurvivesRestart(t *testing.T) {
	var replayNow atomic.Bool
	c := startBatchlogCluster(t, func(i int, cfg *node.Config) {
		cfg.Batchlog.ReplayInterval = time.Hour
		if replayNow.Load() {
			cfg.Batchlog.ReplayInterval, cfg.Batchlog.ReplayAge = 20*time.Millisecond, time.Millisecond
		}
		if i == 0 {
			cfg.Testing = &node.TestingKnobs{BeforeBatchApply: func() error { return errors.New("died") }}
		}
	})
	ctx := context.Background()
	if _, err := c.Node(0).Node().Executor().ExecuteBatch(ctx, batchOver("r")); err == nil {
		t.Fatal("the batch whose coordinator died succeeded")
	}
	for _, i := range []int{1, 2} {
		if p := metricValue(t, c.Node(i).Node().Registry(), "kvnode_batchlog_pending"); p != 1 {
			t.Fatalf("%s holds %v batchlog entries before the restart, want 1", c.Node(i).Name, p)
		}
		if err := c.Stop(i); err != nil {
			t.Fatal(err)
		}
	}
	replayNow.Store(true)
	for _, i := range []int{1, 2} {
		if err := c.Restart(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	poll.Must(t, 60*time.Second, "the batch replayed after the restart, readable at ALL", func() error {
		for _, k := range batchlogKeys {
			res, err := c.Node(0).Node().Executor().Execute(ctx, coordinator.Statement{Text: "SELECT v FROM t WHERE k = '" + k + "'", Keyspace: "ks", Consistency: coordinator.All})
			if err != nil {
				return fmt.Errorf("reading %s: %w", k, err)
			}
			if res.Rows == nil || len(res.Rows.Values) != 1 || string(res.Rows.Values[0][0]) != "r" {
				return fmt.Errorf("partition %s reads as %v", k, res.Rows)
			}
		}
		if p := sumMetric(t, c, "kvnode_batchlog_pending"); p != 0 {
			return fmt.Errorf("%v entries still pending", p)
		}
		return nil
	})
}
