package node

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCoordinatorMetricsDoNotAllocate checks that observing a request of a table already seen
// costs no allocation: the children are resolved in advance.
func TestCoordinatorMetricsDoNotAllocate(t *testing.T) {
	m := newCoordinatorMetrics()
	m.OnRequest("ks", "t", "write", "QUORUM", "ok", time.Millisecond) // first sight of ks.t
	allocs := testing.AllocsPerRun(100, func() {
		m.OnRequest("ks", "t", "write", "QUORUM", "ok", time.Millisecond)
		m.OnRequest("ks", "t", "read", "ONE", "rate_limited", time.Millisecond)
		m.OnRateLimited("ks", "t", "read", "coordinator")
		m.OnRequest("", "", "schema", "", "ok", time.Millisecond)
	})
	if allocs != 0 {
		t.Errorf("observing requests of a known table allocates %v times, want 0", allocs)
	}
	if got := testutil.ToFloat64(m.tableRequestsVec.WithLabelValues("ks", "t", "write", "ok")); got != 102 {
		t.Errorf(`table_requests_total{op="write",result="ok"} = %v, want 102`, got)
	}
	if got := testutil.ToFloat64(m.rateLimitedVec.WithLabelValues("ks", "t", "read", "coordinator")); got != 101 {
		t.Errorf(`rate_limited_total{op="read",rejected_by="coordinator"} = %v, want 101`, got)
	}
	if got := testutil.ToFloat64(m.requestsVec.WithLabelValues("schema", "none", "ok")); got != 101 {
		t.Errorf(`requests_total{op="schema",consistency="none",result="ok"} = %v, want 101`, got)
	}
}

func TestCoordinatorMetricsLabels(t *testing.T) {
	m := newCoordinatorMetrics()
	tests := []struct {
		ks, table, op, cl, result string
		counter                   []string // requests_total labels that must count it
		unavailable, timeout      bool
	}{
		{"ks", "t", "read", "ONE", "unavailable", []string{"read", "ONE", "unavailable"}, true, false},
		{"ks", "t", "write", "ALL", "timeout", []string{"write", "ALL", "timeout"}, false, true},
		{"", "", "other", "", "invalid", []string{"other", "none", "invalid"}, false, false},
		{"", "", "write", "SERIAL", "weird", []string{"write", "ALL", "error"}, false, false}, // unknown values
	}
	for _, tt := range tests {
		before := testutil.ToFloat64(m.requestsVec.WithLabelValues(tt.counter...))
		m.OnRequest(tt.ks, tt.table, tt.op, tt.cl, tt.result, time.Millisecond)
		if got := testutil.ToFloat64(m.requestsVec.WithLabelValues(tt.counter...)) - before; got != 1 {
			t.Errorf("OnRequest(%q, %q, %q) moved requests_total%v by %v, want 1", tt.op, tt.cl, tt.result, tt.counter, got)
		}
		if tt.unavailable && testutil.ToFloat64(m.unavailableVec.WithLabelValues(tt.op, tt.cl)) != 1 {
			t.Errorf("OnRequest(%q, %q, unavailable) did not count in unavailable_total", tt.op, tt.cl)
		}
		if tt.timeout && testutil.ToFloat64(m.timeoutsVec.WithLabelValues(tt.op, tt.cl)) != 1 {
			t.Errorf("OnRequest(%q, %q, timeout) did not count in timeouts_total", tt.op, tt.cl)
		}
	}
	// Only successes are timed.
	if n := testutil.CollectAndCount(m.latencyVec); n != 8 {
		t.Errorf("the latency histogram has %d series, want 8 (read and write at three levels, schema and other)", n)
	}
	m.OnReplicasDisagree("ks", "t", "write")
	m.OnReadRepair("ks", "t", 2, "ok")
	if got := testutil.ToFloat64(m.disagreeVec.WithLabelValues("ks", "t", "write")); got != 1 {
		t.Errorf("replica_disagreements_total = %v after one disagreement, want 1", got)
	}
	if got := testutil.ToFloat64(m.repairedVec.WithLabelValues("ks", "t")); got != 2 {
		t.Errorf("read_repaired_replicas_total = %v after a repair of 2 replicas, want 2", got)
	}
	m.OnSpeculativeReads("ks", "t", 2)
	if got := testutil.ToFloat64(m.speculativeVec.WithLabelValues("ks", "t")); got != 2 {
		t.Errorf("speculative_reads_total = %v after a read that asked 2 spares, want 2", got)
	}
}

func BenchmarkCoordinatorMetrics(b *testing.B) {
	m := newCoordinatorMetrics()
	m.OnRequest("ks", "t", "write", "QUORUM", "ok", time.Millisecond)
	for b.Loop() {
		m.OnRequest("ks", "t", "write", "QUORUM", "ok", time.Millisecond)
	}
}
