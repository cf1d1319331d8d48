package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// These tests run Execute and Run against fake KVNode servers over real gRPC on loopback.

func fakeConfig(addrs ...string) Config {
	cfg := DefaultConfig()
	cfg.Protocol, cfg.Coordinator = ProtocolGRPC, RoundRobin
	cfg.Addrs = addrs
	cfg.Table = "ks.kv"
	cfg.Concurrency = 4
	cfg.Duration = 300 * time.Millisecond
	cfg.Seed = 5
	return cfg
}

func execute(t *testing.T, cfg Config) *Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Execute(ctx, cfg, nil)
	if err != nil {
		t.Fatalf("Execute(%+v) failed: %v", cfg, err)
	}
	return s
}

func TestExecuteCountsEveryOutcome(t *testing.T) {
	for _, table := range []string{"kv", "every_bigint", "every_text"} {
		fake, addr := startFake(t, testDDL)
		cfg := fakeConfig(addr)
		cfg.Table = "ks." + table
		cfg.Hot, cfg.Writes = 0.4, 0.5
		cfg.Rate, cfg.Duration = 1000, 500*time.Millisecond // exactly 500 operations
		s := execute(t, cfg)
		checkTotals(t, s)
		stmts, hot, cold, coord, repl := fake.counts()
		if s.Offered != 500 || int64(stmts) != s.Offered {
			t.Errorf("%s: offered %d and the server saw %d statements; want 500 each", table, s.Offered, stmts)
		}
		if len(s.Errors) != 0 {
			t.Errorf("%s: errors %v, want none (every generated statement valid, nothing dropped)", table, s.Errors)
		}
		if s.RejectedByCoordinator != int64(coord) || s.RejectedByReplicas != int64(repl) {
			t.Errorf("%s: rejected by coordinator %d, by replicas %d; the server rejected %d and %d",
				table, s.RejectedByCoordinator, s.RejectedByReplicas, coord, repl)
		}
		if coord == 0 || repl == 0 {
			t.Errorf("%s: the server rejected %d hot writes and %d hot reads; want some of each", table, coord, repl)
		}
		if s.Hot.Accepted+s.Hot.Rejected != int64(hot) || s.Cold.Accepted+s.Cold.Rejected != int64(cold) || s.Cold.Rejected != 0 {
			t.Errorf("%s: hot %d+%d, cold %d+%d; the server saw %d hot and %d cold (none rejected)",
				table, s.Hot.Accepted, s.Hot.Rejected, s.Cold.Accepted, s.Cold.Rejected, hot, cold)
		}
		// 0.1 is more than 4 standard deviations of a 0.4 share over 500 operations.
		if share := float64(hot) / float64(s.Offered); math.Abs(share-cfg.Hot) > 0.1 {
			t.Errorf("%s: --hot %v sent %.3f of operations to the hot partition", table, cfg.Hot, share)
		}
		if s.LatencyMS.P50 <= 0 || s.LatencyMS.P50 > s.LatencyMS.P90 || s.LatencyMS.P90 > s.LatencyMS.P99 || s.LatencyMS.P99 > s.LatencyMS.P999 {
			t.Errorf("%s: latency percentiles %+v are not positive and ordered", table, s.LatencyMS)
		}
	}
}

func TestCoordinatorPolicyAcrossTwoNodes(t *testing.T) {
	for _, tc := range []struct {
		coord Coordinator
		check func(a, b, total int) bool
	}{
		{RoundRobin, func(a, b, total int) bool { return a+b == total && a-b <= 1 && b-a <= 1 }},
		{Fixed, func(a, b, total int) bool { return a == total && b == 0 }},
	} {
		fa, addrA := startFake(t, testDDL)
		fb, addrB := startFake(t, testDDL)
		cfg := fakeConfig(addrA, addrB)
		cfg.Coordinator = tc.coord
		s := execute(t, cfg)
		checkTotals(t, s)
		a, _, _, _, _ := fa.counts()
		b, _, _, _, _ := fb.counts()
		if s.Offered == 0 || !tc.check(a, b, int(s.Offered)) {
			t.Errorf("--coordinator %s: the nodes saw %d and %d of %d operations", tc.coord, a, b, s.Offered)
		}
	}
}

// TestOpenLoopRateOverTheNetwork is the one test that depends on real time: it checks that the
// schedule is paced, not that the machine keeps up, so its bounds are wide.
func TestOpenLoopRateOverTheNetwork(t *testing.T) {
	_, addr := startFake(t, testDDL)
	cfg := fakeConfig(addr)
	cfg.Rate, cfg.Duration = 200, time.Second
	start := time.Now()
	s := execute(t, cfg)
	elapsed := time.Since(start)
	checkTotals(t, s)
	if s.Offered < 140 || s.Offered > 260 {
		t.Errorf("--rate 200 for 1s offered %d operations, want about 200", s.Offered)
	}
	if done := s.Accepted + s.Rejected(); done < 140 {
		t.Errorf("--rate 200 for 1s completed %d operations, want about 200 (errors %v)", done, s.Errors)
	}
	if elapsed < 900*time.Millisecond {
		t.Errorf("a 1s open-loop run returned after %v: the operations were not paced", elapsed)
	}
}

func TestExecuteRejectsUnusableTables(t *testing.T) {
	_, addr := startFake(t, testDDL)
	for _, tc := range []struct{ table, want string }{
		{"ks.int_key", "exactly one text or bigint"},
		{"ks.double_key", "exactly one text or bigint"},
		{"ks.composite_key", "exactly one text or bigint"},
		{"ks.missing", "describe table ks.missing"},
	} {
		cfg := fakeConfig(addr)
		cfg.Table = tc.table
		_, err := Execute(context.Background(), cfg, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Execute with --table %s = %v, want an error containing %q", tc.table, err, tc.want)
		}
	}
}

func TestExecuteNamesAnUnreachableAddress(t *testing.T) {
	_, addr := startFake(t, testDDL)
	cfg := fakeConfig(addr, "127.0.0.1:1")
	_, err := Execute(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("Execute with an address nobody listens on = %v, want an error naming it", err)
	}
}

func TestRunJSONPrintsExactlyTheDocumentedObject(t *testing.T) {
	_, addr := startFake(t, testDDL)
	var stdout, stderr bytes.Buffer
	args := []string{"--protocol", "grpc", "--addrs", addr, "--table", "ks.kv", "--duration", "200ms", "--concurrency", "2", "--hot", "0.5", "--json"}
	if err := Run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("Run(%q) failed: %v", args, err)
	}
	var obj map[string]any
	dec := json.NewDecoder(&stdout)
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout.String())
	}
	if dec.More() {
		t.Errorf("stdout holds more than one JSON value")
	}
	wantKeys := map[string][]string{
		"":           {"accepted", "cold", "coordinator", "duration_s", "errors", "hot", "latency_ms", "offered", "protocol", "rejected_by_coordinator", "rejected_by_replicas"},
		"latency_ms": {"p50", "p90", "p99", "p999"},
		"hot":        {"accepted", "accepted_per_second", "rejected"},
		"cold":       {"accepted", "rejected"},
	}
	for field, want := range wantKeys {
		m := obj
		if field != "" {
			m, _ = obj[field].(map[string]any)
		}
		if got := keys(m); !slices.Equal(got, want) {
			t.Errorf("JSON object %q has keys %v, want exactly %v", field, got, want)
		}
	}
	if obj["protocol"] != "grpc" || obj["coordinator"] != "roundrobin" {
		t.Errorf("protocol %#v, coordinator %#v; want \"grpc\" and \"roundrobin\" (the --protocol grpc defaults)", obj["protocol"], obj["coordinator"])
	}
	if _, ok := obj["errors"].(map[string]any); !ok {
		t.Errorf("errors is %#v, want an object (empty when there were none)", obj["errors"])
	}
	if ps, ok := obj["hot"].(map[string]any)["accepted_per_second"].([]any); !ok || len(ps) != 1 {
		t.Errorf("hot.accepted_per_second is %#v, want a list with one entry for a 200ms run", obj["hot"].(map[string]any)["accepted_per_second"])
	}
	if !strings.Contains(stderr.String(), "done") {
		t.Errorf("with --json, progress should go to stderr; stderr is %q", stderr.String())
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestRunPrintsATableWithoutJSON(t *testing.T) {
	_, addr := startFake(t, testDDL)
	var stdout, stderr bytes.Buffer
	args := []string{"--protocol", "grpc", "--addrs", addr, "--table", "ks.kv", "--duration", "200ms", "--concurrency", "2", "--hot", "1"}
	if err := Run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("Run(%q) failed: %v", args, err)
	}
	for _, want := range []string{"bench:", "done", "offered", "rejected by coordinator", "rejected by replicas", "latency (accepted)", "p99.9", "hot partition", "hot accepted per second:"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr = %q, want nothing", stderr.String())
	}
}

func TestRunReportsBadFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), []string{"--table", "ks.t", "--writes", "1.5"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--writes 1.5") {
		t.Errorf("Run with --writes 1.5 = %v, want an error naming the flag and value", err)
	}
	if err := Run(context.Background(), []string{"--help"}, &stdout, &stderr); err != nil || !strings.Contains(stderr.String(), "-table") {
		t.Errorf("Run --help = %v with stderr %q; want nil and the flags listed", err, stderr.String())
	}
}

// TestNativeToAGRPCPortSaysSo checks that pointing the native protocol (the default) at a gRPC
// port, as the old default --addrs did, fails with a hint naming --protocol grpc.
func TestNativeToAGRPCPortSaysSo(t *testing.T) {
	_, addr := startFake(t, testDDL)
	cfg := fakeConfig(addr)
	cfg.Protocol, cfg.Coordinator = ProtocolCQL, Fixed
	_, err := Execute(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "--protocol grpc") {
		t.Errorf("Execute over the native protocol against a gRPC port = %v, want an error naming %s and --protocol grpc", err, addr)
	}
}
