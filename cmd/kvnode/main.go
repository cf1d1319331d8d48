package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kvnode/kvnode/tool/bench"
	"github.com/kvnode/kvnode/tool/cliflags"
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
	os.Exit(exitStatus(err, os.Stderr))
}

// exitStatus reports err on stderr, unless it was reported already, and returns the process's
// exit status: 0 for success and for -h, 2 for a mistake on the command line (an unknown
// command, flag or argument), 1 for any other failure.
func exitStatus(err error, stderr io.Writer) int {
	var usage *cliflags.UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, cqlsh.ErrStatementFailed):
		return 1 // the shell printed the failed statement's error
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, "kvnode:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "kvnode:", err)
		return 1
	}
}

const usage = `kvnode: a distributed key-value store with per-partition rate limits.

Usage:
  kvnode <command> [flags]
  kvnode [flags]                the same as kvnode serve [flags]

Commands:
  serve          run a node (the default command)
  cql            a CQL shell: interactive, or -e 'STATEMENT; ...', or -f file.cql
  bench          a load generator with a per-second summary (--json for a machine-readable one)
  demo           a 3-node cluster in one process showing a hot partition held to its limit
  toppartitions  the partitions the rate limiters see as hottest, per table
  status         every node with its state, load, tokens and effective ownership
  decommission   stream a node's ranges to their next owners and leave the ring
  removenode     re-replicate a dead node's ranges and remove it from the ring
  cleanup        delete a node's data in the ranges it no longer replicates
  repair         make every replica of a node's ranges hold the same data
  snapshot       take, list, clear and restore a node's snapshots (pebble checkpoints)
  help           this text; kvnode help <command> is kvnode <command> --help

Run 'kvnode <command> --help' for the command's flags.
`

// commandFunc runs one command with the arguments after its name.
type commandFunc func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

// command returns the command called name; help is run's own.
func command(name string) (commandFunc, bool) {
	tool := func(f func(context.Context, []string, io.Writer, io.Writer) error) commandFunc {
		return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return f(ctx, args, stdout, stderr)
		}
	}
	switch name {
	case "serve":
		return tool(runServe), true
	case "cql":
		return cqlsh.Run, true
	case "bench":
		return tool(bench.Run), true
	case "demo":
		return tool(demo.Run), true
	case "toppartitions":
		return tool(toppartitions.Run), true
	case "status":
		return tool(runStatus), true
	case "decommission":
		return tool(runDecommission), true
	case "removenode":
		return tool(runRemoveNode), true
	case "cleanup":
		return tool(runCleanup), true
	case "repair":
		return tool(runRepair), true
	case "snapshot":
		return tool(runSnapshot), true
	}
	return nil, false
}

// run executes the command line args (without the program name). For every command but cql, ctx
// is canceled on SIGINT or SIGTERM. A mistake on the command line is a *cliflags.UsageError.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return runServe(ctx, nil, stdout, stderr)
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if args[0] == "help" && len(args) > 1 {
			if _, ok := command(args[1]); !ok {
				return cliflags.Usagef("help: unknown command %q (kvnode --help lists the commands)", args[1])
			}
			return run(ctx, []string{args[1], "--help"}, stdin, stdout, stderr)
		}
		_, err := io.WriteString(stdout, usage)
		return err
	}
	if args[0][0] == '-' {
		return runServe(ctx, args, stdout, stderr) // kvnode --data-dir ... is kvnode serve --data-dir ...
	}
	cmd, ok := command(args[0])
	if !ok {
		return cliflags.Usagef("unknown command %q (kvnode --help lists the commands)", args[0])
	}
	return cmd(ctx, args[1:], stdin, stdout, stderr)
}
