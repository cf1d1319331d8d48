package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/tool/cliflags"
)

// serveConfig is what `kvnode serve` runs with: the defaults, then the YAML file named by
// --config, then the flags given on the command line (flags win). The file decodes straight into
// node.Config; the two keys that are not node settings sit beside it.
type serveConfig struct {
	node.Config `yaml:",inline"`
	// Sync syncs every write to disk before acknowledging it: the inverse of node.Config.Storage.NoSync,
	// kept as the file's and the flag's spelling.
	Sync bool `yaml:"sync"`
	// AutoSnapshot snapshots a table before DROP TABLE, DROP KEYSPACE or TRUNCATE removes its
	// data (Cassandra's auto_snapshot): the inverse of node.Config.Snapshot.NoAutoSnapshot.
	AutoSnapshot bool `yaml:"auto_snapshot"`
	// LogLevel is the level of the process's text log on stderr.
	LogLevel slog.Level `yaml:"log_level"`
	// TestingClockOffset shifts this node's clock (the limiter's, the coordinator's stamps,
	// timestamps and deadlines) by a fixed amount: --testing-clock-offset, hidden from the
	// usual help, for tests and demonstrations of clock skew. Never in the file.
	TestingClockOffset time.Duration `yaml:"-"`
	// TestingGossipDelay delays every gossip packet and stream this node sends
	// (--testing-gossip-delay, hidden): for fault tests of slow gossip links. Never in the file.
	TestingGossipDelay time.Duration `yaml:"-"`
	// TestingGossipDelayTo limits TestingGossipDelay to the gossip sent to these hosts
	// (--testing-gossip-delay-to, hidden; comma-separated IP addresses): a slow link to a
	// remote data center in fault tests. Never in the file.
	TestingGossipDelayTo string `yaml:"-"`
}

// maxTestingGossipDelay bounds --testing-gossip-delay.
const maxTestingGossipDelay = 10 * time.Second

// maxTestingClockOffset bounds --testing-clock-offset.
const maxTestingClockOffset = time.Hour

// hiddenServeFlags are serve's flags left out of its usage text.
var hiddenServeFlags = map[string]bool{"testing-clock-offset": true, "testing-gossip-delay": true, "testing-gossip-delay-to": true}

// defaultServeConfig returns the binary's defaults: node.Config's, with a data directory and the
// metrics endpoint on.
func defaultServeConfig() serveConfig {
	c := node.Config{DataDir: "./kvnode-data", Listen: node.ListenOptions{MetricsAddr: node.DefaultMetricsAddr}}
	c.EnsureDefaults()
	c.Logger = nil // made by runServe at LogLevel
	return serveConfig{Config: c, Sync: true, AutoSnapshot: true, LogLevel: slog.LevelInfo}
}

// nodeConfig returns the node configuration c describes.
func (c serveConfig) nodeConfig() node.Config {
	cfg := c.Config
	cfg.Storage.NoSync = !c.Sync
	cfg.Snapshot.NoAutoSnapshot = !c.AutoSnapshot
	if off := c.TestingClockOffset; off != 0 {
		cfg.Testing = &node.TestingKnobs{Now: func() time.Time { return time.Now().Add(off) }}
	}
	if d := c.TestingGossipDelay; d > 0 {
		if cfg.Testing == nil {
			cfg.Testing = &node.TestingKnobs{}
		}
		cfg.Testing.GossipDelay = d
		if c.TestingGossipDelayTo != "" {
			cfg.Testing.GossipDelayTo = strings.Split(c.TestingGossipDelayTo, ",")
		}
	}
	return cfg
}

// registerServeFlags defines serve's flags on fs, each bound to its field of c and showing the
// field's current value as its default. A knob is one line here, one field in node.Config.
func registerServeFlags(fs *flag.FlagSet, c *serveConfig) {
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory for this node's data; one node per directory")
	fs.StringVar(&c.Listen.Addr, "addr", c.Listen.Addr, "gRPC address for clients (host:port)")
	fs.StringVar(&c.Listen.InternodeAddr, "internode-addr", c.Listen.InternodeAddr, "address of the internode services peers call (host:port)")
	fs.StringVar(&c.Listen.CQLAddr, "cql-addr", c.Listen.CQLAddr, "CQL native protocol address for drivers (host:port)")
	fs.StringVar(&c.Listen.GossipAddr, "gossip-addr", c.Listen.GossipAddr, "gossip (memberlist) address (host:port)")
	fs.StringVar(&c.Listen.MetricsAddr, "metrics-addr", c.Listen.MetricsAddr, "Prometheus /metrics address (host:port); empty disables")
	fs.Var((*listFlag)(&c.Cluster.Seeds), "seeds", "comma-separated gossip addresses of nodes to join")
	fs.IntVar(&c.Cluster.NumTokens, "num-tokens", c.Cluster.NumTokens, "virtual nodes (tokens) this node owns on the ring")
	fs.StringVar(&c.Cluster.ClusterName, "cluster-name", c.Cluster.ClusterName, "cluster name; nodes gossip only with nodes of the same name")
	fs.TextVar(&c.Cluster.Profile, "profile", c.Cluster.Profile, "gossip and failure-detection timings: lan, wan, local or test")
	fs.StringVar(&c.Cluster.DataCenter, "dc", c.Cluster.DataCenter, "data center of this node, as drivers see it in system.local and system.peers")
	fs.StringVar(&c.Cluster.Rack, "rack", c.Cluster.Rack, "rack of this node, as drivers see it in system.local and system.peers")
	fs.IntVar(&c.Limiter.Capacity, "limiter-capacity", c.Limiter.Capacity, "partitions the rate limiter tracks per node, 24 bytes each")
	fs.BoolVar(&c.Coordinator.Learning, "coordinator-learning", c.Coordinator.Learning, "as a coordinator outside a hot partition's replicas, learn from their rejections and reject locally")
	fs.BoolVar(&c.Sync, "sync", c.Sync, "sync every write to disk before acknowledging it")
	fs.BoolVar(&c.AutoSnapshot, "auto-snapshot", c.AutoSnapshot, "snapshot a table before DROP TABLE, DROP KEYSPACE or TRUNCATE removes its data (kvnode snapshot --list shows them)")
	fs.Int64Var(&c.Storage.CacheSize, "cache-size", c.Storage.CacheSize, "storage block cache size in bytes")
	fs.Uint64Var(&c.Storage.MemTableSize, "memtable-size", c.Storage.MemTableSize, "storage memtable size in bytes")
	fs.Var((*uint32Flag)(&c.Storage.TombstoneFailureThreshold), "tombstone-failure-threshold", "tombstones one read of a partition may scan before it fails (cell, row, range and partition tombstones)")
	fs.StringVar(&c.Storage.DiskFailurePolicy, "disk-failure-policy", c.Storage.DiskFailurePolicy, "when storage fails (a write or sync the disk refuses, a corrupt file): stop (stop serving clients and peers, keep metrics up) or die (exit at once)")
	fs.Int64Var(&c.Storage.MinFreeSpace, "min-free-space", c.Storage.MinFreeSpace, "bytes of free disk space kept in reserve (with --min-free-space-percent, the smaller): below it writes are refused, DROP and compaction go on")
	fs.Float64Var(&c.Storage.MinFreeSpacePercent, "min-free-space-percent", c.Storage.MinFreeSpacePercent, "percent of the data directory's filesystem kept free in reserve (with --min-free-space, the smaller)")
	fs.BoolVar(&c.Storage.StartDespiteCorruptLog, "start-despite-corrupt-log", c.Storage.StartDespiteCorruptLog, "start even though storage finds its write-ahead log corrupt: move the log into quarantine/ and serve no reads until `kvnode repair` run on this node completes")
	fs.DurationVar(&c.Coordinator.WriteTimeout, "write-timeout", c.Coordinator.WriteTimeout, "how long a coordinated write waits for its replicas")
	fs.DurationVar(&c.Coordinator.ReadTimeout, "read-timeout", c.Coordinator.ReadTimeout, "how long a coordinated read waits for its replicas")
	fs.DurationVar(&c.Cluster.SchemaAgreementTimeout, "schema-agreement-timeout", c.Cluster.SchemaAgreementTimeout, "how long DDL waits for every live node to agree on the schema")
	fs.DurationVar(&c.Coordinator.MaxTimestampAhead, "max-timestamp-ahead", c.Coordinator.MaxTimestampAhead, "refuse writes whose USING TIMESTAMP is further ahead of the coordinator's clock than this")
	fs.IntVar(&c.Coordinator.MaxMutationSize, "max-mutation-size", c.Coordinator.MaxMutationSize, "the largest write in bytes (keys, column names and values); the gRPC message limit is twice this plus 4 MiB")
	fs.IntVar(&c.Coordinator.MaxCollectionSize, "max-collection-size", c.Coordinator.MaxCollectionSize, "the largest collection value, or elements of a non-frozen collection, one write may write, in bytes (0: no limit)")
	fs.IntVar(&c.Coordinator.MaxCollectionItems, "max-collection-items", c.Coordinator.MaxCollectionItems, "the most elements of a collection one write may write (0: no limit)")
	fs.IntVar(&c.Coordinator.MaxStatementSize, "max-statement-size", c.Coordinator.MaxStatementSize, "the longest CQL text of one statement in bytes (a query, a statement to prepare, each statement of a batch)")
	fs.IntVar(&c.Coordinator.PartitionKeysInSelect, "partition-keys-in-select", c.Coordinator.PartitionKeysInSelect, "the most partition keys one SELECT's IN may name (-1: no bound)")
	fs.IntVar(&c.Coordinator.InSelectCartesianProduct, "in-select-cartesian-product", c.Coordinator.InSelectCartesianProduct, "the most key combinations the IN restrictions of one SELECT may produce (-1: no bound)")
	fs.DurationVar(&c.Batchlog.ReplayInterval, "batchlog-replay-interval", c.Batchlog.ReplayInterval, "how often this node replays the LOGGED batches stored on it that their coordinator did not remove")
	fs.DurationVar(&c.Batchlog.ReplayAge, "batchlog-replay-age", c.Batchlog.ReplayAge, "how old a batchlog entry must be before it is replayed; 0 means twice --write-timeout")
	fs.IntVar(&c.StreamThroughput, "stream-throughput", c.StreamThroughput, "bytes per second this node sends when it streams ranges to another (bootstrap, decommission, removenode)")
	fs.DurationVar(&c.Hints.Window, "max-hint-window", c.Hints.Window, "how long a replica may be down and still get hints for the writes it misses; after that it needs a repair")
	fs.Int64Var(&c.Hints.MaxBytes, "max-hints-size-per-host", c.Hints.MaxBytes, "the most bytes of hints this node keeps for one replica")
	fs.Int64Var(&c.Hints.Throttle, "hinted-handoff-throttle", c.Hints.Throttle, "bytes of hints per second this node replays to a replica that is up again")
	fs.IntVar(&c.Admission.MaxConcurrent, "max-concurrent-requests", c.Admission.MaxConcurrent, "client requests this node executes at once (both protocols); beyond it they queue")
	fs.IntVar(&c.Admission.MaxQueued, "max-queued-requests", c.Admission.MaxQueued, "client requests waiting for a turn; beyond it they are refused as Overloaded (negative: no queue)")
	fs.DurationVar(&c.Admission.QueueTimeout, "request-queue-timeout", c.Admission.QueueTimeout, "how long a client request may wait for a turn before it is refused as Overloaded")
	fs.IntVar(&c.Admission.Scans.RowsPerSecond, "scan-rows-per-second", c.Admission.Scans.RowsPerSecond, "rows per second the node's scans read, together, while other client requests execute, a row counting one per 128 bytes of it (0: 5000; negative: no pacing)")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", c.ShutdownGrace, "on SIGINT or SIGTERM, how long in-flight requests may finish before they are canceled")
	fs.StringVar(&c.Security.TLSCert, "tls-cert", c.Security.TLSCert, "PEM certificate chain of this node: with --tls-key and --tls-ca, TLS on every listener (mutual on --internode-addr)")
	fs.StringVar(&c.Security.TLSKey, "tls-key", c.Security.TLSKey, "PEM private key of --tls-cert")
	fs.StringVar(&c.Security.TLSCA, "tls-ca", c.Security.TLSCA, "PEM certificates of the CA that signs the cluster's certificates")
	fs.BoolVar(&c.Security.MetricsTLS, "metrics-tls", c.Security.MetricsTLS, "serve /metrics over HTTPS with --tls-cert")
	fs.StringVar(&c.Security.GossipKeyFile, "gossip-key-file", c.Security.GossipKeyFile, "file of base64 gossip encryption keys, one per line, the first primary (docs/operations.md)")
	fs.DurationVar(&c.Security.ReloadInterval, "reload-interval", c.Security.ReloadInterval, "how often to reread the TLS files and the gossip key file (SIGHUP rereads them at once)")
	fs.IntVar(&c.Catalog.Limits.MaxColumnsPerTable, "max-columns-per-table", c.Catalog.Limits.MaxColumnsPerTable, "the most columns a table may have")
	fs.IntVar(&c.Catalog.Limits.MaxTablesPerKeyspace, "max-tables-per-keyspace", c.Catalog.Limits.MaxTablesPerKeyspace, "the most tables a keyspace may have")
	fs.IntVar(&c.Catalog.Limits.MaxSchemaSize, "max-schema-size", c.Catalog.Limits.MaxSchemaSize, "the largest schema in bytes (every keyspace and table, and dropped ones' tombstones until they are collected)")
	fs.DurationVar(&c.Catalog.TombstoneGrace, "schema-tombstone-grace", c.Catalog.TombstoneGrace, "the least time a dropped keyspace's or table's tombstone stays in the schema; it goes once every member has the drop")
	fs.IntVar(&c.Listen.MaxGRPCConnections, "max-grpc-connections", c.Listen.MaxGRPCConnections, "open connections each gRPC listener (--addr, --internode-addr) accepts; more are closed at once")
	fs.IntVar(&c.Listen.MaxConnectionsPerHost, "max-connections-per-host", c.Listen.MaxConnectionsPerHost, "open connections one host (an IPv4 address, an IPv6 /64) may hold on each of --addr, --internode-addr and --cql-addr; more are closed at once")
	fs.IntVar(&c.Listen.MaxConcurrentStreams, "max-concurrent-streams", c.Listen.MaxConcurrentStreams, "requests in flight on one client gRPC connection (internode connections get 16 times as many)")
	fs.DurationVar(&c.Listen.HandshakeTimeout, "handshake-timeout", c.Listen.HandshakeTimeout, "how long a new connection to any listener but gossip may take to complete its handshake (TLS, HTTP/2, the native protocol's STARTUP and login) before it is closed")
	fs.DurationVar(&c.Listen.IdleConnectionTimeout, "idle-connection-timeout", c.Listen.IdleConnectionTimeout, "how long a gRPC connection with no request in flight, or an idle /metrics connection, stays open")
	fs.IntVar(&c.Native.MaxConnections, "max-native-connections", c.Native.MaxConnections, "open connections the CQL native protocol listener (--cql-addr) accepts; more are answered Overloaded and closed")
	fs.IntVar(&c.Native.MaxInFlight, "max-native-requests-per-connection", c.Native.MaxInFlight, "requests in flight on one native protocol connection, 1 to 32768; at the bound the connection is not read")
	fs.Int64Var(&c.Native.MaxConnectionBytes, "max-native-connection-bytes", c.Native.MaxConnectionBytes, "bytes of requests and answers one native protocol connection holds in memory; at the bound it is not read")
	fs.Int64Var(&c.Native.MaxServerBytes, "max-native-bytes", c.Native.MaxServerBytes, "bytes of requests and answers every native protocol connection together holds in memory")
	fs.IntVar(&c.Native.MaxPreLoginFrameSize, "max-native-prelogin-frame-size", c.Native.MaxPreLoginFrameSize, "the largest native protocol frame in bytes before a connection is started (READY or a login); a larger one closes the connection")
	fs.IntVar(&c.Native.MaxPreLoginConnectionsPerHost, "max-native-prelogin-connections-per-host", c.Native.MaxPreLoginConnectionsPerHost, "native protocol connections one host may hold before they are started (READY or a login); more are answered Overloaded and closed")
	fs.IntVar(&c.Logins.Threshold, "login-failure-threshold", c.Logins.Threshold, "recent failed logins from one address (or of one role from it) after which each further attempt waits before its password is checked")
	fs.DurationVar(&c.Logins.Delay, "login-failure-delay", c.Logins.Delay, "how long such an attempt waits; it doubles with every further --login-failure-threshold failures")
	fs.DurationVar(&c.Logins.MaxDelay, "login-failure-max-delay", c.Logins.MaxDelay, "the longest such a wait grows")
	fs.DurationVar(&c.Logins.HalfLife, "login-failure-half-life", c.Logins.HalfLife, "how fast failed logins are forgotten: an address's count halves every this long")
	fs.IntVar(&c.Logins.MaxWaitingPerHost, "login-max-waiting-per-host", c.Logins.MaxWaitingPerHost, "login attempts from one address waiting at once; more are refused at once")
	fs.IntVar(&c.Logins.MaxWaiting, "login-max-waiting", c.Logins.MaxWaiting, "login attempts from every address waiting at once; more are refused at once")
	fs.IntVar(&c.Logins.MaxEntries, "login-guard-max-entries", c.Logins.MaxEntries, "addresses (and, apart, address and role pairs) whose failed logins are remembered")
	fs.DurationVar(&c.Logins.LogInterval, "login-log-interval", c.Logins.LogInterval, "the least time between two WARN lines about one address's failed logins")
	fs.IntVar(&c.Logins.LogLinesPerSecond, "login-log-lines-per-second", c.Logins.LogLinesPerSecond, "the most WARN lines about failed logins per second, over every address")
	fs.StringVar(&c.Repair.AutoRepair, "auto-repair", c.Repair.AutoRepair, "on: this node repairs its tables by itself, one range at a time, so tombstones and expired data can be purged; off: only kvnode repair does")
	fs.DurationVar(&c.Repair.AutoRepairInterval, "auto-repair-interval", c.Repair.AutoRepairInterval, "the longest time between two complete repairs of a table on this node (half the table's gc_grace_seconds when shorter)")
	fs.DurationVar(&c.Repair.AutoRepairPause, "auto-repair-pause", c.Repair.AutoRepairPause, "how long the automatic repair waits after each token range")
	fs.DurationVar(&c.Repair.AutoRepairRetry, "auto-repair-retry", c.Repair.AutoRepairRetry, "how long after a round with a failed range (a replica down) the automatic repair tries the table again")
	fs.StringVar(&c.Authenticator, "authenticator", c.Authenticator, "how clients log in: none (anonymous, every statement allowed) or password (roles and grants in system_auth)")
	fs.StringVar(&c.SuperuserPasswordFile, "superuser-password-file", c.SuperuserPasswordFile, "with --authenticator password: file holding the initial password of the superuser role admin")
	fs.TextVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.DurationVar(&c.TestingClockOffset, "testing-clock-offset", c.TestingClockOffset, "for tests: shift this node's clock by this much (e.g. -500ms)")
	fs.DurationVar(&c.TestingGossipDelay, "testing-gossip-delay", c.TestingGossipDelay, "for tests: delay every gossip packet and stream this node sends by this much (e.g. 200ms)")
	fs.StringVar(&c.TestingGossipDelayTo, "testing-gossip-delay-to", c.TestingGossipDelayTo, "for tests: with --testing-gossip-delay, delay only the gossip sent to these hosts (comma-separated IP addresses)")
}

// serveUsageText heads serve's usage, before its flags.
const serveUsageText = `Usage: kvnode serve [flags]
       kvnode [flags]

Runs one node until SIGINT or SIGTERM, then shuts it down cleanly. The defaults are those of the
first node on this machine: data in ./kvnode-data, every listener on 127.0.0.1. A node joins the
nodes named by --seeds. The file of --config holds the same settings (docs/operations.md).

Flags:
`

// serveUsage prints serve's usage and its flags except the hidden ones to w.
func serveUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, serveUsageText)
	visible := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	visible.SetOutput(w)
	fs.VisitAll(func(f *flag.Flag) {
		if !hiddenServeFlags[f.Name] {
			visible.Var(f.Value, f.Name, f.Usage)
			visible.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	visible.PrintDefaults()
}

// parseServeFlags builds the serve configuration from args (the arguments after "serve"). With
// -h it prints the usage to help and returns flag.ErrHelp; a mistake in args is a
// *cliflags.UsageError.
func parseServeFlags(args []string, help io.Writer) (serveConfig, error) {
	// The flags are parsed twice: first to learn --config (and to report usage errors, showing
	// the defaults), then over the file's values so that only the flags given override it.
	cfg := defaultServeConfig()
	first := cfg
	fs := flag.NewFlagSet("kvnode serve", flag.ContinueOnError)
	configPath := fs.String("config", "", "YAML config file with the keys of docs/operations.md (data_dir, addr, ...); flags override it")
	registerServeFlags(fs, &first)
	if err := parseFlags(fs, args, "serve", help, func(w io.Writer) { serveUsage(fs, w) }); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, cliflags.Usagef("serve: unexpected argument %q: every setting is a flag (kvnode serve --help lists them)", fs.Arg(0))
	}
	if *configPath != "" {
		if err := loadConfigFile(*configPath, &cfg); err != nil {
			return cfg, err
		}
	}
	over := flag.NewFlagSet("kvnode serve", flag.ContinueOnError)
	over.SetOutput(io.Discard)
	over.String("config", "", "")
	registerServeFlags(over, &cfg)
	if err := over.Parse(args); err != nil {
		return cfg, err // not reached: the same arguments parsed above
	}
	if off := cfg.TestingClockOffset; off > maxTestingClockOffset || off < -maxTestingClockOffset {
		return cfg, fmt.Errorf("serve: --testing-clock-offset %v is outside ±%v", off, maxTestingClockOffset)
	}
	if d := cfg.TestingGossipDelay; d < 0 || d > maxTestingGossipDelay {
		return cfg, fmt.Errorf("serve: --testing-gossip-delay %v is outside 0 to %v", d, maxTestingGossipDelay)
	}
	if to := cfg.TestingGossipDelayTo; to != "" {
		if cfg.TestingGossipDelay == 0 {
			return cfg, fmt.Errorf("serve: --testing-gossip-delay-to %q needs --testing-gossip-delay", to)
		}
		for _, h := range strings.Split(to, ",") {
			if _, err := netip.ParseAddr(h); err != nil {
				return cfg, fmt.Errorf("serve: --testing-gossip-delay-to %q: %q is not an IP address", to, h)
			}
		}
	}
	// Zero means the default, as in node.Config.
	cfg.Config.EnsureDefaults()
	cfg.Logger = nil
	nc := cfg.nodeConfig()
	if err := nc.Validate(); err != nil {
		return cfg, fmt.Errorf("serve: %w", err)
	}
	return cfg, nil
}

// loadConfigFile overlays the YAML file at path on cfg. Unknown keys are an error, so a typo does
// not silently leave a default in place.
func loadConfigFile(path string, cfg *serveConfig) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return fmt.Errorf("config %s: %s", path, strings.Join(nameKeys(data, te.Errors), "; "))
		}
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// nameKeys adds the key to yaml's "line N: cannot unmarshal ..." messages, which name only the
// line, and says what a duration looks like.
func nameKeys(data []byte, msgs []string) []string {
	keys := map[int]string{} // line → key
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode {
		m := doc.Content[0].Content
		for i := 0; i+1 < len(m); i += 2 {
			keys[m[i].Line] = m[i].Value
			if m[i+1].Kind == yaml.SequenceNode {
				for j, item := range m[i+1].Content {
					keys[item.Line] = fmt.Sprintf("%s[%d]", m[i].Value, j)
				}
			}
		}
	}
	out := make([]string, len(msgs))
	for i, msg := range msgs {
		out[i] = msg
		var line int
		var key string
		if _, err := fmt.Sscanf(msg, "line %d: field %s not found", &line, &key); err == nil {
			out[i] = fmt.Sprintf("line %d: unknown key %s (docs/operations.md lists the keys)", line, key)
		} else if _, err := fmt.Sscanf(msg, "line %d:", &line); err == nil && keys[line] != "" {
			out[i] = fmt.Sprintf("line %d: %s:%s", line, keys[line], strings.TrimPrefix(msg, fmt.Sprintf("line %d:", line)))
		}
		if strings.HasSuffix(msg, "into time.Duration") {
			out[i] += " (want a duration such as 500ms, 2s or 72h)"
		}
	}
	return out
}

// listFlag is a comma-separated list flag; empty items and surrounding spaces are dropped.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	*l = out
	return nil
}

// uint32Flag is a flag holding a uint32.
type uint32Flag uint32

func (u *uint32Flag) String() string { return strconv.FormatUint(uint64(*u), 10) }

func (u *uint32Flag) Set(s string) error {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return fmt.Errorf("want an integer 0 to %d", uint32(1<<32-1))
	}
	*u = uint32Flag(v)
	return nil
}

// parseFlags parses args with fs for `kvnode cmd`. With -h or --help it prints the command's
// usage (printUsage) to help and returns flag.ErrHelp. A mistake (an unknown flag, a bad value)
// is a *cliflags.UsageError naming cmd; nothing is printed for it, the caller reports it.
func parseFlags(fs *flag.FlagSet, args []string, cmd string, help io.Writer, printUsage func(io.Writer)) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		printUsage(help)
		return flag.ErrHelp
	default:
		return cliflags.Usagef("%s: %w (kvnode %s --help lists the flags)", cmd, err, cmd)
	}
}
