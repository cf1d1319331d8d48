package main

import (
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/frontend/admission"
	"github.com/kvnode/kvnode/frontend/loginguard"
	"github.com/kvnode/kvnode/hints"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/repair"
	"github.com/kvnode/kvnode/schema"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServeConfigDefaults(t *testing.T) {
	cfg, err := parseServeFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, defaultServeConfig()) {
		t.Errorf("no flags gave %+v, want the defaults %+v", cfg, defaultServeConfig())
	}
	if cfg.Storage.TombstoneFailureThreshold != 100_000 {
		t.Errorf("the default tombstone failure threshold is %d, want Cassandra's 100,000", cfg.Storage.TombstoneFailureThreshold)
	}
	if cfg.Listen.Addr != "127.0.0.1:9043" || cfg.Listen.GossipAddr != "127.0.0.1:7946" || cfg.Listen.MetricsAddr != "127.0.0.1:9180" || cfg.DataDir != "./kvnode-data" {
		t.Errorf("defaults drifted from the documented ones: %+v", cfg)
	}
	if nc := cfg.nodeConfig(); nc.Storage.NoSync || cfg.LogLevel != slog.LevelInfo || nc.Cluster.NumTokens != 16 || nc.Cluster.ClusterName != "kvnode" {
		t.Errorf("defaults: NoSync %v, log level %v, num tokens %d, cluster name %q; want false, INFO, 16, kvnode",
			nc.Storage.NoSync, cfg.LogLevel, nc.Cluster.NumTokens, nc.Cluster.ClusterName)
	}
}

// TestServeConfigFileThenFlags sets every key in the file and overrides a sample of them (a
// string, a list, an integer, a duration, a bool and a profile) by flag.
func TestServeConfigFileThenFlags(t *testing.T) {
	path := writeFile(t, "kvnode.yaml", `
data_dir: /var/lib/kvnode
addr: 10.0.0.1:9043
internode_addr: 10.0.0.1:7000
gossip_addr: 10.0.0.1:7946
metrics_addr: ""
seeds: [10.0.0.2:7946, 10.0.0.3:7946]
num_tokens: 32
cluster_name: prod-eu
profile: local
limiter_capacity: 65536
sync: false
log_level: debug
cache_size: 1048576
memtable_size: 2097152
tombstone_failure_threshold: 5000
write_timeout: 3s
read_timeout: 4s
schema_agreement_timeout: 20s
max_timestamp_ahead: 72h
max_mutation_size: 1048576
max_statement_size: 65536
shutdown_grace: 30s
max_native_connection_bytes: 1048576
dc: eu-west
rack: r1
`)
	cfg, err := parseServeFlags([]string{"--config", path, "--addr", "127.0.0.1:1", "--seeds", "a:1, b:2,", "--rack", "r7",
		"--tombstone-failure-threshold", "7", "--max-mutation-size", "2097152", "--read-timeout", "9s",
		"--sync=true", "--profile", "test", "--max-native-connections", "100", "--idle-connection-timeout", "1m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := defaultServeConfig()
	want.DataDir = "/var/lib/kvnode"            // from the file
	want.Listen.Addr = "127.0.0.1:1"            // flag wins over the file
	want.Listen.InternodeAddr = "10.0.0.1:7000" // from the file
	want.Listen.GossipAddr = "10.0.0.1:7946"
	want.Listen.MetricsAddr = ""
	want.Listen.IdleConnectionTimeout = time.Minute // flag
	want.Cluster.Seeds = []string{"a:1", "b:2"}     // flag
	want.Cluster.NumTokens = 32
	want.Cluster.ClusterName = "prod-eu"
	want.Cluster.Profile = cluster.ProfileTest // flag
	want.Cluster.SchemaAgreementTimeout = 20 * time.Second
	want.Cluster.DataCenter = "eu-west" // from the file
	want.Cluster.Rack = "r7"            // flag
	want.Limiter.Capacity = 65536
	want.Coordinator.WriteTimeout = 3 * time.Second
	want.Coordinator.ReadTimeout = 9 * time.Second // flag
	want.Coordinator.MaxTimestampAhead = 72 * time.Hour
	want.Coordinator.MaxMutationSize = 2 << 20 // flag
	want.Coordinator.MaxStatementSize = 65536
	want.ShutdownGrace = 30 * time.Second
	want.Native.MaxConnections = 100         // flag
	want.Native.MaxConnectionBytes = 1 << 20 // from the file
	want.Storage.CacheSize = 1 << 20
	want.Storage.MemTableSize = 2 << 20
	want.Storage.TombstoneFailureThreshold = 7 // flag
	want.Sync = true                           // flag
	want.LogLevel = slog.LevelDebug
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config = %+v\nwant     %+v", cfg, want)
	}
}

// TestServeConfigEveryFieldHasAFlag checks that every file key of the configuration has a flag of
// the same name with dashes, so no knob is reachable from one side only.
func TestServeConfigEveryFieldHasAFlag(t *testing.T) {
	c := defaultServeConfig()
	data, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := yaml.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	registerServeFlags(fs, &c)
	for k := range keys {
		if fs.Lookup(strings.ReplaceAll(k, "_", "-")) == nil {
			t.Errorf("config key %s has no flag --%s", k, strings.ReplaceAll(k, "_", "-"))
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := keys[strings.ReplaceAll(f.Name, "-", "_")]; !ok && f.Name != "config" && !hiddenServeFlags[f.Name] {
			t.Errorf("flag --%s has no config key %s", f.Name, strings.ReplaceAll(f.Name, "-", "_"))
		}
	})
	if len(keys) < 20 {
		t.Errorf("the config has %d keys, want at least the 20 documented", len(keys))
	}
}

// TestServeConfigRoundTrip writes a configuration with every key set to a value other than its
// default, reads it back, and gets the same configuration.
func TestServeConfigRoundTrip(t *testing.T) {
	in := defaultServeConfig()
	in.DataDir = "/d"
	in.Listen = node.ListenOptions{Addr: "h:1", CQLAddr: "h:4", InternodeAddr: "h:5", GossipAddr: "h:2", MetricsAddr: "h:3",
		MaxGRPCConnections: 6, MaxConcurrentStreams: 5, MaxConnectionsPerHost: 53, HandshakeTimeout: 43 * time.Millisecond,
		IdleConnectionTimeout: 47 * time.Second}
	in.Security = node.SecurityOptions{TLSCert: "/c.pem", TLSKey: "/k.pem", TLSCA: "/ca.pem", MetricsTLS: true, GossipKeyFile: "/g",
		ReloadInterval: time.Minute}
	in.Cluster = cluster.Options{ClusterName: "c", Seeds: []string{"s:1", "s:2"}, NumTokens: 4096, Profile: cluster.ProfileLocal,
		DataCenter: "dc2", Rack: "r9", SchemaAgreementTimeout: time.Hour}
	in.Storage.CacheSize, in.Storage.MemTableSize, in.Storage.TombstoneFailureThreshold = 11, 1<<12, 13
	in.Storage.DiskFailurePolicy, in.Storage.MinFreeSpace, in.Storage.MinFreeSpacePercent = "die", 1<<30, 2.5
	in.Storage.StartDespiteCorruptLog = true
	in.Limiter.Capacity = 1 << 16
	in.Catalog.Limits = schema.Limits{MaxColumnsPerTable: 9, MaxTablesPerKeyspace: 8, MaxSchemaSize: 7}
	in.Catalog.TombstoneGrace = 29 * time.Minute
	in.Coordinator.WriteTimeout, in.Coordinator.ReadTimeout, in.Coordinator.Learning = time.Millisecond, time.Minute, true
	in.Coordinator.MaxMutationSize, in.Coordinator.MaxStatementSize, in.Coordinator.MaxTimestampAhead = 5, 11, 90*time.Minute
	in.Coordinator.PartitionKeysInSelect, in.Coordinator.InSelectCartesianProduct = 13, -1
	in.Coordinator.MaxCollectionSize, in.Coordinator.MaxCollectionItems = 1<<20, 1000
	in.Native.MaxConnections, in.Native.MaxInFlight, in.Native.MaxConnectionBytes, in.Native.MaxServerBytes = 29, 31, 37, 41
	in.Native.MaxPreLoginFrameSize, in.Native.MaxPreLoginConnectionsPerHost = 4096, 3
	in.Admission = admission.Options{MaxConcurrent: 17, MaxQueued: 19, QueueTimeout: 23 * time.Millisecond, Scans: admission.ScanPacing{RowsPerSecond: 29}}
	in.Logins = loginguard.Options{Threshold: 3, Delay: 2 * time.Second, MaxDelay: time.Minute, HalfLife: time.Hour,
		MaxWaitingPerHost: 2, MaxWaiting: 7, MaxEntries: 4096, LogInterval: 5 * time.Second, LogLinesPerSecond: 3}
	in.Hints = hints.Options{Window: time.Minute, MaxBytes: 17, Throttle: 19}
	in.Repair = repair.Options{AutoRepair: repair.AutoRepairOff, AutoRepairInterval: 3 * time.Hour, AutoRepairPause: 5 * time.Second, AutoRepairRetry: 7 * time.Minute}
	in.Batchlog = node.BatchlogOptions{ReplayInterval: 3 * time.Second, ReplayAge: 7 * time.Second}
	in.StreamThroughput, in.ShutdownGrace = 1<<20, 2*time.Second
	in.Authenticator, in.SuperuserPasswordFile = node.AuthenticatorPassword, "/etc/kvnode/superuser-password"
	in.Sync, in.AutoSnapshot, in.LogLevel = false, false, slog.LevelWarn
	data, err := yaml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"write_timeout: 1ms", "profile: local", "log_level: WARN", "sync: false"} {
		if !strings.Contains(string(data), d) {
			t.Errorf("the YAML lacks %q:\n%s", d, data)
		}
	}
	out := defaultServeConfig()
	if err := loadConfigFile(writeFile(t, "rt.yaml", string(data)), &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("round trip gave %+v\nwant           %+v\nfrom:\n%s", out, in, data)
	}
	// Every key of the file, in every group, is set to other than its default above.
	def := defaultServeConfig()
	var check func(path string, v, d reflect.Value)
	check = func(path string, v, d reflect.Value) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			tag := f.Tag.Get("yaml")
			switch {
			case tag == "-" || !f.IsExported():
			case tag == ",inline":
				check(path+f.Name+".", v.Field(i), d.Field(i))
			case reflect.DeepEqual(v.Field(i).Interface(), d.Field(i).Interface()):
				t.Errorf("the round trip leaves %s%s (%s) at its default: set it", path, f.Name, tag)
			}
		}
	}
	check("", reflect.ValueOf(in), reflect.ValueOf(def))
}

func TestServeConfigErrors(t *testing.T) {
	typo := writeFile(t, "typo.yaml", "data_dri: /tmp/x\n")
	intDuration := writeFile(t, "int.yaml", "addr: h:1\nwrite_timeout: 5\n")
	badSeed := writeFile(t, "seed.yaml", "seeds:\n  - a:1\n  - [b]\n")
	bigTombstones := writeFile(t, "tomb.yaml", "tombstone_failure_threshold: 4294967296\n")
	badProfile := writeFile(t, "profile.yaml", "profile: metro\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", typo}, "typo.yaml: line 1: unknown key data_dri"},
		{[]string{"--config", intDuration}, "line 2: write_timeout: cannot unmarshal !!int `5` into time.Duration (want a duration such as 500ms, 2s or 72h)"},
		{[]string{"--config", badSeed}, "line 3: seeds[1]: cannot unmarshal !!seq into string"},
		{[]string{"--config", bigTombstones}, "line 1: tombstone_failure_threshold: cannot unmarshal !!int `4294967296` into uint32"},
		{[]string{"--config", badProfile}, `unknown profile "metro"`},
		{[]string{"--config", filepath.Join(t.TempDir(), "missing.yaml")}, "missing.yaml"},
		{[]string{"--num-tokens", "-1"}, "num_tokens) is -1, want 1 to 4096"},
		{[]string{"--num-tokens", "4097"}, "num_tokens) is 4097, want 1 to 4096"},
		{[]string{"--limiter-capacity", "-1"}, "limiter_capacity) is -1"},
		{[]string{"--log-level", "loud"}, `"loud"`},
		{[]string{"--tombstone-failure-threshold", "4294967296"}, "tombstone-failure-threshold"},
		{[]string{"--max-timestamp-ahead", "-1h"}, "max_timestamp_ahead) is -1h0m0s, want a positive duration"},
		{[]string{"--max-timestamp-ahead", "soon"}, "soon"},
		{[]string{"--max-mutation-size", "536870913"}, "max_mutation_size) is 536870913, want 1 to 536870912"},
		{[]string{"--max-native-requests-per-connection", "40000"}, "max_native_requests_per_connection) is 40000, want 1 to 32768"},
		{[]string{"--max-native-bytes", "-1"}, "max_native_bytes) is -1, want a positive number of bytes"},
		{[]string{"--handshake-timeout", "-1s"}, "handshake_timeout) is -1s, want a positive duration"},
		{[]string{"--data-dir", ""}, "data_dir"},
		{[]string{"--addr", "nohost"}, "addr) \"nohost\""},
		{[]string{"--seeds", "a:1,b"}, "Seeds[1] (seeds) \"b\""},
		{[]string{"extra"}, `"extra"`},
		{[]string{"--testing-clock-offset", "2h"}, "--testing-clock-offset 2h0m0s is outside ±1h0m0s"},
		{[]string{"--testing-clock-offset", "later"}, "later"},
		{[]string{"--testing-gossip-delay", "1m"}, "--testing-gossip-delay 1m0s is outside 0 to 10s"},
		{[]string{"--testing-gossip-delay-to", "10.0.0.1"}, "--testing-gossip-delay-to \"10.0.0.1\" needs --testing-gossip-delay"},
		{[]string{"--testing-gossip-delay", "1s", "--testing-gossip-delay-to", "10.0.0.1,dc2"}, "\"dc2\" is not an IP address"},
	} {
		_, err := parseServeFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseServeFlags(%q) error = %v, want one mentioning %s", tc.args, err, tc.want)
		}
	}
}

// TestTestingClockOffset checks the hidden --testing-clock-offset: it is left out of the usage
// text, and shifts the clock the node runs on.
func TestTestingClockOffset(t *testing.T) {
	var usage strings.Builder
	if _, err := parseServeFlags([]string{"--help"}, &usage); err == nil {
		t.Fatal("parseServeFlags(--help) succeeded, want flag.ErrHelp")
	}
	if strings.Contains(usage.String(), "testing-") || !strings.Contains(usage.String(), "-limiter-capacity") {
		t.Errorf("serve's usage text lists a --testing-* flag or lacks the other flags:\n%s", usage.String())
	}
	cfg, err := parseServeFlags([]string{"--testing-clock-offset", "-500ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	nc := cfg.nodeConfig()
	if nc.Testing == nil || nc.Testing.Now == nil {
		t.Fatal("--testing-clock-offset -500ms left the node's clock alone")
	}
	if d := time.Since(nc.Testing.Now()); d < 499*time.Millisecond || d > time.Minute {
		t.Errorf("with --testing-clock-offset -500ms the node's clock is %v behind, want 500ms", d)
	}
	if cfg, _ := parseServeFlags(nil, io.Discard); cfg.nodeConfig().Testing != nil {
		t.Error("without --testing-clock-offset the node has testing knobs, want none")
	}
	cfg, err = parseServeFlags([]string{"--testing-gossip-delay", "200ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if nc := cfg.nodeConfig(); nc.Testing == nil || nc.Testing.GossipDelay != 200*time.Millisecond || nc.Testing.Now != nil {
		t.Errorf("--testing-gossip-delay 200ms gives the testing knobs %+v, want a gossip delay of 200ms alone", nc.Testing)
	}
	cfg, err = parseServeFlags([]string{"--testing-gossip-delay", "200ms", "--testing-gossip-delay-to", "10.77.0.13,10.77.0.14"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if nc := cfg.nodeConfig(); nc.Testing == nil || !slices.Equal(nc.Testing.GossipDelayTo, []string{"10.77.0.13", "10.77.0.14"}) {
		t.Errorf("--testing-gossip-delay-to 10.77.0.13,10.77.0.14 gives the testing knobs %+v, want those two hosts", nc.Testing)
	}
}
