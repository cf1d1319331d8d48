package node

import (
	"net"
	"testing"

	"github.com/kvnode/kvnode/frontend/native"
)

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7946": true, "[::1]:0": true, "localhost:1": true,
		"0.0.0.0:7946": false, "10.0.0.1:7946": false, "node1.example:7946": false, "garbage": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestNativeConfigCarriesTheNodeBounds: the native front end gets the node's bounds on its
// connections, their requests and their bytes (audit 18, finding 3: it used to get none, so
// its built-in defaults could not be changed).
func TestNativeConfigCarriesTheNodeBounds(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	cfg := Config{DataDir: "/d", Native: native.Options{MaxConnections: 3, MaxInFlight: 5,
		MaxConnectionBytes: 7 << 10, MaxServerBytes: 11 << 20}}
	cfg.EnsureDefaults()
	got := (&Node{cfg: cfg, clis: lis}).nativeConfig()
	if got.MaxConnections != 3 || got.MaxInFlight != 5 || got.MaxConnectionBytes != 7<<10 || got.MaxServerBytes != 11<<20 {
		t.Errorf("native.Config bounds = connections %d, in flight %d, connection bytes %d, server bytes %d; want 3, 5, %d, %d",
			got.MaxConnections, got.MaxInFlight, got.MaxConnectionBytes, got.MaxServerBytes, 7<<10, 11<<20)
	}
	if got.MaxFrameSize != MessageLimit(cfg.Coordinator.MaxMutationSize) {
		t.Errorf("native.Config.MaxFrameSize = %d, want MessageLimit(max_mutation_size) = %d", got.MaxFrameSize, MessageLimit(cfg.Coordinator.MaxMutationSize))
	}
}

// TestHostOf: connections count against their IPv4 address, or their IPv6 address's /64.
func TestHostOf(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 1} }
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{tcp("10.0.0.1"), "10.0.0.1/32"},
		{tcp("::ffff:10.0.0.1"), "10.0.0.1/32"},
		{tcp("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64"},
		{tcp("2001:db8:1:2:ffff::1"), "2001:db8:1:2::/64"},
		{&net.UnixAddr{Name: "s", Net: "unix"}, "invalid Prefix"},
	} {
		if got := hostOf(c.addr).String(); got != c.want {
			t.Errorf("hostOf(%v) = %s, want %s", c.addr, got, c.want)
		}
	}
}
