package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/internal/poll"
)

// CQLDialTimeout bounds the wait for a started node's native-protocol port to accept connections.
const CQLDialTimeout = 30 * time.Second

// startAttempts is how often StartHosts picks new ports when a node finds one of its shared
// ports taken by another process between FreePorts and its bind.
const startAttempts = 3

// LoopbackHosts returns n loopback addresses, 127.0.0.1 to 127.0.0.n: a cluster whose nodes all
// listen on the same ports, as CQL drivers expect of one. Linux routes all of 127.0.0.0/8 to the
// loopback interface, so they need no setup there. n must be 1 to 254.
func LoopbackHosts(n int) []string {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = "127.0.0." + strconv.Itoa(i+1)
	}
	return hosts
}

// checkLoopbackHosts refuses anything but distinct loopback IP addresses: the harness's servers
// and test traffic stay on this machine.
func checkLoopbackHosts(hosts []string) error {
	seen := map[string]bool{}
	for i, h := range hosts {
		ip := net.ParseIP(h)
		if ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("proc: host %d %q is not a loopback IP address (127.0.0.0/8 or ::1)", i, h)
		}
		if seen[ip.String()] {
			return fmt.Errorf("proc: host %d %q is listed twice", i, h)
		}
		seen[ip.String()] = true
	}
	return nil
}

// FreePorts returns n distinct ports each of which is free for both TCP and UDP on every one of
// hosts (loopback IP addresses), checked by binding them, drawn below the kernel's ephemeral
// range when it leaves room (lowestPort). The ports are released when it returns,
// so another process may take one before the caller binds it: callers retry on "address already
// in use" (StartHosts does).
func FreePorts(hosts []string, n int) ([]int, error) {
	if len(hosts) == 0 {
		return nil, errors.New("proc: FreePorts needs at least one host")
	}
	if err := checkLoopbackHosts(hosts); err != nil {
		return nil, err
	}
	// Every socket bound here stays open until the end, so that a port that failed on some host
	// is not offered again.
	below := ephemeralLow()
	var held []io.Closer
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 50*n {
			return nil, fmt.Errorf("proc: found %d of %d ports free on all of %v in %d tries", len(ports), n, hosts, tries)
		}
		first, err := net.Listen("tcp", net.JoinHostPort(hosts[0], strconv.Itoa(candidate(below))))
		if err != nil {
			continue // taken: the next try draws another
		}
		held = append(held, first)
		port := first.Addr().(*net.TCPAddr).Port
		free := true
		for i, h := range hosts {
			addr := net.JoinHostPort(h, strconv.Itoa(port))
			if i > 0 {
				l, err := net.Listen("tcp", addr)
				if err != nil {
					free = false
					break
				}
				held = append(held, l)
			}
			pc, err := net.ListenPacket("udp", addr)
			if err != nil {
				free = false
				break
			}
			held = append(held, pc)
		}
		if free {
			ports = append(ports, port)
		}
	}
	return ports, nil
}

// The ports FreePorts offers lie below the kernel's ephemeral range, from which port 0 binds and
// outgoing connections take theirs: a node restarted on its ports (after a kill -9) then finds
// them free however many sockets other tests opened while it was down.
const lowestPort = 10000

// ephemeralLow returns the first port of the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), or 0 when it cannot be read or leaves too little room below
// it, and candidate then falls back to port 0.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low < lowestPort+1000 {
		return 0
	}
	return low
}

// candidate draws a port in [lowestPort, below), or returns 0 (any port) when below is 0.
func candidate(below int) int {
	if below == 0 {
		return 0
	}
	return lowestPort + rand.IntN(below-lowestPort)
}

// hostPorts are the shared ports of a cluster started with Options.Hosts.
type hostPorts struct {
	addr, gossip, metrics, internode, cql int
}

func pickHostPorts(hosts []string, cql bool, cqlPort int) (hostPorts, error) {
	n := 4
	if cql && cqlPort == 0 {
		n = 5
	}
	ports, err := FreePorts(hosts, n)
	if err != nil {
		return hostPorts{}, err
	}
	hp := hostPorts{addr: ports[0], gossip: ports[1], metrics: ports[2], internode: ports[3], cql: cqlPort}
	if cql && cqlPort == 0 {
		hp.cql = ports[4]
	}
	for _, p := range ports[:4] {
		if cql && p == hp.cql {
			return hostPorts{}, fmt.Errorf("proc: picked port %d, the fixed CQL port, for another listener", p)
		}
	}
	return hp, nil
}

// startHosts is Start for Options.Hosts: node i on hosts[i], every listener on a port shared by
// all nodes. A node that finds a shared port taken makes it stop the nodes it started, wipe their
// directories and try again with new ports, up to startAttempts times.
func startHosts(opts Options, logDir string) (*Cluster, error) {
	if err := checkLoopbackHosts(opts.Hosts); err != nil {
		return nil, err
	}
	if opts.Nodes == 0 {
		opts.Nodes = len(opts.Hosts)
	}
	if opts.Nodes != len(opts.Hosts) {
		return nil, fmt.Errorf("proc: Options.Nodes is %d but Options.Hosts lists %d hosts; give one host per node", opts.Nodes, len(opts.Hosts))
	}
	var c *Cluster
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		var hp hostPorts
		if hp, err = pickHostPorts(opts.Hosts, opts.CQL, opts.CQLPort); err != nil {
			return nil, err
		}
		c = &Cluster{}
		if opts.CQL {
			c.CQLPort = hp.cql
		}
		err = startNodes(c, opts, logDir, func(i int, n *Node) {
			h := opts.Hosts[i]
			n.Addr = net.JoinHostPort(h, strconv.Itoa(hp.addr))
			n.GossipAddr = net.JoinHostPort(h, strconv.Itoa(hp.gossip))
			n.InternodeAddr = net.JoinHostPort(h, strconv.Itoa(hp.internode))
			n.MetricsBind = net.JoinHostPort(h, strconv.Itoa(hp.metrics))
			if opts.CQL {
				n.CQLAddr = net.JoinHostPort(h, strconv.Itoa(hp.cql))
			}
		})
		if err == nil || !strings.Contains(err.Error(), "address already in use") || attempt == startAttempts {
			return c, err
		}
		for _, e := range c.StopAll() {
			err = fmt.Errorf("%w; stopping the nodes to retry on other ports: %v", err, e)
		}
		for _, n := range c.Nodes {
			if e := os.RemoveAll(n.DataDir); e != nil {
				return c, fmt.Errorf("%w; removing %s to retry on other ports: %v", err, n.DataDir, e)
			}
		}
	}
	return c, err
}

// waitCQL waits until the node's native-protocol port accepts TCP connections.
func (n *Node) waitCQL(ctx context.Context) error {
	return poll.Until(ctx, CQLDialTimeout, fmt.Sprintf("%s accepts connections on its CQL address %s", n.Name, n.CQLAddr), func() error {
		if n.proc.Exited() {
			return fmt.Errorf("%s exited (%v)", n.Name, n.proc.err)
		}
		dial := n.Dial
		if dial == nil {
			dial = (&net.Dialer{}).DialContext
		}
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		conn, err := dial(dctx, "tcp", n.CQLAddr)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// Host returns the IP address the node listens on (the host of its gRPC address).
func (n *Node) Host() string {
	h, _, err := net.SplitHostPort(n.Addr)
	if err != nil {
		return ""
	}
	return h
}

// CQLAddrs returns every node's native-protocol address (host:port), in node order: the contact
// points to hand a driver. It is empty unless the cluster was started with Options.CQL.
func (c *Cluster) CQLAddrs() []string {
	var addrs []string
	for _, n := range c.Nodes {
		if n.CQLAddr != "" {
			addrs = append(addrs, n.CQLAddr)
		}
	}
	return addrs
}

// Hosts returns every node's IP address, in node order.
func (c *Cluster) Hosts() []string {
	var hosts []string
	for _, n := range c.Nodes {
		hosts = append(hosts, n.Host())
	}
	return hosts
}
