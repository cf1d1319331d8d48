package node

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/frontend/native"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// Config configures one node. DataDir is required; the zero value of every other field means its
// default, which EnsureDefaults fills in. The YAML tags are the keys of kvnode's configuration file
// (`kvnode serve --config FILE`, docs/operations.md); durations are Go duration strings ("2s",
// "72h"). Fields tagged "-" are set in code only.
type Config struct {
	// DataDir holds everything the node persists: its id, known peers, schema and data. One node
	// process per directory; a second one is refused with ErrDataDirInUse.
	DataDir string `yaml:"data_dir"`
	// Addr is the gRPC address for clients (host:port): the client API, health and reflection,
	// never the internode services. Port 0 picks a free port; Addr() reports the real one.
	// Default DefaultAddr.
	Addr string `yaml:"addr"`
	// InternodeAddr is the address of the internode gRPC services (host:port): replica
	// requests, schema consensus, and every other service only cluster members call. Peers
	// dial it at the address this node gossips. Port 0 picks a free port; InternodeAddr()
	// reports the real one. Default DefaultInternodeAddr.
	InternodeAddr string `yaml:"internode_addr"`
	// CQLAddr is the CQL native protocol address for clients (host:port), the port drivers
	// connect to. Port 0 picks a free port; CQLAddr() reports the real one. Default
	// DefaultCQLAddr.
	CQLAddr string `yaml:"cql_addr"`
	// GossipAddr is the memberlist address (host:port, TCP and UDP). Default DefaultGossipAddr.
	GossipAddr string `yaml:"gossip_addr"`
	// MetricsAddr serves Prometheus metrics at /metrics (host:port). Empty disables the endpoint.
	MetricsAddr string `yaml:"metrics_addr"`
	// Seeds are gossip addresses (host:port) of nodes to join.
	Seeds []string `yaml:"seeds"`
	// NumTokens is the number of vnode tokens this node owns, 1 to cluster.MaxNumTokens. Default
	// cluster.DefaultNumTokens.
	NumTokens int `yaml:"num_tokens"`
	// NoSync acknowledges writes before they are synced to disk (see replica.Options.NoSync). The
	// configuration file spells it as its inverse, `sync` (default true).
	NoSync bool `yaml:"-"`
	// ClusterName keeps clusters apart: it is the memberlist label, so nodes only gossip with
	// nodes of the same name. At most cluster.MaxClusterNameSize bytes. Default
	// cluster.DefaultClusterName.
	ClusterName string `yaml:"cluster_name"`
	// Profile selects gossip and failure-detection timings ("lan", "local" or "test"). Default
	// cluster.ProfileLAN.
	Profile cluster.Profile `yaml:"profile"`
	// DataCenter and Rack place the node, as drivers read them from system.local and
	// system.peers (printable ASCII, at most cluster.MaxPlacementNameLen bytes). Defaults
	// cluster.DefaultDataCenter ("datacenter1") and cluster.DefaultRack ("rack1").
	DataCenter string `yaml:"dc"`
	Rack       string `yaml:"rack"`
	// Storage sets the storage options other than NoSync, Logger and FS (cache and memtable
	// sizes, the tombstone failure threshold); its keys sit at the top level of the file.
	Storage replica.Options `yaml:",inline"`
	// SchemaLimits bound what DDL can grow: columns per table, tables per keyspace, the
	// schema's size. A statement over a limit fails with an error naming it. Defaults
	// schema.DefaultMaxColumnsPerTable, schema.DefaultMaxTablesPerKeyspace and
	// schema.DefaultMaxSchemaSize; their keys sit at the top level of the file.
	SchemaLimits schema.Limits `yaml:",inline"`
	// SchemaTombstoneGrace is how long the schema keeps a dropped keyspace's or table's
	// tombstone at least: it goes once it is that old and every member of the ring has the
	// drop (a down member keeps it). Keep it well above the nodes' clock skew. Default
	// DefaultSchemaTombstoneGrace.
	SchemaTombstoneGrace time.Duration `yaml:"schema_tombstone_grace"`
	// MaxGRPCConnections bounds the open connections of each gRPC listener (the client API's
	// and the internode one's); a connection over it is closed at once, and the refusal
	// logged. Default DefaultMaxGRPCConnections.
	MaxGRPCConnections int `yaml:"max_grpc_connections"`
	// MaxConnectionsPerHost bounds the open connections of each client and internode listener
	// (Addr, InternodeAddr, CQLAddr) from one host: an IPv4 address, or an IPv6 /64. A
	// connection over it is closed at once, so that one host, before or without logging in,
	// cannot take every place of MaxGRPCConnections or MaxNativeConnections. Default
	// DefaultMaxConnectionsPerHost.
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
	// connection bound until then. Default DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration `yaml:"handshake_timeout"`
	// IdleConnectionTimeout is how long a gRPC connection with no request in flight (client
	// and internode) and an idle /metrics keep-alive connection stay open; then the node
	// closes them (a gRPC client reconnects at its next request). Default
	// DefaultIdleConnectionTimeout.
	IdleConnectionTimeout time.Duration `yaml:"idle_connection_timeout"`
	// MaxNativeConnections bounds the open connections of the CQL native protocol listener;
	// one over it is answered Overloaded and closed. Default native.DefaultMaxConnections.
	MaxNativeConnections int `yaml:"max_native_connections"`
	// MaxNativeRequestsPerConnection bounds the requests of one native protocol connection
	// being executed or waiting for their answer to be written; at the bound the connection
	// is not read until one is answered. 1 to native.MaxInFlightLimit (the stream ids of a
	// connection). Default native.DefaultMaxInFlight.
	MaxNativeRequestsPerConnection int `yaml:"max_native_requests_per_connection"`
	// MaxNativeConnectionBytes bounds the bytes of requests being executed and answers
	// waiting to be written that one native protocol connection holds in memory;
	// MaxNativeBytes those of every connection together. At a bound the connection is not read
	// and its answers wait (backpressure); a frame larger than a bound is still served, alone.
	// Defaults native.DefaultMaxConnectionBytes (64 MiB) and native.DefaultMaxServerBytes
	// (1 GiB).
	MaxNativeConnectionBytes int64 `yaml:"max_native_connection_bytes"`
	MaxNativeBytes           int64 `yaml:"max_native_bytes"`
	// LimiterCapacity is the number of partitions the rate limiter tracks per node, 24 bytes
	// each. Default partitionlimit.DefaultCapacity (about 1M).
	LimiterCapacity int `yaml:"limiter_capacity"`
	// CoordinatorLearning lets this node, as a coordinator that is not a replica of a hot
	// partition, learn from the replicas' rejections and reject further operations itself
	// (shell.Config.Learning): a rejection then costs one local check instead of a replica
	// request. Off by default until its accuracy under clock skew holds on real processes.
	CoordinatorLearning bool `yaml:"coordinator_learning"`
	// WriteTimeout and ReadTimeout bound coordinated requests. Defaults
	// shell.DefaultWriteTimeout (2 s) and shell.DefaultReadTimeout (5 s).
	WriteTimeout time.Duration `yaml:"write_timeout"`
	ReadTimeout  time.Duration `yaml:"read_timeout"`
	// SchemaAgreementTimeout bounds how long DDL waits for every live node to agree. Default
	// cluster.DefaultSchemaAgreementTimeout (10 s).
	SchemaAgreementTimeout time.Duration `yaml:"schema_agreement_timeout"`
	// MaxMutationSize bounds one write's keys, column names and values, in bytes; a larger write
	// is refused by the coordinator with an error naming the limit. The gRPC message limits of
	// the client API and of internode traffic derive from it (see MessageLimit). At most
	// MaxMutationSizeLimit. Default shell.DefaultMaxMutationSize (16 MiB).
	MaxMutationSize int `yaml:"max_mutation_size"`
	// MaxStatementSize bounds the CQL text of one statement, in bytes (a query, a statement to
	// prepare, each unprepared statement of a batch); a longer one is refused as invalid before
	// it is parsed. 1 to math.MaxInt32. Default shell.DefaultMaxStatementSize (1 MiB).
	MaxStatementSize int `yaml:"max_statement_size"`
	// MaxTimestampAhead is how far ahead of this node's clock a client's USING TIMESTAMP may be
	// when the node coordinates the write; a write beyond it is refused as invalid. Default
	// DefaultMaxTimestampAhead.
	MaxTimestampAhead time.Duration `yaml:"max_timestamp_ahead"`
	// BatchlogReplayInterval is how often the node replays its batchlog: the LOGGED batches other
	// coordinators stored on it and have not removed. Default DefaultBatchlogReplayInterval.
	BatchlogReplayInterval time.Duration `yaml:"batchlog_replay_interval"`
	// BatchlogReplayAge is how old a batchlog entry must be before it is replayed: a coordinator
	// that is alive removes its entry well within it. Zero means twice WriteTimeout (whatever
	// WriteTimeout is set to).
	BatchlogReplayAge time.Duration `yaml:"batchlog_replay_age"`
	// StreamThroughput bounds the bytes per second a node sends when it streams ranges to
	// another (bootstrap, decommission, removenode), so that streaming does not starve client
	// requests. Default DefaultStreamThroughput (64 MiB/s).
	StreamThroughput int `yaml:"stream_throughput"`
	// MaxHintWindow is how long a replica may be down and still get hints: writes it misses
	// after that are not kept for it (it needs a repair). Default DefaultMaxHintWindow (3 h).
	MaxHintWindow time.Duration `yaml:"max_hint_window"`
	// MaxHintsSizePerHost bounds the hints this node keeps for one replica, in bytes; hints
	// beyond it are dropped. Default DefaultMaxHintsSizePerHost (128 MiB).
	MaxHintsSizePerHost int64 `yaml:"max_hints_size_per_host"`
	// HintsThrottle is how many bytes of hints per second this node replays, so that replay
	// after an outage does not starve client traffic. Default DefaultHintsThrottle (1 MiB/s).
	HintsThrottle int64 `yaml:"hinted_handoff_throttle"`
	// ShutdownGrace is how long Close lets in-flight requests finish before it cancels them
	// (Shutdown takes its bound from its context instead). Default DefaultShutdownGrace.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
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
	// MaxConcurrentRequests bounds the client requests (native protocol statements, gRPC
	// Execute calls) this node executes at once; MaxQueuedRequests those waiting for a turn,
	// each for at most RequestQueueTimeout. A request beyond them is refused at once as
	// Overloaded (docs/operations.md, "Admission control"). Internal traffic is never bounded
	// by them. Defaults: admission.DefaultConcurrentPerCPU × GOMAXPROCS, twice
	// MaxConcurrentRequests (negative: no queue), and admission.DefaultQueueTimeout.
	MaxConcurrentRequests int           `yaml:"max_concurrent_requests"`
	MaxQueuedRequests     int           `yaml:"max_queued_requests"`
	RequestQueueTimeout   time.Duration `yaml:"request_queue_timeout"`
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

// Defaults of the connections' timeouts. DefaultHandshakeTimeout is the native front end's:
// ample for a TLS handshake across a continent, short enough that silent connections free
// their places in the connection bounds quickly.
const (
	DefaultHandshakeTimeout      = native.DefaultHandshakeTimeout
	DefaultIdleConnectionTimeout = 5 * time.Minute
)

// DefaultReloadInterval is Config.ReloadInterval when it is zero.
const DefaultReloadInterval = 10 * time.Second

// DefaultShutdownGrace is Config.ShutdownGrace when it is zero.
const DefaultShutdownGrace = 5 * time.Second

// MaxMutationSizeLimit is the largest Config.MaxMutationSize accepted: it keeps MessageLimit
// within gRPC's int32 message lengths.
const MaxMutationSizeLimit = 512 << 20

// MessageLimit is the largest gRPC message a node with the given MaxMutationSize receives or
// sends, on the client API and between nodes. It leaves room for the largest write as a CQL
// statement (a blob literal spells each byte with two hex digits) and for a replica's read page
// holding the largest row; larger messages fail with gRPC's ResourceExhausted naming both sizes.
func MessageLimit(maxMutationSize int) int { return 2*maxMutationSize + 4<<20 }

// DefaultMaxTimestampAhead is the bound on client timestamps ahead of the coordinator's clock
// when Config.MaxTimestampAhead is zero (docs/operations.md explains the choice).
const DefaultMaxTimestampAhead = shell.DefaultMaxTimestampAhead

// EnsureDefaults replaces zero fields with their defaults and returns c. A nil c is treated as the
// zero Config. DataDir and MetricsAddr have no default (an empty MetricsAddr disables metrics).
func (c *Config) EnsureDefaults() *Config {
	if c == nil {
		c = &Config{}
	}
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.CQLAddr == "" {
		c.CQLAddr = DefaultCQLAddr
	}
	if c.InternodeAddr == "" {
		c.InternodeAddr = DefaultInternodeAddr
	}
	if c.GossipAddr == "" {
		c.GossipAddr = DefaultGossipAddr
	}
	if c.NumTokens == 0 {
		c.NumTokens = cluster.DefaultNumTokens
	}
	if c.ClusterName == "" {
		c.ClusterName = cluster.DefaultClusterName
	}
	if c.DataCenter == "" {
		c.DataCenter = cluster.DefaultDataCenter
	}
	if c.Rack == "" {
		c.Rack = cluster.DefaultRack
	}
	if c.Storage.CacheSize == 0 {
		c.Storage.CacheSize = replica.DefaultCacheSize
	}
	if c.Storage.MemTableSize == 0 {
		c.Storage.MemTableSize = replica.DefaultMemTableSize
	}
	if c.Storage.TombstoneFailureThreshold == 0 {
		c.Storage.TombstoneFailureThreshold = replica.DefaultTombstoneFailureThreshold
	}
	if c.LimiterCapacity == 0 {
		c.LimiterCapacity = partitionlimit.DefaultCapacity
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = shell.DefaultWriteTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = shell.DefaultReadTimeout
	}
	if c.SchemaAgreementTimeout == 0 {
		c.SchemaAgreementTimeout = cluster.DefaultSchemaAgreementTimeout
	}
	if c.MaxMutationSize == 0 {
		c.MaxMutationSize = shell.DefaultMaxMutationSize
	}
	if c.MaxStatementSize == 0 {
		c.MaxStatementSize = shell.DefaultMaxStatementSize
	}
	if c.MaxTimestampAhead == 0 {
		c.MaxTimestampAhead = DefaultMaxTimestampAhead
	}
	if c.BatchlogReplayInterval == 0 {
		c.BatchlogReplayInterval = DefaultBatchlogReplayInterval
	}
	if c.StreamThroughput == 0 {
		c.StreamThroughput = DefaultStreamThroughput
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.ReloadInterval == 0 {
		c.ReloadInterval = DefaultReloadInterval
	}
	c.SchemaLimits.EnsureDefaults()
	if c.SchemaTombstoneGrace == 0 {
		c.SchemaTombstoneGrace = DefaultSchemaTombstoneGrace
	}
	if c.MaxGRPCConnections == 0 {
		c.MaxGRPCConnections = DefaultMaxGRPCConnections
	}
	if c.MaxConnectionsPerHost == 0 {
		c.MaxConnectionsPerHost = DefaultMaxConnectionsPerHost
	}
	if c.MaxConcurrentStreams == 0 {
		c.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.IdleConnectionTimeout == 0 {
		c.IdleConnectionTimeout = DefaultIdleConnectionTimeout
	}
	if c.MaxNativeConnections == 0 {
		c.MaxNativeConnections = native.DefaultMaxConnections
	}
	if c.MaxNativeRequestsPerConnection == 0 {
		c.MaxNativeRequestsPerConnection = native.DefaultMaxInFlight
	}
	if c.MaxNativeConnectionBytes == 0 {
		c.MaxNativeConnectionBytes = native.DefaultMaxConnectionBytes
	}
	if c.MaxNativeBytes == 0 {
		c.MaxNativeBytes = native.DefaultMaxServerBytes
	}
	if c.MaxHintWindow == 0 {
		c.MaxHintWindow = DefaultMaxHintWindow
	}
	if c.MaxHintsSizePerHost == 0 {
		c.MaxHintsSizePerHost = DefaultMaxHintsSizePerHost
	}
	if c.HintsThrottle == 0 {
		c.HintsThrottle = DefaultHintsThrottle
	}
	if c.Authenticator == "" {
		c.Authenticator = AuthenticatorNone
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.ensureAdmissionDefaults()
	return c
}

// Validate reports whether c, after EnsureDefaults, describes a node Start can run. Each error
// names the field, its configuration-file key and the values allowed.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("node: Config.DataDir (data_dir) is required")
	}
	for _, a := range []struct {
		field, key, addr string
	}{
		{"Addr", "addr", c.Addr},
		{"CQLAddr", "cql_addr", c.CQLAddr},
		{"InternodeAddr", "internode_addr", c.InternodeAddr},
		{"GossipAddr", "gossip_addr", c.GossipAddr},
	} {
		if err := checkHostPort(a.addr); err != nil {
			return fmt.Errorf("node: Config.%s (%s) %q is not host:port with a port 0 to 65535: %v", a.field, a.key, a.addr, err)
		}
	}
	if c.MetricsAddr != "" {
		if err := checkHostPort(c.MetricsAddr); err != nil {
			return fmt.Errorf("node: Config.MetricsAddr (metrics_addr) %q is not host:port with a port 0 to 65535, or empty to disable metrics: %v", c.MetricsAddr, err)
		}
	}
	if c.StreamThroughput < 0 {
		return fmt.Errorf("node: Config.StreamThroughput (stream_throughput) is %d bytes per second, want more than 0 (0 means the default, %d)", c.StreamThroughput, DefaultStreamThroughput)
	}
	for i, s := range c.Seeds {
		if err := checkHostPort(s); err != nil {
			return fmt.Errorf("node: Config.Seeds[%d] (seeds) %q is not host:port with a port 0 to 65535: %v", i, s, err)
		}
	}
	if c.NumTokens < 1 || c.NumTokens > cluster.MaxNumTokens {
		return fmt.Errorf("node: Config.NumTokens (num_tokens) is %d, want 1 to %d", c.NumTokens, cluster.MaxNumTokens)
	}
	if len(c.ClusterName) > cluster.MaxClusterNameSize {
		return fmt.Errorf("node: Config.ClusterName (cluster_name) is %d bytes, want at most %d", len(c.ClusterName), cluster.MaxClusterNameSize)
	}
	if err := cluster.ValidatePlacementName(c.DataCenter); err != nil {
		return fmt.Errorf("node: Config.DataCenter (dc): %v", err)
	}
	if err := cluster.ValidatePlacementName(c.Rack); err != nil {
		return fmt.Errorf("node: Config.Rack (rack): %v", err)
	}
	if _, err := c.Profile.MarshalText(); err != nil {
		return fmt.Errorf("node: Config.Profile (profile) is %d, want lan, local or test", int(c.Profile))
	}
	if c.Storage.CacheSize < 0 {
		return fmt.Errorf("node: Config.Storage.CacheSize (cache_size) is %d, want ≥ 0 bytes", c.Storage.CacheSize)
	}
	if m := c.Storage.MemTableSize; m < 1<<10 || m >= 4<<30 {
		return fmt.Errorf("node: Config.Storage.MemTableSize (memtable_size) is %d, want 1024 to %d bytes", m, uint64(4<<30-1))
	}
	if c.LimiterCapacity < partitionlimit.Window || c.LimiterCapacity > partitionlimit.MaxCapacity {
		return fmt.Errorf("node: Config.LimiterCapacity (limiter_capacity) is %d, want %d to %d",
			c.LimiterCapacity, partitionlimit.Window, partitionlimit.MaxCapacity)
	}
	for _, d := range []struct {
		field, key string
		v          time.Duration
	}{
		{"WriteTimeout", "write_timeout", c.WriteTimeout},
		{"ReadTimeout", "read_timeout", c.ReadTimeout},
		{"SchemaAgreementTimeout", "schema_agreement_timeout", c.SchemaAgreementTimeout},
		{"MaxTimestampAhead", "max_timestamp_ahead", c.MaxTimestampAhead},
		{"ShutdownGrace", "shutdown_grace", c.ShutdownGrace},
		{"BatchlogReplayInterval", "batchlog_replay_interval", c.BatchlogReplayInterval},
		{"ReloadInterval", "reload_interval", c.ReloadInterval},
		{"MaxHintWindow", "max_hint_window", c.MaxHintWindow},
		{"SchemaTombstoneGrace", "schema_tombstone_grace", c.SchemaTombstoneGrace},
		{"HandshakeTimeout", "handshake_timeout", c.HandshakeTimeout},
		{"IdleConnectionTimeout", "idle_connection_timeout", c.IdleConnectionTimeout},
	} {
		if d.v <= 0 {
			return fmt.Errorf("node: Config.%s (%s) is %v, want a positive duration", d.field, d.key, d.v)
		}
	}
	if c.BatchlogReplayAge < 0 {
		return fmt.Errorf("node: Config.BatchlogReplayAge (batchlog_replay_age) is %v, want a positive duration, or 0 for twice write_timeout", c.BatchlogReplayAge)
	}
	if c.MaxHintsSizePerHost < 1 {
		return fmt.Errorf("node: Config.MaxHintsSizePerHost (max_hints_size_per_host) is %d, want a positive number of bytes", c.MaxHintsSizePerHost)
	}
	if c.HintsThrottle < 1 {
		return fmt.Errorf("node: Config.HintsThrottle (hinted_handoff_throttle) is %d, want a positive number of bytes per second", c.HintsThrottle)
	}
	if c.MaxMutationSize < 1 || c.MaxMutationSize > MaxMutationSizeLimit {
		return fmt.Errorf("node: Config.MaxMutationSize (max_mutation_size) is %d, want 1 to %d bytes", c.MaxMutationSize, MaxMutationSizeLimit)
	}
	if set := btoi(c.TLSCert != "") + btoi(c.TLSKey != "") + btoi(c.TLSCA != ""); set != 0 && set != 3 {
		return fmt.Errorf("node: Config.TLSCert, TLSKey and TLSCA (tls_cert, tls_key, tls_ca) are set together or not at all; got tls_cert %q, tls_key %q, tls_ca %q",
			c.TLSCert, c.TLSKey, c.TLSCA)
	}
	for _, b := range []struct {
		field, key string
		v          int
	}{
		{"SchemaLimits.MaxColumnsPerTable", "max_columns_per_table", c.SchemaLimits.MaxColumnsPerTable},
		{"SchemaLimits.MaxTablesPerKeyspace", "max_tables_per_keyspace", c.SchemaLimits.MaxTablesPerKeyspace},
		{"SchemaLimits.MaxSchemaSize", "max_schema_size", c.SchemaLimits.MaxSchemaSize},
		{"MaxGRPCConnections", "max_grpc_connections", c.MaxGRPCConnections},
		{"MaxConcurrentStreams", "max_concurrent_streams", c.MaxConcurrentStreams},
		{"MaxStatementSize", "max_statement_size", c.MaxStatementSize},
		{"MaxNativeConnections", "max_native_connections", c.MaxNativeConnections},
		{"MaxConnectionsPerHost", "max_connections_per_host", c.MaxConnectionsPerHost},
	} {
		if b.v < 1 || b.v > math.MaxInt32 {
			return fmt.Errorf("node: Config.%s (%s) is %d, want 1 to %d", b.field, b.key, b.v, math.MaxInt32)
		}
	}
	if r := c.MaxNativeRequestsPerConnection; r < 1 || r > native.MaxInFlightLimit {
		return fmt.Errorf("node: Config.MaxNativeRequestsPerConnection (max_native_requests_per_connection) is %d, want 1 to %d (the stream ids of a connection)",
			r, native.MaxInFlightLimit)
	}
	for _, b := range []struct {
		field, key string
		v          int64
	}{
		{"MaxNativeConnectionBytes", "max_native_connection_bytes", c.MaxNativeConnectionBytes},
		{"MaxNativeBytes", "max_native_bytes", c.MaxNativeBytes},
	} {
		if b.v < 1 {
			return fmt.Errorf("node: Config.%s (%s) is %d, want a positive number of bytes", b.field, b.key, b.v)
		}
	}
	if c.MetricsTLS && c.TLSCert == "" {
		return errors.New("node: Config.MetricsTLS (metrics_tls) needs tls_cert, tls_key and tls_ca")
	}
	if err := c.validateAdmission(); err != nil {
		return err
	}
	if err := c.validateAuth(); err != nil {
		return err
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
