package proc

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/internal/serveline"
)

// Timeouts of the process plumbing. They are generous because the machine running the tests may
// be busy; none of them is ever waited out on success.
const (
	StartTimeout  = 30 * time.Second // from exec to the "serving clients" line
	StopGrace     = 20 * time.Second // from SIGTERM to exit, before SIGKILL
	KillTimeout   = 10 * time.Second // from SIGKILL to the process being reaped
	DialTimeout   = 10 * time.Second // connecting the client to a started node
	ScrapeTimeout = 10 * time.Second // one read of a node's metrics
)

// Build builds cmd/kvnode into dir with the go command on PATH and returns the binary's path.
// The binary is never race-instrumented, even under go test -race: the race detector is for the
// test's own goroutines, and an instrumented server would only be slower.
func Build(dir string) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("proc: no go command on PATH: %w", err)
	}
	bin := filepath.Join(dir, "kvnode")
	cmd := exec.Command(goCmd, "build", "-o", bin, "github.com/kvnode/kvnode/cmd/kvnode")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("proc: %s: %w\n%s", cmd, err, out)
	}
	return bin, nil
}

// Main is a TestMain for packages whose tests run kvnode processes: it builds the binary once into
// a temporary directory, stores its path in *binary, runs the tests and exits with their code.
// A build failure fails the whole package loudly (pkg names it): without the binary nothing can
// run. Under go test -short nothing is built; the tests skip themselves.
func Main(m *testing.M, pkg string, binary *string) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "kvnode-"+pkg+"-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: temporary directory for the kvnode binary: %v\n", pkg, err)
		os.Exit(1)
	}
	bin, err := Build(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: FAIL: cannot build the kvnode binary: %v\n", pkg, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	*binary = bin
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Process is one run of `kvnode serve`.
type Process struct {
	cmd        *exec.Cmd
	stderrPath string
	done       chan struct{} // closed once the process has exited and been reaped
	err        error         // cmd.Wait's result; read it only after done is closed
}

// Exited reports whether the process has exited and been reaped.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the process exited (cmd.Wait's error); call it only once Exited is true.
func (p *Process) Err() error { return p.err }

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// StderrPath is the file the process's stderr goes to.
func (p *Process) StderrPath() string { return p.stderrPath }

// WaitExit waits up to timeout for the process to exit and reports whether it did.
func (p *Process) WaitExit(timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return true
	case <-timer.C:
		return false
	}
}

// Kill sends SIGKILL and waits for the process to be reaped, so that its data directory lock
// and ports are free when it returns.
func (p *Process) Kill() error {
	if p.Exited() {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGKILL pid %d: %w", p.cmd.Process.Pid, err)
	}
	if !p.WaitExit(KillTimeout) {
		return fmt.Errorf("pid %d still running %v after SIGKILL", p.cmd.Process.Pid, KillTimeout)
	}
	return nil
}

// Terminate sends SIGTERM without waiting.
func (p *Process) Terminate() error { return p.cmd.Process.Signal(syscall.SIGTERM) }

// Hangup sends SIGHUP, which makes kvnode serve reread its TLS files and gossip key file.
func (p *Process) Hangup() error { return p.cmd.Process.Signal(syscall.SIGHUP) }

// Node is one kvnode node: a data directory and, once it first started, fixed addresses. One
// process at a time runs it; a restart is a new process on the same directory and addresses.
type Node struct {
	Name    string // n1, n2, ...: for messages and log file names
	DataDir string
	LogDir  string
	Binary  string
	Sync    bool
	Seeds   []string
	// NumTokens is --num-tokens; 0 leaves serve's default.
	NumTokens int
	// LogLevel is --log-level; "" means info.
	LogLevel string
	// CQLAddr is --cql-addr; "" binds a free port on 127.0.0.1 at each start. When set, Start
	// waits until it accepts connections.
	CQLAddr string
	// ExtraArgs are appended to the serve command line (e.g. --testing-clock-offset).
	ExtraArgs []string
	// ClientTLS, when set, is the TLS configuration of the node's client (for a node given
	// --tls-cert, --tls-key and --tls-ca in ExtraArgs). Nil means plaintext.
	ClientTLS *tls.Config
	// Wrapper, when set, is a command line the serve process runs under: the process started
	// is Wrapper[0] with the rest of Wrapper, then the binary and serve's arguments. With
	// `ip netns exec NAME` the node runs in the network namespace NAME (ip execs the binary,
	// so the process keeps its pid and signals reach kvnode itself).
	Wrapper []string
	// Dial, when set, is how the launcher reaches the node's addresses (its gRPC client, the
	// wait for the CQL port, the metrics): for a node in a network namespace the test
	// process is not in. Nil dials from the test process's own namespace.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// Learned from the first serving line and kept across restarts.
	ID, Addr, GossipAddr, InternodeAddr string
	// MetricsAddr is where the current (or last) process serves /metrics; each run binds a
	// new port unless MetricsBind fixes it.
	MetricsAddr string
	// MetricsBind is the --metrics-addr every run binds; "" means 127.0.0.1:0.
	MetricsBind string

	proc    *Process       // the current (or last) process
	client  *client.Client // connected to the current process; nil while it is down
	stderrs []string       // stderr files of every run, oldest first
}

// Proc returns the node's current (or last) process, nil before the first start.
func (n *Node) Proc() *Process { return n.proc }

// Client returns a client connected to the node's current process, or nil while it is down.
func (n *Node) Client() *client.Client { return n.client }

// Stderrs returns the stderr files of every run of the node, oldest first.
func (n *Node) Stderrs() []string { return n.stderrs }

// Running reports whether the node has a process that has not exited.
func (n *Node) Running() bool { return n.proc != nil && !n.proc.Exited() }

// Start runs a new serve process for the node and waits until it serves clients and the client
// is connected. The first start picks free ports below the kernel's ephemeral range for the
// client, gossip and internode addresses (FreePorts); later starts reuse them, so clients and
// peers find the node where it was.
func (n *Node) Start() error {
	err := n.startOnce()
	if err != nil && strings.Contains(err.Error(), "address already in use") {
		// Another process may have taken a port in the moment the node was down; a second
		// attempt tells a transient clash from a lasting one.
		err = n.startOnce()
	}
	return err
}

func (n *Node) startOnce() error {
	addr, gossipAddr, internodeAddr := n.Addr, n.GossipAddr, n.InternodeAddr
	if n.Addr == "" {
		// The ports the node keeps across restarts come from below the ephemeral range
		// (FreePorts), where no port-0 bind or outgoing connection takes them while it is down.
		ports, err := FreePorts([]string{"127.0.0.1"}, 3)
		if err != nil {
			return err
		}
		addr, gossipAddr, internodeAddr = "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1]), "127.0.0.1:"+strconv.Itoa(ports[2])
	}
	logLevel := n.LogLevel
	if logLevel == "" {
		logLevel = "info"
	}
	args := []string{"serve",
		"--data-dir", n.DataDir,
		"--addr", addr,
		"--gossip-addr", gossipAddr,
		"--internode-addr", internodeAddr,
		"--cql-addr", cmp.Or(n.CQLAddr, "127.0.0.1:0"),
		"--metrics-addr", cmp.Or(n.MetricsBind, "127.0.0.1:0"),
		"--sync=" + fmt.Sprint(n.Sync),
		"--log-level", logLevel,
	}
	if n.NumTokens != 0 {
		args = append(args, "--num-tokens", strconv.Itoa(n.NumTokens))
	}
	if len(n.Seeds) > 0 {
		args = append(args, "--seeds", strings.Join(n.Seeds, ","))
	}
	args = append(args, n.ExtraArgs...)
	run := len(n.stderrs) + 1
	stdout, err := os.Create(filepath.Join(n.LogDir, fmt.Sprintf("%s-run%d.stdout", n.Name, run)))
	if err != nil {
		return err
	}
	defer stdout.Close() // the child has its own descriptor
	stderrPath := filepath.Join(n.LogDir, fmt.Sprintf("%s-run%d.stderr", n.Name, run))
	stderr, err := os.Create(stderrPath)
	if err != nil {
		return err
	}
	defer stderr.Close()
	n.stderrs = append(n.stderrs, stderrPath)

	watcher := serveline.NewWatcher()
	name, argv := n.Binary, args
	if len(n.Wrapper) > 0 {
		name, argv = n.Wrapper[0], slices.Concat(n.Wrapper[1:], []string{n.Binary}, args)
	}
	cmd := exec.Command(name, argv...)
	cmd.Stdout = io.MultiWriter(stdout, watcher)
	cmd.Stderr = stderr
	cmd.WaitDelay = KillTimeout
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: start %s: %w", n.Name, cmd, err)
	}
	p := &Process{cmd: cmd, stderrPath: stderrPath, done: make(chan struct{})}
	go func() { // owned by p: ends when the process exits
		p.err = cmd.Wait()
		close(p.done)
	}()
	n.proc = p

	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	var line serveline.Line
	select {
	case line = <-watcher.Ready():
	case <-p.done:
		return fmt.Errorf("%s: %s exited before serving (%v); its stderr ends:\n%s", n.Name, cmd, p.err, Tail(stderrPath, 20))
	case <-timer.C:
		p.Kill()
		return fmt.Errorf("%s: %s printed no serving line within %v; its stderr ends:\n%s", n.Name, cmd, StartTimeout, Tail(stderrPath, 20))
	}
	if n.ID == "" {
		n.ID, n.Addr, n.GossipAddr, n.InternodeAddr = line.ID, line.Addr, line.GossipAddr, line.InternodeAddr
	} else if line.ID != n.ID || line.Addr != n.Addr || line.GossipAddr != n.GossipAddr || line.InternodeAddr != n.InternodeAddr {
		p.Kill()
		return fmt.Errorf("%s restarted as %+v, want the identity and addresses it had: id %s, addr %s, gossip %s, internode %s",
			n.Name, line, n.ID, n.Addr, n.GossipAddr, n.InternodeAddr)
	}
	n.MetricsAddr = line.MetricsAddr

	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	defer cancel()
	var copts []client.Option
	if n.ClientTLS != nil {
		copts = append(copts, client.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(n.ClientTLS))))
	}
	if n.Dial != nil {
		copts = append(copts, client.WithDialOptions(grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return n.Dial(ctx, "tcp", addr)
		})))
	}
	if n.client, err = client.Dial(ctx, n.Addr, copts...); err != nil {
		p.Kill()
		return fmt.Errorf("%s: client: %w", n.Name, err)
	}
	if n.CQLAddr != "" {
		if err := n.waitCQL(context.Background()); err != nil {
			n.CloseClient()
			p.Kill()
			return fmt.Errorf("%w; its stderr ends:\n%s", err, Tail(stderrPath, 20))
		}
	}
	return nil
}

// Kill SIGKILLs the node's process and waits until it is gone.
func (n *Node) Kill() error {
	n.CloseClient()
	if n.proc == nil {
		return nil
	}
	if err := n.proc.Kill(); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}

// CloseClient closes the node's client, if any.
func (n *Node) CloseClient() {
	if n.client != nil {
		n.client.Close()
		n.client = nil
	}
}

// Tail returns the last n lines of the file at path, or why it could not be read.
func Tail(path string, n int) string {
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

// Options configures a cluster of processes.
type Options struct {
	Binary string // the kvnode binary (see Build). Required.
	Dir    string // data directories n1, n2, ... and the logs directory go here. Required.
	Nodes  int    // default 3
	Sync   bool   // --sync: acknowledge writes only once they are on disk
	// NumTokens is every node's --num-tokens; 0 leaves serve's default.
	NumTokens int
	// LogLevel is every node's --log-level (its stderr file); "" means info.
	LogLevel string
	// Hosts, when set, runs node i on Hosts[i] (loopback IP addresses; see LoopbackHosts), with
	// each listener on the same port on every host, as CQL drivers expect of a cluster. The ports
	// are picked at start, free on every host (FreePorts). Nodes defaults to len(Hosts). Without
	// Hosts, every node binds 127.0.0.1 with ports of its own.
	Hosts []string
	// CQL makes every node serve the CQL native protocol (--cql-addr) on the shared port
	// Cluster.CQLPort. It needs Hosts.
	CQL bool
	// CQLPort, with CQL, fixes that shared port instead of picking a free one: 9042 for suites
	// written for Cassandra's default port (gocql's integration tests). 0 picks one.
	CQLPort int
	// ExtraArgs, when set, has one entry per node: extra serve arguments for node i+1.
	ExtraArgs [][]string
	// ClientTLS is every node's Node.ClientTLS.
	ClientTLS *tls.Config
}

// Cluster is a set of kvnode processes on loopback; the first node is every other's seed.
type Cluster struct {
	Nodes []*Node
	// CQLPort is the native-protocol port every node serves on its host; 0 without Options.CQL.
	CQLPort int
}

// Start starts the nodes one after another. It does not wait for them to see each other (see
// WaitStates). On error, the processes already started keep running: call StopAll.
func Start(opts Options) (*Cluster, error) {
	if opts.Binary == "" || opts.Dir == "" {
		return nil, errors.New("proc: Options.Binary and Options.Dir are required")
	}
	if opts.CQL && len(opts.Hosts) == 0 {
		return nil, errors.New("proc: Options.CQL needs Options.Hosts (drivers expect the native port to be the same on every node)")
	}
	if opts.CQLPort != 0 && !opts.CQL {
		return nil, errors.New("proc: Options.CQLPort needs Options.CQL")
	}
	logDir := filepath.Join(opts.Dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	if len(opts.Hosts) > 0 {
		return startHosts(opts, logDir)
	}
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	c := &Cluster{}
	return c, startNodes(c, opts, logDir, nil)
}

// startNodes starts opts.Nodes nodes into c, one after another; place, if not nil, sets node i's
// fixed addresses before its first start.
func startNodes(c *Cluster, opts Options, logDir string, place func(i int, n *Node)) error {
	for i := range opts.Nodes {
		n := &Node{
			Name:      fmt.Sprintf("n%d", i+1),
			DataDir:   filepath.Join(opts.Dir, fmt.Sprintf("n%d", i+1)), // created by the node
			LogDir:    logDir,
			Binary:    opts.Binary,
			Sync:      opts.Sync,
			NumTokens: opts.NumTokens,
			LogLevel:  opts.LogLevel,
			ClientTLS: opts.ClientTLS,
		}
		if place != nil {
			place(i, n)
		}
		if i < len(opts.ExtraArgs) {
			n.ExtraArgs = opts.ExtraArgs[i]
		}
		if i > 0 {
			n.Seeds = []string{c.Nodes[0].GossipAddr}
		}
		c.Nodes = append(c.Nodes, n)
		if err := n.Start(); err != nil {
			return err
		}
	}
	return nil
}

// StopAll stops every running process at once (they shut down in parallel): SIGTERM, then
// SIGKILL after StopGrace. It returns what did not stop cleanly.
func (c *Cluster) StopAll() []error {
	var running []*Node
	for _, n := range c.Nodes {
		n.CloseClient()
		if n.Running() {
			if err := n.proc.Terminate(); err == nil {
				running = append(running, n)
			}
		}
	}
	var errs []error
	for _, n := range running {
		switch {
		case !n.proc.WaitExit(StopGrace):
			errs = append(errs, fmt.Errorf("%s (pid %d) was still running %v after SIGTERM; killed it", n.Name, n.proc.Pid(), StopGrace))
			if err := n.proc.Kill(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
			}
		case n.proc.err != nil:
			errs = append(errs, fmt.Errorf("%s did not shut down cleanly on SIGTERM: %v; its stderr ends:\n%s", n.Name, n.proc.err, Tail(n.proc.stderrPath, 20)))
		}
	}
	return errs
}

// AllUp is the member states of a healthy cluster: every node's id → "UP".
func (c *Cluster) AllUp() map[string]string {
	want := map[string]string{}
	for _, n := range c.Nodes {
		want[n.ID] = "UP"
	}
	return want
}

// Named replaces node ids by node names in a member-state map, for messages.
func (c *Cluster) Named(states map[string]string) map[string]string {
	out := map[string]string{}
	for id, s := range states {
		name := id
		for _, n := range c.Nodes {
			if n.ID == id {
				name = n.Name
			}
		}
		out[name] = s
	}
	return out
}

// MemberMetric is the metric whose series say how a node sees each ring member: label member is
// the member's node id, the value 1 while the node considers it up, 0 while down.
const MemberMetric = "kvnode_cluster_member_up"

// MemberStates reads how the node's current process sees each member from its metrics: node id →
// "UP" or "DOWN".
func (n *Node) MemberStates(ctx context.Context) (map[string]string, error) {
	if !n.Running() {
		return nil, fmt.Errorf("%s is not running", n.Name)
	}
	if n.MetricsAddr == "" {
		return nil, fmt.Errorf("%s serves no metrics", n.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, ScrapeTimeout)
	defer cancel()
	url := "http://" + n.MetricsAddr + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.Name, err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	httpClient := http.DefaultClient
	if n.Dial != nil {
		tr := &http.Transport{DialContext: n.Dial, DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		httpClient = &http.Client{Transport: tr}
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: GET %s: %s", n.Name, url, resp.Status)
	}
	states, err := ParseMemberStates(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", n.Name, url, err)
	}
	return states, nil
}

// ParseMemberStates reads the MemberMetric series from metrics in the Prometheus text exposition
// format: node id → "UP" (value 1) or "DOWN" (value 0). Metrics without the family, a series
// without a member label, a member listed twice or a value other than 0 or 1 are errors.
func ParseMemberStates(r io.Reader) (map[string]string, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics do not parse: %w", err)
	}
	mf, ok := families[MemberMetric]
	if !ok {
		return nil, fmt.Errorf("metrics have no %s", MemberMetric)
	}
	states := map[string]string{}
	for _, m := range mf.GetMetric() {
		id := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "member" {
				id = l.GetValue()
			}
		}
		if id == "" {
			return nil, fmt.Errorf("a %s series has no member label", MemberMetric)
		}
		if _, dup := states[id]; dup {
			return nil, fmt.Errorf("%s lists member %s twice", MemberMetric, id)
		}
		switch v := m.GetGauge().GetValue(); v {
		case 1:
			states[id] = "UP"
		case 0:
			states[id] = "DOWN"
		default:
			return nil, fmt.Errorf("%s{member=%q} is %v, want 0 or 1", MemberMetric, id, v)
		}
	}
	return states, nil
}

// WaitStates waits up to timeout until every observer sees exactly the member states in want
// (node id → "UP" or "DOWN"); the error names the last state seen.
func (c *Cluster) WaitStates(ctx context.Context, timeout time.Duration, observers []*Node, want map[string]string) error {
	var names []string
	for _, n := range observers {
		names = append(names, n.Name)
	}
	return poll.Until(ctx, timeout, fmt.Sprintf("%s see members %v", strings.Join(names, ", "), c.Named(want)), func() error {
		for _, n := range observers {
			got, err := n.MemberStates(ctx)
			if err != nil {
				return err
			}
			if !EqualStates(got, want) {
				return fmt.Errorf("%s sees %v", n.Name, c.Named(got))
			}
		}
		return nil
	})
}

// EqualStates reports whether two member-state maps are equal.
func EqualStates(a, b map[string]string) bool {
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
