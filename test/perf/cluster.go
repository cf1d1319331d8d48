package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/test/proc"
)

// numTokens is the vnode count every server is started with; findOwner needs it to rebuild the
// ring.
const numTokens = 16

// Bounds on waiting for servers (starting and stopping one are proc's).
const (
	joinTimeout = 60 * time.Second // every server seeing every other as UP
	ddlTimeout  = 30 * time.Second // one DDL statement
)

// buildKVNode builds cmd/kvnode into dir and returns the binary's path.
func buildKVNode(dir string) (string, error) { return proc.Build(dir) }

// testCluster is a set of kvnode serve processes on loopback (test/proc) that form one
// cluster, node i on 127.0.0.(i+1) with every listener on a port shared by all nodes (as CQL
// drivers expect), and a gRPC client connected to each.
type testCluster struct {
	pc      *proc.Cluster
	servers []*proc.Node
	clients []*client.Client
}

// startCluster starts n servers (--num-tokens numTokens, --log-level warn, --coordinator-learning
// so the replicas path measures coordinators that learn hot partitions, extra as further serve
// flags of every server) with data under root/name on 127.0.0.1 ... 127.0.0.n, serving the
// native protocol on one shared port, the first as seed of the others, and returns once every
// server sees all n UP.
func startCluster(ctx context.Context, bin, root, name string, n int, sync bool, extra ...string) (c *testCluster, err error) {
	opts := proc.Options{
		Binary: bin, Dir: filepath.Join(root, name), Hosts: proc.LoopbackHosts(n), CQL: true, Sync: sync,
		NumTokens: numTokens, LogLevel: "warn",
	}
	extra = append([]string{"--coordinator-learning"}, extra...)
	for range n {
		opts.ExtraArgs = append(opts.ExtraArgs, extra)
	}
	pc, err := proc.Start(opts)
	c = &testCluster{pc: pc}
	if pc != nil {
		c.servers = pc.Nodes
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.stop())
		}
	}()
	if err != nil {
		return c, err
	}
	for _, s := range c.servers {
		c.clients = append(c.clients, s.Client())
	}
	return c, pc.WaitStates(ctx, joinTimeout, c.servers, pc.AllUp())
}

// addrs returns the servers' client addresses.
func (c *testCluster) addrs() []string {
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.Addr
	}
	return out
}

// cqlAddrs returns the servers' native-protocol addresses.
func (c *testCluster) cqlAddrs() []string { return c.pc.CQLAddrs() }

// cpu returns the CPU time used so far by all servers together.
func (c *testCluster) cpu() (cpuSample, error) {
	var total cpuSample
	for _, s := range c.servers {
		v, err := readCPU(s.Proc().Pid())
		if err != nil {
			return cpuSample{}, err
		}
		total = total.add(v)
	}
	return total, nil
}

// cpuWithSelf returns the CPU time used so far by all servers together and by this process.
func (c *testCluster) cpuWithSelf() (servers, self cpuSample, err error) {
	if servers, err = c.cpu(); err != nil {
		return
	}
	self, err = readCPU(os.Getpid())
	return
}

// exec runs statements (DDL) on the first server, in order.
func (c *testCluster) exec(ctx context.Context, log io.Writer, stmts ...string) error {
	for _, st := range stmts {
		dctx, cancel := context.WithTimeout(ctx, ddlTimeout)
		res, err := c.clients[0].Execute(dctx, client.Quorum, st)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
		for _, w := range res.Warnings {
			fmt.Fprintf(log, "perf: warning from %q: %s\n", st, w)
		}
	}
	return nil
}

// stop closes the clients and stops every server, returning the servers that did not exit
// cleanly.
func (c *testCluster) stop() error {
	c.clients = nil // the nodes own them
	if c.pc == nil {
		return nil
	}
	errs := c.pc.StopAll()
	c.pc, c.servers = nil, nil
	return errors.Join(errs...)
}

// owner returns the index of the server that owns key's token at replication factor 1, found
// by rebuilding the ring from the node ids (tokens are a pure function of id and num_tokens).
func (c *testCluster) owner(key string) (int, error) {
	nodes := make([]cluster.RingNode, len(c.servers))
	for i, s := range c.servers {
		id := cluster.NodeID(s.ID)
		nodes[i] = cluster.RingNode{ID: id, Tokens: cluster.NodeTokens(id, numTokens)}
	}
	reps := cluster.NewRing(nodes).Replicas(partitioner.Token([]byte(key)), 1)
	for i, s := range c.servers {
		if len(reps) == 1 && cluster.NodeID(s.ID) == reps[0] {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no server owns the token of %q (ring replicas %v)", key, reps)
}
