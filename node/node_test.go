package node_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
	"github.com/kvnode/kvnode/replica"
)

// testCluster is a set of in-process nodes on loopback with random ports and the fast gossip
// profile, run by node/localcluster. Nodes are addressed by index; a closed node's data
// directory stays for a restart.
type testCluster struct {
	t     *testing.T
	c     *localcluster.Cluster
	dirs  []string
	nodes []*node.Node // node i, nil while it is stopped
	ids   []string     // node ids, kept while a node is closed
}

// smallStorage keeps several in-process nodes' pebble caches small.
var smallStorage = replica.Options{CacheSize: 8 << 20, MemTableSize: 4 << 20}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// schemaAgreementTimeout keeps DDL fast when a node is down on purpose.
const schemaAgreementTimeout = 2 * time.Second

// nodeConfig is the configuration of a node started outside a testCluster.
func nodeConfig(dir string, seeds []string) node.Config {
	storage := smallStorage
	storage.NoSync = true // durability is the crash test's subject, not these tests'
	return node.Config{
		DataDir: dir,
		Listen:  node.ListenOptions{Addr: "127.0.0.1:0", CQLAddr: "127.0.0.1:0", InternodeAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0"},
		Cluster: cluster.Options{Seeds: seeds, Profile: cluster.ProfileTest, SchemaAgreementTimeout: schemaAgreementTimeout},
		Storage: storage,
		Logger:  quietLogger(),
	}
}

// startCluster starts n nodes, each joining through the first, and waits until every node sees
// all n live.
func startCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	return startClusterWith(t, n, nil)
}

// startClusterWith is startCluster with a hook that adjusts each node's configuration, at its
// start and at every restart.
func startClusterWith(t *testing.T, n int, adjust func(*node.Config)) *testCluster {
	t.Helper()
	c, err := localcluster.Start(context.Background(), localcluster.Options{
		Dir:   t.TempDir(),
		Nodes: n,
		Adjust: func(_ int, cfg *node.Config) {
			cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout
			if adjust != nil {
				adjust(cfg)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tc := &testCluster{t: t, c: c}
	for _, nd := range c.Nodes() {
		tc.dirs = append(tc.dirs, nd.DataDir)
		tc.nodes = append(tc.nodes, nd.Node())
		tc.ids = append(tc.ids, nd.ID)
	}
	return tc
}

// waitLive waits until every running node counts want live members.
func (tc *testCluster) waitLive(timeout time.Duration, want int) {
	tc.t.Helper()
	poll.Must(tc.t, timeout, fmt.Sprintf("every running node sees %d live members", want), poll.Bool(func() bool {
		for _, nd := range tc.nodes {
			if nd == nil {
				continue
			}
			live := 0
			for _, m := range nd.Cluster().Members() {
				if m.Live {
					live++
				}
			}
			if live != want {
				return false
			}
		}
		return true
	}))
}

// stop closes node i gracefully.
func (tc *testCluster) stop(i int) {
	tc.t.Helper()
	if err := tc.c.Stop(i); err != nil {
		tc.t.Fatal(err)
	}
	tc.nodes[i] = nil
}

// restart starts stopped node i again on its data directory and waits until every running node
// sees every running node live.
func (tc *testCluster) restart(i int) {
	tc.t.Helper()
	if err := tc.c.Restart(context.Background(), i); err != nil {
		tc.t.Fatal(err)
	}
	tc.nodes[i] = tc.c.Node(i).Node()
}

func (tc *testCluster) client(i int) *client.Client {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, tc.nodes[i].Addr())
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(func() { c.Close() })
	return c
}

func exec(t *testing.T, c *client.Client, cl client.Consistency, stmt string) *client.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.Execute(ctx, cl, stmt)
	if err != nil {
		t.Fatalf("%s at %v: %v", stmt, cl, err)
	}
	return res
}

func TestThreeNodesJoinAndAgreeOnReplicas(t *testing.T) {
	tc := startCluster(t, 3)
	rings := make([]*cluster.Ring, 3)
	for i, nd := range tc.nodes {
		rings[i] = nd.Cluster().Ring()
		if rings[i].NumNodes() != 3 {
			t.Fatalf("node %d's ring has %d nodes, want 3", i, rings[i].NumNodes())
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 10000; k++ {
		tok := int64(rng.Uint64())
		want := rings[0].Replicas(tok, 3)
		for i := 1; i < 3; i++ {
			if got := rings[i].Replicas(tok, 3); !slices.Equal(got, want) {
				t.Fatalf("token %d: node %d computes replicas %v, node 0 computes %v", tok, i, got, want)
			}
		}
	}
}

func TestSecondNodeOnSameDataDirRefused(t *testing.T) {
	tc := startCluster(t, 1)
	_, err := node.Start(context.Background(), nodeConfig(tc.dirs[0], nil))
	if !errors.Is(err, node.ErrDataDirInUse) || !strings.Contains(err.Error(), tc.dirs[0]) {
		t.Fatalf("second node on %s: err = %v, want ErrDataDirInUse naming the directory", tc.dirs[0], err)
	}
}

func TestPortInUseNamesAddress(t *testing.T) {
	tc := startCluster(t, 1)
	cfg := nodeConfig(filepath.Join(t.TempDir(), "other"), nil)
	cfg.Listen.Addr = tc.nodes[0].Addr()
	_, err := node.Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), cfg.Listen.Addr) {
		t.Fatalf("node on a taken --addr %s: err = %v, want an error naming the address", cfg.Listen.Addr, err)
	}
}

func TestDownNodeKeepsRangesAndRestartsWithSameIdentity(t *testing.T) {
	tc := startCluster(t, 3)
	id := tc.nodes[2].ID()
	tokens := tc.nodes[0].Cluster().Ring().Tokens(cluster.NodeID(id))
	tc.stop(2)
	poll.Must(t, 10*time.Second, "nodes 0 and 1 see node 2 down", poll.Bool(func() bool {
		return !tc.nodes[0].Cluster().IsLive(cluster.NodeID(id)) && !tc.nodes[1].Cluster().IsLive(cluster.NodeID(id))
	}))
	for i := 0; i < 2; i++ {
		if got := tc.nodes[i].Cluster().Ring().Tokens(cluster.NodeID(id)); !slices.Equal(got, tokens) {
			t.Errorf("node %d: down node's tokens %v, want it still to own %v", i, got, tokens)
		}
	}
	tc.restart(2)
	if got := tc.nodes[2].ID(); got != id {
		t.Fatalf("restarted node has id %s, want %s", got, id)
	}
	if got := tc.nodes[2].Cluster().Ring().Tokens(cluster.NodeID(id)); !slices.Equal(got, tokens) {
		t.Errorf("restarted node owns tokens %v, want %v", got, tokens)
	}
	tc.waitLive(10*time.Second, 3)
}

func TestSchemaChangeReachesAllNodesAndACatchingUpNode(t *testing.T) {
	tc := startCluster(t, 3)
	c0 := tc.client(0)
	start := time.Now()
	exec(t, c0, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	poll.Must(t, 20*time.Second, "all three nodes share node 0's schema digest", poll.Bool(func() bool {
		d := tc.nodes[0].SchemaDigest()
		return tc.nodes[1].SchemaDigest() == d && tc.nodes[2].SchemaDigest() == d
	}))
	t.Logf("DDL applied and agreed on by all nodes %v after it was sent", time.Since(start))

	tc.stop(2)
	// Node 2 is down, so it is not a live node that must agree: the DDL succeeds without waiting.
	exec(t, c0, client.One, "CREATE TABLE ks.t (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 50}")
	tc.restart(2)
	poll.Must(t, 10*time.Second, "the restarted node catches up with the table created while it was down", poll.Bool(func() bool {
		return tc.nodes[2].SchemaDigest() == tc.nodes[0].SchemaDigest()
	}))
	c2 := tc.client(2)
	desc := exec(t, c2, client.One, "DESCRIBE TABLE ks.t").Description
	if !strings.Contains(desc, "max_writes_per_second") {
		t.Errorf("DESCRIBE TABLE on the restarted node = %q, want the rate limit option", desc)
	}
}
