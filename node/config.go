package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/replica"
)

// Config configures one node. DataDir is required; the zero value of every other field means its
// default, which EnsureDefaults fills in. The YAML tags are the keys of kvnode's configuration file
// (`kvnode serve --config FILE`, docs/operations.md); durations are Go duration strings ("2s",
// "72h"). Fields tagged "-" are set in code only.
type Config struct {
	// DataDir holds everything the node persists: its id, known peers, schema and data. One node
	// process per directory; a second one is refused with ErrDataDirInUse.
	DataDir string `yaml:"data_dir"`
	// Addr is the gRPC address for clients and peers (host:port). Port 0 picks a free port; Addr()
	// reports the real one. Default DefaultAddr.
	Addr string `yaml:"addr"`
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
	// LimiterCapacity is the number of partitions the rate limiter tracks per node, 24 bytes
	// each. Default partitionlimit.DefaultCapacity (about 1M).
	LimiterCapacity int `yaml:"limiter_capacity"`
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
	// ShutdownGrace is how long Close lets in-flight requests finish before it cancels them
	// (Shutdown takes its bound from its context instead). Default DefaultShutdownGrace.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
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
}

func (k *TestingKnobs) beforeBatchApply() func() error {
	if k == nil {
		return nil
	}
	return k.BeforeBatchApply
}

// Default listen addresses.
const (
	DefaultAddr        = "127.0.0.1:9043"
	DefaultCQLAddr     = "127.0.0.1:9042"
	DefaultGossipAddr  = "127.0.0.1:7946"
	DefaultMetricsAddr = "127.0.0.1:9180"
)

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
	if c.MaxTimestampAhead == 0 {
		c.MaxTimestampAhead = DefaultMaxTimestampAhead
	}
	if c.BatchlogReplayInterval == 0 {
		c.BatchlogReplayInterval = DefaultBatchlogReplayInterval
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
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
	} {
		if d.v <= 0 {
			return fmt.Errorf("node: Config.%s (%s) is %v, want a positive duration", d.field, d.key, d.v)
		}
	}
	if c.BatchlogReplayAge < 0 {
		return fmt.Errorf("node: Config.BatchlogReplayAge (batchlog_replay_age) is %v, want a positive duration, or 0 for twice write_timeout", c.BatchlogReplayAge)
	}
	if c.MaxMutationSize < 1 || c.MaxMutationSize > MaxMutationSizeLimit {
		return fmt.Errorf("node: Config.MaxMutationSize (max_mutation_size) is %d, want 1 to %d bytes", c.MaxMutationSize, MaxMutationSizeLimit)
	}
	return nil
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
