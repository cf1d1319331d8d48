package cluster

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// TestDelayTransportDelaysPackets: a packet sent through the delaying transport arrives no
// sooner than its delay, and one still delayed when the transport shuts down is dropped.
func TestDelayTransportDelaysPackets(t *testing.T) {
	const d = 50 * time.Millisecond
	mc := memberlist.DefaultLANConfig()
	mc.BindAddr, mc.BindPort, mc.AdvertisePort = "127.0.0.1", 0, 0
	dt, err := newDelayTransport(mc, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mc.BindPort == 0 || mc.AdvertisePort != mc.BindPort {
		t.Fatalf("ports after binding to any: bind %d, advertise %d; want the bound port in both", mc.BindPort, mc.AdvertisePort)
	}
	rx, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{"127.0.0.1"}, BindPort: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rx.Shutdown() })
	to := net.JoinHostPort("127.0.0.1", strconv.Itoa(rx.GetAutoBindPort()))

	sent := time.Now()
	buf := []byte("ping")
	if _, err := dt.WriteTo(buf, to); err != nil {
		t.Fatal(err)
	}
	buf[0] = 'X' // the caller may reuse its buffer at once
	p := <-rx.PacketCh()
	if got := p.Timestamp.Sub(sent); got < d {
		t.Errorf("the packet arrived %v after it was sent, want at least the delay %v", got, d)
	}
	if string(p.Buf) != "ping" {
		t.Errorf("received %q, want %q (the buffer as it was when sent)", p.Buf, "ping")
	}

	slow, err := newDelayTransport(&memberlist.Config{BindAddr: "127.0.0.1"}, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slow.WriteTo([]byte("late"), to); err != nil {
		t.Fatal(err)
	}
	if err := slow.Shutdown(); err != nil { // returns without waiting an hour
		t.Fatal(err)
	}
	if err := dt.Shutdown(); err != nil {
		t.Fatal(err)
	}
}

// TestDelayTransportDelaysOnlyListedHosts: with GossipDelayTo, packets and streams to other
// hosts leave at once, while a packet to a listed host waits for the delay.
func TestDelayTransportDelaysOnlyListedHosts(t *testing.T) {
	rx, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{"127.0.0.1"}, BindPort: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rx.Shutdown() })
	near := net.JoinHostPort("127.0.0.1", strconv.Itoa(rx.GetAutoBindPort()))
	far := net.JoinHostPort("127.0.0.2", strconv.Itoa(rx.GetAutoBindPort()))
	dt, err := newDelayTransport(&memberlist.Config{BindAddr: "127.0.0.1"}, time.Hour, []string{"127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dt.WriteTo([]byte("far"), far); err != nil {
		t.Fatal(err)
	}
	if _, err := dt.WriteTo([]byte("near"), near); err != nil {
		t.Fatal(err)
	}
	if p := <-rx.PacketCh(); string(p.Buf) != "near" { // not an hour later
		t.Errorf("received %q first, want %q: the packet to an unlisted host was held back", p.Buf, "near")
	}
	dt.mu.Lock()
	held := len(dt.pending)
	dt.mu.Unlock()
	if held != 1 {
		t.Errorf("%d sends held back, want 1: the packet to the listed host 127.0.0.2", held)
	}
	conn, err := dt.DialTimeout(near, time.Second) // an hour's delay would fail it
	if err != nil {
		t.Fatalf("a stream to an unlisted host: %v", err)
	}
	conn.Close()
	(<-rx.StreamCh()).Close() // the receiver hands each stream over before it can shut down
	if err := dt.Shutdown(); err != nil {
		t.Fatal(err)
	}
}
