package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/snapshot"
	"github.com/kvnode/kvnode/tool/cliflags"
)

const snapshotUsage = `Usage: kvnode snapshot [flags] [KEYSPACE[.TABLE]]
       kvnode snapshot --list
       kvnode snapshot --clear TAG | --clear --all
       kvnode snapshot --restore TAG [KEYSPACE[.TABLE]]

Takes a snapshot of node --addr's tables (every table, the tables of KEYSPACE, or KEYSPACE.TABLE),
as nodetool snapshot does: a pebble checkpoint under the node's data directory, in
snapshots/TAG/, whose files are hard links to the node's (taking one costs a flush, not a copy),
with a manifest.json holding the CQL that recreates the tables. A snapshot holds one node's
replicas: snapshot every node for the whole cluster's data. Nodes also take one of a table
before DROP TABLE, DROP KEYSPACE and TRUNCATE remove its data (auto_snapshot), tagged
dropped-<ms>-KEYSPACE.TABLE or truncated-<ms>-KEYSPACE.TABLE.

--list lists the node's snapshots with their size (each file once) and true size (the files the
live data no longer shares: what --clear frees). --clear removes one snapshot, or all with --all.
--restore writes a snapshot's tables into the tables of the same names, which must exist (create
them from the manifest's CQL), to their current replicas; docs/operations.md, "Snapshots and
restore", gives the whole procedure.

Flags:
`

// snapshotConfig is one run of kvnode snapshot.
type snapshotConfig struct {
	addr            string
	tag             string
	list, all, json bool
	clear           bool
	restore         string
	keyspace, table string
	timeout         time.Duration
	adminConn
}

// parseSnapshotFlags parses snapshot's flags and arguments. With -h it prints the usage to help
// and returns flag.ErrHelp; a mistake in args is a *cliflags.UsageError.
func parseSnapshotFlags(args []string, help io.Writer) (snapshotConfig, error) {
	var c snapshotConfig
	fs := flag.NewFlagSet("kvnode snapshot", flag.ContinueOnError)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:9043", "client gRPC `address` of the node (host:port)")
	fs.StringVar(&c.tag, "tag", "", "`name` of the snapshot to take (letters, digits, '.', '_', '-'); default: the time in milliseconds")
	fs.BoolVar(&c.list, "list", false, "list the node's snapshots")
	fs.BoolVar(&c.clear, "clear", false, "remove the snapshot TAG (the argument), or every snapshot with --all")
	fs.BoolVar(&c.all, "all", false, "with --clear: remove every snapshot of the node")
	fs.StringVar(&c.restore, "restore", "", "restore the snapshot `tag` (all its tables, or KEYSPACE[.TABLE] of them) into the existing tables of the same names")
	fs.DurationVar(&c.timeout, "timeout", time.Hour, "how long to wait for the node")
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	fs.StringVar(&c.username, "username", "", "log in as this superuser `role` (nodes started with --authenticator password); the password from KVNODE_PASSWORD")
	fs.StringVar(&c.password, "password", "", "the `password` of --username; better set KVNODE_PASSWORD, which is not in the process list")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "connect over TLS, trusting the CA certificates in this PEM `file` (nodes started with --tls-cert)")
	var rest []string
	for {
		if err := parseFlags(fs, args, "snapshot", help, func(w io.Writer) {
			fmt.Fprint(w, snapshotUsage)
			fs.SetOutput(w)
			fs.PrintDefaults()
		}); err != nil {
			return c, err
		}
		if fs.NArg() == 0 {
			break
		}
		rest, args = append(rest, fs.Arg(0)), fs.Args()[1:]
	}
	if c.addr == "" {
		return c, cliflags.Usagef("snapshot: --addr is empty: want host:port")
	}
	if c.timeout <= 0 {
		return c, cliflags.Usagef("snapshot: --timeout %v is not positive", c.timeout)
	}
	modes := 0
	for _, on := range []bool{c.list, c.clear, c.restore != ""} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		return c, cliflags.Usagef("snapshot: give at most one of --list, --clear and --restore")
	}
	if c.all && !c.clear {
		return c, cliflags.Usagef("snapshot: --all goes with --clear")
	}
	if c.tag != "" && modes > 0 {
		return c, cliflags.Usagef("snapshot: --tag names a snapshot to take; --clear and --restore take the tag as their argument")
	}
	switch {
	case c.list:
		if len(rest) > 0 {
			return c, cliflags.Usagef("snapshot: --list takes no argument, got %q", rest[0])
		}
		return c, nil
	case c.clear:
		switch {
		case c.all && len(rest) > 0:
			return c, cliflags.Usagef("snapshot: --clear --all takes no tag, got %q", rest[0])
		case !c.all && len(rest) != 1:
			return c, cliflags.Usagef("snapshot: --clear needs one TAG (or --all to remove every snapshot)")
		case !c.all:
			c.tag = rest[0]
			if err := snapshot.CheckTag(c.tag); err != nil {
				return c, cliflags.Usagef("snapshot: %v", err)
			}
		}
		return c, nil
	case c.restore != "":
		if err := snapshot.CheckTag(c.restore); err != nil {
			return c, cliflags.Usagef("snapshot: --restore: %v", err)
		}
	default:
		if c.tag != "" {
			if err := snapshot.CheckTag(c.tag); err != nil {
				return c, cliflags.Usagef("snapshot: --tag: %v", err)
			}
		}
	}
	if len(rest) > 1 {
		return c, cliflags.Usagef("snapshot: unexpected argument %q: give at most one KEYSPACE or KEYSPACE.TABLE", rest[1])
	}
	if len(rest) == 1 {
		var err error
		if c.keyspace, c.table, err = parseTarget("snapshot", rest[0]); err != nil {
			return c, err
		}
	}
	return c, nil
}

// runSnapshot is `kvnode snapshot`.
func runSnapshot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseSnapshotFlags(args, stdout)
	if err != nil {
		return err
	}
	var out any
	err = c.call(ctx, c.addr, c.timeout, func(ctx context.Context, conn *grpc.ClientConn) error {
		api := kvnodepb.NewSnapshotClient(conn)
		switch {
		case c.list:
			resp, err := api.List(ctx, &kvnodepb.ListSnapshotsRequest{})
			if err != nil {
				return err
			}
			out = resp
			if !c.json {
				printSnapshots(stdout, resp.GetSnapshots())
			}
		case c.clear:
			resp, err := api.Clear(ctx, &kvnodepb.ClearSnapshotsRequest{Tag: c.tag})
			if err != nil {
				return err
			}
			out = resp
			if !c.json {
				if len(resp.GetCleared()) == 0 {
					fmt.Fprintln(stdout, "no snapshots to clear")
				}
				for _, t := range resp.GetCleared() {
					fmt.Fprintf(stdout, "cleared snapshot %s\n", t)
				}
			}
		case c.restore != "":
			resp, err := api.Restore(ctx, &kvnodepb.RestoreSnapshotRequest{Tag: c.restore, Keyspace: c.keyspace, Table: c.table})
			if err != nil {
				return err
			}
			out = resp
			if !c.json {
				for _, t := range resp.GetTables() {
					fmt.Fprintf(stdout, "%s.%s: restored %d partitions (%s) to their replicas\n",
						cql.QuoteIdent(t.Keyspace), cql.QuoteIdent(t.Table), t.Partitions, humanBytes(int64(t.Bytes)))
				}
			}
		default:
			start := time.Now()
			resp, err := api.Take(ctx, &kvnodepb.TakeSnapshotRequest{Tag: c.tag, Keyspace: c.keyspace, Table: c.table})
			if err != nil {
				return err
			}
			out = resp
			if !c.json {
				fmt.Fprintf(stdout, "snapshot %s of %s (%d tables) taken in %v: %s on disk, %s not shared with the live data\n  %s\n",
					resp.Tag, scopeString(resp), len(resp.Tables), time.Since(start).Round(time.Millisecond),
					humanBytes(resp.Bytes), humanBytes(resp.TrueBytes), resp.Path)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return nil
}

// scopeString is how a snapshot's scope reads: node, keyspace ks or table ks.t.
func scopeString(s *kvnodepb.SnapshotInfo) string {
	switch s.Scope {
	case snapshot.ScopeKeyspace:
		return "keyspace " + cql.QuoteIdent(s.Keyspace)
	case snapshot.ScopeTable:
		return "table " + cql.QuoteIdent(s.Keyspace) + "." + cql.QuoteIdent(s.Table)
	}
	return s.Scope
}

// printSnapshots prints the snapshots as a table.
func printSnapshots(w io.Writer, list []*kvnodepb.SnapshotInfo) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no snapshots")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Tag\tScope\tReason\tCreated\tSize\tTrue size\tTables")
	for _, s := range list {
		tables := strings.Join(s.Tables, ",")
		if len(tables) > 60 {
			tables = fmt.Sprintf("%d tables", len(s.Tables))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Tag, scopeString(s), s.Reason,
			time.Unix(0, s.CreatedUnixNanos).UTC().Format(time.RFC3339), humanBytes(s.Bytes), humanBytes(s.TrueBytes), tables)
	}
	tw.Flush()
}
