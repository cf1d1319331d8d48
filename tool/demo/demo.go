package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node/localcluster"
	"github.com/kvnode/kvnode/tool/bench"
)

// The schema the demo creates.
const (
	keyspace = "demo"
	table    = keyspace + ".events"
)

// createKeyspace returns the demo's CREATE KEYSPACE statement.
func createKeyspace() string {
	return fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", keyspace, numNodes)
}

// createTable returns the demo's CREATE TABLE statement with a write limit of limit per second
// per partition.
func createTable(limit int) string {
	return fmt.Sprintf("CREATE TABLE %s (device text, seq bigint, reading double, note text, PRIMARY KEY (device, seq)) "+
		"WITH per_partition_rate_limit = {'max_writes_per_second': %d}", table, limit)
}

// ddlTimeout bounds each schema statement (which waits for the nodes to agree).
const ddlTimeout = 30 * time.Second

// Run is kvnode demo: args are the arguments after "demo". It starts a 3-node cluster in this
// process on free loopback ports with its data in a temporary directory, creates a table with a
// per-partition write limit, drives one hot partition over the limit beside background traffic,
// and prints one row per second and a reading of the results on stdout; then it stops the nodes
// and removes the directory. A cancelled ctx (Ctrl-C) ends the demo early, still cleaning up,
// with a note on stderr and a nil error. -h prints the flags and returns nil.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = execute(ctx, cfg, env{stdout: stdout, stderr: stderr})
	return err
}

// env is where a run writes and keeps its data.
type env struct {
	stdout, stderr io.Writer
	// tempParent is the directory the temporary data directory is created in; "" means
	// os.TempDir(). Tests set it to see that the directory is removed.
	tempParent string
}

// result is what a run did and measured.
type result struct {
	// Dir is the temporary data directory (removed by the time execute returns).
	Dir string
	// Seconds are the completed seconds of load, in order.
	Seconds []second
	// Interrupted says ctx ended before the demo did.
	Interrupted bool
}

// execute runs the demo cfg describes. The temporary directory is removed and every node
// stopped before it returns, whatever happened. When ctx ends first, the result holds what ran,
// Interrupted is set and the error is nil.
func execute(ctx context.Context, cfg Config, e env) (res *result, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	began := time.Now()
	dir, err := os.MkdirTemp(e.tempParent, "kvnode-demo-")
	if err != nil {
		return nil, fmt.Errorf("demo: create the temporary data directory: %w", err)
	}
	res = &result{Dir: dir}
	defer func() {
		rmErr := os.RemoveAll(dir)
		if ctx.Err() != nil {
			// The interruption explains whatever else failed; only a directory left behind
			// is still worth an error.
			res.Interrupted, err = true, nil
			fmt.Fprintf(e.stderr, "demo: interrupted after %.1fs; the nodes are stopped\n", time.Since(began).Seconds())
		}
		if rmErr != nil {
			err = errors.Join(err, fmt.Errorf("demo: remove the temporary data directory %s: %w", dir, rmErr))
			return
		}
		if res.Interrupted {
			fmt.Fprintf(e.stderr, "demo: removed %s\n", dir)
		} else if err == nil {
			fmt.Fprintf(e.stdout, "\nDone in %.1fs.\n", time.Since(began).Seconds())
		}
	}()

	log := slog.New(slog.DiscardHandler)
	if cfg.Verbose {
		log = slog.New(slog.NewTextHandler(e.stderr, nil))
	}
	out := e.stdout
	fmt.Fprintf(out, "kvnode demo: a %d-node cluster in this process, a table with a per-partition write limit,\n", numNodes)
	fmt.Fprintf(out, "and one hot partition offered %.1f× that limit beside ordinary background traffic.\n\n", float64(cfg.HotRate)/float64(cfg.Limit))

	fmt.Fprintf(out, "Starting %d nodes on loopback, data in %s (temporary; writes are not synced to disk)\n", numNodes, dir)
	native := cfg.Protocol == bench.ProtocolCQL
	c, err := startNodes(ctx, dir, log, native)
	if err != nil {
		return res, err
	}
	defer func() {
		fmt.Fprintf(out, "\nStopping the %d nodes and removing %s\n", numNodes, dir)
		if cerr := c.Close(); cerr != nil {
			// The directory is removed next in any case; a node that did not leave cleanly is
			// worth a warning, not a failed demo.
			fmt.Fprintf(e.stderr, "demo: warning: stopping the nodes: %v\n", cerr)
		}
	}()
	addrs := make([]string, numNodes)
	for i, n := range c.Nodes() {
		addrs[i] = n.Addr()
		if native {
			addrs[i] = n.Node().CQLAddr()
		}
		fmt.Fprintf(out, "  node %d  id %s  cql %s  grpc %s  gossip %s\n", i+1, n.ID, n.Node().CQLAddr(), n.Addr(), n.Node().GossipAddr())
	}
	fmt.Fprintf(out, "  all %d nodes see each other as live after %.1fs\n\n", numNodes, time.Since(began).Seconds())

	fmt.Fprintf(out, "Creating the schema through node 1:\n")
	if err := createSchema(ctx, out, c, cfg.Limit); err != nil {
		return res, err
	}

	sess, err := openSession(ctx, cfg, addrs)
	if err != nil {
		return res, err
	}
	defer sess.Close()
	seconds, err := runLoad(ctx, cfg, sess, addrs, out)
	res.Seconds = seconds
	if err != nil || ctx.Err() != nil {
		return res, err
	}
	writeReading(out, cfg, seconds)
	return res, nil
}

// createSchema creates the demo keyspace and table through the first node, printing each
// statement, and waits until every node holds the new schema.
func createSchema(ctx context.Context, out io.Writer, c *localcluster.Cluster, limit int) error {
	dctx, cancel := context.WithTimeout(ctx, ddlTimeout)
	defer cancel()
	cl := c.Node(0).Client()
	for _, stmt := range []string{createKeyspace(), createTable(limit)} {
		fmt.Fprintf(out, "  %s;\n", stmt)
		if _, err := cl.Execute(dctx, client.Quorum, stmt); err != nil {
			return fmt.Errorf("demo: %s: %w", stmt, err)
		}
	}
	if err := waitSchemaAgreed(ctx, c); err != nil {
		return err
	}
	fmt.Fprintln(out)
	return nil
}
