package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
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
	if cfg.TombstoneFailureThreshold != 100_000 {
		t.Errorf("the default tombstone failure threshold is %d, want Cassandra's 100,000", cfg.TombstoneFailureThreshold)
	}
	if cfg.Addr != "127.0.0.1:9043" || cfg.GossipAddr != "127.0.0.1:7946" || cfg.MetricsAddr != "127.0.0.1:9180" || cfg.DataDir != "./kvnode-data" {
		t.Errorf("defaults drifted from the documented ones: %+v", cfg)
	}
}

func TestServeConfigFileThenFlags(t *testing.T) {
	path := writeFile(t, "kvnode.yaml", `
data_dir: /var/lib/kvnode
addr: 10.0.0.1:9043
seeds: [10.0.0.2:7946, 10.0.0.3:7946]
num_tokens: 32
limiter_capacity: 65536
sync: false
log_level: debug
tombstone_failure_threshold: 5000
max_timestamp_ahead: 72h
max_mutation_size: 1048576
`)
	cfg, err := parseServeFlags([]string{"--config", path, "--addr", "127.0.0.1:1", "--seeds", "a:1, b:2,", "--tombstone-failure-threshold", "7", "--max-mutation-size", "2097152"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := defaultServeConfig()
	want.DataDir = "/var/lib/kvnode" // from the file
	want.Addr = "127.0.0.1:1"        // flag wins over the file
	want.Seeds = []string{"a:1", "b:2"}
	want.NumTokens = 32
	want.LimiterCapacity = 65536
	want.Sync = false
	want.LogLevel = "debug"
	want.TombstoneFailureThreshold = 7 // flag wins over the file
	want.MaxTimestampAhead = 72 * time.Hour
	want.MaxMutationSize = 2 << 20 // flag wins over the file
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config = %+v\nwant     %+v", cfg, want)
	}
}

func TestServeConfigErrors(t *testing.T) {
	typo := writeFile(t, "typo.yaml", "data_dri: /tmp/x\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", typo}, "data_dri"},
		{[]string{"--config", filepath.Join(t.TempDir(), "missing.yaml")}, "missing.yaml"},
		{[]string{"--num-tokens", "0"}, "--num-tokens 0"},
		{[]string{"--limiter-capacity", "-1"}, "--limiter-capacity -1"},
		{[]string{"--log-level", "loud"}, `"loud"`},
		{[]string{"--tombstone-failure-threshold", "0"}, "--tombstone-failure-threshold 0"},
		{[]string{"--tombstone-failure-threshold", "4294967296"}, "--tombstone-failure-threshold 4294967296"},
		{[]string{"--max-timestamp-ahead", "0s"}, "--max-timestamp-ahead 0s must be positive"},
		{[]string{"--max-timestamp-ahead", "-1h"}, "--max-timestamp-ahead -1h0m0s must be positive"},
		{[]string{"--max-timestamp-ahead", "soon"}, "soon"},
		{[]string{"--max-mutation-size", "0"}, "--max-mutation-size 0 is out of range"},
		{[]string{"--max-mutation-size", "536870913"}, "--max-mutation-size 536870913 is out of range"},
		{[]string{"--data-dir", ""}, "--data-dir"},
		{[]string{"extra"}, `"extra"`},
	} {
		_, err := parseServeFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseServeFlags(%q) error = %v, want one mentioning %s", tc.args, err, tc.want)
		}
	}
}
