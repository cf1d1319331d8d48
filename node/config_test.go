package node_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/frontend/native"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/replica"
)

func TestConfigEnsureDefaults(t *testing.T) {
	var nilCfg *node.Config
	c := nilCfg.EnsureDefaults()
	want := node.Config{
		Addr:                   node.DefaultAddr,
		GossipAddr:             node.DefaultGossipAddr,
		NumTokens:              cluster.DefaultNumTokens,
		ClusterName:            cluster.DefaultClusterName,
		Profile:                cluster.ProfileLAN,
		LimiterCapacity:        partitionlimit.DefaultCapacity,
		WriteTimeout:           shell.DefaultWriteTimeout,
		ReadTimeout:            shell.DefaultReadTimeout,
		SchemaAgreementTimeout: cluster.DefaultSchemaAgreementTimeout,
		MaxMutationSize:        shell.DefaultMaxMutationSize,
		MaxStatementSize:       shell.DefaultMaxStatementSize,
		MaxTimestampAhead:      node.DefaultMaxTimestampAhead,
		ShutdownGrace:          node.DefaultShutdownGrace,
		Logger:                 slog.Default(),
	}
	want.Storage.CacheSize = replica.DefaultCacheSize
	want.Storage.MemTableSize = replica.DefaultMemTableSize
	want.Storage.TombstoneFailureThreshold = replica.DefaultTombstoneFailureThreshold
	if c.Addr != want.Addr || c.GossipAddr != want.GossipAddr || c.NumTokens != want.NumTokens ||
		c.ClusterName != want.ClusterName || c.Profile != want.Profile || c.LimiterCapacity != want.LimiterCapacity ||
		c.WriteTimeout != want.WriteTimeout || c.ReadTimeout != want.ReadTimeout ||
		c.SchemaAgreementTimeout != want.SchemaAgreementTimeout || c.MaxMutationSize != want.MaxMutationSize || c.MaxStatementSize != want.MaxStatementSize ||
		c.MaxTimestampAhead != want.MaxTimestampAhead || c.ShutdownGrace != want.ShutdownGrace ||
		c.Logger != want.Logger || c.Storage != want.Storage || c.MetricsAddr != "" || c.DataDir != "" || c.Testing != nil {
		t.Errorf("EnsureDefaults on nil = %+v\nwant                   %+v", *c, want)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "data_dir") {
		t.Errorf("Validate without a data directory = %v, want an error naming data_dir", err)
	}
	c.DataDir = "/d"
	if err := c.Validate(); err != nil {
		t.Errorf("Validate of the defaults with a data directory: %v", err)
	}

	if c.MaxNativeConnections != native.DefaultMaxConnections || c.MaxNativeRequestsPerConnection != native.DefaultMaxInFlight ||
		c.MaxNativeConnectionBytes != native.DefaultMaxConnectionBytes || c.MaxNativeBytes != native.DefaultMaxServerBytes {
		t.Errorf("EnsureDefaults: native bounds %d connections, %d requests per connection, %d bytes per connection, %d bytes; want the native front end's defaults",
			c.MaxNativeConnections, c.MaxNativeRequestsPerConnection, c.MaxNativeConnectionBytes, c.MaxNativeBytes)
	}

	if c.MaxConnectionsPerHost != node.DefaultMaxConnectionsPerHost {
		t.Errorf("EnsureDefaults: max connections per host %d, want %d", c.MaxConnectionsPerHost, node.DefaultMaxConnectionsPerHost)
	}
	if c.HandshakeTimeout != node.DefaultHandshakeTimeout || c.IdleConnectionTimeout != node.DefaultIdleConnectionTimeout {
		t.Errorf("EnsureDefaults: handshake timeout %v, idle connection timeout %v; want %v, %v",
			c.HandshakeTimeout, c.IdleConnectionTimeout, node.DefaultHandshakeTimeout, node.DefaultIdleConnectionTimeout)
	}

	// Set fields are kept.
	set := node.Config{DataDir: "/d", NumTokens: 7, WriteTimeout: time.Minute, ClusterName: "x"}
	set.EnsureDefaults()
	if set.NumTokens != 7 || set.WriteTimeout != time.Minute || set.ClusterName != "x" {
		t.Errorf("EnsureDefaults changed set fields: %+v", set)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		set  func(*node.Config)
		want string
	}{
		{func(c *node.Config) { c.DataDir = "" }, "Config.DataDir (data_dir) is required"},
		{func(c *node.Config) { c.Addr = "localhost" }, `Config.Addr (addr) "localhost" is not host:port`},
		{func(c *node.Config) { c.Addr = "h:70000" }, `Config.Addr (addr) "h:70000" is not host:port with a port 0 to 65535`},
		{func(c *node.Config) { c.GossipAddr = "h:x" }, `Config.GossipAddr (gossip_addr) "h:x"`},
		{func(c *node.Config) { c.MetricsAddr = "h" }, `Config.MetricsAddr (metrics_addr) "h" is not host:port with a port 0 to 65535, or empty`},
		{func(c *node.Config) { c.Seeds = []string{"a:1", "b:-1"} }, `Config.Seeds[1] (seeds) "b:-1"`},
		{func(c *node.Config) { c.NumTokens = -1 }, "Config.NumTokens (num_tokens) is -1, want 1 to 4096"},
		{func(c *node.Config) { c.NumTokens = cluster.MaxNumTokens + 1 }, "Config.NumTokens (num_tokens) is 4097, want 1 to 4096"},
		{func(c *node.Config) { c.ClusterName = strings.Repeat("x", 256) }, "Config.ClusterName (cluster_name) is 256 bytes, want at most 255"},
		{func(c *node.Config) { c.DataCenter = "east 1" }, "Config.DataCenter (dc): name \"east 1\" has byte 0x20 at offset 4"},
		{func(c *node.Config) { c.Rack = strings.Repeat("r", 65) }, "Config.Rack (rack): name is 65 bytes, the limit is 64"},
		{func(c *node.Config) { c.Profile = 9 }, "Config.Profile (profile) is 9, want lan, local or test"},
		{func(c *node.Config) { c.Storage.CacheSize = -1 }, "Config.Storage.CacheSize (cache_size) is -1, want ≥ 0"},
		{func(c *node.Config) { c.Storage.MemTableSize = 1023 }, "Config.Storage.MemTableSize (memtable_size) is 1023, want 1024 to 4294967295"},
		{func(c *node.Config) { c.Storage.MemTableSize = 4 << 30 }, "Config.Storage.MemTableSize (memtable_size) is 4294967296"},
		{func(c *node.Config) { c.LimiterCapacity = 7 }, "Config.LimiterCapacity (limiter_capacity) is 7, want 8 to 1073741824"},
		{func(c *node.Config) { c.LimiterCapacity = partitionlimit.MaxCapacity + 1 }, "Config.LimiterCapacity (limiter_capacity) is 1073741825"},
		{func(c *node.Config) { c.WriteTimeout = -time.Second }, "Config.WriteTimeout (write_timeout) is -1s, want a positive duration"},
		{func(c *node.Config) { c.ReadTimeout = -time.Second }, "Config.ReadTimeout (read_timeout) is -1s"},
		{func(c *node.Config) { c.SchemaAgreementTimeout = -1 }, "Config.SchemaAgreementTimeout (schema_agreement_timeout) is -1ns"},
		{func(c *node.Config) { c.MaxTimestampAhead = -time.Hour }, "Config.MaxTimestampAhead (max_timestamp_ahead) is -1h0m0s"},
		{func(c *node.Config) { c.ShutdownGrace = -time.Second }, "Config.ShutdownGrace (shutdown_grace) is -1s"},
		{func(c *node.Config) { c.BatchlogReplayInterval = -time.Second }, "Config.BatchlogReplayInterval (batchlog_replay_interval) is -1s, want a positive duration"},
		{func(c *node.Config) { c.BatchlogReplayAge = -time.Second }, "Config.BatchlogReplayAge (batchlog_replay_age) is -1s, want a positive duration, or 0 for twice write_timeout"},
		{func(c *node.Config) { c.MaxMutationSize = -1 }, "Config.MaxMutationSize (max_mutation_size) is -1, want 1 to 536870912 bytes"},
		{func(c *node.Config) { c.MaxMutationSize = node.MaxMutationSizeLimit + 1 }, "Config.MaxMutationSize (max_mutation_size) is 536870913"},
		{func(c *node.Config) { c.MaxStatementSize = -1 }, "Config.MaxStatementSize (max_statement_size) is -1, want 1 to 2147483647"},
		{func(c *node.Config) { c.InternodeAddr = "7000" }, "Config.InternodeAddr (internode_addr) \"7000\" is not host:port"},
		{func(c *node.Config) { c.TLSCert, c.TLSKey = "c.pem", "k.pem" }, "(tls_cert, tls_key, tls_ca) are set together or not at all; got tls_cert \"c.pem\", tls_key \"k.pem\", tls_ca \"\""},
		{func(c *node.Config) { c.TLSCA = "ca.pem" }, "are set together or not at all"},
		{func(c *node.Config) { c.MetricsTLS = true }, "Config.MetricsTLS (metrics_tls) needs tls_cert"},
		{func(c *node.Config) { c.ReloadInterval = -time.Second }, "Config.ReloadInterval (reload_interval) is -1s, want a positive duration"},
		{func(c *node.Config) { c.HandshakeTimeout = -time.Second }, "Config.HandshakeTimeout (handshake_timeout) is -1s, want a positive duration"},
		{func(c *node.Config) { c.IdleConnectionTimeout = -time.Second }, "Config.IdleConnectionTimeout (idle_connection_timeout) is -1s, want a positive duration"},
		{func(c *node.Config) { c.MaxConnectionsPerHost = -1 }, "Config.MaxConnectionsPerHost (max_connections_per_host) is -1, want 1 to 2147483647"},
		{func(c *node.Config) { c.MaxNativeConnections = -1 }, "Config.MaxNativeConnections (max_native_connections) is -1, want 1 to 2147483647"},
		{func(c *node.Config) { c.MaxNativeRequestsPerConnection = -1 }, "Config.MaxNativeRequestsPerConnection (max_native_requests_per_connection) is -1, want 1 to 32768"},
		{func(c *node.Config) { c.MaxNativeRequestsPerConnection = 32769 }, "Config.MaxNativeRequestsPerConnection (max_native_requests_per_connection) is 32769, want 1 to 32768"},
		{func(c *node.Config) { c.MaxNativeConnectionBytes = -1 }, "Config.MaxNativeConnectionBytes (max_native_connection_bytes) is -1, want a positive number of bytes"},
		{func(c *node.Config) { c.MaxNativeBytes = -1 }, "Config.MaxNativeBytes (max_native_bytes) is -1, want a positive number of bytes"},
	} {
		c := node.Config{DataDir: "/d"}
		c.EnsureDefaults()
		tc.set(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
		}
	}
}
