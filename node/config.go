package node

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/kvnode/kvnode/catalog"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/frontend/admission"
	"github.com/kvnode/kvnode/frontend/loginguard"
	"github.com/kvnode/kvnode/frontend/native"
	"github.com/kvnode/kvnode/hints"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/repair"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/snapshot"
)

// Config configures one node. DataDir is required; the zero value of every other field means its
// default, which EnsureDefaults fills in. The knobs are grouped by the package that owns them,
// which owns their defaults and checks too: EnsureDefaults and Validate delegate to each group
// and add only the node's own knobs and the checks across groups. The YAML tags are the keys of
// kvnode's configuration file (`kvnode serve --config FILE`, docs/operations.md): every group is
// inlined, so the file's keys are flat. Durations are Go duration strings ("2s", "72h"). Fields
// tagged "-" are set in code only.
type Config struct {
	// DataDir holds everything the node persists: its id, known peers, schema and data. One node
	// process per directory; a second one is refused with ErrDataDirInUse.
	DataDir string `yaml:"data_dir"`
	// Listen holds the node's addresses and the bounds and timeouts of their connections.
	Listen ListenOptions `yaml:",inline"`
	// Security holds TLS, the gossip keys and how often they are reread.
	Security SecurityOptions `yaml:",inline"`
	// Cluster holds the membership settings: cluster name, seeds, tokens, profile, placement
	// and the schema agreement timeout.
	Cluster cluster.Options `yaml:",inline"`
	// Storage holds the store's sizes, tombstone threshold, disk failure policy, free-space
	// reserve and start_despite_corrupt_log. Its NoSync is the inverse of the file's `sync` key
	// (cmd/kvnode); its Logger defaults to the node's; its OnFailure is the node's own (the
	// policy).
	Storage replica.Options `yaml:",inline"`
	// Snapshot holds auto_snapshot (its inverse NoAutoSnapshot, as NoSync is sync's; cmd/kvnode).
	Snapshot snapshot.Options `yaml:",inline"`
	// Limiter sizes the node's rate limiter table (limiter_capacity). LearnedCopies is for a
	// coordinator's learned table and must stay false here.
	Limiter partitionlimit.Options `yaml:",inline"`
	// Catalog holds the schema's limits and the grace of dropped objects' tombstones.
	Catalog catalog.Options `yaml:",inline"`
	// Coordinator holds the coordinator's timeouts, sizes, timestamp bound and learning. The
	// gRPC message limits of the client API and of internode traffic derive from its
	// MaxMutationSize (see MessageLimit), which is therefore at most MaxMutationSizeLimit.
	Coordinator shell.Options `yaml:",inline"`
	// Native holds the CQL native protocol's bounds on connections, requests and memory.
	Native native.Options `yaml:",inline"`
	// Logins holds how failed logins on both client front ends are counted, slowed down and
	// logged (frontend/loginguard).
	Logins loginguard.Options `yaml:",inline"`
	// Admission bounds the client requests (native statements, gRPC Execute calls) executed
	// at once and queued (docs/operations.md, "Admission control"); internal traffic is never
	// bounded by it.
	Admission admission.Options `yaml:",inline"`
	// Hints holds the max hint window, the hints kept per replica and the replay's throttle.
	Hints hints.Options `yaml:",inline"`
	// Repair holds the automatic repair's settings: on or off, how often, its pace.
	Repair repair.Options `yaml:",inline"`
	// Batchlog holds how often and after how long the node replays its batchlog.
	Batchlog BatchlogOptions `yaml:",inline"`
	// StreamThroughput bounds the bytes per second a node sends when it streams ranges to
	// another (bootstrap, decommission, removenode) and when its repair writes, together, so
	// that they do not starve client requests. Default DefaultStreamThroughput (64 MiB/s).
	StreamThroughput int `yaml:"stream_throughput"`
	// ShutdownGrace is how long Close lets in-flight requests finish before it cancels them
	// (Shutdown takes its bound from its context instead). Default DefaultShutdownGrace.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// Authenticator is how clients log in: "none" (every client is anonymous and may run any
	// statement) or "password" (clients log in as a role of system_auth with SASL PLAIN on the
	// native protocol and per-call credentials on the gRPC API, and statements need the role's
	// grants; docs/operations.md, "Roles and permissions"). Default "none".
	Authenticator string `yaml:"authenticator"`
	// SuperuserPasswordFile holds the initial password of the superuser role admin, created
	// once, cluster-wide, when Authenticator is "password" and system_auth holds no role.
	// Required with "password"; a trailing newline is not part of the password.
	SuperuserPasswordFile string `yaml:"superuser_password_file"`
	// Logger receives the node's logs. Default slog.Default().
	Logger *slog.Logger `yaml:"-"`

	// Testing holds knobs for tests only; nil in production.
	Testing *TestingKnobs `yaml:"-"`
}

// ListenOptions are the node's addresses and the bounds and timeouts of their connections.
type ListenOptions struct {
	// Addr is the gRPC address for clients (host:port): the client API, health and reflection,
	// never the internode services. Port 0 picks a free port; Node.Addr reports the real one.
	// Default DefaultAddr.
	Addr string `yaml:"addr"`
	// InternodeAddr is the address of the internode gRPC services (host:port): replica
	// requests, schema consensus, and every other service only cluster members call. Peers
	// dial it at the address this node gossips. Port 0 picks a free port. Default
	// DefaultInternodeAddr.
	InternodeAddr string `yaml:"internode_addr"`
	// CQLAddr is the CQL native protocol address for clients (host:port), the port drivers
	// connect to. Port 0 picks a free port. Default DefaultCQLAddr.
	CQLAddr string `yaml:"cql_addr"`
	// GossipAddr is the memberlist address (host:port, TCP and UDP). Default DefaultGossipAddr.
	GossipAddr string `yaml:"gossip_addr"`
	// MetricsAddr serves Prometheus metrics at /metrics (host:port). Empty disables the endpoint.
	MetricsAddr string `yaml:"metrics_addr"`
	// MaxGRPCConnections bounds the open connections of each gRPC listener (Addr's and
	// InternodeAddr's); a connection over it is closed at once, and the refusal logged.
	// Default DefaultMaxGRPCConnections.
	MaxGRPCConnections int `yaml:"max_grpc_connections"`
	// MaxConnectionsPerHost bounds the open connections of each client and internode listener
	// (Addr, InternodeAddr, CQLAddr) from one host: an IPv4 address, or an IPv6 /64. A
	// connection over it is closed at once, so that one host, before or without logging in,
	// cannot take every place of MaxGRPCConnections or the native protocol's MaxConnections.
	// Default DefaultMaxConnectionsPerHost.
	MaxConnectionsPerHost int `yaml:"max_connections_per_host"`
	// MaxConcurrentStreams bounds the requests in flight on one client gRPC connection;
	// further ones wait for a stream. Internode connections, one per peer carrying all of a
	// coordinator's requests, get InternodeStreamsFactor times as many. Default
	// DefaultMaxConcurrentStreams.
	MaxConcurrentStreams int `yaml:"max_concurrent_streams"`
	// HandshakeTimeout is how long a new connection to a client or internode listener may take
	// to complete its handshake before it is closed: TLS and HTTP/2's preface and settings on
	// the gRPC listeners, STARTUP (and the login) on the native protocol, TLS and the request
	// header on /metrics. A connection that never handshakes holds a place in the listener's
	// connection bound until then. Default native.DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration `yaml:"handshake_timeout"`
	// IdleConnectionTimeout is how long a gRPC connection with no request in flight (client
	// and internode) and an idle /metrics keep-alive connection stay open; then the node
	// closes them (a gRPC client reconnects at its next request). Default
	// DefaultIdleConnectionTimeout.
	IdleConnectionTimeout time.Duration `yaml:"idle_connection_timeout"`
}

// SecurityOptions are the node's TLS files, its gossip keys, and how often it rereads them.
type SecurityOptions struct {
	// TLSCert, TLSKey and TLSCA turn on TLS on every listener; they are set together: the PEM
	// files of the node's certificate chain, its private key, and the CA that signs the
	// cluster's certificates. The client listeners (Addr, CQLAddr, and MetricsAddr with
	// MetricsTLS) present the certificate; the internode listener also requires a client
	// certificate the CA signed, and the node presents its own to its peers (mutual TLS). The
	// node rereads the files every ReloadInterval and on Reload (SIGHUP for kvnode serve), so
	// certificates rotate without a restart. Empty means plaintext.
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	TLSCA   string `yaml:"tls_ca"`
	// MetricsTLS serves /metrics over HTTPS with the node's certificate. It needs TLSCert.
	MetricsTLS bool `yaml:"metrics_tls"`
	// GossipKeyFile names the file of the keys that encrypt and authenticate gossip: one
	// base64 key of 16, 24 or 32 bytes per line, the first the primary one that encrypts, the
	// others accepted for decryption (docs/operations.md says how to rotate them). A node
	// without a key of the cluster cannot join it or inject state. The node rereads it every
	// ReloadInterval and on Reload. Empty means plaintext gossip.
	GossipKeyFile string `yaml:"gossip_key_file"`
	// ReloadInterval is how often the node rereads its TLS files and its gossip key file,
	// taking them when they changed. Default DefaultReloadInterval.
	ReloadInterval time.Duration `yaml:"reload_interval"`
}

// BatchlogOptions are how the node replays its batchlog: the LOGGED batches other coordinators
// stored on it and have not removed.
type BatchlogOptions struct {
	// ReplayInterval is how often the node replays its batchlog. Default
	// DefaultBatchlogReplayInterval.
	ReplayInterval time.Duration `yaml:"batchlog_replay_interval"`
	// ReplayAge is how old a batchlog entry must be before it is replayed: a coordinator that
	// is alive removes its entry well within it. Zero means twice the coordinator's
	// WriteTimeout (whatever it is set to), so EnsureDefaults leaves it zero.
	ReplayAge time.Duration `yaml:"batchlog_replay_age"`
}

// TestingKnobs are hooks for tests, kept apart from the user-facing Config. The zero value (or a
// nil *TestingKnobs) changes nothing.
type TestingKnobs struct {
	// Now is the clock of the rate limiter, the coordinator (write timestamps, deadlines) and the
	// clock peers measure through gossip. Nil means time.Now. Tests freeze it to make counters
	// exact, or shift it to give a node a skewed clock.
	Now func() time.Time
	// BeforeBatchApply is the coordinator's shell.Config.BeforeBatchApply: called after a
	// LOGGED batch was stored in the batchlog and before any partition is written; an error
	// fails the batch there, as if the coordinator had died.
	BeforeBatchApply func() error
	// AuthHashCost is the bcrypt cost of password hashes (shell.AuthConfig.HashCost); tests
	// lower it. Zero means bcrypt's default.
	AuthHashCost int
	// PauseHintReplay, if set, skips the periodic hint replay while it returns true (a
	// decommission still hands its hints off).
	PauseHintReplay func() bool
	// BeforeRemoval, if set, is called by removenode once the dead node's ranges have
	// streamed, before the node is removed from the ring.
	BeforeRemoval func()
	// Exit, if set, replaces os.Exit where the node ends the process (disk_failure_policy
	// die); the node goes on when it returns.
	Exit func(code int)
	// GossipDelay, when positive, delays every gossip packet and stream the node sends
	// (cluster.Config.GossipDelay): fault tests of slow gossip links.
	GossipDelay time.Duration
	// GossipDelayTo, when set, limits GossipDelay to the gossip sent to these hosts
	// (cluster.Config.GossipDelayTo): a slow link to a remote data center.
	GossipDelayTo []string

	// AfterStreamChunk, if set, is called on the receiving node after each chunk of a stream
	// (bootstrap, decommission, removenode) is applied, with the stream's reason; the stream
	// goes on when it returns, so a test holds a topology change mid-stream by blocking in it.
	AfterStreamChunk func(reason string)
}

func (k *TestingKnobs) afterStreamChunk(reason string) {
	if k != nil && k.AfterStreamChunk != nil {
		k.AfterStreamChunk(reason)
	}
}

func (k *TestingKnobs) gossipDelay() time.Duration {
	if k == nil {
		return 0
	}
	return k.GossipDelay
}

func (k *TestingKnobs) gossipDelayTo() []string {
	if k == nil {
		return nil
	}
	return k.GossipDelayTo
}

func (k *TestingKnobs) beforeRemoval() {
	if k != nil && k.BeforeRemoval != nil {
		k.BeforeRemoval()
	}
}

func (k *TestingKnobs) pauseHintReplay() func() bool {
	if k == nil {
		return nil
	}
	return k.PauseHintReplay
}

func (k *TestingKnobs) beforeBatchApply() func() error {
	if k == nil {
		return nil
	}
	return k.BeforeBatchApply
}

// Default listen addresses.
const (
	DefaultAddr          = "127.0.0.1:9043"
	DefaultCQLAddr       = "127.0.0.1:9042"
	DefaultInternodeAddr = "127.0.0.1:7000" // Cassandra's storage_port
	DefaultGossipAddr    = "127.0.0.1:7946"
	DefaultMetricsAddr   = "127.0.0.1:9180"
)

// Defaults of the gRPC servers' bounds: as many connections as the native front end takes,
// and as many requests per connection as gRPC servers commonly allow (100 is the HTTP/2
// recommendation's minimum; clients multiplex, so allow more).
const (
	DefaultMaxGRPCConnections   = 1024
	DefaultMaxConcurrentStreams = 1024
	// InternodeStreamsFactor multiplies MaxConcurrentStreams on internode connections.
	InternodeStreamsFactor = 16
	// DefaultMaxConnectionsPerHost is a quarter of the default connection bounds: it takes
	// four hosts to fill a listener, and a host running many clients (an application server
	// behind NAT) still gets plenty.
	DefaultMaxConnectionsPerHost = DefaultMaxGRPCConnections / 4
)

// DefaultIdleConnectionTimeout is ListenOptions.IdleConnectionTimeout when it is zero.
const DefaultIdleConnectionTimeout = 5 * time.Minute

// DefaultReloadInterval is SecurityOptions.ReloadInterval when it is zero.
const DefaultReloadInterval = 10 * time.Second

// DefaultShutdownGrace is Config.ShutdownGrace when it is zero.
const DefaultShutdownGrace = 5 * time.Second

// MaxMutationSizeLimit is the largest Config.Coordinator.MaxMutationSize accepted: it keeps
// MessageLimit within gRPC's int32 message lengths.
const MaxMutationSizeLimit = 512 << 20

// MessageLimit is the largest gRPC message a node with the given MaxMutationSize receives or
// sends, on the client API and between nodes. It leaves room for the largest write as a CQL
// statement (a blob literal spells each byte with two hex digits) and for a replica's read page
// holding the largest row; larger messages fail with gRPC's ResourceExhausted naming both sizes.
func MessageLimit(maxMutationSize int) int { return 2*maxMutationSize + 4<<20 }

// EnsureDefaults replaces zero fields with their defaults and returns c: each group's
// EnsureDefaults, then the node's own knobs. A nil c is treated as the zero Config. DataDir and
// Listen.MetricsAddr have no default (an empty MetricsAddr disables metrics).
func (c *Config) EnsureDefaults() *Config {
	if c == nil {
		c = &Config{}
	}
	c.Listen.EnsureDefaults()
	c.Security.EnsureDefaults()
	c.Cluster.EnsureDefaults()
	c.Storage.EnsureDefaults()
	c.Limiter.EnsureDefaults()
	c.Catalog.EnsureDefaults()
	c.Coordinator.EnsureDefaults()
	c.Native.EnsureDefaults()
	c.Admission.EnsureDefaults()
	c.Logins.EnsureDefaults()
	c.Hints.EnsureDefaults()
	c.Repair.EnsureDefaults()
	c.Batchlog.EnsureDefaults()
	if c.StreamThroughput == 0 {
		c.StreamThroughput = DefaultStreamThroughput
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.Authenticator == "" {
		c.Authenticator = AuthenticatorNone
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports whether c, after EnsureDefaults, describes a node Start can run: each
// group's Validate, then the node's own knobs and the checks across groups. Each error names
// the field, its configuration-file key and the values allowed.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("node: Config.DataDir (data_dir) is required")
	}
	for _, g := range []interface{ Validate() error }{&c.Listen, &c.Security, &c.Cluster, &c.Storage, &c.Limiter,
		&c.Catalog, &c.Coordinator, &c.Native, &c.Admission, &c.Logins, &c.Hints, &c.Repair, &c.Batchlog} {
		if err := g.Validate(); err != nil {
			return err
		}
	}
	switch {
	case c.StreamThroughput < 1:
		return fmt.Errorf("node: Config.StreamThroughput (stream_throughput) is %d, want a positive number of bytes per second", c.StreamThroughput)
	case c.ShutdownGrace <= 0:
		return fmt.Errorf("node: Config.ShutdownGrace (shutdown_grace) is %v, want a positive duration", c.ShutdownGrace)
	case c.Coordinator.MaxMutationSize > MaxMutationSizeLimit:
		return fmt.Errorf("node: Config.Coordinator.MaxMutationSize (max_mutation_size) is %d, want 1 to %d bytes (the gRPC message limit derives from it)",
			c.Coordinator.MaxMutationSize, MaxMutationSizeLimit)
	case c.Limiter.LearnedCopies:
		return errors.New("node: Config.Limiter.LearnedCopies is set; a node's limiter counts its own operations (a coordinator's learned table is the shell's)")
	}
	return c.validateAuth()
}

// EnsureDefaults replaces zero fields with their defaults and returns o. MetricsAddr has no
// default: empty disables metrics.
func (o *ListenOptions) EnsureDefaults() *ListenOptions {
	for _, a := range []struct {
		addr *string
		def  string
	}{{&o.Addr, DefaultAddr}, {&o.CQLAddr, DefaultCQLAddr}, {&o.InternodeAddr, DefaultInternodeAddr}, {&o.GossipAddr, DefaultGossipAddr}} {
		if *a.addr == "" {
			*a.addr = a.def
		}
	}
	if o.MaxGRPCConnections == 0 {
		o.MaxGRPCConnections = DefaultMaxGRPCConnections
	}
	if o.MaxConnectionsPerHost == 0 {
		o.MaxConnectionsPerHost = DefaultMaxConnectionsPerHost
	}
	if o.MaxConcurrentStreams == 0 {
		o.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = native.DefaultHandshakeTimeout
	}
	if o.IdleConnectionTimeout == 0 {
		o.IdleConnectionTimeout = DefaultIdleConnectionTimeout
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, holds usable addresses and bounds.
func (o *ListenOptions) Validate() error {
	for _, a := range []struct {
		field, key, addr string
	}{
		{"Addr", "addr", o.Addr},
		{"CQLAddr", "cql_addr", o.CQLAddr},
		{"InternodeAddr", "internode_addr", o.InternodeAddr},
		{"GossipAddr", "gossip_addr", o.GossipAddr},
	} {
		if err := checkHostPort(a.addr); err != nil {
			return fmt.Errorf("node: ListenOptions.%s (%s) %q is not host:port with a port 0 to 65535: %v", a.field, a.key, a.addr, err)
		}
	}
	if o.MetricsAddr != "" {
		if err := checkHostPort(o.MetricsAddr); err != nil {
			return fmt.Errorf("node: ListenOptions.MetricsAddr (metrics_addr) %q is not host:port with a port 0 to 65535, or empty to disable metrics: %v", o.MetricsAddr, err)
		}
	}
	for _, b := range []struct {
		field, key string
		v          int
	}{
		{"MaxGRPCConnections", "max_grpc_connections", o.MaxGRPCConnections},
		{"MaxConnectionsPerHost", "max_connections_per_host", o.MaxConnectionsPerHost},
		{"MaxConcurrentStreams", "max_concurrent_streams", o.MaxConcurrentStreams},
	} {
		if b.v < 1 || b.v > math.MaxInt32 {
			return fmt.Errorf("node: ListenOptions.%s (%s) is %d, want 1 to %d", b.field, b.key, b.v, math.MaxInt32)
		}
	}
	for _, d := range []struct {
		field, key string
		v          time.Duration
	}{
		{"HandshakeTimeout", "handshake_timeout", o.HandshakeTimeout},
		{"IdleConnectionTimeout", "idle_connection_timeout", o.IdleConnectionTimeout},
	} {
		if d.v <= 0 {
			return fmt.Errorf("node: ListenOptions.%s (%s) is %v, want a positive duration", d.field, d.key, d.v)
		}
	}
	return nil
}

// EnsureDefaults replaces zero fields with their defaults and returns o.
func (o *SecurityOptions) EnsureDefaults() *SecurityOptions {
	if o.ReloadInterval == 0 {
		o.ReloadInterval = DefaultReloadInterval
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, holds usable settings.
func (o *SecurityOptions) Validate() error {
	if set := btoi(o.TLSCert != "") + btoi(o.TLSKey != "") + btoi(o.TLSCA != ""); set != 0 && set != 3 {
		return fmt.Errorf("node: SecurityOptions.TLSCert, TLSKey and TLSCA (tls_cert, tls_key, tls_ca) are set together or not at all; got tls_cert %q, tls_key %q, tls_ca %q",
			o.TLSCert, o.TLSKey, o.TLSCA)
	}
	if o.MetricsTLS && o.TLSCert == "" {
		return errors.New("node: SecurityOptions.MetricsTLS (metrics_tls) needs tls_cert, tls_key and tls_ca")
	}
	if o.ReloadInterval <= 0 {
		return fmt.Errorf("node: SecurityOptions.ReloadInterval (reload_interval) is %v, want a positive duration", o.ReloadInterval)
	}
	return nil
}

// EnsureDefaults replaces zero fields with their defaults and returns o. ReplayAge stays zero:
// it then follows the coordinator's write timeout.
func (o *BatchlogOptions) EnsureDefaults() *BatchlogOptions {
	if o.ReplayInterval == 0 {
		o.ReplayInterval = DefaultBatchlogReplayInterval
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, holds usable settings.
func (o *BatchlogOptions) Validate() error {
	if o.ReplayInterval <= 0 {
		return fmt.Errorf("node: BatchlogOptions.ReplayInterval (batchlog_replay_interval) is %v, want a positive duration", o.ReplayInterval)
	}
	if o.ReplayAge < 0 {
		return fmt.Errorf("node: BatchlogOptions.ReplayAge (batchlog_replay_age) is %v, want a positive duration, or 0 for twice write_timeout", o.ReplayAge)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkHostPort reports whether addr is host:port with a numeric port in 0..65535.
func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}
