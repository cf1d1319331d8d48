package internode

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// FramedServerOptions configures a FramedServer.
type FramedServerOptions struct {
	// Credentials secure the connections: the internode gRPC server's (the same mutual TLS);
	// nil means plaintext.
	Credentials credentials.TransportCredentials
	// HandshakeTimeout bounds a connection's first bytes and its TLS handshake; 0 means 5 s.
	HandshakeTimeout time.Duration
	// Log receives why connections were closed for breaking the protocol; nil discards it.
	Log *slog.Logger
}

// FramedServer serves a Mux's pipes over the framed protocol (framed.go) on the internode
// listener it shares with the gRPC server (Split).
type FramedServer struct {
	mux *Mux
	o   FramedServerOptions

	ctx    context.Context // ends the connections' handlers (Stop)
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and the connections' goroutines

	mu      sync.Mutex
	lis     net.Listener
	conns   map[net.Conn]bool // open connections not handed to gRPC; true once they serve pipes
	stopped bool
	idle    chan struct{} // closed when conns empties while Stop waits; nil otherwise
}

// NewFramedServer returns a FramedServer of m's pipes with options o.
func NewFramedServer(m *Mux, o FramedServerOptions) *FramedServer {
	if o.Credentials == nil {
		o.Credentials = insecure.NewCredentials()
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = framedDialTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &FramedServer{mux: m, o: o, ctx: ctx, cancel: cancel, conns: map[net.Conn]bool{}}
}

// Split serves the framed connections l accepts and returns a listener of the others, gRPC's,
// for the internode gRPC server to serve: closing it closes l. A connection is told apart by
// its first byte, read on a goroutine of its own within HandshakeTimeout, so a slow client
// holds up no other. Split is called once.
//
// This is hand-written rather than github.com/soheilhy/cmux: cmux reads to match with no
// deadline unless one is set, and its Serve waits for connections still matching when the
// listener closes (its issue #76, open; CockroachDB patched its fork for the same hang), while
// Stop here closes connections still in their handshake at once and tracks the framed ones
// until they drain.
func (f *FramedServer) Split(l net.Listener) net.Listener {
	sl := &splitListener{Listener: l, conns: make(chan net.Conn), done: make(chan struct{})}
	f.mu.Lock()
	f.lis = l
	f.mu.Unlock()
	f.wg.Add(1)
	go f.accept(l, sl)
	return sl
}

// Stop closes the listener and waits for the framed connections to end (after Mux.Drain their
// clients end them once their requests are answered) or for ctx to end, then closes those
// left and waits for their goroutines; it returns ctx.Err() when it had to close some.
// Connections still in their handshake are closed at once.
func (f *FramedServer) Stop(ctx context.Context) error {
	f.mu.Lock()
	f.stopped = true
	if f.lis != nil {
		f.lis.Close()
	}
	for c, serving := range f.conns {
		if !serving {
			c.Close()
		}
	}
	var idle chan struct{}
	if len(f.conns) > 0 {
		f.idle = make(chan struct{})
		idle = f.idle
	}
	f.mu.Unlock()
	var err error
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	f.cancel()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	return err
}

// track records c as open; false once f is stopped.
func (f *FramedServer) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	f.conns[c] = false
	return true
}

// serving marks c as serving pipes; false once f is stopped.
func (f *FramedServer) serving(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	f.conns[c] = true
	return true
}

// untrack forgets c.
func (f *FramedServer) untrack(c net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.conns, c)
	if len(f.conns) == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
}

// accept accepts l's connections until l is closed, each served by serveConn.
func (f *FramedServer) accept(l net.Listener, sl *splitListener) {
	defer f.wg.Done()
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() && f.ctx.Err() == nil {
				// Out of file descriptors, say: try again a little later, as net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-f.ctx.Done():
					t.Stop()
				}
				continue
			}
			sl.err = err
			close(sl.done)
			return
		}
		delay = 0
		if !f.track(c) {
			c.Close()
			continue
		}
		f.wg.Add(1)
		go f.serveConn(c, sl)
	}
}

// serveConn reads c's first byte: gRPC's connections go to sl, framed ones are served here.
func (f *FramedServer) serveConn(c net.Conn, sl *splitListener) {
	defer f.wg.Done()
	handed := false
	defer func() {
		if !handed {
			c.Close()
		}
		f.untrack(c)
	}()
	c.SetDeadline(time.Now().Add(f.o.HandshakeTimeout))
	var magic [len(framedMagic)]byte
	if _, err := io.ReadFull(c, magic[:1]); err != nil {
		return
	}
	if magic[0] != framedMagic[0] {
		c.SetDeadline(time.Time{})
		select {
		case sl.conns <- &peekedConn{Conn: c, first: magic[:1]}:
			handed = true
		case <-sl.done:
		}
		return
	}
	if n, err := io.ReadFull(c, magic[1:]); err != nil {
		f.o.Log.Warn("internode: closed a connection that sent part of the framed magic", "remote", c.RemoteAddr().String(), "bytes", n+1, "err", err)
		return
	}
	if string(magic[:]) != framedMagic {
		f.o.Log.Warn("internode: closed a connection that spoke neither gRPC nor the framed protocol", "remote", c.RemoteAddr().String())
		return
	}
	if _, err := io.WriteString(c, framedMagic); err != nil {
		return
	}
	sc, _, err := f.o.Credentials.ServerHandshake(c)
	if err != nil {
		f.o.Log.Warn("internode: framed connection's TLS handshake failed", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	defer sc.Close()
	sc.SetDeadline(time.Time{})
	if !f.serving(c) {
		return
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	fs := &framedServerConn{fc: newFramedConn(sc)}
	err = f.mux.servePipe(ctx, fs)
	if v := fs.violation; err != nil && (v != nil || status.Code(err) == codes.ResourceExhausted) {
		if v == nil {
			v = err // the pipe's bounds: a caller sending without reading its answers
		}
		f.o.Log.Warn("internode: closed a framed connection that broke the protocol", "remote", c.RemoteAddr().String(), "err", v)
	}
}

// splitListener is the listener of the gRPC connections a FramedServer passes on.
type splitListener struct {
	net.Listener // Addr, and Close, which ends the accept loop
	conns        chan net.Conn
	done         chan struct{} // closed when the accept loop ended, with err
	err          error
}

func (l *splitListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

// framedServerConn is a framed connection, the server's end: a pipe's stream.
type framedServerConn struct {
	fc        *framedConn
	violation error // how the client broke the protocol, when it did
}

// Recv reads the next batch of requests, answering pings.
func (s *framedServerConn) Recv() (*replicapb.PipeRequests, error) {
	for {
		b, err := s.fc.readFrame(framedServerIdle)
		switch {
		case err == io.EOF || errors.Is(err, net.ErrClosed):
			return nil, status.Error(codes.Canceled, "internode: the caller ended the pipe")
		case errors.Is(err, errFrameTooLarge):
			s.violation = err
			return nil, status.Errorf(codes.ResourceExhausted, "internode: framed connection: %v", err)
		case err != nil:
			return nil, status.Errorf(codes.Unavailable, "internode: framed connection: %v", err)
		case len(b) == 0:
			if err := s.fc.writeFrame(nil); err != nil {
				return nil, status.Errorf(codes.Unavailable, "internode: framed connection: %v", err)
			}
			continue
		}
		m := &replicapb.PipeRequests{}
		if err := proto.Unmarshal(b, m); err != nil {
			s.violation = errors.Join(errFrameGarbage, err)
			return nil, status.Errorf(codes.InvalidArgument, "internode: framed connection: %v: %v", errFrameGarbage, err)
		}
		return m, nil
	}
}

// Send writes m as one frame.
func (s *framedServerConn) Send(m *replicapb.PipeResponses) error { return s.fc.writeFrame(m) }
