package interop

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/test/proc"
)

// kvnodeBinary is the path of the kvnode binary TestMain built; it is set once, before any test
// runs, and only read afterwards. It is empty under -short.
var kvnodeBinary string

// Timeouts of the tests. They are generous because the machine running the tests may be busy;
// none of them is ever waited out on success.
const (
	joinTimeout     = 60 * time.Second // every node seeing every other one UP
	requestTimeout  = 20 * time.Second // one driver request, DDL included
	connectTimeout  = 20 * time.Second
	discoverTimeout = 60 * time.Second // a driver knowing every node up
)

// numTokens is every node's --num-tokens, set explicitly so that the tests can compute kvnode's
// placement themselves (cluster.NodeTokens) and compare it with the drivers'.
const numTokens = 16

// TestMain builds the kvnode binary once for every test in the package. A build failure fails
// the whole package loudly: without the binary nothing here can run.
func TestMain(m *testing.M) { proc.Main(m, "interop", &kvnodeBinary) }

// startCluster starts three nodes on 127.0.0.1, 127.0.0.2 and 127.0.0.3, every one serving the
// native protocol on the same port (Cluster.CQLPort), and waits until each sees all three UP.
// Its cleanup stops every process (SIGTERM, then SIGKILL after a grace period; a node that does
// not exit cleanly fails the test) and, when the test failed, logs the end of each node's stderr.
func startCluster(t *testing.T) *proc.Cluster {
	t.Helper()
	return startClusterOnPort(t, 0)
}

// startClusterOnPort is startCluster with the native protocol on cqlPort on every node (0: a
// free port picked at start).
func startClusterOnPort(t *testing.T, cqlPort int) *proc.Cluster {
	t.Helper()
	return startClusterWith(t, proc.Options{Hosts: proc.LoopbackHosts(3), CQLPort: cqlPort})
}

// startClusterWith starts the nodes opts describes (its Hosts, CQLPort and ExtraArgs; the rest
// is the suite's) with the native protocol on, and waits until every node sees every other up.
// Its cleanup stops them, logging their stderr when the test failed.
func startClusterWith(t *testing.T, opts proc.Options) *proc.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("interop: skipped under -short (it builds kvnode and runs a cluster)")
	}
	opts.Binary, opts.Dir = kvnodeBinary, t.TempDir() // the directory is removed after the processes stop
	opts.CQL, opts.NumTokens = true, numTokens
	c, err := proc.Start(opts)
	if c != nil {
		t.Cleanup(func() {
			for _, err := range c.StopAll() {
				t.Error(err)
			}
			if t.Failed() {
				for _, n := range c.Nodes {
					for _, path := range n.Stderrs() {
						t.Logf("%s stderr (%s) ends:\n%s", n.Name, filepath.Base(path), proc.Tail(path, 40))
					}
				}
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStates(context.Background(), joinTimeout, c.Nodes, c.AllUp()); err != nil {
		t.Fatal(err)
	}
	return c
}

// nodeTokens returns the tokens kvnode gives the node id.
func nodeTokens(id string) []int64 { return cluster.NodeTokens(cluster.NodeID(id), numTokens) }

// placement is kvnode's own view of where data lives, computed with kvnode's ring code from the
// node ids the processes reported: what a token-aware driver must agree with.
type placement struct {
	ring   *cluster.Ring
	hosts  []string                  // every node's IP address, in node order
	hostOf map[cluster.NodeID]string // node id → IP address
	idOf   map[string]cluster.NodeID // IP address → node id
}

func newPlacement(c *proc.Cluster) placement {
	p := placement{hostOf: map[cluster.NodeID]string{}, idOf: map[string]cluster.NodeID{}}
	var nodes []cluster.RingNode
	for _, n := range c.Nodes {
		id := cluster.NodeID(n.ID)
		nodes = append(nodes, cluster.RingNode{ID: id, Tokens: cluster.NodeTokens(id, numTokens)})
		p.hosts = append(p.hosts, n.Host())
		p.hostOf[id] = n.Host()
		p.idOf[n.Host()] = id
	}
	p.ring = cluster.NewRing(nodes)
	return p
}

// replicaHosts returns the IP addresses of the rf replicas of a partition whose partition key is
// the single serialized component key (SimpleStrategy).
func (p placement) replicaHosts(key []byte, rf int) []string {
	var hosts []string
	for _, id := range p.ring.Replicas(partitioner.Token(key), rf) {
		hosts = append(hosts, p.hostOf[id])
	}
	return hosts
}

// nonReplicaHost returns the address of a node that holds no replica of key, or "" if every node does.
func (p placement) nonReplicaHost(key []byte, rf int) string {
	replicas := map[string]bool{}
	for _, h := range p.replicaHosts(key, rf) {
		replicas[h] = true
	}
	for _, h := range p.hosts {
		if !replicas[h] {
			return h
		}
	}
	return ""
}
