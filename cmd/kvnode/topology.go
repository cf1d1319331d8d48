package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/tool/cliflags"
)

// The nodetool-like topology commands: status, decommission and removenode. They call the Admin
// service on a node's client gRPC address.

const defaultAdminAddr = "127.0.0.1:9043"

// adminFlags are the flags every topology command has.
type adminFlags struct {
	addr    string
	timeout time.Duration
	adminConn
}

// newAdminFlagSet returns the flag set of the topology command name with the flags every one
// has, bound to f; timeout is --timeout's default.
func newAdminFlagSet(name string, f *adminFlags, timeout time.Duration) *flag.FlagSet {
	fs := flag.NewFlagSet("kvnode "+name, flag.ContinueOnError)
	fs.StringVar(&f.addr, "addr", defaultAdminAddr, "the node's client gRPC address (host:port)")
	fs.DurationVar(&f.timeout, "timeout", timeout, "how long to wait for the node's answer")
	fs.StringVar(&f.username, "username", "", "log in as this superuser role (nodes started with --authenticator password); the password from "+cliflags.PasswordEnv)
	fs.StringVar(&f.password, "password", "", "the password of --username; better set "+cliflags.PasswordEnv+", which is not in the process list")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "connect over TLS, trusting the CA certificates in this PEM file (nodes started with --tls-cert)")
	return fs
}

// parseAdminFlags parses the flags of the topology command name: -h prints "Usage: kvnode "
// usage and the flags to stdout and returns flag.ErrHelp.
func parseAdminFlags(fs *flag.FlagSet, args []string, name, usage string, stdout io.Writer) error {
	return parseFlags(fs, args, name, stdout, func(w io.Writer) {
		fmt.Fprintf(w, "Usage: kvnode %s\n\nFlags:\n", usage)
		fs.SetOutput(w)
		fs.PrintDefaults()
	})
}

// adminCall dials f.addr and calls fn with an Admin client bounded by f.timeout.
func adminCall(ctx context.Context, f adminFlags, fn func(context.Context, kvnodepb.AdminClient) error) error {
	if f.timeout <= 0 {
		return fmt.Errorf("--timeout is %v, want more than 0", f.timeout)
	}
	return f.call(ctx, f.addr, f.timeout, func(ctx context.Context, conn *grpc.ClientConn) error {
		return fn(ctx, kvnodepb.NewAdminClient(conn))
	})
}

// statusJSON is kvnode status --json's output.
type statusJSON struct {
	Nodes      []statusNodeJSON   `json:"nodes"`
	AutoRepair string             `json:"auto_repair"`
	Repairs    []statusRepairJSON `json:"repairs"`
}

// statusRepairJSON is the serving node's repair state of one table; times are RFC 3339, and
// last_repaired is empty when no repair completed.
type statusRepairJSON struct {
	Keyspace     string `json:"keyspace"`
	Table        string `json:"table"`
	LastRepaired string `json:"last_repaired"`
	Due          string `json:"due"`
	RangesDone   uint32 `json:"ranges_done"`
	RangesTotal  uint32 `json:"ranges_total"`
}

type statusNodeJSON struct {
	HostID    string  `json:"host_id"`
	Address   string  `json:"address"`
	State     string  `json:"state"`
	Tokens    uint32  `json:"tokens"`
	LoadBytes int64   `json:"load_bytes"`
	Owns      float64 `json:"owns"`
	// DownReason is why a node that answers gossip is down: "disk full", "storage failed".
	DownReason string `json:"down_reason,omitempty"`
	DataCenter string `json:"data_center"`
	Rack       string `json:"rack"`
}

const statusUsage = `status [flags]

Lists every node of the ring as the node at --addr sees it: Up or Down, Normal, Joining or
Leaving, its load (bytes on disk), its tokens and its effective ownership: the share of the
token ring it holds a replica of, at the largest replication factor of any keyspace, so three
nodes with a keyspace at replication factor 3 own 100% each.

With --wait-nodes N it first waits, for at most --wait, until N nodes are up and normal (the
node at --addr may still be starting), as a script does before it uses a new cluster.`

// statusPollInterval is how often status --wait-nodes asks again.
const statusPollInterval = 200 * time.Millisecond

// statusConfig is one run of kvnode status.
type statusConfig struct {
	adminFlags
	json      bool
	waitNodes int
	wait      time.Duration
}

func parseStatusFlags(args []string, stdout io.Writer) (statusConfig, error) {
	var c statusConfig
	fs := newAdminFlagSet("status", &c.adminFlags, 10*time.Second)
	fs.BoolVar(&c.json, "json", false, `print {"nodes": [{"host_id", "address", "state", "tokens", "load_bytes", "owns", "data_center", "rack"}]}; owns is the effective ownership, 0 to 1`)
	fs.IntVar(&c.waitNodes, "wait-nodes", 0, "wait until this many nodes are up and normal before printing the status (0: do not wait)")
	fs.DurationVar(&c.wait, "wait", time.Minute, "how long --wait-nodes waits, such as 30s")
	if err := parseAdminFlags(fs, args, "status", statusUsage, stdout); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, cliflags.Usagef("status takes no arguments, got %q (kvnode status --help lists the flags)", fs.Args())
	case c.waitNodes < 0:
		return c, cliflags.Usagef("status: --wait-nodes %d is negative: want the number of nodes to wait for", c.waitNodes)
	case c.waitNodes > 0 && c.wait <= 0:
		return c, cliflags.Usagef("status: --wait %v with --wait-nodes: want a positive duration", c.wait)
	}
	return c, nil
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseStatusFlags(args, stdout)
	if err != nil {
		return err
	}
	var resp *kvnodepb.StatusResponse
	if c.waitNodes > 0 {
		resp, err = waitNodes(ctx, c, stderr)
	} else {
		resp, _, err = fetchStatus(ctx, c.adminFlags)
	}
	if resp != nil {
		if perr := printStatus(resp, c.json, time.Now(), stdout); err == nil {
			err = perr
		}
	}
	return err
}

// fetchStatus asks the node at f.addr for the ring's status. rpcErr is the call's own error,
// before adminCall adds the address to it.
func fetchStatus(ctx context.Context, f adminFlags) (resp *kvnodepb.StatusResponse, rpcErr, err error) {
	err = adminCall(ctx, f, func(ctx context.Context, api kvnodepb.AdminClient) error {
		resp, rpcErr = api.Status(ctx, &kvnodepb.StatusRequest{})
		return rpcErr
	})
	return resp, rpcErr, err
}

// waitNodes asks the node at c.addr for the status every statusPollInterval until c.waitNodes nodes are up
// and normal, for at most c.wait. A node that refuses connections or does not answer yet is
// asked again; any other error ends the wait. It tells stderr what it waits for, and again
// each time the count changes. On timeout it returns the last status it got, if any, with an
// error saying how many nodes were up and normal.
func waitNodes(ctx context.Context, c statusConfig, stderr io.Writer) (*kvnodepb.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.wait)
	defer cancel()
	tick := time.NewTicker(statusPollInterval)
	defer tick.Stop()
	var (
		last    *kvnodepb.StatusResponse
		lastErr error
		told    = -2 // the count last told to stderr; -1 is "no answer"
	)
	for {
		f := c.adminFlags
		if dl, ok := ctx.Deadline(); ok {
			f.timeout = max(min(f.timeout, time.Until(dl)), time.Millisecond)
		}
		resp, rpcErr, err := fetchStatus(ctx, f)
		up := -1
		switch {
		case err == nil:
			last, up = resp, upNormal(resp)
			if up >= c.waitNodes {
				return resp, nil
			}
		case ctx.Err() != nil: // the wait ended during the call; reported below
			lastErr = cmp.Or(lastErr, err)
		case notUpYet(rpcErr):
			lastErr = err
		default:
			return nil, err
		}
		if up != told && ctx.Err() == nil {
			if up < 0 {
				fmt.Fprintf(stderr, "waiting for %d nodes up and normal: the node at %s does not answer yet …\n", c.waitNodes, c.addr)
			} else {
				fmt.Fprintf(stderr, "waiting for %d nodes up and normal: %d so far …\n", c.waitNodes, up)
			}
			told = up
		}
		select {
		case <-ctx.Done():
			if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				return last, ctx.Err()
			}
			if last == nil {
				return nil, fmt.Errorf("status: no answer within --wait %v: %w", c.wait, lastErr)
			}
			return last, fmt.Errorf("status: %d of the %d nodes --wait-nodes asks for are up and normal after --wait %v", upNormal(last), c.waitNodes, c.wait)
		case <-tick.C:
		}
	}
}

// upNormal counts the nodes of resp that are up and normal (UN).
func upNormal(resp *kvnodepb.StatusResponse) int {
	n := 0
	for _, node := range resp.GetNodes() {
		if node.GetState() == "UN" {
			n++
		}
	}
	return n
}

// notUpYet reports whether err, from a call to a node's Admin service, means the node is not
// serving yet (the port refuses connections, or the call timed out) rather than a refusal.
func notUpYet(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	s, ok := status.FromError(err)
	return ok && (s.Code() == codes.Unavailable || s.Code() == codes.DeadlineExceeded)
}

// printStatus prints resp as a table, or as JSON; now tells which tables are due for repair.
func printStatus(resp *kvnodepb.StatusResponse, asJSON bool, now time.Time, stdout io.Writer) error {
	if asJSON {
		out := statusJSON{Nodes: []statusNodeJSON{}, AutoRepair: resp.GetAutoRepair(), Repairs: []statusRepairJSON{}}
		for _, n := range resp.GetNodes() {
			out.Nodes = append(out.Nodes, statusNodeJSON{HostID: n.GetHostId(), Address: n.GetAddress(), State: n.GetState(),
				Tokens: n.GetTokens(), LoadBytes: n.GetLoadBytes(), Owns: n.GetOwns(), DownReason: n.GetDownReason(),
				DataCenter: n.GetDataCenter(), Rack: n.GetRack()})
		}
		for _, r := range resp.GetRepairs() {
			rj := statusRepairJSON{Keyspace: r.GetKeyspace(), Table: r.GetTable(), RangesDone: r.GetRangesDone(), RangesTotal: r.GetRangesTotal(),
				Due: time.Unix(0, r.GetDueUnixNanos()).UTC().Format(time.RFC3339)}
			if at := r.GetLastRepairedUnixNanos(); at != 0 {
				rj.LastRepaired = time.Unix(0, at).UTC().Format(time.RFC3339)
			}
			out.Repairs = append(out.Repairs, rj)
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	// As nodetool status: a table per data center, in name order, with each node's rack.
	nodes := slices.Clone(resp.GetNodes())
	slices.SortStableFunc(nodes, func(a, b *kvnodepb.NodeStatus) int { return cmp.Compare(a.GetDataCenter(), b.GetDataCenter()) })
	for i, n := range nodes {
		if i > 0 && n.GetDataCenter() == nodes[i-1].GetDataCenter() {
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		dc := cmp.Or(n.GetDataCenter(), "(a node of a release that does not say)")
		fmt.Fprintf(stdout, "Datacenter: %s\n%s\n", dc, strings.Repeat("=", len("Datacenter: ")+len(dc)))
		fmt.Fprintln(stdout, "Status=Up/Down  State=Normal/Joining/Leaving/unRepaired (R: serves no reads until `kvnode repair` on it completes)")
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "--\tAddress\tLoad\tTokens\tOwns (effective)\tHost ID\tRack")
		for _, n := range nodes[i:] {
			if n.GetDataCenter() != nodes[i].GetDataCenter() {
				break
			}
			load := "?"
			if n.GetLoadBytes() >= 0 {
				load = humanBytes(n.GetLoadBytes())
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1f%%\t%s\t%s\n", n.GetState(), n.GetAddress(), load, n.GetTokens(), 100*n.GetOwns(), n.GetHostId(), n.GetRack())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, n := range resp.GetNodes() {
		if r := n.GetDownReason(); r != "" {
			fmt.Fprintf(stdout, "%s is down: %s (it refuses writes; its peers hint them until it says it takes them again)\n", n.GetHostId(), r)
		}
	}
	if _, err := fmt.Fprintln(stdout, "Owns (effective): the share of the ring each node replicates, at the largest replication factor (RF 3 on 3 nodes: 100% each)"); err != nil {
		return err
	}
	if len(resp.GetRepairs()) == 0 {
		return nil
	}
	fmt.Fprintf(stdout, "\nRepairs of this node (auto_repair: %s)\n", resp.GetAutoRepair())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Table\tLast complete repair\tNext automatic repair\tIn progress")
	for _, r := range resp.GetRepairs() {
		last := "never"
		if at := r.GetLastRepairedUnixNanos(); at != 0 {
			last = time.Unix(0, at).UTC().Format("2006-01-02 15:04:05 UTC")
		}
		next := "due"
		switch due := time.Unix(0, r.GetDueUnixNanos()); {
		case resp.GetAutoRepair() == "off":
			next = "-"
		case due.After(now):
			next = due.UTC().Format("2006-01-02 15:04:05 UTC")
		}
		progress := "-"
		if r.GetRangesTotal() > 0 {
			progress = fmt.Sprintf("%d/%d ranges", r.GetRangesDone(), r.GetRangesTotal())
		}
		fmt.Fprintf(tw, "%s.%s\t%s\t%s\t%s\n", cql.QuoteIdent(r.GetKeyspace()), cql.QuoteIdent(r.GetTable()), last, next, progress)
	}
	return tw.Flush()
}

func humanBytes(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := int64(unit), 0
	for n := b / unit; n >= unit; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}

func runDecommission(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f adminFlags
	fs := newAdminFlagSet("decommission", &f, 24*time.Hour)
	if err := parseAdminFlags(fs, args, "decommission", "decommission [flags]\n\nThe node at --addr streams its ranges to their next owners, then leaves the ring; stop it afterwards.", stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cliflags.Usagef("decommission takes no arguments (it decommissions the node at --addr), got %q", fs.Args())
	}
	return adminCall(ctx, f, func(ctx context.Context, api kvnodepb.AdminClient) error {
		resp, err := api.Decommission(ctx, &kvnodepb.DecommissionRequest{})
		if err == nil {
			fmt.Fprintf(stdout, "decommissioned the node at %s (%d entries streamed); it owns no data any more: stop it\n", f.addr, resp.GetEntriesStreamed())
		}
		return err
	})
}

func runRemoveNode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f adminFlags
	fs := newAdminFlagSet("removenode", &f, 24*time.Hour)
	if err := parseAdminFlags(fs, args, "removenode", "removenode [flags] HOST_ID\n\nThe node at --addr re-replicates the dead node HOST_ID's ranges from their surviving replicas, then removes it from the ring everywhere.", stdout); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cliflags.Usagef("removenode takes one argument, the host id of the dead node (see kvnode status), got %q", fs.Args())
	}
	id := fs.Arg(0)
	return adminCall(ctx, f, func(ctx context.Context, api kvnodepb.AdminClient) error {
		resp, err := api.RemoveNode(ctx, &kvnodepb.RemoveNodeRequest{HostId: id})
		if err == nil {
			fmt.Fprintf(stdout, "removed node %s (%d entries streamed to its ranges' new replicas)\n", id, resp.GetEntriesStreamed())
		}
		return err
	})
}

func runCleanup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f adminFlags
	fs := newAdminFlagSet("cleanup", &f, time.Hour)
	if err := parseAdminFlags(fs, args, "cleanup", "cleanup [flags]\n\nThe node at --addr deletes its data in the token ranges it no longer replicates. Nodes do so by themselves once a topology change has finished; this runs it now.", stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cliflags.Usagef("cleanup takes no arguments (it cleans up the node at --addr), got %q", fs.Args())
	}
	return adminCall(ctx, f, func(ctx context.Context, api kvnodepb.AdminClient) error {
		resp, err := api.Cleanup(ctx, &kvnodepb.CleanupRequest{})
		if err == nil {
			fmt.Fprintf(stdout, "cleaned up the node at %s: %d token ranges of %d tables deleted\n", f.addr, resp.GetRangesDeleted(), resp.GetTables())
		}
		return err
	})
}
