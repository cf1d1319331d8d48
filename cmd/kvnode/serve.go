package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/kvnode/kvnode/node"
)

// runServe runs one node until ctx is canceled (SIGINT or SIGTERM), then shuts it down cleanly.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	level, _ := parseLogLevel(cfg.LogLevel) // validated by parseServeFlags
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	n, err := node.Start(ctx, node.Config{
		DataDir:         cfg.DataDir,
		Addr:            cfg.Addr,
		GossipAddr:      cfg.GossipAddr,
		MetricsAddr:     cfg.MetricsAddr,
		Seeds:           cfg.Seeds,
		NumTokens:       cfg.NumTokens,
		LimiterCapacity: cfg.LimiterCapacity,
		NoSync:          !cfg.Sync,
		Logger:          logger,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kvnode %s serving clients on %s (gossip %s", n.ID(), n.Addr(), n.GossipAddr())
	if m := n.MetricsAddr(); m != "" {
		fmt.Fprintf(stdout, ", metrics http://%s/metrics", m)
	}
	fmt.Fprintf(stdout, ", data %s)\nconnect with: kvnode cql --addr %s\njoin more nodes with: kvnode serve --seeds %s ...\n",
		cfg.DataDir, n.Addr(), n.GossipAddr())

	<-ctx.Done()
	logger.Info("shutting down")
	if err := n.Close(); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}
