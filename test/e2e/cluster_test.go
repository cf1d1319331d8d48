package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/serveline"
)

// Timeouts of the process plumbing. They are generous because the machine running the tests may
// be busy; none of them is ever waited out on success.
const (
	startTimeout = 30 * time.Second // from exec to the "serving clients" line
	stopGrace    = 20 * time.Second // from SIGTERM to exit, before SIGKILL
	killTimeout  = 10 * time.Second // from SIGKILL to the process being reaped
	rpcTimeout   = 10 * time.Second // one client statement
	joinTimeout  = 30 * time.Second // every node seeing every other one UP
)

// process is one run of `kvnode serve`.
type process struct {
	cmd        *exec.Cmd
	stderrPath string
	done       chan struct{} // closed once the process has exited and been reaped
	err        error         // cmd.Wait's result; read it only after done is closed
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitExit waits up to timeout for the process to exit and reports whether it did.
func (p *process) waitExit(timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return true
	case <-timer.C:
		return false
	}
}

// kill sends SIGKILL and waits for the process to be reaped, so that its data directory lock
// and ports are free when it returns.
func (p *process) kill() error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGKILL pid %d: %w", p.cmd.Process.Pid, err)
	}
	if !p.waitExit(killTimeout) {
		return fmt.Errorf("pid %d still running %v after SIGKILL", p.cmd.Process.Pid, killTimeout)
	}
	return nil
}

// node is one kvnode node: a data directory and, once it first started, fixed addresses. One
// process at a time runs it; a restart is a new process on the same directory and addresses.
type node struct {
	name    string // n1, n2, ...: for messages and log file names
	dataDir string
	logDir  string
	sync    bool
	seeds   []string

	// Learned from the first serving line and kept across restarts.
	id, addr, gossipAddr string

	proc     *process       // the current (or last) process
	client   *client.Client // connected to the current process; nil while it is down
	stderrs  []string       // stderr files of every run, oldest first
	restarts int
}

// start runs a new serve process for the node and waits until it serves clients and the client
// is connected. The first start binds port 0 for every address; later starts reuse the
// addresses the first one got, so clients and peers find the node where it was.
func (n *node) start() error {
	err := n.startOnce()
	if err != nil && strings.Contains(err.Error(), "address already in use") {
		// Another process may have taken a port in the moment the node was down; a second
		// attempt tells a transient clash from a lasting one.
		err = n.startOnce()
	}
	return err
}

func (n *node) startOnce() error {
	addr, gossipAddr := "127.0.0.1:0", "127.0.0.1:0"
	if n.addr != "" {
		addr, gossipAddr = n.addr, n.gossipAddr
	}
	args := []string{"serve",
		"--data-dir", n.dataDir,
		"--addr", addr,
		"--gossip-addr", gossipAddr,
		"--metrics-addr", "127.0.0.1:0",
		"--sync=" + fmt.Sprint(n.sync),
		"--log-level", "info",
	}
	if len(n.seeds) > 0 {
		args = append(args, "--seeds", strings.Join(n.seeds, ","))
	}
	run := len(n.stderrs) + 1
	stdout, err := os.Create(filepath.Join(n.logDir, fmt.Sprintf("%s-run%d.stdout", n.name, run)))
	if err != nil {
		return err
	}
	defer stdout.Close() // the child has its own descriptor
	stderrPath := filepath.Join(n.logDir, fmt.Sprintf("%s-run%d.stderr", n.name, run))
	stderr, err := os.Create(stderrPath)
	if err != nil {
		return err
	}
	defer stderr.Close()
	n.stderrs = append(n.stderrs, stderrPath)

	watcher := serveline.NewWatcher()
	cmd := exec.Command(kvnodeBinary, args...)
	cmd.Stdout = io.MultiWriter(stdout, watcher)
	cmd.Stderr = stderr
	cmd.WaitDelay = killTimeout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: start %s: %w", n.name, cmd, err)
	}
	p := &process{cmd: cmd, stderrPath: stderrPath, done: make(chan struct{})}
	go func() { // owned by p: ends when the process exits
		p.err = cmd.Wait()
		close(p.done)
	}()
	n.proc = p

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	var line serveline.Line
	select {
	case line = <-watcher.Ready():
	case <-p.done:
		return fmt.Errorf("%s: %s exited before serving (%v); its stderr ends:\n%s", n.name, cmd, p.err, tail(stderrPath, 20))
	case <-timer.C:
		p.kill()
		return fmt.Errorf("%s: %s printed no serving line within %v; its stderr ends:\n%s", n.name, cmd, startTimeout, tail(stderrPath, 20))
	}
	if n.id == "" {
		n.id, n.addr, n.gossipAddr = line.ID, line.Addr, line.GossipAddr
	} else if line.ID != n.id || line.Addr != n.addr || line.GossipAddr != n.gossipAddr {
		p.kill()
		return fmt.Errorf("%s restarted as %+v, want the identity and addresses it had: id %s, addr %s, gossip %s", n.name, line, n.id, n.addr, n.gossipAddr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	if n.client, err = client.Dial(ctx, n.addr); err != nil {
		p.kill()
		return fmt.Errorf("%s: client: %w", n.name, err)
	}
	return nil
}

// kill SIGKILLs the node's process and waits until it is gone.
func (n *node) kill() error {
	n.closeClient()
	if err := n.proc.kill(); err != nil {
		return fmt.Errorf("%s: %w", n.name, err)
	}
	return nil
}

func (n *node) closeClient() {
	if n.client != nil {
		n.client.Close()
		n.client = nil
	}
}

// tail returns the last n lines of the file at path, or why it could not be read.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// testCluster is a set of kvnode processes on loopback; the first node is every other's seed.
type testCluster struct {
	t     *testing.T
	nodes []*node
}

// startCluster starts n nodes (with --sync as given) and waits until every node sees all of them
// UP. Its cleanup stops every process still running: SIGTERM, then SIGKILL after stopGrace; a
// node that does not exit cleanly on SIGTERM fails the test. When the test failed, the end of
// every node's stderr is logged.
func startCluster(t *testing.T, n int, sync bool) *testCluster {
	t.Helper()
	tc := &testCluster{t: t}
	// Every directory is made before stopAll is registered, so that it is removed only after
	// every process has stopped (cleanups run last-registered first).
	root := t.TempDir()
	logDir := filepath.Join(root, "logs")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.stopAll)
	for i := range n {
		nd := &node{
			name:    fmt.Sprintf("n%d", i+1),
			dataDir: filepath.Join(root, fmt.Sprintf("n%d", i+1)), // created by the node
			logDir:  logDir,
			sync:    sync,
		}
		if i > 0 {
			nd.seeds = []string{tc.nodes[0].gossipAddr}
		}
		tc.nodes = append(tc.nodes, nd)
		if err := nd.start(); err != nil {
			t.Fatal(err)
		}
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())
	return tc
}

// stopAll stops every running process at once (they shut down in parallel) and reports those
// that did not stop cleanly.
func (tc *testCluster) stopAll() {
	t := tc.t
	var running []*node
	for _, n := range tc.nodes {
		n.closeClient()
		if n.proc != nil && !n.proc.exited() {
			if err := n.proc.cmd.Process.Signal(syscall.SIGTERM); err == nil {
				running = append(running, n)
			}
		}
	}
	for _, n := range running {
		switch {
		case !n.proc.waitExit(stopGrace):
			t.Errorf("%s (pid %d) was still running %v after SIGTERM; killing it", n.name, n.proc.cmd.Process.Pid, stopGrace)
			if err := n.proc.kill(); err != nil {
				t.Errorf("%s: %v", n.name, err)
			}
		case n.proc.err != nil:
			t.Errorf("%s did not shut down cleanly on SIGTERM: %v; its stderr ends:\n%s", n.name, n.proc.err, tail(n.proc.stderrPath, 20))
		}
	}
	if t.Failed() {
		for _, n := range tc.nodes {
			for _, path := range n.stderrs {
				t.Logf("%s stderr (%s) ends:\n%s", n.name, filepath.Base(path), tail(path, 40))
			}
		}
	}
}

// allUp is the member states of a healthy cluster: every node UP.
func (tc *testCluster) allUp() map[string]string {
	want := map[string]string{}
	for _, n := range tc.nodes {
		want[n.id] = "UP"
	}
	return want
}

// waitStates waits until every observer's DESCRIBE CLUSTER shows exactly the member states in
// want (node id → "UP" or "DOWN").
func (tc *testCluster) waitStates(timeout time.Duration, observers []*node, want map[string]string) {
	tc.t.Helper()
	var names []string
	for _, n := range observers {
		names = append(names, n.name)
	}
	waitFor(tc.t, timeout, fmt.Sprintf("%s see members %v", strings.Join(names, ", "), tc.named(want)), func() (bool, string) {
		for _, n := range observers {
			got, err := memberStates(n.client)
			if err != nil {
				return false, fmt.Sprintf("%s: %v", n.name, err)
			}
			if !equalStates(got, want) {
				return false, fmt.Sprintf("%s sees %v", n.name, tc.named(got))
			}
		}
		return true, ""
	})
}

// named replaces node ids by node names in a member-state map, for messages.
func (tc *testCluster) named(states map[string]string) map[string]string {
	out := map[string]string{}
	for id, s := range states {
		name := id
		for _, n := range tc.nodes {
			if n.id == id {
				name = n.name
			}
		}
		out[name] = s
	}
	return out
}

func equalStates(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// memberStates asks a node for DESCRIBE CLUSTER and returns how it sees each member: node id →
// "UP" or "DOWN".
func memberStates(c *client.Client) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	res, err := c.Execute(ctx, client.One, "DESCRIBE CLUSTER")
	if err != nil {
		return nil, err
	}
	return parseMemberStates(res.Description), nil
}

// parseMemberStates reads the member table of DESCRIBE CLUSTER: one line per member, the id
// first (followed by "*" for the answering node), then addresses, UP or DOWN, tokens, schema.
func parseMemberStates(desc string) map[string]string {
	states := map[string]string{}
	for _, line := range strings.Split(desc, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		for _, w := range f[1:] {
			if w == "UP" || w == "DOWN" {
				states[f[0]] = w
				break
			}
		}
	}
	return states
}

// waitFor checks cond every 50 ms until it holds and fails the test, naming what was not reached
// and the last state cond described, if timeout passes first.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("%s: not reached within %v; last: %s", what, timeout, state)
		case <-tick.C:
		}
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
