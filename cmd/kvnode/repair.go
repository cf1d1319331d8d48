package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/tool/cliflags"
)

const repairUsage = `Usage: kvnode repair [flags] [KEYSPACE[.TABLE]]

Repairs the token ranges node --addr replicates, as nodetool repair does: for each table (every
table, the tables of KEYSPACE, or KEYSPACE.TABLE), every replica of each range is compared by
hashes and only the partitions that differ are streamed, newest write winning, tombstones
included. Once all of a table's ranges are repaired, the node may purge its tombstones older
than gc_grace_seconds. Run it on every node at least once every gc_grace_seconds (10 days by
default). It exits with status 1 when some range could not be repaired (a replica down).

Flags:
`

// repairConfig is one run of kvnode repair.
type repairConfig struct {
	addr            string
	keyspace, table string
	timeout         time.Duration
	json            bool
	adminConn
}

// parseRepairFlags parses repair's flags and target. With -h it prints the usage to help and
// returns flag.ErrHelp; a mistake in args is a *cliflags.UsageError.
func parseRepairFlags(args []string, help io.Writer) (repairConfig, error) {
	var c repairConfig
	fs := flag.NewFlagSet("kvnode repair", flag.ContinueOnError)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:9043", "client gRPC `address` of the node to repair (host:port)")
	fs.DurationVar(&c.timeout, "timeout", 24*time.Hour, "how long to wait for the repair to finish")
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	fs.StringVar(&c.username, "username", "", "log in as this superuser `role` (nodes started with --authenticator password); the password from KVNODE_PASSWORD")
	fs.StringVar(&c.password, "password", "", "the `password` of --username; better set KVNODE_PASSWORD, which is not in the process list")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "connect over TLS, trusting the CA certificates in this PEM `file` (nodes started with --tls-cert)")
	var target string
	for {
		if err := parseFlags(fs, args, "repair", help, func(w io.Writer) {
			fmt.Fprint(w, repairUsage)
			fs.SetOutput(w)
			fs.PrintDefaults()
		}); err != nil {
			return c, err
		}
		if fs.NArg() == 0 {
			break
		}
		if target != "" {
			return c, cliflags.Usagef("repair: unexpected argument %q: give at most one KEYSPACE or KEYSPACE.TABLE", fs.Arg(0))
		}
		target, args = fs.Arg(0), fs.Args()[1:]
	}
	if c.addr == "" {
		return c, cliflags.Usagef("repair: --addr is empty: want host:port")
	}
	if c.timeout <= 0 {
		return c, cliflags.Usagef("repair: --timeout %v is not positive", c.timeout)
	}
	if target != "" {
		var err error
		if c.keyspace, c.table, err = parseTarget("repair", target); err != nil {
			return c, err
		}
	}
	return c, nil
}

// parseTarget reads the KEYSPACE or KEYSPACE.TABLE argument of command cmd (repair,
// snapshot), with CQL's quoting and case rules; table is empty for a keyspace.
func parseTarget(cmd, target string) (keyspace, table string, err error) {
	st, err := cql.ParseStatement("DESCRIBE TABLE " + target)
	d, ok := st.(*cql.DescribeStmt)
	if err != nil || !ok || d.Kind != cql.DescribeTable {
		return "", "", cliflags.Usagef("%s: %q is not a keyspace or keyspace.table", cmd, target)
	}
	if d.Table.Keyspace.Name == "" {
		return d.Table.Name.Name, "", nil
	}
	return d.Table.Keyspace.Name, d.Table.Name.Name, nil
}

// runRepair is `kvnode repair`.
func runRepair(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseRepairFlags(args, stdout)
	if err != nil {
		return err
	}
	var resp *kvnodepb.RepairResponse
	if err := c.call(ctx, c.addr, c.timeout, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		resp, err = kvnodepb.NewRepairClient(conn).Repair(ctx, &kvnodepb.RepairRequest{Keyspace: c.keyspace, Table: c.table})
		return err
	}); err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	failed := 0
	if c.json {
		type table struct {
			Keyspace           string   `json:"keyspace"`
			Table              string   `json:"table"`
			Ranges             uint32   `json:"ranges"`
			RangesFailed       uint32   `json:"ranges_failed"`
			LeavesMismatched   uint64   `json:"leaves_mismatched"`
			PartitionsStreamed uint64   `json:"partitions_streamed"`
			BytesStreamed      uint64   `json:"bytes_streamed"`
			Errors             []string `json:"errors,omitempty"`
		}
		out := struct {
			Tables []table `json:"tables"`
		}{Tables: []table{}}
		for _, t := range resp.GetTables() {
			out.Tables = append(out.Tables, table{t.Keyspace, t.Table, t.Ranges, t.RangesFailed, t.LeavesMismatched, t.PartitionsStreamed, t.BytesStreamed, t.Errors})
			failed += int(t.RangesFailed)
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		for _, t := range resp.GetTables() {
			fmt.Fprintf(stdout, "%s.%s: %d ranges compared, %d failed, %d leaves differed, %d partitions streamed (%d bytes)\n",
				cql.QuoteIdent(t.Keyspace), cql.QuoteIdent(t.Table), t.Ranges, t.RangesFailed, t.LeavesMismatched, t.PartitionsStreamed, t.BytesStreamed)
			for _, e := range t.Errors {
				fmt.Fprintf(stdout, "  failed: %s\n", e)
			}
			failed += int(t.RangesFailed)
		}
		if len(resp.GetTables()) == 0 {
			fmt.Fprintln(stdout, "no tables to repair")
		}
	}
	if failed > 0 {
		return fmt.Errorf("repair: %d ranges could not be repaired; run it again once every replica is up", failed)
	}
	return nil
}
