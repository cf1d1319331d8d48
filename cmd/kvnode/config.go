package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/replica"
)

// serveConfig is what `kvnode serve` runs with: embedded defaults, then the YAML file named by
// --config, then flags given on the command line (flags win).
type serveConfig struct {
	DataDir     string   `yaml:"data_dir"`
	Addr        string   `yaml:"addr"`
	GossipAddr  string   `yaml:"gossip_addr"`
	MetricsAddr string   `yaml:"metrics_addr"`
	Seeds       []string `yaml:"seeds"`
	NumTokens   int      `yaml:"num_tokens"`
	// LimiterCapacity is how many partitions the rate limiter tracks (0 = the default, ~1M).
	LimiterCapacity int    `yaml:"limiter_capacity"`
	Sync            bool   `yaml:"sync"`
	LogLevel        string `yaml:"log_level"`
	// TombstoneFailureThreshold is how many tombstones one read may scan before it fails
	// (Cassandra's tombstone_failure_threshold).
	TombstoneFailureThreshold uint `yaml:"tombstone_failure_threshold"`
	// MaxTimestampAhead bounds client timestamps (USING TIMESTAMP) ahead of the coordinator's
	// clock, e.g. "1h".
	MaxTimestampAhead time.Duration `yaml:"max_timestamp_ahead"`
	// MaxMutationSize bounds one write in bytes (Cassandra's max_mutation_size); the gRPC message
	// limits derive from it.
	MaxMutationSize int `yaml:"max_mutation_size"`
}

func defaultServeConfig() serveConfig {
	return serveConfig{
		DataDir:     "./kvnode-data",
		Addr:        "127.0.0.1:9043",
		GossipAddr:  "127.0.0.1:7946",
		MetricsAddr: "127.0.0.1:9180",
		NumTokens:   16,
		Sync:        true,
		LogLevel:    "info",

		TombstoneFailureThreshold: replica.DefaultTombstoneFailureThreshold,
		MaxTimestampAhead:         node.DefaultMaxTimestampAhead,
		MaxMutationSize:           coordinator.DefaultMaxMutationSize,
	}
}

// parseServeFlags builds the serve configuration from args (the arguments after "serve").
func parseServeFlags(args []string, stderr io.Writer) (serveConfig, error) {
	cfg := defaultServeConfig()
	fs := flag.NewFlagSet("kvnode serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML config file (keys: data_dir, addr, gossip_addr, metrics_addr, seeds, num_tokens, limiter_capacity, sync, log_level, max_timestamp_ahead, tombstone_failure_threshold, max_mutation_size); flags override it")
	var flags serveConfig
	var seeds string
	fs.StringVar(&flags.DataDir, "data-dir", cfg.DataDir, "directory for this node's data; one node per directory")
	fs.StringVar(&flags.Addr, "addr", cfg.Addr, "gRPC address for clients and peers (host:port)")
	fs.StringVar(&flags.GossipAddr, "gossip-addr", cfg.GossipAddr, "gossip (memberlist) address (host:port)")
	fs.StringVar(&flags.MetricsAddr, "metrics-addr", cfg.MetricsAddr, "Prometheus /metrics address (host:port); empty disables")
	fs.StringVar(&seeds, "seeds", "", "comma-separated gossip addresses of nodes to join")
	fs.IntVar(&flags.NumTokens, "num-tokens", cfg.NumTokens, "virtual nodes (tokens) this node owns on the ring")
	fs.IntVar(&flags.LimiterCapacity, "limiter-capacity", cfg.LimiterCapacity, "partitions the rate limiter tracks per node, 20 bytes each (0 = about 1M)")
	fs.BoolVar(&flags.Sync, "sync", cfg.Sync, "sync every write to disk before acknowledging it")
	fs.StringVar(&flags.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error")
	fs.UintVar(&flags.TombstoneFailureThreshold, "tombstone-failure-threshold", cfg.TombstoneFailureThreshold, "tombstones one read of a partition may scan before it fails (cell, row, range and partition tombstones)")
	fs.DurationVar(&flags.MaxTimestampAhead, "max-timestamp-ahead", cfg.MaxTimestampAhead, "refuse writes whose USING TIMESTAMP is further ahead of the coordinator's clock than this")
	fs.IntVar(&flags.MaxMutationSize, "max-mutation-size", cfg.MaxMutationSize, "the largest write in bytes (keys, column names and values); the gRPC message limit is twice this plus 4 MiB")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}
	if *configPath != "" {
		if err := loadConfigFile(*configPath, &cfg); err != nil {
			return cfg, err
		}
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "data-dir":
			cfg.DataDir = flags.DataDir
		case "addr":
			cfg.Addr = flags.Addr
		case "gossip-addr":
			cfg.GossipAddr = flags.GossipAddr
		case "metrics-addr":
			cfg.MetricsAddr = flags.MetricsAddr
		case "seeds":
			cfg.Seeds = splitList(seeds)
		case "num-tokens":
			cfg.NumTokens = flags.NumTokens
		case "limiter-capacity":
			cfg.LimiterCapacity = flags.LimiterCapacity
		case "sync":
			cfg.Sync = flags.Sync
		case "log-level":
			cfg.LogLevel = flags.LogLevel
		case "tombstone-failure-threshold":
			cfg.TombstoneFailureThreshold = flags.TombstoneFailureThreshold
		case "max-timestamp-ahead":
			cfg.MaxTimestampAhead = flags.MaxTimestampAhead
		case "max-mutation-size":
			cfg.MaxMutationSize = flags.MaxMutationSize
		}
	})
	return cfg, cfg.validate()
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
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

func (c serveConfig) validate() error {
	if c.DataDir == "" {
		return errors.New("serve: --data-dir must not be empty")
	}
	if c.Addr == "" {
		return errors.New("serve: --addr must not be empty")
	}
	if c.GossipAddr == "" {
		return errors.New("serve: --gossip-addr must not be empty")
	}
	if c.NumTokens < 1 || c.NumTokens > 256 {
		return fmt.Errorf("serve: --num-tokens %d is out of range (1 to 256)", c.NumTokens)
	}
	if c.LimiterCapacity < 0 || c.LimiterCapacity > partitionlimit.MaxCapacity {
		return fmt.Errorf("serve: --limiter-capacity %d is out of range (0 for the default, up to %d)", c.LimiterCapacity, partitionlimit.MaxCapacity)
	}
	if c.TombstoneFailureThreshold < 1 || c.TombstoneFailureThreshold > math.MaxUint32 {
		return fmt.Errorf("serve: --tombstone-failure-threshold %d is out of range (1 to %d)", c.TombstoneFailureThreshold, uint32(math.MaxUint32))
	}
	if c.MaxTimestampAhead <= 0 {
		return fmt.Errorf("serve: --max-timestamp-ahead %v must be positive (the default is %v)", c.MaxTimestampAhead, node.DefaultMaxTimestampAhead)
	}
	if c.MaxMutationSize < 1 || c.MaxMutationSize > node.MaxMutationSizeLimit {
		return fmt.Errorf("serve: --max-mutation-size %d is out of range (1 to %d bytes)", c.MaxMutationSize, node.MaxMutationSizeLimit)
	}
	if _, err := parseLogLevel(c.LogLevel); err != nil {
		return err
	}
	return nil
}

func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("serve: --log-level %q is not one of debug, info, warn, error", s)
	}
	return l, nil
}

// splitList splits a comma-separated list, dropping empty items and surrounding spaces.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
