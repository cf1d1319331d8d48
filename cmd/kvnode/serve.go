package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/kvnode/kvnode/internal/serveline"
	"github.com/kvnode/kvnode/node"
)

// runServe runs one node until ctx is canceled (SIGINT or SIGTERM), then shuts it down, letting
// in-flight requests finish for up to the configured shutdown grace.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, stdout)
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
	line := serveline.Line{ID: n.ID(), Addr: n.Addr(), GossipAddr: n.GossipAddr(), InternodeAddr: n.InternodeAddr(), MetricsAddr: n.MetricsAddr(), DataDir: cfg.DataDir}
	login := ""
	if nc.Authenticator == node.AuthenticatorPassword {
		login = " -u admin (the password in KVNODE_PASSWORD)"
	}
	// kvnode cql speaks the native protocol by default: give it the native address.
	fmt.Fprintf(stdout, "%s\nCQL native protocol (drivers) on %s\nconnect with: kvnode cql --addr %s%s\njoin more nodes with: kvnode serve --seeds %s ...\n",
		line, n.CQLAddr(), n.CQLAddr(), login, n.GossipAddr())

	// SIGHUP rereads the TLS files and the gossip key file, as operators expect of a daemon.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-hup:
			if err := n.Reload(); err != nil {
				logger.Error("SIGHUP: reload failed; keeping the TLS material and gossip keys in use", "err", err)
			} else {
				logger.Info("SIGHUP: reloaded the TLS material and gossip keys")
			}
		}
	}
	logger.Info("shutting down", "grace", cfg.ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}
