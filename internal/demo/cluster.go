package demo

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/internal/testcluster"
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
)

// startNodes starts numNodes nodes (internal/testcluster) in subdirectories of dir on free
// loopback ports, each joining through the first, and waits until every node sees every node
// live. On error it closes the nodes it started; the caller closes the cluster otherwise.
func startNodes(ctx context.Context, dir string, log *slog.Logger) (*testcluster.Cluster, error) {
	c, err := testcluster.Start(ctx, testcluster.Options{
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
		Adjust: func(_ int, cfg *node.Config) {
			// Three nodes share one process: keep their pebble caches small, but not as small as
			// a test's.
			cfg.Storage = replica.Options{CacheSize: 16 << 20, MemTableSize: 4 << 20}
			// The node's default, not the test cluster's short one.
			cfg.SchemaAgreementTimeout = 0
		},
	})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return c, nil
}

// waitSchemaAgreed waits until every node holds the same schema.
func waitSchemaAgreed(ctx context.Context, c *testcluster.Cluster) error {
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
