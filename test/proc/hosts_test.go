package proc

import (
	"context"
	"net"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLoopbackHosts(t *testing.T) {
	if got, want := LoopbackHosts(3), []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("LoopbackHosts(3) = %v, want %v", got, want)
	}
}

// TestPickHostPortsKeepsAFixedCQLPort holds Options.CQLPort: the native port is the one asked
// for, and no other listener draws it.
func TestPickHostPortsKeepsAFixedCQLPort(t *testing.T) {
	hp, err := pickHostPorts(LoopbackHosts(2), true, 9042)
	if err != nil {
		t.Fatal(err)
	}
	if hp.cql != 9042 {
		t.Errorf("pickHostPorts(cqlPort=9042) picked CQL port %d, want 9042", hp.cql)
	}
	for _, p := range []int{hp.addr, hp.gossip, hp.metrics, hp.internode} {
		if p == 9042 || p == 0 {
			t.Errorf("pickHostPorts(cqlPort=9042) gave another listener port %d (all: %+v)", p, hp)
		}
	}
	if _, err := Start(Options{Binary: "kvnode", Dir: t.TempDir(), Hosts: LoopbackHosts(1), CQLPort: 9042}); err == nil {
		t.Error("Start with CQLPort but without CQL succeeded, want an error")
	}
}

// TestFreePortsAreFreeOnEveryHost binds each returned port, TCP and UDP, on every host: what a
// node of a shared-port cluster does with it.
func TestFreePortsAreFreeOnEveryHost(t *testing.T) {
	hosts := LoopbackHosts(3)
	ports, err := FreePorts(hosts, 4)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("FreePorts returned port %d twice: %v", p, ports)
		}
		seen[p] = true
		for _, h := range hosts {
			addr := net.JoinHostPort(h, strconv.Itoa(p))
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("port %d from FreePorts: %v", p, err)
			}
			defer l.Close()
			pc, err := net.ListenPacket("udp", addr)
			if err != nil {
				t.Fatalf("port %d from FreePorts: %v", p, err)
			}
			defer pc.Close()
		}
	}
}

// TestFreePortsSkipsAPortTakenOnAnyHost holds a block of ports on the last host only and checks
// that none of them is offered.
func TestFreePortsSkipsAPortTakenOnAnyHost(t *testing.T) {
	hosts := LoopbackHosts(3)
	taken := map[int]bool{}
	for range 200 {
		l, err := net.Listen("tcp", "127.0.0.3:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		taken[l.Addr().(*net.TCPAddr).Port] = true
	}
	ports, err := FreePorts(hosts, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if taken[p] {
			t.Errorf("FreePorts offered port %d, which is in use on 127.0.0.3", p)
		}
	}
}

func TestHostsMustBeDistinctLoopbackAddresses(t *testing.T) {
	for _, tc := range []struct {
		hosts   []string
		wantErr string
	}{
		{[]string{"127.0.0.1", "10.0.0.2"}, `host 1 "10.0.0.2" is not a loopback IP address`},
		{[]string{"localhost"}, `host 0 "localhost" is not a loopback IP address`},
		{[]string{"127.0.0.2", "127.0.0.2"}, `host 1 "127.0.0.2" is listed twice`},
	} {
		if _, err := FreePorts(tc.hosts, 1); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("FreePorts(%v) error = %v, want one containing %q", tc.hosts, err, tc.wantErr)
		}
		_, err := Start(Options{Binary: "kvnode", Dir: t.TempDir(), Hosts: tc.hosts})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Start(Hosts: %v) error = %v, want one containing %q", tc.hosts, err, tc.wantErr)
		}
	}
	if _, err := Start(Options{Binary: "kvnode", Dir: t.TempDir(), CQL: true}); err == nil || !strings.Contains(err.Error(), "CQL needs Options.Hosts") {
		t.Errorf("Start(CQL without Hosts) error = %v, want one saying CQL needs Hosts", err)
	}
	if _, err := Start(Options{Binary: "kvnode", Dir: t.TempDir(), Nodes: 2, Hosts: LoopbackHosts(3)}); err == nil || !strings.Contains(err.Error(), "Nodes is 2 but Options.Hosts lists 3") {
		t.Errorf("Start(2 nodes on 3 hosts) error = %v, want one naming the mismatch", err)
	}
}

// TestStartHostsRunsOneNodePerAddressOnSharedPorts starts real processes on 127.0.0.1, .2 and
// .3 and checks that each serves on its own address with the same ports as the others, and that
// every node sees every other one up (read from each node's metrics, served on its own address).
func TestStartHostsRunsOneNodePerAddressOnSharedPorts(t *testing.T) {
	if testing.Short() {
		t.Skip("proc: skipped under -short (it builds kvnode and runs a 3-node cluster)")
	}
	bin, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hosts := LoopbackHosts(3)
	c, err := Start(Options{Binary: bin, Dir: t.TempDir(), Hosts: hosts, Sync: false})
	if c != nil {
		t.Cleanup(func() {
			for _, err := range c.StopAll() {
				t.Error(err)
			}
			if t.Failed() {
				for _, n := range c.Nodes {
					for _, path := range n.Stderrs() {
						t.Logf("%s stderr (%s) ends:\n%s", n.Name, filepath.Base(path), Tail(path, 40))
					}
				}
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Hosts(); !reflect.DeepEqual(got, hosts) {
		t.Errorf("nodes serve on %v, want %v", got, hosts)
	}
	port := func(addr string) string {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("address %q: %v", addr, err)
		}
		return p
	}
	n1 := c.Nodes[0]
	for _, n := range c.Nodes {
		for _, a := range []struct{ what, got, want string }{
			{"gRPC", n.Addr, n1.Addr},
			{"gossip", n.GossipAddr, n1.GossipAddr},
			{"metrics", n.MetricsAddr, n1.MetricsAddr},
		} {
			if !strings.HasPrefix(a.got, n.Host()+":") || port(a.got) != port(a.want) {
				t.Errorf("%s's %s address is %s, want %s:%s (its host, n1's port)", n.Name, a.what, a.got, n.Host(), port(a.want))
			}
		}
	}
	if err := c.WaitStates(context.Background(), 60*time.Second, c.Nodes, c.AllUp()); err != nil {
		t.Fatal(err)
	}
	if c.CQLPort != 0 || len(c.CQLAddrs()) != 0 {
		t.Errorf("a cluster started without CQL has CQL port %d, addresses %v", c.CQLPort, c.CQLAddrs())
	}
}
