package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/test/proc"
)

// startCQLCluster starts n nodes on 127.0.0.1, 127.0.0.2, ..., every one serving the native
// protocol on one shared port (node.CQLAddr), as CQL drivers expect of a cluster, and waits until
// every node sees all of them UP. Cleanup as startCluster's.
func startCQLCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, pc: &proc.Cluster{}}
	root := t.TempDir()
	t.Cleanup(tc.stopAll)
	pc, err := proc.Start(proc.Options{Binary: kvnodeBinary, Dir: root, Hosts: proc.LoopbackHosts(n), CQL: true})
	if pc != nil {
		tc.pc, tc.nodes = pc, pc.Nodes
	}
	if err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())
	return tc
}

// TestToolsOverTheNativeProtocol runs kvnode's tools with their defaults, the CQL native
// protocol, against a 3-node cluster whose nodes share one native port: kvnode cql creates the
// schema, kvnode bench offers one partition ten times its write limit through gocql (token-aware,
// the default), and kvnode toppartitions, asked over the native protocol (system.top_partitions)
// and over gRPC on every node in turn, lists the hot key first with the same figures' shape.
// With a node killed, toppartitions names it as unreachable over both protocols.
func TestToolsOverTheNativeProtocol(t *testing.T) {
	skipShort(t)
	tc := startCQLCluster(t, 3)
	const limit = 100
	n1 := tc.nodes[0]
	script := "CREATE KEYSPACE top WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3};\n" +
		fmt.Sprintf("CREATE TABLE top.hot (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': %d};", limit)
	if stdout, stderr, err := runTool(t, 30*time.Second, "cql", "--addr", n1.CQLAddr, "-e", script); err != nil || stderr != "" {
		t.Fatalf("kvnode cql -e on %s: %v\nstdout:\n%s\nstderr:\n%s", n1.CQLAddr, err, stdout, stderr)
	}
	stdout, stderr, err := runTool(t, 30*time.Second, "cql", "--addr", tc.nodes[2].CQLAddr, "-e", "DESCRIBE TABLE top.hot")
	if err != nil || !strings.Contains(stdout, fmt.Sprintf("'max_writes_per_second': %d", limit)) {
		t.Fatalf("kvnode cql DESCRIBE TABLE on %s: %v\nstdout:\n%s\nstderr:\n%s", tc.nodes[2].CQLAddr, err, stdout, stderr)
	}

	ctx, cancel := context.WithCancel(context.Background())
	bench := exec.CommandContext(ctx, kvnodeBinary, "bench",
		"--addrs", strings.Join(tc.pc.CQLAddrs(), ","),
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
	// Cancelling interrupts it, as Ctrl-C would: it then prints the summary of what ran.
	bench.Cancel = func() error { return bench.Process.Signal(os.Interrupt) }
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

	ask := func(protocol, addr string, args ...string) topPartitionsJSON {
		t.Helper()
		args = append([]string{"toppartitions", "--protocol", protocol, "--addr", addr, "--json"}, args...)
		stdout, stderr, err := runTool(t, 30*time.Second, args...)
		if err != nil {
			t.Fatalf("kvnode %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
		}
		var res topPartitionsJSON
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("kvnode %s printed %q: %v", strings.Join(args, " "), stdout, err)
		}
		return res
	}
	hotFirst := func(res topPartitionsJSON) error {
		if len(res.Tables) != 1 || len(res.Tables[0].Partitions) == 0 {
			return fmt.Errorf("tables %+v", res.Tables)
		}
		first := res.Tables[0].Partitions[0]
		if res.Tables[0].Keyspace == "top" && res.Tables[0].Table == "hot" && first.KeyText == "hot" &&
			len(first.Key) == 1 && first.Key[0] == "hot" && first.Op == "write" && first.Limit == limit &&
			first.EstimatedOpsPerSecond > 2*limit && first.RejectedShare > 0.5 && first.Nodes == 3 {
			return nil
		}
		return fmt.Errorf("first partition %+v", first)
	}
	asked := 0
	poll.Must(t, 60*time.Second, "kvnode toppartitions lists the hot key first over both protocols, on every node", func() error {
		select {
		case <-benchDone:
			t.Fatalf("kvnode bench exited early:\n%s", benchOut.String())
		default:
		}
		n := tc.nodes[asked%len(tc.nodes)]
		asked++
		if err := hotFirst(ask("cql", n.CQLAddr, "--table", "top.hot")); err != nil {
			return fmt.Errorf("native protocol on %s: %w", n.CQLAddr, err)
		}
		if err := hotFirst(ask("grpc", n.Addr, "--table", "top.hot")); err != nil {
			return fmt.Errorf("gRPC on %s: %w", n.Addr, err)
		}
		return nil
	})

	// The table output over the native protocol (the default) has the hot key in its first row.
	stdout, stderr, err = runTool(t, 30*time.Second, "toppartitions", "--addr", tc.nodes[1].CQLAddr)
	lines := strings.Split(stdout, "\n")
	if err != nil || len(lines) < 3 || !strings.HasPrefix(lines[0], "top.hot (partition key: k text)") ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[2]), " "), "1 write hot ") {
		t.Errorf("kvnode toppartitions: %v; printed:\n%s\nstderr %s\nwant top.hot with the hot key in the first row", err, stdout, stderr)
	}

	// The shell reads the same rows from the virtual table.
	stdout, stderr, err = runTool(t, 30*time.Second, "cql", "--addr", tc.nodes[2].CQLAddr, "-e",
		"SELECT table_name, rank, op, partition_key_text, nodes FROM system.top_partitions WHERE keyspace_name = 'top'")
	if err != nil || !strings.Contains(stdout, `(k="hot")`) || !strings.Contains(stdout, "write") {
		t.Errorf("kvnode cql SELECT ... FROM system.top_partitions: %v; printed:\n%s\nstderr %s\nwant the hot key's row", err, stdout, stderr)
	}

	// A node killed: while it is down, the others answer without it and name it.
	n3 := tc.nodes[2]
	if err := n3.Kill(); err != nil {
		t.Fatal(err)
	}
	poll.Must(t, 60*time.Second, "kvnode toppartitions names the killed node as unreachable over both protocols", func() error {
		for _, p := range []struct{ protocol, addr string }{{"cql", n1.CQLAddr}, {"grpc", n1.Addr}} {
			if res := ask(p.protocol, p.addr); len(res.UnreachableNodes) != 1 || res.UnreachableNodes[0] != n3.ID {
				return fmt.Errorf("over %s, unreachable nodes %v, want [%s]", p.protocol, res.UnreachableNodes, n3.ID)
			}
		}
		return nil
	})

	cancel()
	<-benchDone
	if !strings.Contains(benchOut.String(), `"protocol": "cql"`) || !strings.Contains(benchOut.String(), `"coordinator": "tokenaware"`) {
		t.Errorf("kvnode bench's summary does not say it ran over the native protocol, token-aware:\n%s", benchOut.String())
	}
	t.Logf("kvnode bench (interrupted at the end) printed:\n%s", lastLines(benchOut.String(), 30))
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
