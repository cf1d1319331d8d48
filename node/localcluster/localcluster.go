package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/replica"
)

// Options configures a cluster. The zero value of every field but Dir means its default
// (EnsureDefaults).
type Options struct {
	// Dir holds one data directory per node (n1, n2, ...). Required.
	Dir string
	// Nodes is the number of nodes. Default 3.
	Nodes int
	// Sync makes writes durable before they are acknowledged. Default off: in-process clusters
	// are for testing the data path, and their data is thrown away.
	Sync bool
	// Profile selects gossip timings. Default cluster.ProfileTest (joins and failures seen within
	// about a second on loopback).
	Profile cluster.Profile
	// ClusterName keeps clusters apart. Default "kvnode-localcluster".
	ClusterName string
	// Logger receives every node's logs, labelled with the node's name. Default: discarded.
	Logger *slog.Logger
	// LogKey is the log attribute that labels each node's logs. Default "testnode".
	LogKey string
	// Adjust, if set, changes node i's configuration (0-based) before each start and restart.
	Adjust func(i int, cfg *node.Config)
	// StartTimeout bounds how long Start and Restart wait for every node to see the others
	// live. Default 30 s.
	StartTimeout time.Duration
	// ClientTLS, when set, is the TLS configuration of the clients the cluster connects to its
	// nodes (for nodes that Adjust gives a certificate). Nil means plaintext.
	ClientTLS *tls.Config
}

// Node is one member of a Cluster.
type Node struct {
	// Name is n1, n2, ...: for messages.
	Name string
	// DataDir is the node's data directory, kept across restarts.
	DataDir string
	// ID is the node's id, kept across restarts.
	ID string

	node   *node.Node     // nil while stopped
	client *client.Client // connected to node; nil while stopped
}

// Running reports whether the node is running.
func (n *Node) Running() bool { return n.node != nil }

// Addr returns the node's client (gRPC) address, or "" while it is stopped.
func (n *Node) Addr() string {
	if n.node == nil {
		return ""
	}
	return n.node.Addr()
}

// Client returns a client connected to the node, or nil while it is stopped. The cluster owns it:
// it is closed when the node stops.
func (n *Node) Client() *client.Client { return n.client }

// Node returns the running node.Node, or nil while it is stopped.
func (n *Node) Node() *node.Node { return n.node }

// Cluster is a set of in-process nodes; the first node is every other's seed at the start.
type Cluster struct {
	opts  Options
	nodes []*Node
}

// Member is how one node sees one member of the cluster.
type Member struct {
	// ID is the member's node id.
	ID string
	// Live reports whether the observing node considers the member up.
	Live bool
	// SchemaDigest is the member's schema digest as last gossiped.
	SchemaDigest string
}

// EnsureDefaults replaces zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Profile == 0 {
		o.Profile = cluster.ProfileTest
	}
	if o.ClusterName == "" {
		o.ClusterName = "kvnode-localcluster"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LogKey == "" {
		o.LogKey = "testnode"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 30 * time.Second
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, describes a cluster Start can start.
func (o *Options) Validate() error {
	switch {
	case o.Dir == "":
		return errors.New("localcluster: Options.Dir is required")
	case o.Nodes < 0:
		return fmt.Errorf("localcluster: Options.Nodes is %d, want at least 1", o.Nodes)
	case o.StartTimeout < 0:
		return fmt.Errorf("localcluster: Options.StartTimeout is %v, want a positive duration", o.StartTimeout)
	}
	return nil
}

// Start starts opts.Nodes nodes and waits until every node sees all of them live. On error it
// stops the nodes it started.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if err := opts.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	for i := range opts.Nodes {
		n := &Node{Name: fmt.Sprintf("n%d", i+1), DataDir: filepath.Join(opts.Dir, fmt.Sprintf("n%d", i+1))}
		c.nodes = append(c.nodes, n)
		if err := c.start(ctx, i); err != nil {
			return nil, err
		}
	}
	if err := c.WaitLive(ctx, c.Running(), len(c.nodes)); err != nil {
		return nil, err
	}
	return c, nil
}

// start starts node i, joining through every other running node.
func (c *Cluster) start(ctx context.Context, i int) error {
	n := c.nodes[i]
	var seeds []string
	for _, o := range c.nodes {
		if o != n && o.node != nil {
			seeds = append(seeds, o.node.GossipAddr())
		}
	}
	cfg := node.Config{
		DataDir: n.DataDir,
		Listen:  node.ListenOptions{Addr: "127.0.0.1:0", CQLAddr: "127.0.0.1:0", InternodeAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0"},
		Cluster: cluster.Options{Seeds: seeds, ClusterName: c.opts.ClusterName, Profile: c.opts.Profile,
			// DDL with a node down on purpose should not wait long for its agreement.
			SchemaAgreementTimeout: 5 * time.Second},
		// Several nodes share one process: keep their pebble caches small.
		Storage: replica.Options{CacheSize: 8 << 20, MemTableSize: 4 << 20, NoSync: !c.opts.Sync},
		Logger:  c.opts.Logger.With(c.opts.LogKey, n.Name),
	}
	if c.opts.Adjust != nil {
		c.opts.Adjust(i, &cfg)
	}
	nd, err := node.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("localcluster: start %s: %w", n.Name, err)
	}
	dctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	var copts []client.Option
	if c.opts.ClientTLS != nil {
		copts = append(copts, client.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(c.opts.ClientTLS))))
	}
	cl, err := client.Dial(dctx, nd.Addr(), copts...)
	if err != nil {
		nd.Close()
		return fmt.Errorf("localcluster: client for %s at %s: %w", n.Name, nd.Addr(), err)
	}
	if n.ID != "" && nd.ID() != n.ID {
		cl.Close()
		nd.Close()
		return fmt.Errorf("localcluster: %s restarted with id %s, want %s", n.Name, nd.ID(), n.ID)
	}
	n.node, n.client, n.ID = nd, cl, nd.ID()
	return nil
}

// Add starts a new node with a fresh data directory, joining through every running node (it
// bootstraps: node.Start returns once it has streamed its ranges), and waits until every running
// node sees every running node live. It returns the new node's index.
func (c *Cluster) Add(ctx context.Context) (int, error) {
	i := len(c.nodes)
	c.nodes = append(c.nodes, &Node{Name: fmt.Sprintf("n%d", i+1), DataDir: filepath.Join(c.opts.Dir, fmt.Sprintf("n%d", i+1))})
	if err := c.start(ctx, i); err != nil {
		c.nodes = c.nodes[:i]
		return 0, err
	}
	running := c.Running()
	return i, c.WaitLive(ctx, running, len(running))
}

// Nodes returns the cluster's nodes, running or not, in order.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns node i (0-based).
func (c *Cluster) Node(i int) *Node { return c.nodes[i] }

// Running returns the nodes that are running.
func (c *Cluster) Running() []*Node {
	var out []*Node
	for _, n := range c.nodes {
		if n.node != nil {
			out = append(out, n)
		}
	}
	return out
}

// Members returns how node i sees the cluster's members, sorted by id; nil while it is stopped.
func (c *Cluster) Members(i int) []Member {
	n := c.nodes[i]
	if n.node == nil {
		return nil
	}
	var out []Member
	for _, m := range n.node.Cluster().Members() {
		out = append(out, Member{ID: string(m.ID), Live: m.Live, SchemaDigest: m.SchemaDigest})
	}
	return out
}

// Stop closes node i gracefully (it leaves the cluster; its data directory stays for Restart).
func (c *Cluster) Stop(i int) error {
	n := c.nodes[i]
	if n.node == nil {
		return nil
	}
	n.client.Close()
	err := n.node.Close()
	n.node, n.client = nil, nil
	if err != nil {
		return fmt.Errorf("localcluster: stop %s: %w", n.Name, err)
	}
	return nil
}

// Kill stops node i as a crash would (node.Node.Kill): its requests are cut and it does not
// leave the cluster, so the others find it down by failure detection. Restart starts it again.
func (c *Cluster) Kill(i int) error {
	n := c.nodes[i]
	if n.node == nil {
		return nil
	}
	n.client.Close()
	err := n.node.Kill()
	n.node, n.client = nil, nil
	if err != nil {
		return fmt.Errorf("localcluster: kill %s: %w", n.Name, err)
	}
	return nil
}

// Restart starts stopped node i again on its data directory (with new ports) and waits until
// every running node sees every running node live.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if c.nodes[i].node != nil {
		return fmt.Errorf("localcluster: restart %s: it is running", c.nodes[i].Name)
	}
	if err := c.start(ctx, i); err != nil {
		return err
	}
	running := c.Running()
	return c.WaitLive(ctx, running, len(running))
}

// WaitLive waits until each observer counts exactly want live members, for up to
// Options.StartTimeout.
func (c *Cluster) WaitLive(ctx context.Context, observers []*Node, want int) error {
	return c.waitUntil(ctx, fmt.Sprintf("every observer sees %d live members", want), func() bool {
		for _, n := range observers {
			if n.node == nil {
				return false
			}
			live := 0
			for _, m := range n.node.Cluster().Members() {
				if m.Live {
					live++
				}
			}
			if live != want {
				return false
			}
		}
		return true
	})
}

// WaitSeenDown waits until every running node other than node i sees node i down.
func (c *Cluster) WaitSeenDown(ctx context.Context, i int) error {
	id := c.nodes[i].ID
	return c.waitUntil(ctx, fmt.Sprintf("every running node sees %s down", c.nodes[i].Name), func() bool {
		for _, n := range c.Running() {
			if n == c.nodes[i] {
				continue
			}
			if n.node.Cluster().IsLive(cluster.NodeID(id)) {
				return false
			}
		}
		return true
	})
}

func (c *Cluster) waitUntil(ctx context.Context, what string, cond func() bool) error {
	if err := poll.Until(ctx, c.opts.StartTimeout, what, poll.Bool(cond)); err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	return nil
}

// Close stops every running node at once (each Close leaves the cluster, which takes a moment)
// and returns their errors joined.
func (c *Cluster) Close() error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i := range c.nodes {
		wg.Go(func() { errs[i] = c.Stop(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
