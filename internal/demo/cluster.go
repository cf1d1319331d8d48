package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/replica"
)

// numNodes is the size of the demo cluster, and the keyspace's replication factor.
const numNodes = 3

// clusterName keeps the demo's nodes apart from any real kvnode cluster on the same host.
const clusterName = "kvnode-demo"

// How long startup may take before the demo gives up.
const (
	liveTimeout   = 30 * time.Second
	schemaTimeout = 15 * time.Second
	pollInterval  = 10 * time.Millisecond
)

// startNodes starts numNodes nodes in subdirectories of dir on free loopback ports, each joining
// through the first. On error it closes the nodes it started. The caller closes the rest with
// closeNodes.
func startNodes(ctx context.Context, dir string, log *slog.Logger) ([]*node.Node, error) {
	var nodes []*node.Node
	for i := range numNodes {
		cfg := node.Config{
			DataDir:     filepath.Join(dir, fmt.Sprintf("node%d", i+1)),
			Addr:        "127.0.0.1:0",
			GossipAddr:  "127.0.0.1:0",
			ClusterName: clusterName,
			// The data is thrown away at the end; syncing every write would only make the demo
			// measure the disk.
			NoSync:  true,
			Profile: cluster.ProfileLocal,
			// Three nodes share one process: keep their pebble caches small.
			Storage: replica.Options{CacheSize: 16 << 20, MemTableSize: 4 << 20},
			Logger:  log.With("demo_node", i+1),
		}
		if i > 0 {
			cfg.Seeds = []string{nodes[0].GossipAddr()}
		}
		n, err := node.Start(ctx, cfg)
		if err != nil {
			closeNodes(nodes)
			return nil, fmt.Errorf("demo: start node %d: %w", i+1, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// closeNodes closes every node at once (each Close leaves the cluster, which takes a moment) and
// returns their errors joined.
func closeNodes(nodes []*node.Node) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			if err := n.Close(); err != nil {
				errs[i] = fmt.Errorf("node %d: %w", i+1, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// allLive reports whether every node sees every node live.
func allLive(nodes []*node.Node) bool {
	for _, n := range nodes {
		live := 0
		for _, m := range n.Cluster().Members() {
			if m.Live {
				live++
			}
		}
		if live != len(nodes) {
			return false
		}
	}
	return true
}

// schemaAgreed reports whether every node holds the same schema.
func schemaAgreed(nodes []*node.Node) bool {
	for _, n := range nodes[1:] {
		if n.SchemaDigest() != nodes[0].SchemaDigest() {
			return false
		}
	}
	return true
}

// waitUntil checks cond every pollInterval until it holds. It fails, saying what was awaited,
// when timeout passes first, and returns ctx's error when ctx ends first.
func waitUntil(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("demo: %s: not reached within %v", what, timeout)
		case <-tick.C:
		}
	}
	return nil
}
