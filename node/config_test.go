package node_test

import (
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/catalog"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/frontend/admission"
	"github.com/kvnode/kvnode/frontend/native"
	"github.com/kvnode/kvnode/hints"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/replica"
)

// TestConfigEnsureDefaultsDelegates: every group of a zero Config gets exactly its own
// package's defaults (node.Config states none of them), and the node's own knobs get the node's.
func TestConfigEnsureDefaultsDelegates(t *testing.T) {
	var nilCfg *node.Config
	c := nilCfg.EnsureDefaults()
	for _, g := range []struct {
		name      string
		got, want any
	}{
		{"Listen", c.Listen, *(&node.ListenOptions{}).EnsureDefaults()},
		{"Security", c.Security, *(&node.SecurityOptions{}).EnsureDefaults()},
		{"Cluster", c.Cluster, *(&cluster.Options{}).EnsureDefaults()},
		{"Storage", c.Storage, *(&replica.Options{}).EnsureDefaults()},
		{"Limiter", c.Limiter, *(&partitionlimit.Options{}).EnsureDefaults()},
		{"Catalog", c.Catalog, *(&catalog.Options{}).EnsureDefaults()},
		{"Coordinator", c.Coordinator, *(&shell.Options{}).EnsureDefaults()},
		{"Native", c.Native, *(&native.Options{}).EnsureDefaults()},
		{"Admission", c.Admission, *(&admission.Options{}).EnsureDefaults()},
		{"Hints", c.Hints, *(&hints.Options{}).EnsureDefaults()},
		{"Batchlog", c.Batchlog, *(&node.BatchlogOptions{}).EnsureDefaults()},
	} {
		if !reflect.DeepEqual(g.got, g.want) {
			t.Errorf("EnsureDefaults: Config.%s = %+v, want its package's defaults %+v", g.name, g.got, g.want)
		}
	}
	// A default set only in the owning package reaches the node: applied in one place.
	for _, d := range []struct {
		name      string
		got, want any
	}{
		{"Coordinator.WriteTimeout", c.Coordinator.WriteTimeout, shell.DefaultWriteTimeout},
		{"Coordinator.MaxTimestampAhead", c.Coordinator.MaxTimestampAhead, shell.DefaultMaxTimestampAhead},
		{"Cluster.NumTokens", c.Cluster.NumTokens, cluster.DefaultNumTokens},
		{"Cluster.Profile", c.Cluster.Profile, cluster.ProfileLAN},
		{"Storage.CacheSize", c.Storage.CacheSize, int64(replica.DefaultCacheSize)},
		{"Storage.FS", c.Storage.FS, vfs.Default},
		{"Limiter.Capacity", c.Limiter.Capacity, partitionlimit.DefaultCapacity},
		{"Catalog.TombstoneGrace", c.Catalog.TombstoneGrace, catalog.DefaultTombstoneGrace},
		{"Native.MaxInFlight", c.Native.MaxInFlight, native.DefaultMaxInFlight},
		{"Hints.Throttle", c.Hints.Throttle, int64(hints.DefaultThrottle)},
		{"Listen.HandshakeTimeout", c.Listen.HandshakeTimeout, native.DefaultHandshakeTimeout},
		{"Listen.Addr", c.Listen.Addr, node.DefaultAddr},
		{"Listen.MetricsAddr", c.Listen.MetricsAddr, ""},
		{"Batchlog.ReplayAge", c.Batchlog.ReplayAge, time.Duration(0)},
		{"StreamThroughput", c.StreamThroughput, node.DefaultStreamThroughput},
		{"ShutdownGrace", c.ShutdownGrace, node.DefaultShutdownGrace},
		{"Authenticator", c.Authenticator, node.AuthenticatorNone},
		{"Logger", c.Logger, slog.Default()},
		{"DataDir", c.DataDir, ""},
	} {
		if !reflect.DeepEqual(d.got, d.want) {
			t.Errorf("EnsureDefaults: Config.%s = %v, want %v", d.name, d.got, d.want)
		}
	}
	if c.Testing != nil {
		t.Errorf("EnsureDefaults set Testing: %+v", c.Testing)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "data_dir") {
		t.Errorf("Validate without a data directory = %v, want an error naming data_dir", err)
	}
	c.DataDir = "/d"
	if err := c.Validate(); err != nil {
		t.Errorf("Validate of the defaults with a data directory: %v", err)
	}

	// Idempotent: applying twice is applying once.
	twice := *c
	twice.EnsureDefaults()
	if !reflect.DeepEqual(twice, *c) {
		t.Errorf("EnsureDefaults twice = %+v\nwant once = %+v", twice, *c)
	}

	// Set fields are kept.
	set := node.Config{DataDir: "/d", Cluster: cluster.Options{NumTokens: 7, ClusterName: "x"},
		Coordinator: shell.Options{WriteTimeout: time.Minute}, Listen: node.ListenOptions{Addr: "h:1"}, ShutdownGrace: time.Hour}
	set.EnsureDefaults()
	if set.Cluster.NumTokens != 7 || set.Coordinator.WriteTimeout != time.Minute || set.Cluster.ClusterName != "x" ||
		set.Listen.Addr != "h:1" || set.ShutdownGrace != time.Hour {
		t.Errorf("EnsureDefaults changed set fields: %+v", set)
	}
}

// options is a group of node.Config that node itself owns.
type options[T any] interface {
	*T
	EnsureDefaults() *T
	Validate() error
}

// checkEnsureDefaults checks that EnsureDefaults turns in into want, that a second call
// changes nothing, and that the result is valid.
func checkEnsureDefaults[T any, P options[T]](t *testing.T, name string, in, want T) {
	t.Helper()
	got := in
	P(&got).EnsureDefaults()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: EnsureDefaults() = %+v, want %+v", name, got, want)
	}
	twice := got
	if P(&twice).EnsureDefaults(); !reflect.DeepEqual(twice, got) {
		t.Errorf("%s: EnsureDefaults twice = %+v, want once = %+v", name, twice, got)
	}
	if err := P(&got).Validate(); err != nil {
		t.Errorf("%s: Validate() = %v, want nil", name, err)
	}
}

func TestNodeOptionsEnsureDefaults(t *testing.T) {
	listen := node.ListenOptions{Addr: node.DefaultAddr, CQLAddr: node.DefaultCQLAddr, InternodeAddr: node.DefaultInternodeAddr,
		GossipAddr: node.DefaultGossipAddr, MaxGRPCConnections: node.DefaultMaxGRPCConnections,
		MaxConnectionsPerHost: node.DefaultMaxConnectionsPerHost, MaxConcurrentStreams: node.DefaultMaxConcurrentStreams,
		HandshakeTimeout: native.DefaultHandshakeTimeout, IdleConnectionTimeout: node.DefaultIdleConnectionTimeout}
	listenSet := node.ListenOptions{Addr: "a:1", CQLAddr: "c:2", InternodeAddr: "i:3", GossipAddr: "g:4", MetricsAddr: "m:5",
		MaxGRPCConnections: 1, MaxConnectionsPerHost: 2, MaxConcurrentStreams: 3, HandshakeTimeout: time.Second, IdleConnectionTimeout: time.Minute}
	checkEnsureDefaults(t, "ListenOptions zero", node.ListenOptions{}, listen)
	checkEnsureDefaults(t, "ListenOptions set", listenSet, listenSet)
	oneSet := listen
	oneSet.CQLAddr = "c:9"
	checkEnsureDefaults(t, "ListenOptions one set", node.ListenOptions{CQLAddr: "c:9"}, oneSet)

	securitySet := node.SecurityOptions{TLSCert: "c", TLSKey: "k", TLSCA: "ca", MetricsTLS: true, GossipKeyFile: "g", ReloadInterval: time.Hour}
	checkEnsureDefaults(t, "SecurityOptions zero", node.SecurityOptions{}, node.SecurityOptions{ReloadInterval: node.DefaultReloadInterval})
	checkEnsureDefaults(t, "SecurityOptions set", securitySet, securitySet)

	batchlogSet := node.BatchlogOptions{ReplayInterval: time.Second, ReplayAge: time.Minute}
	checkEnsureDefaults(t, "BatchlogOptions zero", node.BatchlogOptions{}, node.BatchlogOptions{ReplayInterval: node.DefaultBatchlogReplayInterval})
	checkEnsureDefaults(t, "BatchlogOptions set", batchlogSet, batchlogSet)
}

// TestConfigValidate: each bad value fails Validate with an error naming the field and its
// configuration key, whichever package owns the check.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		set  func(*node.Config)
		want string
	}{
		{func(c *node.Config) { c.DataDir = "" }, "node: Config.DataDir (data_dir) is required"},
		{func(c *node.Config) { c.Listen.Addr = "localhost" }, `node: ListenOptions.Addr (addr) "localhost" is not host:port`},
		{func(c *node.Config) { c.Listen.Addr = "h:70000" }, `ListenOptions.Addr (addr) "h:70000" is not host:port with a port 0 to 65535`},
		{func(c *node.Config) { c.Listen.GossipAddr = "h:x" }, `ListenOptions.GossipAddr (gossip_addr) "h:x"`},
		{func(c *node.Config) { c.Listen.MetricsAddr = "h" }, `ListenOptions.MetricsAddr (metrics_addr) "h" is not host:port with a port 0 to 65535, or empty`},
		{func(c *node.Config) { c.Listen.InternodeAddr = "7000" }, `ListenOptions.InternodeAddr (internode_addr) "7000" is not host:port`},
		{func(c *node.Config) { c.Listen.HandshakeTimeout = -time.Second }, "ListenOptions.HandshakeTimeout (handshake_timeout) is -1s, want a positive duration"},
		{func(c *node.Config) { c.Listen.IdleConnectionTimeout = -time.Second }, "ListenOptions.IdleConnectionTimeout (idle_connection_timeout) is -1s, want a positive duration"},
		{func(c *node.Config) { c.Listen.MaxConnectionsPerHost = -1 }, "ListenOptions.MaxConnectionsPerHost (max_connections_per_host) is -1, want 1 to 2147483647"},
		{func(c *node.Config) { c.Listen.MaxGRPCConnections = -1 }, "ListenOptions.MaxGRPCConnections (max_grpc_connections) is -1"},
		{func(c *node.Config) { c.Listen.MaxConcurrentStreams = -1 }, "ListenOptions.MaxConcurrentStreams (max_concurrent_streams) is -1"},
		{func(c *node.Config) { c.Security.TLSCert, c.Security.TLSKey = "c.pem", "k.pem" }, "(tls_cert, tls_key, tls_ca) are set together or not at all; got tls_cert \"c.pem\", tls_key \"k.pem\", tls_ca \"\""},
		{func(c *node.Config) { c.Security.TLSCA = "ca.pem" }, "are set together or not at all"},
		{func(c *node.Config) { c.Security.MetricsTLS = true }, "SecurityOptions.MetricsTLS (metrics_tls) needs tls_cert"},
		{func(c *node.Config) { c.Security.ReloadInterval = -time.Second }, "SecurityOptions.ReloadInterval (reload_interval) is -1s, want a positive duration"},
		{func(c *node.Config) { c.Cluster.Seeds = []string{"a:1", "b:-1"} }, `cluster: Options.Seeds[1] (seeds) "b:-1"`},
		{func(c *node.Config) { c.Cluster.NumTokens = -1 }, "cluster: Options.NumTokens (num_tokens) is -1, want 1 to 4096"},
		{func(c *node.Config) { c.Cluster.NumTokens = cluster.MaxNumTokens + 1 }, "Options.NumTokens (num_tokens) is 4097, want 1 to 4096"},
		{func(c *node.Config) { c.Cluster.ClusterName = strings.Repeat("x", 256) }, "Options.ClusterName (cluster_name) is 256 bytes, want at most 255"},
		{func(c *node.Config) { c.Cluster.DataCenter = "east 1" }, "Options.DataCenter (dc): name \"east 1\" has byte 0x20 at offset 4"},
		{func(c *node.Config) { c.Cluster.Rack = strings.Repeat("r", 65) }, "Options.Rack (rack): name is 65 bytes, the limit is 64"},
		{func(c *node.Config) { c.Cluster.Profile = 9 }, "Options.Profile (profile) is 9, want lan, wan, local or test"},
		{func(c *node.Config) { c.Cluster.SchemaAgreementTimeout = -1 }, "Options.SchemaAgreementTimeout (schema_agreement_timeout) is -1ns"},
		{func(c *node.Config) { c.Storage.CacheSize = -1 }, "replica: Options.CacheSize (cache_size) is -1, want ≥ 0"},
		{func(c *node.Config) { c.Storage.MemTableSize = 1023 }, "Options.MemTableSize (memtable_size) is 1023, want 1024 to 4294967295"},
		{func(c *node.Config) { c.Storage.MemTableSize = 4 << 30 }, "Options.MemTableSize (memtable_size) is 4294967296"},
		{func(c *node.Config) { c.Limiter.Capacity = 7 }, "partitionlimit: Options.Capacity (limiter_capacity) is 7, want 8 to 1073741824"},
		{func(c *node.Config) { c.Limiter.Capacity = partitionlimit.MaxCapacity + 1 }, "Options.Capacity (limiter_capacity) is 1073741825"},
		{func(c *node.Config) { c.Limiter.LearnedCopies = true }, "node: Config.Limiter.LearnedCopies is set"},
		{func(c *node.Config) { c.Catalog.Limits.MaxColumnsPerTable = -1 }, "schema: Limits.MaxColumnsPerTable (max_columns_per_table) is -1"},
		{func(c *node.Config) { c.Catalog.TombstoneGrace = -time.Second }, "catalog: Options.TombstoneGrace (schema_tombstone_grace) is -1s"},
		{func(c *node.Config) { c.Coordinator.WriteTimeout = -time.Second }, "coordinator: Options.WriteTimeout (write_timeout) is -1s, want a positive duration"},
		{func(c *node.Config) { c.Coordinator.ReadTimeout = -time.Second }, "Options.ReadTimeout (read_timeout) is -1s"},
		{func(c *node.Config) { c.Coordinator.MaxTimestampAhead = -time.Hour }, "Options.MaxTimestampAhead (max_timestamp_ahead) is -1h0m0s"},
		{func(c *node.Config) { c.Coordinator.MaxMutationSize = -1 }, "Options.MaxMutationSize (max_mutation_size) is -1, want a positive number of bytes"},
		{func(c *node.Config) { c.Coordinator.MaxMutationSize = node.MaxMutationSizeLimit + 1 }, "node: Config.Coordinator.MaxMutationSize (max_mutation_size) is 536870913, want 1 to 536870912 bytes"},
		{func(c *node.Config) { c.Coordinator.MaxStatementSize = -1 }, "Options.MaxStatementSize (max_statement_size) is -1, want 1 to 2147483647"},
		{func(c *node.Config) { c.Native.MaxConnections = -1 }, "native: Options.MaxConnections (max_native_connections) is -1, want 1 to 2147483647"},
		{func(c *node.Config) { c.Native.MaxInFlight = -1 }, "Options.MaxInFlight (max_native_requests_per_connection) is -1, want 1 to 32768"},
		{func(c *node.Config) { c.Native.MaxInFlight = 32769 }, "Options.MaxInFlight (max_native_requests_per_connection) is 32769, want 1 to 32768"},
		{func(c *node.Config) { c.Native.MaxConnectionBytes = -1 }, "Options.MaxConnectionBytes (max_native_connection_bytes) is -1, want a positive number of bytes"},
		{func(c *node.Config) { c.Native.MaxServerBytes = -1 }, "Options.MaxServerBytes (max_native_bytes) is -1, want a positive number of bytes"},
		{func(c *node.Config) { c.Admission.MaxConcurrent = -1 }, "admission: Options.MaxConcurrent (max_concurrent_requests) is -1, want ≥ 1"},
		{func(c *node.Config) { c.Admission.QueueTimeout = -1 }, "Options.QueueTimeout (request_queue_timeout) is -1ns, want a positive duration"},
		{func(c *node.Config) { c.Hints.Window = -time.Second }, "hints: Options.Window (max_hint_window) is -1s"},
		{func(c *node.Config) { c.Hints.MaxBytes = -1 }, "Options.MaxBytes (max_hints_size_per_host) is -1"},
		{func(c *node.Config) { c.Hints.Throttle = -1 }, "Options.Throttle (hinted_handoff_throttle) is -1"},
		{func(c *node.Config) { c.Batchlog.ReplayInterval = -time.Second }, "BatchlogOptions.ReplayInterval (batchlog_replay_interval) is -1s, want a positive duration"},
		{func(c *node.Config) { c.Batchlog.ReplayAge = -time.Second }, "BatchlogOptions.ReplayAge (batchlog_replay_age) is -1s, want a positive duration, or 0 for twice write_timeout"},
		{func(c *node.Config) { c.StreamThroughput = -1 }, "node: Config.StreamThroughput (stream_throughput) is -1"},
		{func(c *node.Config) { c.ShutdownGrace = -time.Second }, "node: Config.ShutdownGrace (shutdown_grace) is -1s"},
		{func(c *node.Config) { c.Authenticator = "ldap" }, `node: Config.Authenticator (authenticator) is "ldap", want none or password`},
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
