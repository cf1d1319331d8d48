package shell_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/replica"
)

// limiterCounter returns the value of a replica service's counter metric name for table ks.t
// and op write (0 when absent).
func limiterCounter(t *testing.T, svc *replica.Service, name string, labels map[string]string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(svc.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && lp.GetValue() != want {
					continue metrics
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// TestShadowModeRejectsNothing: a table whose limit is in shadow mode, with a hot partition
// offered 10× its limit through a coordinator outside the replicas (real gRPC replicas), rejects
// nothing; the coordinator counts each operation enforce mode would have rejected once (about
// 90% of them once the counter has filled; kvnode_limiter_would_reject_total), though every
// enforcing replica decided against it, and each such operation's result carries a warning
// naming the table, the op and the limit. ALTER to
// enforce mode rejects at once, and back to shadow mode admits at once again, though the
// coordinator learned in between that the partition is hot.
func TestShadowModeRejectsNothing(t *testing.T) {
	clk := &clock{}
	clk.ns.Store(time.Unix(1_700_000_000, 0).UnixNano())
	rng := rand.New(rand.NewPCG(1, 2))
	e, services, g, _ := grpcCluster(t, clk, "c", rng.Float64)
	wouldRejects := func() int {
		g.observed.mu.Lock()
		defer g.observed.mu.Unlock()
		for _, w := range g.observed.wouldReject {
			if w != "ks.t write" {
				t.Fatalf("the coordinator reported a would-be rejection of %q, want only ks.t write", w)
			}
		}
		return len(g.observed.wouldReject)
	}
	exec := func(stmt string) (coordinator.Result, error) {
		return e.Execute(context.Background(), coordinator.Statement{Text: stmt, Keyspace: "ks", Consistency: coordinator.Quorum})
	}
	for _, s := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 10, 'mode': 'shadow'}",
	} {
		if _, err := exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	const (
		limit   = 10
		rate    = 10 * limit // ops per second
		seconds = 6
	)
	writes := map[string]string{"keyspace": "ks", "table": "t", "op": "write"}
	var ops, warned, laterOps, laterWarned int
	var before int
	for i := range rate * seconds {
		if i == rate { // from the second second on, the counter has filled
			before = wouldRejects()
		}
		clk.Advance(time.Second / rate)
		res, err := exec("INSERT INTO t (k, v) VALUES ('hot', 1)")
		if err != nil {
			t.Fatalf("write %d in shadow mode: %v, want success", i+1, err)
		}
		ops++
		if i >= rate {
			laterOps++
		}
		if len(res.Warnings) > 0 {
			const want = "per_partition_rate_limit in shadow mode: this write on ks.t would have been rejected (limit 10 writes per second per partition); it was not, since the limit is not enforced"
			if len(res.Warnings) != 1 || res.Warnings[0] != want {
				t.Fatalf("write %d warns %q, want [%q]", i+1, res.Warnings, want)
			}
			warned++
			if i >= rate {
				laterWarned++
			}
		}
	}
	e.WaitIdle()
	if share := float64(laterWarned) / float64(laterOps); share < 0.85 || share > 0.95 {
		t.Errorf("after the first second, %d of %d writes (%.2f) were warned as would-be rejections, want about 90%% at 10× the limit", laterWarned, laterOps, share)
	}
	for id, svc := range services {
		if r := limiterCounter(t, svc, "kvnode_limiter_rejections_total", writes); r != 0 {
			t.Errorf("replica %s rejected %v writes in shadow mode, want none", id, r)
		}
		// Each replica decided against about 90% of the writes; the count is the
		// coordinator's, once per operation, so a sum over nodes is not three times too high.
		if w := limiterCounter(t, svc, "kvnode_limiter_would_reject_total", writes); w != 0 {
			t.Errorf("replica %s exports %v would-be rejections, want them counted once per operation by the coordinator alone", id, w)
		}
	}
	if w := wouldRejects(); w != warned {
		t.Errorf("the coordinator counted %d would-be rejections and warned %d writes, want one count per warned write", w, warned)
	}
	grew := wouldRejects() - before
	if share := float64(grew) / float64(laterOps); share < 0.85 || share > 0.95 {
		t.Errorf("from the second second on, the coordinator's would-be rejections grew by %d for %d writes (%.2f), want about 90%%", grew, laterOps, share)
	}

	// ALTER to enforce mode: the next writes are rejected at once (the replicas read the
	// schema per request), and the coordinator learns the partition is hot.
	if _, err := exec("ALTER TABLE t WITH per_partition_rate_limit = {'max_writes_per_second': 10}"); err != nil {
		t.Fatal(err)
	}
	rejected := 0
	for range 20 {
		clk.Advance(time.Second / rate)
		_, err := exec("INSERT INTO t (k, v) VALUES ('hot', 1)")
		var rl *coordinator.RateLimitError
		switch {
		case errors.As(err, &rl):
			rejected++
		case err != nil:
			t.Fatal(err)
		}
	}
	if rejected < 10 {
		t.Errorf("after ALTER to enforce mode %d of 20 writes were rejected, want most of them", rejected)
	}
	// And back to shadow mode: nothing is rejected, not even by the coordinator's learned copy.
	if _, err := exec("ALTER TABLE t WITH per_partition_rate_limit = {'max_writes_per_second': 10, 'mode': 'shadow'}"); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		clk.Advance(time.Second / rate)
		if _, err := exec("INSERT INTO t (k, v) VALUES ('hot', 1)"); err != nil {
			t.Fatalf("write %d after ALTER back to shadow mode: %v, want success", i+1, err)
		}
	}
	if d, err := exec("DESCRIBE TABLE t"); err != nil || !strings.Contains(d.Description, "{'max_writes_per_second': 10, 'mode': 'shadow'}") {
		t.Errorf("DESCRIBE TABLE t = %q, %v; want the limit in shadow mode", d.Description, err)
	}
}
