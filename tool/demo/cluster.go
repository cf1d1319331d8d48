package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
)

// numNodes is the size of the demo cluster, and the keyspace's replication factor.
const numNodes = 3

// clusterName keeps the demo's nodes apart from any real kvnode cluster on the same host.
const clusterName = "kvnode-demo"

// How long startup may take before the demo gives up.
const (
	liveTimeout   = 30 * time.Second
	schemaTimeout = 15 * time.Second
)

// startNodes starts numNodes nodes (node/localcluster) in subdirectories of dir on free
// loopback ports, each joining through the first, and waits until every node sees every node
// live. With sharedNative, node i listens on 127.0.0.(i+1) with one native port shared by all,
// as CQL drivers expect of a cluster. On error it closes the nodes it started; the caller
// closes the cluster otherwise.
func startNodes(ctx context.Context, dir string, log *slog.Logger, sharedNative bool) (*localcluster.Cluster, error) {
	if !sharedNative {
		return startNodesOn(ctx, dir, log, nil, 0)
	}
	hosts := loopbackHosts(numNodes)
	return startShared(ctx, dir, log, hosts, func() (int, error) { return sharedPort(hosts) })
}

// startShared starts the nodes on hosts sharing a native port that pick finds free, trying
// another port up to sharedPortStarts times when a node finds its port taken.
func startShared(ctx context.Context, dir string, log *slog.Logger, hosts []string, pick func() (int, error)) (*localcluster.Cluster, error) {
	var err error
	for attempt := range sharedPortStarts {
		port, perr := pick()
		if perr != nil {
			return nil, fmt.Errorf("demo: %w (--protocol grpc needs only 127.0.0.1)", perr)
		}
		d := dir
		if attempt > 0 {
			d = filepath.Join(dir, fmt.Sprintf("retry%d", attempt))
		}
		var c *localcluster.Cluster
		if c, err = startNodesOn(ctx, d, log, hosts, port); !errors.Is(err, syscall.EADDRINUSE) {
			return c, err
		}
		// Another process bound the port between sharedPort's check and a node's: try another.
	}
	return nil, err
}

// sharedPortStarts is how many times startNodes starts the nodes on a shared native port that
// another process took first.
const sharedPortStarts = 3

// startNodesOn starts the nodes in dir: on hosts, sharing the native port port, unless hosts
// is nil.
func startNodesOn(ctx context.Context, dir string, log *slog.Logger, hosts []string, port int) (*localcluster.Cluster, error) {
	c, err := localcluster.Start(ctx, localcluster.Options{
		Dir:         dir,
		Nodes:       numNodes,
		ClusterName: clusterName,
		// The data is thrown away at the end; syncing every write would only make the demo
		// measure the disk.
		Sync:         false,
		Profile:      cluster.ProfileLocal,
		Logger:       log,
		LogKey:       "demo_node",
		StartTimeout: liveTimeout,
		Adjust: func(i int, cfg *node.Config) {
			if hosts != nil {
				cfg.Listen.Addr = net.JoinHostPort(hosts[i], "0")
				cfg.Listen.GossipAddr = net.JoinHostPort(hosts[i], "0")
				cfg.Listen.CQLAddr = net.JoinHostPort(hosts[i], strconv.Itoa(port))
			}
			// Three nodes share one process: keep their pebble caches small, but not as small as
			// a test's.
			cfg.Storage.CacheSize, cfg.Storage.MemTableSize = 16<<20, 4<<20
			// The node's default, not the test cluster's short one.
			cfg.Cluster.SchemaAgreementTimeout = 0
		},
	})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return c, nil
}

// waitSchemaAgreed waits until every node holds the same schema.
func waitSchemaAgreed(ctx context.Context, c *localcluster.Cluster) error {
	err := poll.Until(ctx, schemaTimeout, "every node holds the demo table", func() error {
		nodes := c.Nodes()
		for _, n := range nodes[1:] {
			if got, want := n.Node().SchemaDigest(), nodes[0].Node().SchemaDigest(); got != want {
				return fmt.Errorf("%s has schema %s, %s has %s", n.Name, got, nodes[0].Name, want)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

// loopbackHosts returns 127.0.0.1 to 127.0.0.n: Linux routes all of 127.0.0.0/8 to the loopback
// interface, so nodes on them need no setup to share a port.
func loopbackHosts(n int) []string {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = "127.0.0." + strconv.Itoa(i+1)
	}
	return hosts
}

// sharedPortAttempts is how many ports sharedPort tries.
const sharedPortAttempts = 20

// sharedPort returns a TCP port that is free on every one of hosts, checked by binding it on
// each. The port is released on return; a node started right after binds it again.
func sharedPort(hosts []string) (int, error) {
	var last error
	for range sharedPortAttempts {
		first, err := net.Listen("tcp", net.JoinHostPort(hosts[0], "0"))
		if err != nil {
			return 0, fmt.Errorf("listen on %s: %w", hosts[0], err)
		}
		port := first.Addr().(*net.TCPAddr).Port
		held := []net.Listener{first}
		ok := true
		for _, h := range hosts[1:] {
			l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
			if err != nil {
				last, ok = fmt.Errorf("no port free on every one of %v: %s: %w", hosts, h, err), false
				break
			}
			held = append(held, l)
		}
		for _, l := range held {
			l.Close()
		}
		if ok {
			return port, nil
		}
	}
	return 0, last
}
