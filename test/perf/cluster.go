package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/serveline"
	"github.com/kvnode/kvnode/partitioner"
)

// numTokens is the vnode count every server is started with; findOwner needs it to rebuild the
// ring.
const numTokens = 16

// Bounds on waiting for servers.
const (
	startTimeout   = 60 * time.Second // one server printing its serving line
	joinTimeout    = 60 * time.Second // every server seeing every other as UP
	stopTimeout    = 20 * time.Second // SIGTERM to exit, before SIGKILL
	ddlTimeout     = 30 * time.Second // one DDL statement
	memberPollTick = 100 * time.Millisecond
)

// buildKVNode builds cmd/kvnode into dir and returns the binary's path.
func buildKVNode(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "kvnode")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/kvnode/kvnode/cmd/kvnode")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kvnode: %w\n%s", err, out.Bytes())
	}
	return bin, nil
}

// server is one kvnode serve process.
type server struct {
	ID, Addr, Gossip string
	cmd              *exec.Cmd
	logPath          string
	done             chan struct{} // closed when the process has exited and waitErr is set
	waitErr          error
}

// pid returns the process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// startServer starts kvnode serve on loopback with ephemeral ports, its data in dir and its log
// (level warn) in dir/../<base>.log, and waits until it serves. The process gets SIGTERM when
// ctx ends and SIGKILL if this program dies first.
func startServer(ctx context.Context, bin, dir string, seeds []string, sync bool) (*server, error) {
	logPath := dir + ".log"
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start kvnode: %w", err)
	}
	args := []string{"serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0",
		"--metrics-addr", "", "--num-tokens", strconv.Itoa(numTokens), "--sync=" + strconv.FormatBool(sync),
		"--log-level", "warn"}
	if len(seeds) > 0 {
		args = append(args, "--seeds", strings.Join(seeds, ","))
	}
	w := serveline.NewWatcher()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout = w
	cmd.Stderr = logFile
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopTimeout
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start kvnode: %w", err)
	}
	s := &server{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		logFile.Close()
		close(s.done)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case line := <-w.Ready():
		s.ID, s.Addr, s.Gossip = line.ID, line.Addr, line.GossipAddr
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("kvnode serve (data %s) exited before serving: %v\n%s", dir, s.waitErr, logTail(logPath))
	case <-timer.C:
		s.stop()
		return nil, fmt.Errorf("kvnode serve (data %s) did not serve within %v\n%s", dir, startTimeout, logTail(logPath))
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
}

// stop sends SIGTERM and waits for the process to exit (SIGKILL after stopTimeout). It returns
// the exit error of a server that did not exit cleanly.
func (s *server) stop() error {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(stopTimeout)
		defer timer.Stop()
		select {
		case <-s.done:
		case <-timer.C:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
	if s.waitErr != nil {
		return fmt.Errorf("kvnode %s: %w\n%s", s.ID, s.waitErr, logTail(s.logPath))
	}
	return nil
}

// logTail returns the last lines of a server log, for error messages.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return "log " + path + ":\n" + strings.Join(lines, "\n")
}

// testCluster is a set of kvnode processes on loopback that form one cluster, and a client
// connected to each.
type testCluster struct {
	servers []*server
	clients []*client.Client
}

// startCluster starts n servers with data under root/<name>-<i>, the first as seed of the
// others, and returns once every server lists all n as UP.
func startCluster(ctx context.Context, bin, root, name string, n int, sync bool) (c *testCluster, err error) {
	c = &testCluster{}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	var seeds []string
	for i := range n {
		s, err := startServer(ctx, bin, filepath.Join(root, fmt.Sprintf("%s-%d", name, i+1)), seeds, sync)
		if err != nil {
			return c, err
		}
		c.servers = append(c.servers, s)
		seeds = []string{c.servers[0].Gossip}
	}
	for _, s := range c.servers {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		cl, err := client.Dial(dctx, s.Addr)
		cancel()
		if err != nil {
			return c, err
		}
		c.clients = append(c.clients, cl)
	}
	return c, c.waitMembers(ctx, n)
}

// waitMembers waits until DESCRIBE CLUSTER on every server shows n nodes UP.
func (c *testCluster) waitMembers(ctx context.Context, n int) error {
	deadline := time.Now().Add(joinTimeout)
	tick := time.NewTicker(memberPollTick)
	defer tick.Stop()
	for {
		ready, last := 0, ""
		for _, cl := range c.clients {
			res, err := cl.Execute(ctx, client.One, "DESCRIBE CLUSTER")
			if err != nil {
				last = err.Error()
				continue
			}
			last = res.Description
			if countUp(res.Description) == n {
				ready++
			}
		}
		if ready == len(c.clients) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster of %d did not form within %v; last DESCRIBE CLUSTER:\n%s", n, joinTimeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// countUp counts the member lines of a DESCRIBE CLUSTER text whose state column is UP.
func countUp(describe string) int {
	n := 0
	for _, line := range strings.Split(describe, "\n") {
		for _, f := range strings.Fields(line) {
			if f == "UP" {
				n++
				break
			}
		}
	}
	return n
}

// addrs returns the servers' client addresses.
func (c *testCluster) addrs() []string {
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.Addr
	}
	return out
}

// cpu returns the CPU time used so far by all servers together.
func (c *testCluster) cpu() (cpuSample, error) {
	var total cpuSample
	for _, s := range c.servers {
		v, err := readCPU(s.pid())
		if err != nil {
			return cpuSample{}, err
		}
		total = total.add(v)
	}
	return total, nil
}

// cpuWithSelf returns the CPU time used so far by all servers together and by this process.
func (c *testCluster) cpuWithSelf() (servers, self cpuSample, err error) {
	if servers, err = c.cpu(); err != nil {
		return
	}
	self, err = readCPU(os.Getpid())
	return
}

// exec runs statements (DDL) on the first server, in order.
func (c *testCluster) exec(ctx context.Context, log io.Writer, stmts ...string) error {
	for _, st := range stmts {
		dctx, cancel := context.WithTimeout(ctx, ddlTimeout)
		res, err := c.clients[0].Execute(dctx, client.Quorum, st)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
		for _, w := range res.Warnings {
			fmt.Fprintf(log, "perf: warning from %q: %s\n", st, w)
		}
	}
	return nil
}

// stop closes the clients and stops every server, returning the first server that did not exit
// cleanly.
func (c *testCluster) stop() error {
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = nil
	var errs []error
	var wg sync.WaitGroup
	errc := make([]error, len(c.servers))
	for i, s := range c.servers {
		wg.Go(func() { errc[i] = s.stop() })
	}
	wg.Wait()
	errs = append(errs, errc...)
	c.servers = nil
	return errors.Join(errs...)
}

// owner returns the index of the server that owns key's token at replication factor 1, found
// by rebuilding the ring from the node ids (tokens are a pure function of id and num_tokens).
func (c *testCluster) owner(key string) (int, error) {
	nodes := make([]cluster.RingNode, len(c.servers))
	for i, s := range c.servers {
		id := cluster.NodeID(s.ID)
		nodes[i] = cluster.RingNode{ID: id, Tokens: cluster.NodeTokens(id, numTokens)}
	}
	reps := cluster.NewRing(nodes).Replicas(partitioner.Token([]byte(key)), 1)
	for i, s := range c.servers {
		if len(reps) == 1 && cluster.NodeID(s.ID) == reps[0] {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no server owns the token of %q (ring replicas %v)", key, reps)
}
