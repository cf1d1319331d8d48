package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"

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

func newAdminFlagSet(name, usage string, stderr io.Writer, f *adminFlags, timeout time.Duration) *flag.FlagSet {
	fs := flag.NewFlagSet("kvnode "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.addr, "addr", defaultAdminAddr, "the node's client gRPC address (host:port)")
	fs.DurationVar(&f.timeout, "timeout", timeout, "how long to wait for the node's answer")
	fs.StringVar(&f.username, "username", "", "log in as this superuser role (nodes started with --authenticator password); the password from "+cliflags.PasswordEnv)
	fs.StringVar(&f.password, "password", "", "the password of --username; better set "+cliflags.PasswordEnv+", which is not in the process list")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "connect over TLS, trusting the CA certificates in this PEM file (nodes started with --tls-cert)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: kvnode %s\n\n", usage)
		fs.PrintDefaults()
	}
	return fs
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
	Nodes []statusNodeJSON `json:"nodes"`
}

type statusNodeJSON struct {
	HostID    string  `json:"host_id"`
	Address   string  `json:"address"`
	State     string  `json:"state"`
	Tokens    uint32  `json:"tokens"`
	LoadBytes int64   `json:"load_bytes"`
	Owns      float64 `json:"owns"`
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f adminFlags
	fs := newAdminFlagSet("status", "status [--addr HOST:PORT] [--json]", stderr, &f, 10*time.Second)
	asJSON := fs.Bool("json", false, `print {"nodes": [{"host_id", "address", "state", "tokens", "load_bytes", "owns"}]}`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("status takes no arguments, got %q", fs.Args())
	}
	var resp *kvnodepb.StatusResponse
	err := adminCall(ctx, f, func(ctx context.Context, api kvnodepb.AdminClient) (err error) {
		resp, err = api.Status(ctx, &kvnodepb.StatusRequest{})
		return err
	})
	if err != nil {
		return err
	}
	if *asJSON {
		out := statusJSON{Nodes: []statusNodeJSON{}}
		for _, n := range resp.GetNodes() {
			out.Nodes = append(out.Nodes, statusNodeJSON{HostID: n.GetHostId(), Address: n.GetAddress(), State: n.GetState(),
				Tokens: n.GetTokens(), LoadBytes: n.GetLoadBytes(), Owns: n.GetOwns()})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintln(stdout, "Status=Up/Down  State=Normal/Joining/Leaving")
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "--\tAddress\tLoad\tTokens\tOwns\tHost ID")
	for _, n := range resp.GetNodes() {
		load := "?"
		if n.GetLoadBytes() >= 0 {
			load = humanBytes(n.GetLoadBytes())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1f%%\t%s\n", n.GetState(), n.GetAddress(), load, n.GetTokens(), 100*n.GetOwns(), n.GetHostId())
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
	fs := newAdminFlagSet("decommission", "decommission [--addr HOST:PORT]\n\nThe node at --addr streams its ranges to their next owners, then leaves the ring; stop it afterwards.", stderr, &f, 24*time.Hour)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("decommission takes no arguments (it decommissions the node at --addr), got %q", fs.Args())
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
	fs := newAdminFlagSet("removenode", "removenode [--addr HOST:PORT] HOST_ID\n\nThe node at --addr re-replicates the dead node HOST_ID's ranges from their surviving replicas, then removes it from the ring everywhere.", stderr, &f, 24*time.Hour)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("removenode takes one argument, the host id of the dead node (see kvnode status)")
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
	fs := newAdminFlagSet("cleanup", "cleanup [--addr HOST:PORT]\n\nThe node at --addr deletes its data in the token ranges it no longer replicates. Nodes do so by themselves once a topology change has finished; this runs it now.", stderr, &f, time.Hour)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("cleanup takes no arguments (it cleans up the node at --addr), got %q", fs.Args())
	}
	return adminCall(ctx, f, func(ctx context.Context, api kvnodepb.AdminClient) error {
		resp, err := api.Cleanup(ctx, &kvnodepb.CleanupRequest{})
		if err == nil {
			fmt.Fprintf(stdout, "cleaned up the node at %s: %d token ranges of %d tables deleted\n", f.addr, resp.GetRangesDeleted(), resp.GetTables())
		}
		return err
	})
}
