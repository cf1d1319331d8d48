package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/kvnode/kvnode/internal/serveline"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/replica"
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
		DataDir:           cfg.DataDir,
		Addr:              cfg.Addr,
		GossipAddr:        cfg.GossipAddr,
		MetricsAddr:       cfg.MetricsAddr,
		Seeds:             cfg.Seeds,
		NumTokens:         cfg.NumTokens,
		LimiterCapacity:   cfg.LimiterCapacity,
		NoSync:            !cfg.Sync,
		Storage:           replica.Options{TombstoneFailureThreshold: uint32(cfg.TombstoneFailureThreshold)},
		MaxTimestampAhead: cfg.MaxTimestampAhead,
		MaxMutationSize:   cfg.MaxMutationSize,
		Logger:            logger,
	})
	if err != nil {
		return err
	}
	// Tools and tests read the first line to learn the node's real addresses (see serveline).
	line := serveline.Line{ID: n.ID(), Addr: n.Addr(), GossipAddr: n.GossipAddr(), MetricsAddr: n.MetricsAddr(), DataDir: cfg.DataDir}
	fmt.Fprintf(stdout, "%s\nconnect with: kvnode cql --addr %s\njoin more nodes with: kvnode serve --seeds %s ...\n",
		line, n.Addr(), n.GossipAddr())

	<-ctx.Done()
	logger.Info("shutting down")
	if err := n.Close(); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}
