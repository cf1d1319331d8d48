package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// network is the loopback network of a test's nodes, with a firewall that can cut nodes off: a
// cut node's packets, to it or from it, are dropped; the streams it is offered are closed at
// once; and a dial to it or from it hangs as a connect whose SYNs are lost does (see
// blackholed).
type network struct {
	mu  sync.Mutex
	cut map[string]bool // gossip addresses
}

func (n *network) setCut(addr string, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut == nil {
		n.cut = map[string]bool{}
	}
	n.cut[addr] = on
}

// blocked reports whether traffic between a and b is dropped.
func (n *network) blocked(a, b string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[a] || n.cut[b]
}

// cuttable is memberlist's own NetTransport on a network that can cut it off.
type cuttable struct {
	nt      *memberlist.NetTransport
	net     *network
	addr    string // the gossip address this transport serves
	packets chan *memberlist.Packet
	streams chan net.Conn
	// closing ends at Shutdown, stop once the NetTransport is shut down: in between, the
	// forwarders drain the NetTransport, whose listeners block until what they received is
	// taken.
	closing, stop chan struct{}
	wg            sync.WaitGroup
}

var _ memberlist.NodeAwareTransport = (*cuttable)(nil)

func newCuttable(n *network, bindAddr string) (*cuttable, error) {
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{bindAddr}, BindPort: 0})
	if err != nil {
		return nil, err
	}
	t := &cuttable{nt: nt, net: n, addr: net.JoinHostPort(bindAddr, fmt.Sprint(nt.GetAutoBindPort())),
		packets: make(chan *memberlist.Packet), streams: make(chan net.Conn),
		closing: make(chan struct{}), stop: make(chan struct{})}
	t.wg.Add(2)
	go func() {
		defer t.wg.Done()
		for {
			select {
			case p := <-nt.PacketCh():
				if t.net.blocked(t.addr, p.From.String()) {
					continue
				}
				select {
				case t.packets <- p:
				case <-t.closing:
				}
			case <-t.stop:
				return
			}
		}
	}()
	go func() {
		defer t.wg.Done()
		for {
			select {
			case c := <-nt.StreamCh():
				if t.net.blocked(t.addr, t.addr) {
					c.Close()
					continue
				}
				select {
				case t.streams <- c:
				case <-t.closing:
					c.Close()
				}
			case <-t.stop:
				return
			}
		}
	}()
	return t, nil
}

// synRetries are when the kernel sends a connect's SYN again after the first (Linux: 1 s, then
// doubling), relative to the dial.
var synRetries = []time.Duration{time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second}

// blackholed models a dial to addr: while the link is cut its SYNs are lost, and retried at
// synRetries; the dial connects at the first retry after the heal, or fails at timeout. It
// reports whether the dial fails.
func (t *cuttable) blackholed(addr string, timeout time.Duration) bool {
	if !t.net.blocked(t.addr, addr) {
		return false
	}
	start := time.Now()
	for _, retry := range synRetries {
		if retry >= timeout {
			break
		}
		timer := time.NewTimer(time.Until(start.Add(retry)))
		select {
		case <-timer.C:
		case <-t.closing:
			timer.Stop()
			return true
		}
		if !t.net.blocked(t.addr, addr) {
			return false
		}
	}
	timer := time.NewTimer(time.Until(start.Add(timeout)))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-t.closing:
	}
	return true
}

var errBlackholed = errors.New("i/o timeout (the link is cut)")

func (t *cuttable) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return t.nt.FinalAdvertiseAddr(ip, port)
}

func (t *cuttable) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.net.blocked(t.addr, addr) {
		return time.Now(), nil // dropped on the way
	}
	return t.nt.WriteTo(b, addr)
}

func (t *cuttable) WriteToAddress(b []byte, addr memberlist.Address) (time.Time, error) {
	return t.WriteTo(b, addr.Addr)
}

func (t *cuttable) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if t.blackholed(addr, timeout) {
		return nil, errBlackholed
	}
	return t.nt.DialTimeout(addr, timeout)
}

func (t *cuttable) DialAddressTimeout(addr memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.DialTimeout(addr.Addr, timeout)
}

func (t *cuttable) PacketCh() <-chan *memberlist.Packet { return t.packets }
func (t *cuttable) StreamCh() <-chan net.Conn           { return t.streams }

func (t *cuttable) Shutdown() error {
	close(t.closing)
	err := t.nt.Shutdown()
	close(t.stop)
	t.wg.Wait()
	return err
}

// startCuttable starts a node whose gossip goes through a cuttable transport. Memberlist stops
// gossiping to a node it declared dead after GossipToTheDeadTime; it is made short, so that
// after a cut only the nodes' rejoins can bring the nodes back together.
func (tc *testCluster) startCuttable(n *network, seeds ...string) *testNode {
	tc.t.Helper()
	var tr *cuttable
	cfg := tc.config(tc.t.TempDir(), newFakeSchema(), seeds...)
	cfg.Tune = func(mc *memberlist.Config) {
		var err error
		if tr, err = newCuttable(n, mc.BindAddr); err != nil {
			tc.t.Fatalf("binding the gossip transport: %v", err)
		}
		mc.Transport = tr
		mc.AdvertisePort = tr.nt.GetAutoBindPort()
		mc.GossipToTheDeadTime = 100 * time.Millisecond
		mc.SuspicionMaxTimeoutMult = 1
		mc.TCPTimeout = 10 * time.Second // a LAN's: a join into a partition hangs that long
	}
	c, err := Start(context.Background(), cfg)
	if err != nil {
		tc.t.Fatalf("Start: %v", err)
	}
	tc.peers.register(c)
	tc.t.Cleanup(func() { c.Close() })
	if c.GossipAddr() != tr.addr {
		tc.t.Fatalf("the node advertises %s, its transport serves %s", c.GossipAddr(), tr.addr)
	}
	return &testNode{Cluster: c, dir: cfg.DataDir, schema: cfg.Schema.(*fakeSchema)}
}

// TestHealedPartitionRejoins cuts a node off a three-node cluster until each side has declared
// the other dead and stopped gossiping to it, then heals the cut: the node and its peers see
// each other live again within 5 s (issue 29: 8 to 23 s before, when down peers were retried
// every 30 s and one join hanging on a cut-off peer held up the next round). The figure is
// logged.
func TestHealedPartitionRejoins(t *testing.T) {
	tc := newTestCluster(t)
	var n network
	a := tc.startCuttable(&n)
	b := tc.startCuttable(&n, a.GossipAddr())
	c := tc.startCuttable(&n, a.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(a, b, c))

	cutAt := time.Now()
	n.setCut(c.GossipAddr(), true)
	waitFor(t, 10*time.Second, seesDown(c.LocalID(), a, b))
	waitFor(t, 10*time.Second, seesDown(a.LocalID(), c))
	waitFor(t, 10*time.Second, seesDown(b.LocalID(), c))
	// Let the rejoins run into the cut: joins across it hang, and the ones after the heal must
	// not wait for them.
	waitFor(t, 10*time.Second, func() string {
		for _, j := range []struct{ from, to *testNode }{{c, a}, {c, b}, {a, c}, {b, c}} {
			j.from.rejoinMu.Lock()
			k := j.from.rejoins[j.to.GossipAddr()]
			j.from.rejoinMu.Unlock()
			if k < 2 {
				return fmt.Sprintf("%s has %d joins of %s in flight, want 2 or more", j.from.LocalID(), k, j.to.LocalID())
			}
		}
		return ""
	})

	healed := time.Now()
	n.setCut(c.GossipAddr(), false)
	took := waitFor(t, 10*time.Second, allSeeAllLive(a, b, c))
	t.Logf("a node cut off for %v saw its peers live again, and they it, %v after the heal",
		healed.Sub(cutAt).Round(time.Millisecond), took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("the healed node and its peers took %v to see each other live, want at most 5 s", took)
	}
}
