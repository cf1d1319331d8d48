package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/kvnode/kvnode/internal/serveline"
	"github.com/kvnode/kvnode/node"
)

// runServe runs one node until ctx is canceled (SIGINT or SIGTERM), then shuts it down, letting
// in-flight requests finish for up to the configured shutdown grace.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	nc := cfg.nodeConfig()
	nc.Logger = logger

	n, err := node.Start(ctx, nc)
	if err != nil {
		return err
	}
	// Tools and tests read the first line to learn the node's real addresses (see serveline).
	line := serveline.Line{ID: n.ID(), Addr: n.Addr(), GossipAddr: n.GossipAddr(), MetricsAddr: n.MetricsAddr(), DataDir: cfg.DataDir}
	fmt.Fprintf(stdout, "%s\nCQL native protocol (drivers) on %s\nconnect with: kvnode cql --addr %s\njoin more nodes with: kvnode serve --seeds %s ...\n",
		line, n.CQLAddr(), n.Addr(), n.GossipAddr())

	<-ctx.Done()
	logger.Info("shutting down", "grace", cfg.ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}
