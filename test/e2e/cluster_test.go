package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/test/proc"
)

// Timeouts of the tests. They are generous because the machine running the tests may be busy;
// none of them is ever waited out on success. The process plumbing's own are proc's.
const (
	killTimeout = proc.KillTimeout
	rpcTimeout  = 10 * time.Second // one client statement
	joinTimeout = 30 * time.Second // every node seeing every other one UP
)

// node is one kvnode node run as processes (see proc.Node).
type node = proc.Node

// testCluster is a set of kvnode processes on loopback; the first node is every other's seed.
type testCluster struct {
	t     *testing.T
	pc    *proc.Cluster
	nodes []*node
}

// startCluster starts n nodes (with --sync as given) and waits until every node sees all of them
// UP. Its cleanup stops every process still running: SIGTERM, then SIGKILL after a grace period;
// a node that does not exit cleanly on SIGTERM fails the test. When the test failed, the end of
// every node's stderr is logged.
func startCluster(t *testing.T, n int, sync bool) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, pc: &proc.Cluster{}}
	// The directory is made before stopAll is registered, so that it is removed only after every
	// process has stopped (cleanups run last-registered first).
	root := t.TempDir()
	t.Cleanup(tc.stopAll)
	pc, err := proc.Start(proc.Options{Binary: kvnodeBinary, Dir: root, Nodes: n, Sync: sync})
	if pc != nil {
		tc.pc, tc.nodes = pc, pc.Nodes
	}
	if err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())
	return tc
}

// stopAll stops every running process at once and reports those that did not stop cleanly.
func (tc *testCluster) stopAll() {
	t := tc.t
	for _, err := range tc.pc.StopAll() {
		t.Error(err)
	}
	if t.Failed() {
		for _, n := range tc.nodes {
			for _, path := range n.Stderrs() {
				t.Logf("%s stderr (%s) ends:\n%s", n.Name, filepath.Base(path), proc.Tail(path, 40))
			}
		}
	}
}

// allUp is the member states of a healthy cluster: every node UP.
func (tc *testCluster) allUp() map[string]string { return tc.pc.AllUp() }

// named replaces node ids by node names in a member-state map, for messages.
func (tc *testCluster) named(states map[string]string) map[string]string { return tc.pc.Named(states) }

// waitStates waits until every observer's metrics show exactly the member states in want (node
// id → "UP" or "DOWN").
func (tc *testCluster) waitStates(timeout time.Duration, observers []*node, want map[string]string) {
	tc.t.Helper()
	if err := tc.pc.WaitStates(context.Background(), timeout, observers, want); err != nil {
		tc.t.Fatal(err)
	}
}

// execute runs one statement through c and fails the test on error.
func execute(t *testing.T, c *client.Client, cl client.Consistency, stmt string) *client.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	res, err := c.Execute(ctx, cl, stmt)
	if err != nil {
		t.Fatalf("%s at %v through %s: %v", stmt, cl, c.Addr(), err)
	}
	return res
}

// runTool runs `kvnode args...` to completion (killing it after timeout) and returns its stdout
// and stderr; err is non-nil when it did not exit with status 0.
func runTool(t *testing.T, timeout time.Duration, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, kvnodeBinary, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = killTimeout
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after %v: %w", timeout, err)
	}
	return out.String(), errOut.String(), err
}
