package replica

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// TestServiceMetricsCountRejectionsOnBothPaths drives one partition over its limit of 1 write/s
// through the coordinator path (Check) and the replica path (Mutate, ACCOUNT_AND_ENFORCE) and
// checks that the limiter's counters move with the right labels.
func TestServiceMetricsCountRejectionsOnBothPaths(t *testing.T) {
	svc, clock := testService(t, 0, 1)
	ctx := context.Background()
	m := svc.metrics
	accounted := m.accountedVec.WithLabelValues("ks", "t", "write")
	byCoord := m.rejectedVec.WithLabelValues("ks", "t", "write", "coordinator")
	byRepl := m.rejectedVec.WithLabelValues("ks", "t", "write", "replica")
	okWrites := m.requests[reqWrite][statusOK]
	limitedWrites := m.requests[reqWrite][statusRateLimited]

	// Counts 1 and 2 are within 2·limit; count 3 onwards is rejected with a draw of 0.99.
	for i := range 4 {
		d, err := svc.Check(testTableID, tokenOf("p"), replicapb.Op_OP_WRITE, 0.99, clock.t)
		if err != nil {
			t.Fatal(err)
		}
		if want := i < 2; d.Admitted != want {
			t.Fatalf("Check %d admitted = %v, want %v", i, d.Admitted, want)
		}
	}
	if got := testutil.ToFloat64(byCoord); got != 2 {
		t.Errorf(`rejections_total{rejected_by="coordinator"} = %v after 2 rejected checks, want 2`, got)
	}
	if got := testutil.ToFloat64(byRepl); got != 0 {
		t.Errorf(`rejections_total{rejected_by="replica"} = %v before any enforced mutate, want 0`, got)
	}
	for i := range 3 {
		resp, _ := svc.Mutate(ctx, mutateReq(limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99), int32(i)))
		if resp.Status != replicapb.Status_STATUS_RATE_LIMITED {
			t.Fatalf("enforced Mutate %d returned %v, want STATUS_RATE_LIMITED", i, resp)
		}
	}
	if got := testutil.ToFloat64(byRepl); got != 3 {
		t.Errorf(`rejections_total{rejected_by="replica"} = %v after 3 rejected mutates, want 3`, got)
	}
	if got := testutil.ToFloat64(byCoord); got != 2 {
		t.Errorf(`rejections_total{rejected_by="coordinator"} = %v, want still 2`, got)
	}
	if got := testutil.ToFloat64(accounted); got != 7 {
		t.Errorf("operations_total = %v after 4 checks and 3 enforced mutates, want 7", got)
	}
	if got := testutil.ToFloat64(limitedWrites); got != 3 {
		t.Errorf(`replica requests_total{op="write",status="rate_limited"} = %v, want 3`, got)
	}
	// Exempt writes reach storage, are timed, and count neither as accounted nor rejected.
	if resp, _ := svc.Mutate(ctx, mutateReq(nil, 9)); resp.Status != replicapb.Status_STATUS_OK {
		t.Fatalf("exempt Mutate returned %v", resp)
	}
	if got := testutil.ToFloat64(okWrites); got != 1 {
		t.Errorf(`replica requests_total{op="write",status="ok"} = %v after one exempt write, want 1`, got)
	}
	if got := testutil.ToFloat64(accounted); got != 7 {
		t.Errorf("operations_total = %v after an exempt write, want still 7", got)
	}
	// An account delta adds its count.
	resp, _ := svc.AccountDelta(ctx, &replicapb.AccountDeltaRequest{Deltas: []*replicapb.AccountDelta{
		{TableId: testTableID, Token: tokenOf("q"), Op: replicapb.Op_OP_WRITE, Count: 5},
	}})
	if resp.Status != replicapb.Status_STATUS_OK {
		t.Fatal(resp)
	}
	if got := testutil.ToFloat64(accounted); got != 12 {
		t.Errorf("operations_total = %v after a delta of 5, want 12", got)
	}
}

// TestServiceCollector gathers the service's and the store's collectors from a registry, as the
// node does, and checks the scrape-time gauges.
func TestServiceCollector(t *testing.T) {
	svc, clock := testService(t, 0, 100)
	for _, tok := range []string{"a", "b", "c"} {
		if _, err := svc.Check(testTableID, tokenOf(tok), replicapb.Op_OP_WRITE, 0.5, clock.t); err != nil {
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
