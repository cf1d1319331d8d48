package node

// The node's listeners, and which services each one serves:
//
//	Addr (client gRPC)   the client API (kvnodepb.KVNode), health, reflection, and the admin
//	                     services operators' tools call. Never an internode service.
//	CQLAddr              the CQL native protocol.
//	InternodeAddr        the internode service (package internode; handleInternode): replica
//	                     requests, schema consensus, streaming, repair, removals, and every
//	                     other exchange only cluster members make.
//	                     Peers dial it at the address this node gossips (cluster.Member.RPCAddr).
//	GossipAddr           memberlist (cluster package).
//	MetricsAddr          Prometheus /metrics.
//
// A client that can reach the client ports can therefore not reach the replicas' own API: it
// cannot account deltas, write with any timestamp past the coordinator, or read the replicas'
// hot-partition tables; docs/operations.md's threat model says what protects each port.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/memberlist"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/gopool"
	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/internal/tlsconfig"
	"github.com/kvnode/kvnode/internode"
)

// security is the node's TLS material and gossip keyring, and the loop that reloads them.
type security struct {
	tls        *tlsconfig.Reloader // nil without TLS
	gossipKeys *memberlist.Keyring // nil without a gossip key file
	reloader   *loop.Loop          // nil when no reload loop runs
}

// handleInternode registers on the node's Mux the handler of every internode request it
// answers: the exchanges only cluster members make, served on the internode listener alone
// (startInternode) and to the node itself in process. A new exchange is one line here.
func (n *Node) handleInternode() {
	m := n.mux
	// The replica's data path, the limiter's exchanges and the batchlog.
	internode.Handle(m, n.replica.Mutate)
	internode.Handle(m, n.replica.Read)
	internode.Handle(m, n.replica.ReadRange)
	internode.Handle(m, n.replica.CounterUpdate)
	internode.Handle(m, n.replica.AccountDelta)
	internode.Handle(m, n.replica.TopPartitions)
	internode.Handle(m, n.replica.StoreBatch)
	internode.Handle(m, n.replica.RemoveBatch)
	internode.Handle(m, n.replica.PaxosPrepare)
	internode.Handle(m, n.replica.PaxosPropose)
	internode.Handle(m, n.replica.PaxosCommit)
	internode.HandleStream(m, n.sender.RelayMutations) // a write forwarded from another data center
	// Schema consensus.
	acceptor := n.schema.Acceptor()
	internode.Handle(m, acceptor.Prepare)
	internode.Handle(m, acceptor.Accept)
	// Streaming and topology changes.
	internode.HandleStream(m, n.topo.Pull)
	internode.Handle(m, n.topo.Fetch)
	internode.Handle(m, n.topo.View)
	// Anti-entropy repair.
	ae := n.replica.AntiEntropy()
	internode.Handle(m, ae.RangeHashes)
	internode.Handle(m, ae.PartitionHashes)
	internode.Handle(m, ae.FetchPartitions)
	// Removals.
	ms := membership{n: n}
	internode.Handle(m, ms.Removed)
	internode.Handle(m, ms.Announce)
}

// listen binds the node's listeners (a port in use is an error naming the flag and the
// address). The internode listener is bound before membership starts: its real address is
// what the node gossips.
func (n *Node) listen() error {
	cfg := n.cfg
	var err error
	if cfg.Security.TLSCert != "" {
		if n.sec.tls, err = tlsconfig.New(tlsconfig.Files{Cert: cfg.Security.TLSCert, Key: cfg.Security.TLSKey, CA: cfg.Security.TLSCA}); err != nil {
			return fmt.Errorf("node: TLS (tls_cert, tls_key, tls_ca): %w", err)
		}
	}
	if cfg.Security.GossipKeyFile != "" {
		if n.sec.gossipKeys, err = cluster.NewGossipKeyring(cfg.Security.GossipKeyFile); err != nil {
			return err
		}
	}
	if n.lis, err = net.Listen("tcp", cfg.Listen.Addr); err != nil {
		return fmt.Errorf("node: listen on --addr %s: %w", cfg.Listen.Addr, err)
	}
	if n.ilis, err = net.Listen("tcp", cfg.Listen.InternodeAddr); err != nil {
		return fmt.Errorf("node: listen on --internode-addr %s: %w", cfg.Listen.InternodeAddr, err)
	}
	if n.clis, err = net.Listen("tcp", cfg.Listen.CQLAddr); err != nil {
		return fmt.Errorf("node: listen on --cql-addr %s: %w", cfg.Listen.CQLAddr, err)
	}
	if cfg.Listen.MetricsAddr != "" {
		if n.mlis, err = net.Listen("tcp", cfg.Listen.MetricsAddr); err != nil {
			return fmt.Errorf("node: listen on --metrics-addr %s: %w", cfg.Listen.MetricsAddr, err)
		}
	}
	perHost := cfg.Listen.MaxConnectionsPerHost
	n.lis = newLimitListener(n.lis, cfg.Listen.MaxGRPCConnections, perHost, "--addr", "max_grpc_connections", "max_connections_per_host", n.log)
	n.ilis = newLimitListener(n.ilis, cfg.Listen.MaxGRPCConnections, perHost, "--internode-addr", "max_grpc_connections", "max_connections_per_host", n.log)
	// The native front end bounds its connections in all itself (answering Overloaded);
	// below TLS, the listener bounds those of one host, and the front end answers the
	// connections it refuses Overloaded too (over TLS when the port has it).
	cl := newLimitListener(n.clis, 0, perHost, "--cql-addr", "max_native_connections", "max_connections_per_host", n.log)
	cl.refuse = func(nc net.Conn, msg string) {
		if n.sec.tls != nil {
			nc = tls.Server(nc, n.sec.tls.ServerConfig())
		}
		n.native.Refuse(nc, msg) // the listener accepts only once the front end serves it
	}
	n.clis = cl
	if n.mlis != nil {
		// Below TLS: a connection is counted from accept, its handshake included.
		n.mlis = newLimitListener(n.mlis, MaxMetricsConnections, 0, "--metrics-addr", "MaxMetricsConnections", "", n.log)
	}
	if n.sec.tls != nil {
		// The native front end serves whatever listener it is given: a TLS one handshakes
		// each connection on its first read.
		n.clis = tls.NewListener(n.clis, n.sec.tls.ServerConfig())
		if cfg.Security.MetricsTLS && n.mlis != nil {
			n.mlis = tls.NewListener(n.mlis, n.sec.tls.ServerConfig())
		}
	}
	return nil
}

// Keepalive of the gRPC servers: a connection quiet for keepaliveTime is pinged, and closed
// when the ping is not answered within keepaliveTimeout (a peer that vanished without closing
// its connection frees its place in max_grpc_connections); a client pinging more often than
// keepaliveMinTime is told to calm down and disconnected, as gRPC's enforcement does.
const (
	keepaliveTime    = time.Minute
	keepaliveTimeout = 20 * time.Second
	keepaliveMinTime = 10 * time.Second
	internodeMinPing = internode.MinKeepaliveInterval // the internode server's: peers' Senders ping
)

// streamWorkersPerCPU sets each gRPC server's stream workers (grpc.NumStreamWorkers): so many
// per CPU the process may use. A replica's handler holds its worker only while it reads or
// writes pebble; a busier moment starts goroutines of its own.
const streamWorkersPerCPU = 4

// MaxMetricsConnections bounds the open connections of the metrics listener: Prometheus
// servers and a few people's curl, never more.
const MaxMetricsConnections = 32

// serverOptions are the options of the client gRPC server, or of the internode one: message
// and stream limits, the handshake timeout, keepalive and the idle timeout, TLS when it is on
// (mutual on the internode server), and the recovery of a call's panic.
func (n *Node) serverOptions(internode bool) []grpc.ServerOption {
	limit := MessageLimit(n.cfg.Coordinator.MaxMutationSize)
	streams := uint64(n.cfg.Listen.MaxConcurrentStreams)
	if internode {
		streams = min(streams*InternodeStreamsFactor, math.MaxUint32)
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(limit), grpc.MaxSendMsgSize(limit), grpc.MaxConcurrentStreams(uint32(streams)),
		// A connection counts against max_grpc_connections from accept: one that does not
		// finish its TLS and HTTP/2 handshake in time is closed (gRPC's default is 120 s).
		grpc.ConnectionTimeout(n.cfg.Listen.HandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: n.cfg.Listen.IdleConnectionTimeout,
			Time:              keepaliveTime,
			Timeout:           keepaliveTimeout,
		}),
	}
	minPing := keepaliveMinTime
	if internode {
		minPing = internodeMinPing
	}
	opts = append(opts, grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minPing, PermitWithoutStream: true}))
	if gopool.Reusing() {
		// Streams run on reused goroutines, whose stacks stay grown from one request to the
		// next (internal/gopool says why); beyond these, a stream gets a goroutine of its own.
		opts = append(opts, grpc.NumStreamWorkers(uint32(streamWorkersPerCPU*runtime.GOMAXPROCS(0))))
	}
	if n.sec.tls != nil {
		cfg := n.sec.tls.ServerConfig()
		if internode {
			cfg = n.sec.tls.InternodeServerConfig()
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	}
	server := "client"
	if internode {
		server = "internode"
	}
	return append(opts, n.recoveryOptions(server)...)
}

// internodeCredentials are what the node dials its peers' internode listeners with: its
// certificate, verifying theirs, when TLS is on.
func (n *Node) internodeCredentials() credentials.TransportCredentials {
	if n.sec.tls == nil {
		return insecure.NewCredentials()
	}
	return credentials.NewTLS(n.sec.tls.InternodeClientConfig())
}

// Reload rereads the node's TLS certificate, key and CA and its gossip key file now, taking
// what changed: later handshakes use the new certificate and CA, and gossip the new keys. On
// an error (a file missing, half-written, or a key that does not match its certificate) the
// node keeps what it had and Reload returns the error. kvnode serve calls it on SIGHUP; the
// node also does every SecurityOptions.ReloadInterval.
func (n *Node) Reload() error {
	var errs []error
	if n.sec.tls != nil {
		changed, err := n.sec.tls.Reload()
		if err != nil {
			errs = append(errs, err)
		} else if changed {
			leaf := n.sec.tls.Leaf()
			n.log.Info("TLS certificate reloaded", "subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
		}
	}
	if n.sec.gossipKeys != nil {
		changed, err := cluster.ReloadGossipKeys(n.sec.gossipKeys, n.cfg.Security.GossipKeyFile)
		if err != nil {
			errs = append(errs, err)
		} else if changed {
			n.log.Info("gossip keys reloaded", "keys", len(n.sec.gossipKeys.GetKeys()))
		}
	}
	return errors.Join(errs...)
}

// startReloader rereads the TLS and gossip key files every ReloadInterval, when there are any.
func (n *Node) startReloader() {
	if n.sec.tls == nil && n.sec.gossipKeys == nil {
		return
	}
	n.sec.reloader = loop.Start(loop.Options{Every: n.cfg.Security.ReloadInterval, Delay: true}, func(context.Context) time.Duration {
		if err := n.Reload(); err != nil {
			n.log.Error("reload failed; keeping the TLS material and gossip keys in use", "err", err)
		}
		return 0
	})
}

// stopReloader stops startReloader's loop and waits for it.
func (n *Node) stopReloader() {
	n.sec.reloader.Stop()
}

// startInternode starts the internode gRPC server on n.ilis, and beside it the framed
// protocol's server of the pipes (internode.FramedServer), with the same mutual TLS.
func (n *Node) startInternode() {
	n.igrpc = grpc.NewServer(n.serverOptions(true)...)
	n.mux.Register(n.igrpc) // the internode service only, never on the client server
	creds := insecure.NewCredentials()
	if n.sec.tls != nil {
		creds = credentials.NewTLS(n.sec.tls.InternodeServerConfig())
	}
	n.iframed = internode.NewFramedServer(n.mux, internode.FramedServerOptions{
		Credentials: creds, HandshakeTimeout: n.cfg.Listen.HandshakeTimeout, Log: n.log})
	glis := n.iframed.Split(n.ilis)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.igrpc.Serve(glis); err != nil {
			n.log.Error("internode gRPC server stopped", "err", err)
		}
	}()
}

// InternodeAddr returns the address peers dial for internode requests.
func (n *Node) InternodeAddr() string { return n.ilis.Addr().String() }

// stopGRPC stops srv gracefully, or at once when ctx ends first; it returns ctx.Err() then.
func stopGRPC(ctx context.Context, srv *grpc.Server) error {
	done := make(chan struct{})
	go func() { srv.GracefulStop(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		srv.Stop()
		<-done
		return ctx.Err()
	}
}

// limitListener bounds the open connections accepted through it, in all and from one host:
// one over a bound is closed at once (the client sees the connection end and may try another
// node), or handed to refuse to be answered and closed, and the refusals are logged at most
// every refusalLogInterval, naming the listener and the bound. The per-host bound keeps one
// host, authenticated or not, from taking every place: hosts are IP addresses, IPv6 ones by
// their /64 prefix (what one machine is commonly given).
type limitListener struct {
	net.Listener
	max, perHost int    // 0: no bound
	what         string // the listener's flag, for the log
	key, hostKey string // the bounds' names, for the log
	log          *slog.Logger
	// refuse, when set, answers a refused connection why (msg names the bound) and closes it,
	// without blocking the accept loop.
	refuse func(nc net.Conn, msg string)

	mu      sync.Mutex
	active  int
	hosts   map[netip.Prefix]int // open connections per host
	refused int                  // since the last log line
	logged  time.Time            // when the last refusal was logged
}

// refusalLogInterval spaces the log lines of refused connections.
const refusalLogInterval = 10 * time.Second

// newLimitListener bounds l's connections to max in all (0: no bound) and perHost from one
// host (0: no bound); key and hostKey name the bounds in the log.
func newLimitListener(l net.Listener, max, perHost int, what, key, hostKey string, log *slog.Logger) *limitListener {
	return &limitListener{Listener: l, max: max, perHost: perHost, what: what, key: key, hostKey: hostKey, log: log,
		hosts: map[netip.Prefix]int{}}
}

// hostOf returns the host a connection from addr counts against: its IPv4 address, or its
// IPv6 address's /64. A non-IP address is one unnamed host.
func hostOf(addr net.Addr) netip.Prefix {
	a, ok := addr.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}
	}
	ip, ok := netip.AddrFromSlice(a.IP)
	if !ok {
		return netip.Prefix{}
	}
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// Accept returns the next connection within the bounds.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := hostOf(c.RemoteAddr())
		l.mu.Lock()
		over := ""
		switch {
		case l.max > 0 && l.active >= l.max:
			over = l.key
		case l.perHost > 0 && l.hosts[host] >= l.perHost:
			over = l.hostKey
		}
		if over == "" {
			l.active++
			l.hosts[host]++
			l.mu.Unlock()
			return &limitConn{Conn: c, l: l, host: host}, nil
		}
		l.refuseLocked(over, host)
		l.mu.Unlock()
		switch {
		case l.refuse == nil:
			c.Close()
		case over == l.hostKey:
			l.refuse(c, fmt.Sprintf("too many connections from %s: this node serves at most %d per host (%s)", host.Addr(), l.perHost, l.hostKey))
		default:
			l.refuse(c, fmt.Sprintf("too many connections: this node serves at most %d (%s)", l.max, l.key))
		}
	}
}

func (l *limitListener) refuseLocked(bound string, host netip.Prefix) {
	l.refused++
	if now := time.Now(); now.Sub(l.logged) >= refusalLogInterval {
		l.log.Warn("refusing connections: a connection bound of the listener is reached",
			"listener", l.what, "bound", bound, l.key, l.max, l.hostKey, l.perHost, "host", host, "refused", l.refused)
		l.refused, l.logged = 0, now
	}
}

// release frees a closed connection's places.
func (l *limitListener) release(host netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active--
	if l.hosts[host]--; l.hosts[host] <= 0 {
		delete(l.hosts, host)
	}
}

// limitConn frees its places in the bounds when closed, once.
type limitConn struct {
	net.Conn
	l    *limitListener
	host netip.Prefix
	once sync.Once
}

// SyscallConn returns the underlying connection's socket, so that the native front end can
// write small answers with a non-blocking write of its own (frontend/native, writeDirect); an
// error when it has none.
func (c *limitConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.host) })
	return err
}
