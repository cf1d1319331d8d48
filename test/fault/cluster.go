//go:build linux

package fault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/test/proc"
)

// The private network of a cluster. Its addresses exist only inside the namespaces the harness
// creates: the switch namespace holds the bridge with SwitchIP, node i's namespace holds
// NodeIP(i) on its end of a veth pair whose other end is a port of the bridge. Nothing routes
// between them and any other namespace, so no packet of a test leaves them.
const (
	Subnet   = "10.77.0.0/24"
	SwitchIP = "10.77.0.1"
	// Every node listens on the same ports, each in its own namespace.
	CQLPort       = 9042
	GRPCPort      = 9043
	GossipPort    = 7946
	InternodePort = 7000
	MetricsPort   = 9180
	// proxyPortBase + i is the switch's port where the internode delay proxy forwards to node
	// i's internode port (Options.InternodeProxy).
	proxyPortBase = 17000
)

// NodeIP is the address of node i (0-based): 10.77.0.11, .12, ...
func NodeIP(i int) string { return "10.77.0." + strconv.Itoa(11+i) }

// Options configures a cluster of kvnode processes in network namespaces.
type Options struct {
	Binary string // the kvnode binary (proc.Build). Required.
	Dir    string // data directories and logs. Required.
	Nodes  int    // default 3
	// Profile is every node's --profile (gossip and failure-detection timings); "" means lan.
	Profile string
	// TmpfsMiB, when set for node i, mounts a tmpfs of that many MiB as node i's data directory
	// before it first starts (the full-disk nemesis fills it).
	TmpfsMiB map[int]int
	// ExtraArgs, when set for node i, are appended to node i's serve command line.
	ExtraArgs map[int][]string
	// InternodeProxy routes every internode connection through a TCP proxy in the switch
	// namespace (an nft DNAT rule in each node's namespace, set before the nodes start), so the
	// delay nemesis can slow chosen links.
	InternodeProxy bool
	// Places, when set, puts node i in data center Places[i].DC on rack Places[i].Rack (serve's
	// --dc and --rack); it must name every node.
	Places []Place
	// WANDelay, when positive, holds back every internode byte between nodes of different data
	// centers by this much in the internode proxy (it implies InternodeProxy): the latency of a
	// WAN link, which the DCDelay nemesis changes. Gossip does not go through the proxy: see
	// WANGossipDelay.
	WANDelay time.Duration
	// WANGossipDelay, when positive, delays every gossip packet and stream a node sends to a
	// node of another data center by this much (serve's hidden --testing-gossip-delay and
	// --testing-gossip-delay-to).
	WANGossipDelay time.Duration
}

// Place is a node's data center and rack.
type Place struct{ DC, Rack string }

// Cluster is a kvnode cluster whose node i runs in its own network namespace at NodeIP(i).
type Cluster struct {
	Switch Netns   // the bridge's namespace; the harness's clients dial from here
	NS     []Netns // node i's namespace
	Proc   *proc.Cluster
	Proxy  *DelayProxy // nil without Options.InternodeProxy
	// Places is node i's data center and rack (Options.Places); nil when not set.
	Places []Place
	// WANDelay is the delay between data centers set at the start (Options.WANDelay).
	WANDelay       time.Duration
	wanGossipDelay time.Duration // Options.WANGossipDelay
	prefix         string        // of every name the cluster makes: kvfault-PID-TAG-
	mounts         []string      // tmpfs mount points, unmounted by Close
	names          []string      // namespaces, deleted by Close
}

// Node returns node i's launcher.
func (c *Cluster) Node(i int) *proc.Node { return c.Proc.Nodes[i] }

// Size is the number of nodes.
func (c *Cluster) Size() int { return len(c.NS) }

// Start creates the network, starts the nodes one after another and waits until every node
// sees every other up. On error it has already undone what it made.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Binary == "" || opts.Dir == "" {
		return nil, errors.New("fault: Options.Binary and Options.Dir are required")
	}
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.Nodes > 200 {
		return nil, fmt.Errorf("fault: Options.Nodes is %d, want at most 200", opts.Nodes)
	}
	if opts.Profile == "" {
		opts.Profile = "lan"
	}
	if opts.Places != nil && len(opts.Places) != opts.Nodes {
		return nil, fmt.Errorf("fault: Options.Places names %d nodes, want one per node (%d)", len(opts.Places), opts.Nodes)
	}
	if opts.WANDelay < 0 || opts.WANDelay > 0 && opts.Places == nil {
		return nil, fmt.Errorf("fault: Options.WANDelay is %v, want 0, or a positive delay with Options.Places", opts.WANDelay)
	}
	if opts.WANGossipDelay < 0 || opts.WANGossipDelay > 0 && opts.Places == nil {
		return nil, fmt.Errorf("fault: Options.WANGossipDelay is %v, want 0, or a positive delay with Options.Places", opts.WANGossipDelay)
	}
	if opts.WANDelay > 0 {
		opts.InternodeProxy = true
	}
	c, err = newNetwork(ctx, opts.Nodes)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
			c = nil
		}
	}()
	c.Places, c.WANDelay, c.wanGossipDelay = opts.Places, opts.WANDelay, opts.WANGossipDelay
	prefix := c.prefix
	logDir := filepath.Join(opts.Dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return c, err
	}
	for i := range opts.Nodes {
		dataDir := filepath.Join(opts.Dir, fmt.Sprintf("n%d", i+1))
		if mib := opts.TmpfsMiB[i]; mib > 0 {
			if err := os.MkdirAll(dataDir, 0o755); err != nil {
				return c, err
			}
			if _, err := run(ctx, "", "mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", mib), prefix+fmt.Sprintf("n%d", i+1), dataDir); err != nil {
				return c, err
			}
			c.mounts = append(c.mounts, dataDir)
		}
	}
	if opts.InternodeProxy {
		if err := c.startProxy(ctx); err != nil {
			return c, err
		}
		c.setWANDelay(opts.WANDelay)
	}
	ip0 := NodeIP(0)
	for i := range opts.Nodes {
		ip := NodeIP(i)
		n := &proc.Node{
			Name:          fmt.Sprintf("n%d", i+1),
			DataDir:       filepath.Join(opts.Dir, fmt.Sprintf("n%d", i+1)),
			LogDir:        logDir,
			Binary:        opts.Binary,
			Sync:          true,
			Addr:          net.JoinHostPort(ip, strconv.Itoa(GRPCPort)),
			GossipAddr:    net.JoinHostPort(ip, strconv.Itoa(GossipPort)),
			InternodeAddr: net.JoinHostPort(ip, strconv.Itoa(InternodePort)),
			CQLAddr:       net.JoinHostPort(ip, strconv.Itoa(CQLPort)),
			MetricsBind:   net.JoinHostPort(ip, strconv.Itoa(MetricsPort)),
			ExtraArgs:     append(c.placeArgs(i, opts.Profile), opts.ExtraArgs[i]...),
			Wrapper:       c.NS[i].Wrapper(),
			Dial:          c.Switch.DialContext,
		}
		if i > 0 {
			n.Seeds = []string{net.JoinHostPort(ip0, strconv.Itoa(GossipPort))}
		}
		c.Proc.Nodes = append(c.Proc.Nodes, n)
		if err := n.Start(); err != nil {
			return c, err
		}
	}
	if err := c.Proc.WaitStates(ctx, 60*time.Second, c.Proc.Nodes, c.Proc.AllUp()); err != nil {
		return c, err
	}
	return c, nil
}

// placeArgs are node i's first serve flags: its gossip profile, its data center and rack, and
// the gossip delay to the other data centers.
func (c *Cluster) placeArgs(i int, profile string) []string {
	args := []string{"--profile", profile}
	if c.Places == nil {
		return args
	}
	args = append(args, "--dc", c.Places[i].DC, "--rack", c.Places[i].Rack)
	if c.wanGossipDelay > 0 {
		var remote []string
		for j, p := range c.Places {
			if p.DC != c.Places[i].DC {
				remote = append(remote, NodeIP(j))
			}
		}
		args = append(args, "--testing-gossip-delay="+c.wanGossipDelay.String(), "--testing-gossip-delay-to="+strings.Join(remote, ","))
	}
	return args
}

// InDC returns the indexes of the nodes in data center dc, in order.
func (c *Cluster) InDC(dc string) []int {
	var out []int
	for i, p := range c.Places {
		if p.DC == dc {
			out = append(out, i)
		}
	}
	return out
}

// setWANDelay sets the proxy's delay of every link between nodes of different data centers to
// d (0 removes it).
func (c *Cluster) setWANDelay(d time.Duration) {
	for i := range c.Places {
		for j := i + 1; j < len(c.Places); j++ {
			if c.Places[i].DC != c.Places[j].DC {
				c.Proxy.SetDelay(NodeIP(i), NodeIP(j), d)
			}
		}
	}
}

// newNetwork returns a cluster without nodes: the switch namespace with its bridge and one
// namespace per node, wired to the bridge by a veth pair. On error it has already undone what
// it made.
func newNetwork(ctx context.Context, nodes int) (*Cluster, error) {
	// A random tag tells the clusters of one test process apart.
	c := &Cluster{Proc: &proc.Cluster{}, prefix: runPrefix() + strconv.FormatUint(rand.Uint64()%(1<<24), 36) + "-"}
	if err := c.buildNetwork(ctx, nodes); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}

func (c *Cluster) buildNetwork(ctx context.Context, nodes int) error {
	prefix := c.prefix
	sw, err := addNetns(ctx, prefix+"sw")
	c.names = append(c.names, sw.Name)
	if err != nil {
		return err
	}
	c.Switch = sw
	for _, args := range [][]string{
		{"link", "add", "br0", "type", "bridge"},
		{"addr", "add", SwitchIP + "/24", "dev", "br0"},
		{"link", "set", "br0", "up"},
	} {
		if _, err := run(ctx, "", "ip", append([]string{"-n", sw.Name}, args...)...); err != nil {
			return err
		}
	}
	for i := range nodes {
		ns, err := addNetns(ctx, prefix+fmt.Sprintf("n%d", i+1))
		c.names = append(c.names, ns.Name)
		if err != nil {
			return err
		}
		c.NS = append(c.NS, ns)
		port := fmt.Sprintf("v%d", i+1)
		for _, args := range [][]string{
			{"-n", sw.Name, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns.Name},
			{"-n", sw.Name, "link", "set", port, "master", "br0", "up"},
			{"-n", ns.Name, "addr", "add", NodeIP(i) + "/24", "dev", "eth0"},
			{"-n", ns.Name, "link", "set", "eth0", "up"},
		} {
			if _, err := run(ctx, "", "ip", args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// startProxy starts the internode delay proxy in the switch namespace and sends every node's
// new connections to another node's internode port through it.
func (c *Cluster) startProxy(ctx context.Context) error {
	var targets []ProxyTarget
	for i := range c.NS {
		targets = append(targets, ProxyTarget{
			Listen: net.JoinHostPort(SwitchIP, strconv.Itoa(proxyPortBase+i)),
			To:     net.JoinHostPort(NodeIP(i), strconv.Itoa(InternodePort)),
		})
	}
	p, err := StartDelayProxy(c.Switch, targets)
	if err != nil {
		return err
	}
	c.Proxy = p
	for i, ns := range c.NS {
		rules := "table ip kvfault_proxy {\n\tchain output {\n\t\ttype nat hook output priority -100; policy accept;\n"
		for j := range c.NS {
			if j != i {
				rules += fmt.Sprintf("\t\tip daddr %s tcp dport %d dnat to %s:%d\n", NodeIP(j), InternodePort, SwitchIP, proxyPortBase+j)
			}
		}
		rules += "\t}\n}\n"
		if _, err := ns.Exec(ctx, rules, "nft", "-f", "-"); err != nil {
			return fmt.Errorf("%s: route internode connections through the proxy: %w", ns.Name, err)
		}
	}
	return nil
}

// Stop stops every node still running: SIGTERM, then SIGKILL after proc.StopGrace. It returns
// what did not stop cleanly.
func (c *Cluster) Stop() []error {
	for _, n := range c.Proc.Nodes {
		if p := n.Proc(); p != nil && !p.Exited() {
			syscall.Kill(p.Pid(), syscall.SIGCONT) // a paused node cannot stop
		}
	}
	return c.Proc.StopAll()
}

// Close stops every node still running (Stop), stops the proxy, unmounts the tmpfs data
// directories and deletes the namespaces. It is safe to call more than once.
func (c *Cluster) Close() error {
	errs := c.Stop()
	if c.Proxy != nil {
		c.Proxy.Close()
	}
	ctx := context.Background()
	for _, m := range c.mounts {
		if _, err := run(ctx, "", "umount", m); err != nil {
			if _, lerr := run(ctx, "", "umount", "-l", m); lerr != nil {
				errs = append(errs, err)
			}
		}
	}
	c.mounts = nil
	for _, name := range c.names {
		if err := deleteNetns(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	c.names = nil
	return errors.Join(errs...)
}

// Session connects gocql to node i alone: every statement of the session is coordinated by that
// node, and fails when it cannot be reached. The driver's sockets are made in the switch
// namespace.
func (c *Cluster) Session(i int) (*gocql.Session, error) {
	ip := NodeIP(i)
	cfg := gocql.NewCluster(ip)
	cfg.Port = CQLPort
	cfg.ProtoVersion = 4
	cfg.Dialer = c.Switch
	cfg.HostFilter = gocql.WhiteListHostFilter(ip)
	cfg.PoolConfig.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
	cfg.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 0}
	cfg.Timeout = requestTimeout
	cfg.ConnectTimeout = 3 * time.Second
	cfg.ReconnectInterval = time.Second
	cfg.NumConns = 1
	cfg.Consistency = gocql.Quorum
	// The driver logs every failed reconnection, which faults make by the hundred; the
	// workload records every failure it sees.
	cfg.Logger = log.New(io.Discard, "", 0)
	s, err := cfg.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("gocql session to n%d (%s): %w", i+1, ip, err)
	}
	return s, nil
}

// requestTimeout is the driver's timeout of one request: beyond the server's read timeout (5 s),
// so a request that fails says why, unless its coordinator does not answer at all.
const requestTimeout = 7 * time.Second

// Available reports why fault tests cannot run here, or "" when they can: they need Linux
// network namespaces (root), ip, tc, and nft, which it installs from Debian when missing.
func Available(ctx context.Context) string {
	if os.Geteuid() != 0 {
		return "the fault tests need root: they create network namespaces, nft rules and tmpfs mounts"
	}
	for _, tool := range []string{"ip", "tc", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("the fault tests need %s on PATH: %v", tool, err)
		}
	}
	probe := runPrefix() + "probe"
	if _, err := addNetns(ctx, probe); err != nil {
		deleteNetns(ctx, probe)
		return fmt.Sprintf("network namespaces are refused here: %v", err)
	}
	if err := deleteNetns(ctx, probe); err != nil {
		return fmt.Sprintf("cannot delete the probe network namespace: %v", err)
	}
	if err := ensureNft(ctx); err != nil {
		return fmt.Sprintf("nftables is not installed and could not be installed: %v", err)
	}
	return ""
}

// nftInstallTimeout bounds the installation of nftables, apt-get update included.
const nftInstallTimeout = 3 * time.Minute

// ensureNft installs Debian's nftables package when nft is missing, within nftInstallTimeout.
func ensureNft(ctx context.Context) error {
	if _, err := exec.LookPath("nft"); err == nil {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return errors.New("no nft and no apt-get to install it with")
	}
	ctx, cancel := context.WithTimeout(ctx, nftInstallTimeout)
	defer cancel()
	install := func() error {
		cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "--no-install-recommends", "nftables")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get install nftables: %w: %s", err, lastLines(out, 5))
		}
		return nil
	}
	if err := install(); err != nil {
		// The package lists may be missing or old: update them once and try again.
		if out, uerr := exec.CommandContext(ctx, "apt-get", "update").CombinedOutput(); uerr != nil {
			return fmt.Errorf("%w; apt-get update: %v: %s", err, uerr, lastLines(out, 5))
		}
		if err := install(); err != nil {
			return err
		}
	}
	_, err := exec.LookPath("nft")
	return err
}

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
