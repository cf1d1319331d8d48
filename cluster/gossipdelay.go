package cluster

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// delayTransport is memberlist's network transport with every packet this node sends, and
// every stream it opens, delayed by d (only those to the hosts of Config.GossipDelayTo, when
// set): Config.GossipDelay, for fault tests of slow gossip links, across a WAN among them. Packets keep their order; what is received is not delayed (the peer's own delay, if
// any, applies to it).
type delayTransport struct {
	*memberlist.NetTransport
	d  time.Duration
	to map[string]bool // the hosts whose packets and streams are delayed; nil: every host

	mu      sync.Mutex
	closed  bool
	pending map[*time.Timer]struct{} // the delayed sends not yet started
	sending sync.WaitGroup           // the delayed sends started and not yet done
}

// newDelayTransport binds memberlist's network transport at mc's address and wraps it, setting
// mc's ports when mc asks for any free one, as memberlist.Create does for its own transport.
func newDelayTransport(mc *memberlist.Config, d time.Duration, to []string) (*delayTransport, error) {
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{mc.BindAddr}, BindPort: mc.BindPort, Logger: mc.Logger})
	if err != nil {
		return nil, fmt.Errorf("cluster: gossip transport: %w", err)
	}
	if mc.BindPort == 0 {
		mc.BindPort = nt.GetAutoBindPort()
		if mc.AdvertisePort == 0 {
			mc.AdvertisePort = mc.BindPort
		}
	}
	t := &delayTransport{NetTransport: nt, d: d, pending: map[*time.Timer]struct{}{}}
	if len(to) > 0 {
		t.to = map[string]bool{}
		for _, h := range to {
			t.to[h] = true
		}
	}
	return t, nil
}

// delays reports whether what is sent to addr (host:port) is delayed.
func (t *delayTransport) delays(addr string) bool {
	if t.to == nil {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	return err == nil && t.to[host]
}

// later runs send after the delay, unless the transport has shut down by then.
func (t *delayTransport) later(send func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	var tm *time.Timer
	tm = time.AfterFunc(t.d, func() {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return
		}
		delete(t.pending, tm)
		t.sending.Add(1)
		t.mu.Unlock()
		defer t.sending.Done()
		send()
	})
	t.pending[tm] = struct{}{}
}

// WriteTo implements memberlist.Transport: it returns at once, the packet leaving after the
// delay.
func (t *delayTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress implements memberlist.NodeAwareTransport.
func (t *delayTransport) WriteToAddress(b []byte, addr memberlist.Address) (time.Time, error) {
	if !t.delays(addr.Addr) {
		return t.NetTransport.WriteToAddress(b, addr)
	}
	b = append([]byte(nil), b...) // memberlist reuses its buffer
	t.later(func() { _, _ = t.NetTransport.WriteToAddress(b, addr) })
	return time.Now(), nil
}

// DialTimeout implements memberlist.Transport.
func (t *delayTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport: the stream opens after the delay.
func (t *delayTransport) DialAddressTimeout(addr memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if !t.delays(addr.Addr) {
		return t.NetTransport.DialAddressTimeout(addr, timeout)
	}
	if timeout > 0 && timeout <= t.d {
		time.Sleep(timeout)
		return nil, fmt.Errorf("cluster: dial %s: gossip delay %v exceeds the timeout %v", addr.Addr, t.d, timeout)
	}
	time.Sleep(t.d)
	return t.NetTransport.DialAddressTimeout(addr, timeout-t.d)
}

// Shutdown implements memberlist.Transport: the delayed sends not yet gone are dropped.
func (t *delayTransport) Shutdown() error {
	t.mu.Lock()
	t.closed = true
	for tm := range t.pending {
		tm.Stop()
	}
	clear(t.pending)
	t.mu.Unlock()
	t.sending.Wait()
	return t.NetTransport.Shutdown()
}
