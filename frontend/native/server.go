package native

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/frontend/admission"
	"github.com/kvnode/kvnode/frontend/loginguard"
	"github.com/kvnode/kvnode/internal/gopool"
)

// Executor is the domain API the front end adapts: package node gives it the coordinator's
// executor. An Executor may also be an Admitter.
type Executor interface {
	// Execute runs one statement.
	Execute(ctx context.Context, st coordinator.Statement) (coordinator.Result, error)
	// Prepare parses and validates text once, for EXECUTE.
	Prepare(ctx context.Context, text, keyspace string) (*coordinator.Prepared, error)
	// ExecuteBatch runs a BATCH.
	ExecuteBatch(ctx context.Context, b coordinator.BatchStatement) (coordinator.Result, error)
}

// Defaults of the zero Options and Config fields.
const (
	// DefaultMaxConnections bounds the client connections of one node.
	DefaultMaxConnections = 1024
	// DefaultMaxInFlight bounds the requests of one connection being executed or waiting for
	// their answer to be written; the connection is not read while it is at the bound.
	DefaultMaxInFlight = 1024
	// DefaultHandshakeTimeout is how long a new connection may take to send STARTUP.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultPreparedCacheSize bounds the prepared statements the node keeps.
	DefaultPreparedCacheSize = 10000
	// DefaultPreparedCacheBytes bounds their estimated memory.
	DefaultPreparedCacheBytes = 64 << 20
	// DefaultMaxConnectionBytes bounds the request and answer bytes one connection holds in
	// memory; DefaultMaxServerBytes those of every connection together. A frame or an answer
	// larger than either is still served, alone.
	DefaultMaxConnectionBytes = 64 << 20
	DefaultMaxServerBytes     = 1 << 30
	// DefaultEventQueue bounds the events waiting to be written to one connection; a
	// connection that falls further behind is closed (its driver reconnects and re-reads
	// the metadata it would have learnt from the lost events).
	DefaultEventQueue = 256
	// DefaultMaxPreLoginFrameSize bounds a frame before the connection is started (READY or
	// AUTH_SUCCESS): OPTIONS, STARTUP and AUTH_RESPONSE take a few hundred bytes.
	DefaultMaxPreLoginFrameSize = 64 << 10
	// DefaultMaxPreLoginConnectionsPerHost bounds the connections of one host that are not
	// started yet: a driver opens a few at a time.
	DefaultMaxPreLoginConnectionsPerHost = 16
)

// Options are the server's bounds on connections, requests and memory. The zero value of each
// field means its default (EnsureDefaults). The YAML tags are the keys of kvnode's
// configuration file (node.Config nests Options); the fields tagged "-" are set in code.
type Options struct {
	// MaxConnections bounds open client connections, 1 to math.MaxInt32; a connection over it
	// is answered Overloaded and closed. Default DefaultMaxConnections.
	MaxConnections int `yaml:"max_native_connections"`
	// MaxInFlight bounds a connection's requests being executed or waiting for their answer
	// to be written, 1 to MaxInFlightLimit (the stream ids of a connection); at the bound the
	// connection is not read until one is answered. Default DefaultMaxInFlight.
	MaxInFlight int `yaml:"max_native_requests_per_connection"`
	// MaxConnectionBytes bounds the bytes of requests being executed and answers waiting to be
	// written that one connection holds; MaxServerBytes those of all connections. At the bound
	// a connection is not read and its answers wait (backpressure); a frame larger than a bound
	// is still served, alone. Defaults DefaultMaxConnectionBytes and DefaultMaxServerBytes.
	MaxConnectionBytes int64 `yaml:"max_native_connection_bytes"`
	MaxServerBytes     int64 `yaml:"max_native_bytes"`
	// PreparedCacheSize bounds the node's prepared statements (least recently used are
	// dropped; a driver executing a dropped one is answered Unprepared and re-prepares).
	// Default DefaultPreparedCacheSize.
	PreparedCacheSize int `yaml:"-"`
	// PreparedCacheBytes bounds the memory of the node's prepared statements (estimated from
	// their text), as Cassandra's prepared_statements_cache_size does: without it, PREPAREs of
	// large statements could pin PreparedCacheSize × the frame limit. Default
	// DefaultPreparedCacheBytes.
	PreparedCacheBytes int64 `yaml:"-"`
	// EventQueue bounds a connection's pending events. Default DefaultEventQueue.
	EventQueue int `yaml:"-"`
	// MaxPreLoginFrameSize bounds a frame before the connection is started (READY, or
	// AUTH_SUCCESS with an Authenticator): a larger one is refused from its header, before its
	// body is read, with a protocol error that closes the connection. Default
	// DefaultMaxPreLoginFrameSize; the server lowers it to its MaxFrameSize.
	MaxPreLoginFrameSize int `yaml:"max_native_prelogin_frame_size"`
	// MaxPreLoginConnectionsPerHost bounds the connections of one host (an IPv4 address, an
	// IPv6 /64) not started yet; one over it is answered Overloaded and closed. Default
	// DefaultMaxPreLoginConnectionsPerHost.
	MaxPreLoginConnectionsPerHost int `yaml:"max_native_prelogin_connections_per_host"`
}

// EnsureDefaults replaces zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.MaxConnectionBytes == 0 {
		o.MaxConnectionBytes = DefaultMaxConnectionBytes
	}
	if o.MaxServerBytes == 0 {
		o.MaxServerBytes = DefaultMaxServerBytes
	}
	if o.PreparedCacheSize == 0 {
		o.PreparedCacheSize = DefaultPreparedCacheSize
	}
	if o.PreparedCacheBytes == 0 {
		o.PreparedCacheBytes = DefaultPreparedCacheBytes
	}
	if o.EventQueue == 0 {
		o.EventQueue = DefaultEventQueue
	}
	if o.MaxPreLoginFrameSize == 0 {
		o.MaxPreLoginFrameSize = DefaultMaxPreLoginFrameSize
	}
	if o.MaxPreLoginConnectionsPerHost == 0 {
		o.MaxPreLoginConnectionsPerHost = DefaultMaxPreLoginConnectionsPerHost
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, holds usable bounds. Each error names the
// field, its configuration key and the values allowed.
func (o *Options) Validate() error {
	for _, b := range []struct {
		field, key string
		v, max     int64
	}{
		{"MaxConnections", " (max_native_connections)", int64(o.MaxConnections), math.MaxInt32},
		{"MaxInFlight", " (max_native_requests_per_connection)", int64(o.MaxInFlight), MaxInFlightLimit},
		{"PreparedCacheSize", "", int64(o.PreparedCacheSize), math.MaxInt32},
		{"EventQueue", "", int64(o.EventQueue), math.MaxInt32},
		{"MaxPreLoginConnectionsPerHost", " (max_native_prelogin_connections_per_host)", int64(o.MaxPreLoginConnectionsPerHost), math.MaxInt32},
	} {
		if b.v < 1 || b.v > b.max {
			why := ""
			if b.max == MaxInFlightLimit {
				why = " (the stream ids of a connection)"
			}
			return fmt.Errorf("native: Options.%s%s is %d, want 1 to %d%s", b.field, b.key, b.v, b.max, why)
		}
	}
	for _, b := range []struct {
		field, key string
		v          int64
	}{
		{"MaxConnectionBytes", " (max_native_connection_bytes)", o.MaxConnectionBytes},
		{"MaxServerBytes", " (max_native_bytes)", o.MaxServerBytes},
		{"PreparedCacheBytes", "", o.PreparedCacheBytes},
		{"MaxPreLoginFrameSize", " (max_native_prelogin_frame_size)", int64(o.MaxPreLoginFrameSize)},
	} {
		if b.v < 1 {
			return fmt.Errorf("native: Options.%s%s is %d, want a positive number of bytes", b.field, b.key, b.v)
		}
	}
	return nil
}

// Config configures a Server: its Options and what the program running it wires in. Executor
// is required; the zero value of every other field means its default.
type Config struct {
	Options
	Executor Executor
	// MaxFrameSize bounds a request frame's body, compressed and decompressed. Default
	// cqlwire.DefaultMaxFrameSize; node derives it from max_mutation_size.
	MaxFrameSize int
	// HandshakeTimeout is how long a connection may take from accept to STARTUP (and the
	// login). Default DefaultHandshakeTimeout; node gives every listener its handshake_timeout.
	HandshakeTimeout time.Duration
	// Schema, when set, is watched for schema changes to push as SCHEMA_CHANGE events.
	Schema SchemaSource
	// Topology, when set, is watched for nodes joining, leaving, going up and down, pushed as
	// TOPOLOGY_CHANGE and STATUS_CHANGE events.
	Topology TopologySource
	// Logger receives the server's logs. Default slog.Default().
	Logger *slog.Logger
	// Admission, when set, bounds the statements (QUERY, PREPARE, EXECUTE, BATCH) the node
	// executes at once and queues; one it has no room for is answered Overloaded. The node
	// shares it with its other client front end. Nil means no bound.
	Admission *admission.Controller
	// Authenticator, when set, makes clients log in (auth.go): STARTUP is answered
	// AUTHENTICATE and statements run as the role that logged in. Nil: no login.
	Authenticator Authenticator
	// Logins counts, logs and slows down failed logins (frontend/loginguard); the node shares
	// it with its other client front end. Nil: logins are checked without it.
	Logins *loginguard.Guard
}

// EnsureDefaults replaces zero fields with their defaults, the Options' among them, and returns
// c.
func (c *Config) EnsureDefaults() *Config {
	c.Options.EnsureDefaults()
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = cqlwire.DefaultMaxFrameSize
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.MaxPreLoginFrameSize = min(c.MaxPreLoginFrameSize, c.MaxFrameSize)
	return c
}

// Validate reports whether c, after EnsureDefaults, describes a server New can start.
func (c *Config) Validate() error {
	switch {
	case c.Executor == nil:
		return errors.New("native: Config.Executor is nil")
	case c.MaxFrameSize < 1:
		return fmt.Errorf("native: Config.MaxFrameSize is %d, want a positive number of bytes", c.MaxFrameSize)
	case c.HandshakeTimeout <= 0:
		return fmt.Errorf("native: Config.HandshakeTimeout is %v, want a positive duration", c.HandshakeTimeout)
	}
	return c.Options.Validate()
}

// maxStreams is the number of stream ids a v4 client may use (0 to 32767).
const maxStreams = 1 << 15

// MaxInFlightLimit is the largest Config.MaxInFlight: the stream ids a v4 client may use.
const MaxInFlightLimit = maxStreams

// Server serves the CQL native protocol on the listeners given to Serve. Close stops it.
type Server struct {
	cfg       Config
	log       *slog.Logger
	prepared  *preparedCache
	supported *encoded // the answer to OPTIONS, shared read-only
	events    *hub
	metrics   *metrics
	bytes     *budget  // request and answer bytes held by every connection
	admit     Admitter // the executor's early limiter decision; nil when it has none
	logins    *loginguard.Guard
	// statements runs statements on reused goroutines (internal/gopool), closed by Close once
	// every connection has ended.
	statements *gopool.Pool

	// overloadedAnswers maps the admission controller's shared *OverloadedErrors to their
	// answers, made once (overloaded); overloadedCount counts the answers made.
	overloadedAnswers sync.Map
	overloadedCount   atomic.Int64

	ctx    context.Context // canceled by Close: the requests' parent
	cancel context.CancelFunc

	// refusing holds a token for each connection being answered Overloaded (refuse).
	refusing chan struct{}

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	preLogin  map[netip.Prefix]int // connections not started, per host
	closed    bool
	stopping  bool           // Shutdown closed the listeners
	wg        sync.WaitGroup // Serve loops, connections, refusals, the event watcher
}

// Refusals of connections over the limit: at most maxRefusing are answered at once (more are
// closed unanswered), each within refuseTimeout.
const (
	maxRefusing   = 64
	refuseTimeout = 2 * time.Second
)

// New returns a server for cfg and starts watching cfg's schema and topology sources.
func New(cfg Config) (*Server, error) {
	if err := cfg.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		statements: gopool.New(gopool.IdleTimeout),
		bytes:      newBudget(cfg.MaxServerBytes),
		cfg:        cfg,
		log:        cfg.Logger,
		prepared:   newPreparedCache(cfg.PreparedCacheSize, cfg.PreparedCacheBytes, currentSchema(cfg.Schema)),
		supported:  newSupported(),
		metrics:    newMetrics(),
		ctx:        ctx,
		cancel:     cancel,
		listeners:  map[net.Listener]struct{}{},
		conns:      map[*conn]struct{}{},
		preLogin:   map[netip.Prefix]int{},
		logins:     cfg.Logins,
		refusing:   make(chan struct{}, maxRefusing),
	}
	s.admit, _ = cfg.Executor.(Admitter)
	s.events = newHub(s.log)
	from := startWatch(cfg.Schema, cfg.Topology)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.events.watch(ctx, cfg.Schema, cfg.Topology, from, s.prepared.schemaChanged)
	}()
	return s, nil
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("native: server closed")

// Serve accepts connections on lis until Close, serving each on its own goroutines. It always
// returns a non-nil error: ErrServerClosed after Close.
func (s *Server) Serve(lis net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		lis.Close()
		return ErrServerClosed
	}
	s.listeners[lis] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	var backoff time.Duration
	for {
		nc, err := lis.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed || s.stopping
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Out of file descriptors and the like: wait and try again, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("native: accept failed; retrying", "err", err, "in", backoff)
				select {
				case <-time.After(backoff):
				case <-s.ctx.Done():
				}
				continue
			}
			return fmt.Errorf("native: accept: %w", err)
		}
		backoff = 0
		s.accept(nc)
	}
}

// accept starts serving nc, or answers it Overloaded and closes it when the node is at its
// connection limit.
func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if len(s.conns) >= s.cfg.MaxConnections {
		s.metrics.refused.Inc()
		s.refuseLocked(nc, fmt.Sprintf("too many connections: this node serves at most %d", s.cfg.MaxConnections))
		s.mu.Unlock()
		return
	}
	host := loginguard.Host(nc.RemoteAddr())
	if s.preLogin[host] >= s.cfg.MaxPreLoginConnectionsPerHost {
		s.metrics.refused.Inc()
		s.refuseLocked(nc, fmt.Sprintf("too many connections from %s that have not logged in: this node accepts at most %d per host before their STARTUP (and login) completes", host.Addr(), s.cfg.MaxPreLoginConnectionsPerHost))
		s.mu.Unlock()
		return
	}
	c := newConn(s, nc)
	c.host, c.preLogin = host, true
	s.preLogin[host]++
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.metrics.connections.Inc()
	s.metrics.accepted.Inc()
	go func() {
		defer s.wg.Done()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		s.leavePreLoginLocked(c)
		s.mu.Unlock()
		s.events.unsubscribe(c)
		s.metrics.connections.Dec()
	}()
}

// leavePreLogin frees c's place among its host's connections not started: it has started.
func (s *Server) leavePreLogin(c *conn) {
	s.mu.Lock()
	s.leavePreLoginLocked(c)
	s.mu.Unlock()
}

// leavePreLoginLocked is leavePreLogin with s.mu held; once per connection.
func (s *Server) leavePreLoginLocked(c *conn) {
	if !c.preLogin {
		return
	}
	c.preLogin = false
	if s.preLogin[c.host]--; s.preLogin[c.host] <= 0 {
		delete(s.preLogin, c.host)
	}
}

// Refuse answers nc, a connection that the server's listener refused over a bound of its own
// (such as the connections of one host), an Overloaded error with msg, and closes it, as the
// server does over max_native_connections: off the caller's goroutine, within refuseTimeout.
func (s *Server) Refuse(nc net.Conn, msg string) {
	s.metrics.refused.Inc()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		nc.Close()
		return
	}
	s.refuseLocked(nc, msg)
}

// refuseLocked answers nc Overloaded with msg and closes it, on a goroutine of its own and
// within refuseTimeout: on a TLS listener the answer waits for the client's handshake, which a
// client may never send, and the accept loop must not wait with it. Beyond maxRefusing
// refusals at once, nc is closed unanswered. s.mu is held.
func (s *Server) refuseLocked(nc net.Conn, msg string) {
	select {
	case s.refusing <- struct{}{}:
	default:
		nc.Close()
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.refusing }()
		stop := context.AfterFunc(s.ctx, func() { nc.Close() }) // Close does not wait for it
		defer stop()
		nc.SetDeadline(time.Now().Add(refuseTimeout))
		nc.Write(cqlwire.AppendFrame(nil, 0, &cqlwire.Error{Code: cqlwire.ErrOverloaded, Message: msg}, cqlwire.FrameOptions{}))
		nc.Close()
	}()
}

// Close stops the server: it closes the listeners and every connection, cancels the requests
// still running and waits for every goroutine the server started.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	for lis := range s.listeners {
		lis.Close()
	}
	for c := range s.conns {
		c.close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.statements.Close()
	return nil
}

// Shutdown stops accepting connections and waits until the requests in flight have been
// answered or ctx ends, then closes every connection as Close does. It returns ctx.Err() when
// it had to cancel requests.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	for lis := range s.listeners {
		lis.Close()
	}
	s.mu.Unlock()
	var err error
	for !s.idle() {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(10 * time.Millisecond):
			continue
		}
		break
	}
	s.Close()
	return err
}

// idle reports whether no connection has a request in flight.
func (s *Server) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.busy() {
			return false
		}
	}
	return true
}
