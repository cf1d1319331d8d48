//go:build linux

package fault

import (
	"context"
	"net"
	"sync"
	"time"
)

// ProxyTarget is one listening address of a DelayProxy and where it forwards.
type ProxyTarget struct {
	Listen, To string // host:port
}

// DelayProxy forwards TCP connections and holds back what passes through a link by a delay the
// delay nemesis sets: the kernel here has no netem, so latency is added in user space. The
// link of a connection is (the client's IP address, the target's address); bytes keep their
// order, and a delay applies to the bytes read after it was set.
type DelayProxy struct {
	ns        Netns
	listeners []net.Listener
	wg        sync.WaitGroup // the accept loops and every connection's pumps

	mu       sync.Mutex
	delays   map[link]time.Duration
	conns    map[net.Conn]bool
	accepted int
	closed   bool
}

// Accepted is how many connections the proxy has forwarded.
func (p *DelayProxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

type link struct{ from, to string } // client IP, target host

// StartDelayProxy listens on every target's Listen address inside ns.
func StartDelayProxy(ns Netns, targets []ProxyTarget) (*DelayProxy, error) {
	p := &DelayProxy{ns: ns, delays: map[link]time.Duration{}, conns: map[net.Conn]bool{}}
	for _, t := range targets {
		l, err := ns.Listen("tcp", t.Listen)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.listeners = append(p.listeners, l)
		p.wg.Add(1)
		go p.accept(l, t.To) // owned by p: ends when Close closes l
	}
	return p, nil
}

// SetDelay holds back each chunk of bytes sent between the host at IP from and the target host
// to (both directions) by d; 0 removes the delay.
func (p *DelayProxy) SetDelay(from, to string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range []link{{from, to}, {to, from}} {
		if d == 0 {
			delete(p.delays, l)
		} else {
			p.delays[l] = d
		}
	}
}

func (p *DelayProxy) delay(l link) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delays[l]
}

// Close stops listening, closes every proxied connection and waits for its goroutines.
func (p *DelayProxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	for _, l := range p.listeners {
		l.Close()
	}
	p.wg.Wait()
}

// track remembers a connection for Close; false when the proxy is already closed.
func (p *DelayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *DelayProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *DelayProxy) accept(l net.Listener, to string) {
	defer p.wg.Done()
	toHost, _, _ := net.SplitHostPort(to)
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		fromHost, _, _ := net.SplitHostPort(in.RemoteAddr().String())
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		out, err := p.ns.DialContext(ctx, "tcp", to)
		cancel()
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in) || !p.track(out) {
			in.Close()
			out.Close()
			return
		}
		p.mu.Lock()
		p.accepted++
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pump(in, out, link{fromHost, toHost}) // owned by p: ends when either side closes
		go p.pump(out, in, link{toHost, fromHost})
	}
}

// chunk is bytes read from one side, stamped with the time they may be written to the other.
type chunk struct {
	data []byte
	due  time.Time
}

// pump copies src to dst, each chunk held back by the link's delay at the time it was read.
func (p *DelayProxy) pump(src, dst net.Conn, l link) {
	defer p.wg.Done()
	chunks := make(chan chunk, 256)
	done := make(chan struct{})
	go func() { // the writer half, owned by this pump: ends when chunks is closed or a write fails
		defer close(done)
		timer := time.NewTimer(0)
		defer timer.Stop()
		for c := range chunks {
			if wait := time.Until(c.due); wait > 0 {
				timer.Reset(wait)
				<-timer.C
			}
			if _, err := dst.Write(c.data); err != nil {
				src.Close() // stops the reader
				for range chunks {
				}
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunks <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.delay(l))}
		}
		if err != nil {
			break
		}
	}
	close(chunks)
	<-done
	// The protocols proxied here (gRPC) never half-close: one side ending ends the connection.
	for _, c := range []net.Conn{src, dst} {
		c.Close()
		p.untrack(c)
	}
}
