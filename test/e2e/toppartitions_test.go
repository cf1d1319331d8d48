package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
)

// topPartitionsJSON is the part of kvnode toppartitions --json the test reads.
type topPartitionsJSON struct {
	Tables []struct {
		Keyspace   string `json:"keyspace"`
		Table      string `json:"table"`
		Partitions []struct {
			Op                    string  `json:"op"`
			Key                   []any   `json:"partition_key"`
			KeyText               string  `json:"partition_key_text"`
			EstimatedOpsPerSecond float64 `json:"estimated_ops_per_second"`
			Limit                 uint32  `json:"limit"`
			RejectedShare         float64 `json:"rejected_share"`
			Nodes                 int     `json:"nodes"`
		} `json:"partitions"`
	} `json:"tables"`
	UnreachableNodes []string `json:"unreachable_nodes"`
}

// TestTopPartitionsFindsTheHotKey runs the hot-partition load of kvnode bench (one partition
// offered ten times its write limit through round-robin coordinators, beside light traffic on
// 200 others) against a 3-node cluster, and checks that kvnode toppartitions, asked on any
// node while the load runs, lists the hot key first, well above its limit, seen by every node.
func TestTopPartitionsFindsTheHotKey(t *testing.T) {
	skipShort(t)
	tc := startCluster(t, 3, false)
	const limit = 100
	n1 := tc.nodes[0]
	execute(t, n1.Client(), client.One, "CREATE KEYSPACE top WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	execute(t, n1.Client(), client.One, fmt.Sprintf("CREATE TABLE top.hot (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': %d}", limit))

	var addrs []string
	for _, n := range tc.nodes {
		addrs = append(addrs, n.Addr)
	}
	// The load runs until the checks are done; cleanup stops it.
	ctx, cancel := context.WithCancel(context.Background())
	bench := exec.CommandContext(ctx, kvnodeBinary, "bench",
		// Over the gRPC API: these nodes listen on ports of their own, and a CQL driver wants
		// one port for the whole cluster (test/interop runs bench-like load over it).
		"--protocol", "grpc",
		"--addrs", strings.Join(addrs, ","),
		"--coordinator", "roundrobin",
		"--table", "top.hot",
		"--writes", "1",
		"--cl", "QUORUM",
		"--hot", "0.8333334", // 1,000 of 1,200 ops/s: ten times the limit
		"--partitions", "200",
		"--rate", "1200",
		"--concurrency", "64",
		"--duration", "2m",
		"--json")
	var benchOut strings.Builder
	bench.Stdout, bench.Stderr = &benchOut, &benchOut
	bench.WaitDelay = killTimeout
	if err := bench.Start(); err != nil {
		t.Fatalf("start kvnode bench: %v", err)
	}
	benchDone := make(chan struct{})
	go func() { // owned by the test: ends when bench exits, at the latest at cleanup's cancel
		bench.Wait()
		close(benchDone)
	}()
	t.Cleanup(func() {
		cancel()
		<-benchDone
	})

	var last string
	asked := 0
	poll.Must(t, 60*time.Second, "kvnode toppartitions lists the hot key first, above twice its limit, from all three nodes", func() error {
		select {
		case <-benchDone:
			t.Fatalf("kvnode bench exited early:\n%s", benchOut.String())
		default:
		}
		n := tc.nodes[asked%len(tc.nodes)] // ask each node in turn: any node answers for the cluster
		asked++
		stdout, stderr, err := runTool(t, 30*time.Second, "toppartitions", "--protocol", "grpc", "--addr", n.Addr, "--table", "top.hot", "--json")
		if err != nil {
			t.Fatalf("kvnode toppartitions --addr %s: %v\nstderr:\n%s", n.Addr, err, stderr)
		}
		var res topPartitionsJSON
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("kvnode toppartitions --json printed %q: %v", stdout, err)
		}
		last = fmt.Sprintf("%s answered %s", n.Name, strings.Join(strings.Fields(stdout), " "))
		if len(res.Tables) != 1 || len(res.Tables[0].Partitions) == 0 {
			return errors.New(last)
		}
		first := res.Tables[0].Partitions[0]
		if first.KeyText == "hot" && first.Op == "write" && first.Limit == limit &&
			first.EstimatedOpsPerSecond > 2*limit && first.RejectedShare > 0.5 && first.Nodes == 3 {
			return nil
		}
		return errors.New(last)
	})
	t.Logf("%s", last)

	// The table output shows the same, hot key in the first row.
	stdout, stderr, err := runTool(t, 30*time.Second, "toppartitions", "--protocol", "grpc", "--addr", tc.nodes[1].Addr)
	if err != nil {
		t.Fatalf("kvnode toppartitions: %v\nstderr:\n%s", err, stderr)
	}
	lines := strings.Split(stdout, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "top.hot ") || !strings.HasPrefix(strings.Join(strings.Fields(lines[2]), " "), "1 write hot ") {
		t.Errorf("kvnode toppartitions printed:\n%s\nwant top.hot with the hot key in the first row", stdout)
	}
	t.Logf("kvnode toppartitions:\n%s", stdout)
}
