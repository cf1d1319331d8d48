package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/internal/tlsconfig"
)

// DialTimeout bounds connecting to each address, so an address that drops packets fails the
// run instead of hanging it.
const DialTimeout = 10 * time.Second

// Run is kvnode bench: args are the arguments after "bench". It parses and validates the flags,
// runs the benchmark with progress on stdout (stderr with --json) and prints the summary on
// stdout: a table, or with --json exactly one JSON object (Summary). A cancelled ctx ends the
// run early; the summary of what ran is still printed and a note goes to stderr. -h prints the
// flags and returns nil.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := ParseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	progress := stdout
	if cfg.JSON {
		progress = stderr
	}
	sum, err := Execute(ctx, cfg, progress)
	if err != nil {
		return err
	}
	if cfg.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(sum)
	} else {
		err = sum.WriteText(stdout)
	}
	if err != nil {
		return fmt.Errorf("bench: write summary: %w", err)
	}
	if ctx.Err() != nil && sum.DurationS < cfg.Duration.Seconds() {
		fmt.Fprintf(stderr, "bench: interrupted after %.1fs of %v; the summary covers what ran\n", sum.DurationS, cfg.Duration)
	}
	return nil
}

// Execute runs the benchmark cfg describes and returns its summary: Open, Session.Run and
// Close. Over the native protocol it opens one gocql session on the contact points in
// cfg.Addrs; over gRPC it connects to every address (one client each). It learns the table with
// DESCRIBE TABLE, then issues operations for cfg.Duration. progress receives the progress
// display (nil for none): one updating line when it is a terminal, else a line per second. If
// ctx is cancelled during the run, operations in flight are cancelled (counted as
// ErrorCanceled) and the summary of what ran is returned with a nil error; errors are for runs
// that could not start (bad config, unreachable node, unusable table).
func Execute(ctx context.Context, cfg Config, progress io.Writer) (*Summary, error) {
	s, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Run(ctx, cfg, progress)
}

// Open connects to the cluster as cfg says (Protocol, Addrs, Coordinator, Consistency) and
// learns cfg.Table with DESCRIBE TABLE. The other fields of cfg are for Session.Run; cfg must
// be valid as a whole. Close releases the connections.
func Open(ctx context.Context, cfg Config) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	name, err := parseTable(cfg.Table)
	if err != nil {
		return nil, err
	}
	if cfg.Protocol == ProtocolCQL {
		return openNative(ctx, cfg, name)
	}
	clients := make([]*client.Client, 0, len(cfg.Addrs))
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	var copts []client.Option
	if cfg.TLSCA != "" {
		tlsCfg, err := tlsconfig.ClientConfig(cfg.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		copts = append(copts, client.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg))))
	}
	for _, addr := range cfg.Addrs {
		dctx, cancel := context.WithTimeout(ctx, DialTimeout)
		opts := copts
		if cfg.Username != "" {
			opts = append(opts[:len(opts):len(opts)], client.WithCredentials(cfg.Username, cfg.Password))
		}
		c, err := client.Dial(dctx, addr, opts...)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		clients = append(clients, c)
	}
	execs := make([]executor, len(clients))
	for i, c := range clients {
		execs[i] = c
	}
	table, err := describeTable(ctx, execs[0], name)
	if err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, table: table, clients: clients}
	clients = nil // the session owns them now
	return s, nil
}

// openNative is Open over the native protocol.
func openNative(ctx context.Context, cfg Config, name cql.TableName) (*Session, error) {
	cluster, err := newCluster(cfg)
	if err != nil {
		return nil, err
	}
	session, err := cluster.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("bench: connect to %s over the native protocol (--addrs names native addresses, port 9042 by default; for the gRPC API add --protocol grpc): %w",
			strings.Join(cfg.Addrs, ","), err)
	}
	desc, err := describeNative(ctx, session, name)
	if err != nil {
		session.Close()
		return nil, err
	}
	table, err := tableFromDescription(desc, name.Keyspace.Name)
	if err != nil {
		session.Close()
		return nil, err
	}
	return &Session{cfg: cfg, table: table, native: session}, nil
}
