package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kvnode/kvnode/tool/bench"
	"github.com/kvnode/kvnode/tool/cqlsh"
	"github.com/kvnode/kvnode/tool/demo"
	"github.com/kvnode/kvnode/tool/toppartitions"
)

func main() {
	ctx, stop := context.Background(), context.CancelFunc(func() {})
	// The shell handles Ctrl-C itself: it cancels the running statement or clears the input line,
	// and must not end the session. Every other command stops on SIGINT or SIGTERM.
	if len(os.Args) < 2 || os.Args[1] != "cql" {
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	}
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) && !errors.Is(err, cqlsh.ErrStatementFailed) {
			fmt.Fprintln(os.Stderr, "kvnode:", err)
		}
		os.Exit(1)
	}
}

const usage = `kvnode: a distributed key-value store with per-partition rate limits.

Usage:
  kvnode [serve] [flags]   run a node (the default command)
  kvnode cql [flags]       interactive CQL shell (-e 'STATEMENT', -f file.cql)
  kvnode bench [flags]     load generator (--json for a machine-readable summary)
  kvnode demo [flags]      a local 3-node cluster showing a hot partition held to its limit
  kvnode toppartitions [flags]
                           the partitions the rate limiters see as hottest, per table
  kvnode status [--json]   every node with its state, load, tokens and ownership
  kvnode decommission      stream a node's ranges to their next owners and leave the ring
  kvnode removenode HOST_ID
                           re-replicate a dead node's ranges and remove it from the ring
  kvnode cleanup           delete a node's data in the ranges it no longer replicates
  kvnode repair [flags] [KEYSPACE[.TABLE]]
                           make every replica of a node's ranges hold the same data

Run 'kvnode <command> -h' for the command's flags.
`

// run executes the command line args (without the program name). For every command but cql, ctx
// is canceled on SIGINT or SIGTERM.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return runServe(ctx, args, stdout, stderr)
	case "cql":
		return cqlsh.Run(ctx, args, stdin, stdout, stderr)
	case "bench":
		return bench.Run(ctx, args, stdout, stderr)
	case "demo":
		return demo.Run(ctx, args, stdout, stderr)
	case "toppartitions":
		return toppartitions.Run(ctx, args, stdout, stderr)
	case "status":
		return runStatus(ctx, args, stdout, stderr)
	case "decommission":
		return runDecommission(ctx, args, stdout, stderr)
	case "removenode":
		return runRemoveNode(ctx, args, stdout, stderr)
	case "cleanup":
		return runCleanup(ctx, args, stdout, stderr)
	case "repair":
		return runRepair(ctx, args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}
