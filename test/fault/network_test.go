//go:build linux

package fault

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoServers listens on every node's internode address of c (no kvnode runs) and answers
// each byte with the same byte; they stop at the test's end.
func echoServers(t *testing.T, c *Cluster) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	var ls []net.Listener
	for i, ns := range c.NS {
		l, err := ns.Listen("tcp", net.JoinHostPort(NodeIP(i), strconv.Itoa(InternodePort)))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		wg.Add(1)
		go func() { // owned by the test: ends when the cleanup closes l
			defer wg.Done()
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, conn)
				mu.Unlock()
				wg.Add(1)
				go func() { // ends when the peer or the cleanup closes conn
					defer wg.Done()
					io.Copy(conn, conn)
					conn.Close()
				}()
			}
		}()
	}
	t.Cleanup(func() {
		for _, l := range ls {
			l.Close()
		}
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

// roundTrip connects from ns to node to's echo server, sends a byte and waits for it, within
// timeout; it returns how long the exchange took.
func roundTrip(ctx context.Context, ns Netns, to int, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := ns.DialContext(ctx, "tcp", net.JoinHostPort(NodeIP(to), strconv.Itoa(InternodePort)))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	start := time.Now()
	if _, err := conn.Write([]byte{42}); err != nil {
		return 0, err
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(conn, b); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// reachability maps "from->to" to whether a connection and an echo got through: from every node
// (n1..) and from the switch ("sw") to every node.
func reachability(ctx context.Context, c *Cluster) map[string]bool {
	got := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	from := append([]Netns{c.Switch}, c.NS...)
	for f, ns := range from {
		name := "sw"
		if f > 0 {
			name = fmt.Sprintf("n%d", f)
		}
		for to := range c.NS {
			if f-1 == to {
				continue
			}
			wg.Add(1)
			go func() { // waited for below
				defer wg.Done()
				_, err := roundTrip(ctx, ns, to, 700*time.Millisecond)
				mu.Lock()
				got[fmt.Sprintf("%s->n%d", name, to+1)] = err == nil
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return got
}

// TestNetworkNemeses runs the network nemeses on the namespaces alone, with echo servers in
// place of kvnode: each cuts exactly the links it names, its heal is idempotent (before a start,
// and twice), and after the heal every link works again.
func TestNetworkNemeses(t *testing.T) {
	ctx := prepare(t)
	c, err := newNetwork(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	echoServers(t, c)
	if all, ok := awaitReachability(ctx, c, nil); !ok {
		t.Fatalf("before any fault, not every link gets through: %v", all)
	}
	for _, tc := range []struct {
		nem Nemesis
		cut []string // the links that must fail while the fault is on
	}{
		{Partition{Node: 2}, []string{"n1->n3", "n2->n3", "n3->n1", "n3->n2"}},
		{Bridge{A: 0, B: 1}, []string{"n1->n2", "n2->n1"}},
		{Loss{Node: 1, Percent: 100}, []string{"sw->n2", "n1->n2", "n3->n2", "n2->n1", "n2->n3"}},
		{Bandwidth{Node: 0, Rate: "256kbit"}, nil},
	} {
		name := tc.nem.Name()
		if err := tc.nem.Heal(ctx, c); err != nil {
			t.Errorf("%s: Heal before Start: %v", name, err)
		}
		if err := tc.nem.Start(ctx, c); err != nil {
			t.Fatalf("%s: Start: %v", name, err)
		}
		during, _ := awaitReachability(ctx, c, tc.cut)
		for link, ok := range during {
			if want := !contains(tc.cut, link); ok != want {
				t.Errorf("%s: %s gets through = %v, want %v", name, link, ok, want)
			}
		}
		if b, ok := tc.nem.(Bandwidth); ok {
			for _, l := range b.links(c) {
				out, err := run(ctx, "", "ip", "netns", "exec", l[0], "tc", "qdisc", "show", "dev", l[1], "root")
				if err != nil || !strings.Contains(string(out), "tbf") || !strings.Contains(string(out), "256Kbit") {
					t.Errorf("%s: the qdisc of %s in %s is %q (%v), want a tbf at 256Kbit", name, l[1], l[0], out, err)
				}
			}
		}
		for range 2 {
			if err := tc.nem.Heal(ctx, c); err != nil {
				t.Errorf("%s: Heal: %v", name, err)
			}
		}
		after, _ := awaitReachability(ctx, c, nil)
		for link, ok := range after {
			if !ok {
				t.Errorf("%s: after the heal, %s does not get through", name, link)
			}
		}
		for _, ns := range c.NS {
			out, err := ns.Exec(ctx, "", "nft", "list", "tables")
			if err != nil || strings.Contains(string(out), "kvfault") {
				t.Errorf("%s: after the heal, %s has nft tables %q (%v), want none of the harness's", name, ns.Name, out, err)
			}
		}
	}
}

// awaitReachability measures reachability until exactly the links in cut fail, for at most
// reachabilityWait, and returns the last measure and whether it matched: on a loaded machine a
// round trip over a working link may miss its 700 ms once, and a new veth may take a moment.
func awaitReachability(ctx context.Context, c *Cluster, cut []string) (map[string]bool, bool) {
	deadline := time.Now().Add(reachabilityWait)
	for {
		got := reachability(ctx, c)
		match := true
		for link, ok := range got {
			if ok == contains(cut, link) {
				match = false
			}
		}
		if match || time.Now().After(deadline) || ctx.Err() != nil {
			return got, match
		}
	}
}

// reachabilityWait bounds awaitReachability.
const reachabilityWait = 10 * time.Second

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestDelayProxy routes the nodes' internode connections through the delay proxy (as
// Options.InternodeProxy does) and checks that they get there through it, and that a delay on
// one link holds back both directions of that link alone.
func TestDelayProxy(t *testing.T) {
	ctx := prepare(t)
	c, err := newNetwork(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	echoServers(t, c)
	if err := c.startProxy(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(ctx, c.NS[0], 1, 5*time.Second); err != nil {
		t.Fatalf("n1 -> n2 through the proxy: %v", err)
	}
	if got := c.Proxy.Accepted(); got != 1 {
		t.Fatalf("the proxy forwarded %d connections after n1 connected to n2's internode port, want 1 (the DNAT rule did not apply)", got)
	}
	const d = 400 * time.Millisecond
	nem := Delay{Node: 1, D: d}
	if err := nem.Start(ctx, c); err != nil {
		t.Fatal(err)
	}
	rtt, err := roundTrip(ctx, c.NS[0], 1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rtt < 2*d {
		t.Errorf("n1 -> n2 round trip with %v on the link each way took %v, want at least %v", d, rtt, 2*d)
	}
	if rtt, err := roundTrip(ctx, c.NS[0], 2, 5*time.Second); err != nil || rtt >= d {
		t.Errorf("n1 -> n3, a link without delay: round trip %v (%v), want under %v", rtt, err, d)
	}
	for range 2 {
		if err := nem.Heal(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if rtt, err := roundTrip(ctx, c.NS[0], 1, 5*time.Second); err != nil || rtt >= d {
		t.Errorf("n1 -> n2 after the heal: round trip %v (%v), want under %v", rtt, err, d)
	}
}

// TestDataCenterNemeses places four namespaces in two data centers (n1, n2 in dc1; n3, n4 in
// dc2) with echo servers in place of kvnode, and checks the data-center nemeses: a cut between
// the data centers stops exactly the links between them, with direct connections and then with
// connections through the internode proxy (DNAT), and heals; the WAN delay holds back the links
// between the data centers and no other.
func TestDataCenterNemeses(t *testing.T) {
	ctx := prepare(t)
	c, err := newNetwork(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	c.Places = []Place{{"dc1", "r1"}, {"dc1", "r2"}, {"dc2", "r1"}, {"dc2", "r2"}}
	echoServers(t, c)
	cross := []string{"n1->n3", "n1->n4", "n2->n3", "n2->n4", "n3->n1", "n3->n2", "n4->n1", "n4->n2"}
	cut := DCLink{A: "dc1", B: "dc2", Percent: 100}
	check := func(how string) {
		t.Helper()
		if all, ok := awaitReachability(ctx, c, nil); !ok {
			t.Fatalf("%s, before the cut, not every link gets through: %v", how, all)
		}
		if err := cut.Start(ctx, c); err != nil {
			t.Fatalf("%s: %s: %v", how, cut.Name(), err)
		}
		during, _ := awaitReachability(ctx, c, cross)
		for link, ok := range during {
			if want := !contains(cross, link); ok != want {
				t.Errorf("%s, %s: %s gets through = %v, want %v", how, cut.Name(), link, ok, want)
			}
		}
		for range 2 {
			if err := cut.Heal(ctx, c); err != nil {
				t.Errorf("%s: heal %s: %v", how, cut.Name(), err)
			}
		}
		if after, ok := awaitReachability(ctx, c, nil); !ok {
			t.Errorf("%s: after the heal of %s, not every link gets through: %v", how, cut.Name(), after)
		}
	}
	check("direct connections")
	loss := DCLink{A: "dc1", B: "dc2", Percent: 30}
	if err := loss.Start(ctx, c); err != nil {
		t.Fatalf("%s: %v", loss.Name(), err)
	}
	for _, i := range []int{0, 3} {
		out, err := c.NS[i].Exec(ctx, "", "nft", "list", "table", "inet", dcTable)
		if err != nil || !strings.Contains(string(out), "numgen random mod 100 < 30") {
			t.Errorf("%s: n%d's rules are %q (%v), want drops of a numgen sample under 30", loss.Name(), i+1, out, err)
		}
	}
	if err := loss.Heal(ctx, c); err != nil {
		t.Fatalf("heal %s: %v", loss.Name(), err)
	}
	if err := c.startProxy(ctx); err != nil {
		t.Fatal(err)
	}
	check("connections through the proxy")
	if c.Proxy.Accepted() == 0 {
		t.Fatal("the proxy forwarded no connection: the DNAT rules did not apply")
	}
	const d = 300 * time.Millisecond
	wan := DCDelay{D: d}
	if err := wan.Start(ctx, c); err != nil {
		t.Fatal(err)
	}
	if rtt, err := roundTrip(ctx, c.NS[1], 2, 5*time.Second); err != nil || rtt < 2*d {
		t.Errorf("n2 -> n3 across the WAN with %v each way: round trip %v (%v), want at least %v", d, rtt, err, 2*d)
	}
	if rtt, err := roundTrip(ctx, c.NS[2], 3, 5*time.Second); err != nil || rtt >= d {
		t.Errorf("n3 -> n4 within dc2: round trip %v (%v), want under %v", rtt, err, d)
	}
	if err := wan.Heal(ctx, c); err != nil {
		t.Fatal(err)
	}
	if rtt, err := roundTrip(ctx, c.NS[1], 2, 5*time.Second); err != nil || rtt >= d {
		t.Errorf("n2 -> n3 after the heal: round trip %v (%v), want under %v", rtt, err, d)
	}
}
