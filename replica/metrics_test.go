package replica

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// TestServiceMetricsCountRejectionsOnBothPaths drives one partition over its limit of 1 write/s
// through the coordinator path (Check) and the replica path (Mutate, ACCOUNT_AND_ENFORCE) and
// checks with testutil that the limiter's and the requests' counters move with the right labels.
func TestServiceMetricsCountRejectionsOnBothPaths(t *testing.T) {
	svc, clock := testService(t, 0, 1)
	ctx := context.Background()
	collector := svc.Collector()
	expect := func(step string, operations, byCoordinator, byReplica, okWrites, limitedWrites int) {
		t.Helper()
		want := fmt.Sprintf(`# HELP kvnode_limiter_operations_total %s
# TYPE kvnode_limiter_operations_total counter
kvnode_limiter_operations_total{keyspace="ks",op="write",table="t"} %d
# HELP kvnode_limiter_rejections_total %s
# TYPE kvnode_limiter_rejections_total counter
kvnode_limiter_rejections_total{keyspace="ks",op="write",rejected_by="coordinator",table="t"} %d
kvnode_limiter_rejections_total{keyspace="ks",op="write",rejected_by="replica",table="t"} %d
# HELP kvnode_replica_requests_total %s
# TYPE kvnode_replica_requests_total counter
kvnode_replica_requests_total{op="account_delta",status="error"} 0
kvnode_replica_requests_total{op="account_delta",status="ok"} 0
kvnode_replica_requests_total{op="account_delta",status="rate_limited"} 0
kvnode_replica_requests_total{op="read",status="error"} 0
kvnode_replica_requests_total{op="read",status="ok"} 0
kvnode_replica_requests_total{op="read",status="rate_limited"} 0
kvnode_replica_requests_total{op="write",status="error"} 0
kvnode_replica_requests_total{op="write",status="ok"} %d
kvnode_replica_requests_total{op="write",status="rate_limited"} %d
`, helpOperations, operations, helpRejections, byCoordinator, byReplica, helpRequests, okWrites, limitedWrites)
		if err := testutil.CollectAndCompare(collector, strings.NewReader(want),
			"kvnode_limiter_operations_total", "kvnode_limiter_rejections_total", "kvnode_replica_requests_total"); err != nil {
			t.Errorf("after %s: %v", step, err)
		}
	}

	// Counts 1 and 2 are within 2·limit; count 3 onwards is rejected with a draw of 0.99.
	for i := range 4 {
		d, err := svc.Check(testTableID, tokenOf("p"), schema.OpWrite, 0.99, clock.t)
		if err != nil {
			t.Fatal(err)
		}
		if want := i < 2; d.Admitted != want {
			t.Fatalf("Check %d admitted = %v, want %v", i, d.Admitted, want)
		}
	}
	expect("4 checks by a local coordinator, 2 rejected", 4, 2, 0, 0, 0)

	for i := range 3 {
		resp, _ := svc.Mutate(ctx, mutateReq(limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99), int32(i)))
		if resp.Status != replicapb.Status_STATUS_RATE_LIMITED {
			t.Fatalf("enforced Mutate %d returned %v, want STATUS_RATE_LIMITED", i, resp)
		}
	}
	expect("3 enforced mutates, all rejected", 7, 2, 3, 0, 3)

	// Exempt writes reach storage and count neither as accounted nor rejected.
	if resp, _ := svc.Mutate(ctx, mutateReq(nil, 9)); resp.Status != replicapb.Status_STATUS_OK {
		t.Fatalf("exempt Mutate returned %v", resp)
	}
	// An account-only write is counted, never rejected.
	if resp, _ := svc.Mutate(ctx, mutateReq(limiter(replicapb.Limiter_ACCOUNT_ONLY, 0), 10)); resp.Status != replicapb.Status_STATUS_OK {
		t.Fatalf("account-only Mutate returned %v", resp)
	}
	expect("an exempt and an account-only write", 8, 2, 3, 2, 3)
	if got := testutil.CollectAndCount(collector, "kvnode_replica_request_duration_seconds"); got != numRequestOps {
		t.Errorf("the collector exports %d latency histograms, want %d (one per op)", got, numRequestOps)
	}

	// An account delta adds its count.
	resp, _ := svc.AccountDelta(ctx, &replicapb.AccountDeltaRequest{Deltas: []*replicapb.AccountDelta{
		{TableId: testTableID, Token: tokenOf("q"), Op: replicapb.Op_OP_WRITE, Count: 5},
	}})
	if resp.Status != replicapb.Status_STATUS_OK {
		t.Fatal(resp)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector)
	if got := gatheredValue(t, reg, "kvnode_limiter_operations_total", "table", "t"); got != 13 {
		t.Errorf("kvnode_limiter_operations_total = %v after a delta of 5, want 13", got)
	}
	if got := gatheredValue(t, reg, "kvnode_replica_requests_total", "op", "account_delta", "status", "ok"); got != 1 {
		t.Errorf(`kvnode_replica_requests_total{op="account_delta",status="ok"} = %v, want 1`, got)
	}
}

// TestServiceCollector gathers the service's and the store's collectors from a registry, as the
// node does, and checks the scrape-time gauges.
func TestServiceCollector(t *testing.T) {
	svc, clock := testService(t, 0, 100)
	for _, tok := range []string{"a", "b", "c"} {
		if _, err := svc.Check(testTableID, tokenOf(tok), schema.OpWrite, 0.5, clock.t); err != nil {
			t.Fatal(err)
		}
	}
	if resp, _ := svc.Mutate(context.Background(), mutateReq(nil, 1)); resp.Status != replicapb.Status_STATUS_OK {
		t.Fatal(resp)
	}
	if err := svc.store.db.Flush(); err != nil {
		t.Fatal(err)
	}
	svc.store.stalls.begin(time.Unix(100, 0))
	svc.store.stalls.end(time.Unix(102, 0))

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(svc.Collector(), svc.store.Collector())
	tests := []struct {
		name string
		want func(float64) bool
		what string
	}{
		{"kvnode_limiter_tracked_partitions", func(v float64) bool { return v == 3 }, "3 (three partitions checked)"},
		{"kvnode_limiter_capacity_partitions", func(v float64) bool { return v == 1024 }, "1024"},
		{"kvnode_limiter_inserts_total", func(v float64) bool { return v == 3 }, "3"},
		{"kvnode_limiter_evictions_total", func(v float64) bool { return v == 0 }, "0"},
		{"kvnode_storage_flushes_total", func(v float64) bool { return v >= 1 }, "at least 1 after a flush"},
		{"kvnode_storage_write_stalls_total", func(v float64) bool { return v == 1 }, "1"},
		{"kvnode_storage_write_stall_seconds_total", func(v float64) bool { return v == 2 }, "2 (one stall of 2 s)"},
		{"kvnode_storage_disk_usage_bytes", func(v float64) bool { return v > 0 }, "above 0"},
	}
	for _, tt := range tests {
		got, err := testutil.GatherAndCount(reg, tt.name)
		if err != nil || got != 1 {
			t.Errorf("the registry gathers %d series of %s (err %v), want 1", got, tt.name, err)
			continue
		}
		v := gatheredValue(t, reg, tt.name)
		if !tt.want(v) {
			t.Errorf("%s = %v, want %s", tt.name, v, tt.what)
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("the metrics do not pass the Prometheus linter: %v %v", problems, err)
	}
	// After Close the store reports nothing instead of failing the scrape.
	if err := svc.store.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "kvnode_storage_flushes_total"); err != nil || n != 0 {
		t.Errorf("after Close the registry gathers %d storage series (err %v), want 0", n, err)
	}
}

// gatheredValue returns the value of the gauge or counter called name whose labels include
// the given name, value pairs.
func gatheredValue(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
					return l.GetName() == labels[i] && l.GetValue() == labels[i+1]
				}) {
					continue metrics
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s%v gathered", name, labels)
	return 0
}
