package shell

import (
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/schema"
)

func TestLatencyBuckets(t *testing.T) {
	for _, d := range []time.Duration{0, time.Nanosecond, latencyBase, latencyBase + 1, 137 * time.Microsecond,
		time.Millisecond, 49 * time.Millisecond, time.Second, 5 * time.Second} {
		b := latencyBucket(d)
		if d > latencyBound(b) || (b > 0 && d <= latencyBound(b-1)) {
			t.Errorf("latency %v went to bucket %d, which holds (%v, %v]", d, b, latencyBound(b-1), latencyBound(b))
		}
	}
	if b := latencyBucket(time.Hour); b != latencyBuckets-1 {
		t.Errorf("an hour went to bucket %d, want the last, %d", b, latencyBuckets-1)
	}
	if last := latencyBound(latencyBuckets - 2); last < 5*time.Second {
		t.Errorf("the buckets end at %v, below the default read timeout", last)
	}
}

func TestLatencyPercentile(t *testing.T) {
	var l latencies
	if _, ok := l.percentile(0, 99); ok {
		t.Error("an empty histogram has a percentile")
	}
	for range 990 {
		l.record(time.Second, time.Millisecond)
	}
	for range 10 {
		l.record(time.Second, 100*time.Millisecond)
	}
	for _, tt := range []struct {
		p        float64
		min, max time.Duration
	}{
		{50, time.Millisecond, 1250 * time.Microsecond},
		{99, time.Millisecond, 1250 * time.Microsecond},
		{99.5, 100 * time.Millisecond, 125 * time.Millisecond},
		{99.99, 100 * time.Millisecond, 125 * time.Millisecond},
	} {
		got, ok := l.percentile(2*time.Second, tt.p)
		if !ok || got < tt.min || got > tt.max {
			t.Errorf("percentile(%v) of 990×1ms and 10×100ms = %v, %v; want within [%v, %v]", tt.p, got, ok, tt.min, tt.max)
		}
	}
	// Samples count for the window they were taken in and the next: 30 to 60 s.
	if _, ok := l.percentile(latencyWindow+time.Second, 99); !ok {
		t.Error("samples of the previous window were forgotten")
	}
	if _, ok := l.percentile(2*latencyWindow+time.Second, 99); ok {
		t.Error("samples two windows old still count")
	}
	// A new window starts from zero: the old samples do not come back when it is reused.
	for range latencyMinSamples {
		l.record(2*latencyWindow+time.Second, 7*time.Millisecond)
	}
	got, ok := l.percentile(2*latencyWindow+2*time.Second, 50)
	if !ok || got < 7*time.Millisecond || got > 9*time.Millisecond {
		t.Errorf("after the window was reused, the median is %v, %v; want about 7ms", got, ok)
	}
}

func TestSpeculativeDelay(t *testing.T) {
	var tl tableLatencies
	a, b := tl.of(1), tl.of(2)
	if tl.of(1) != a {
		t.Fatal("a table's histogram changed between reads")
	}
	if d := tl.delay(a, 0, 99, time.Second); d != fallbackSpeculativeDelay {
		t.Errorf("with no samples the delay is %v, want the fallback %v", d, fallbackSpeculativeDelay)
	}
	for range 50 {
		tl.record(b, 0, 20*time.Millisecond)
	}
	if d := tl.delay(a, 0, 99, time.Second); d < 20*time.Millisecond || d > 25*time.Millisecond {
		t.Errorf("a table with no samples of its own speculates after %v, want every table's 99th percentile, 20ms", d)
	}
	for range 50 {
		tl.record(a, 0, 10*time.Microsecond)
	}
	if d := tl.delay(a, 0, 99, time.Second); d != minSpeculativeDelay {
		t.Errorf("a table whose reads take 10µs speculates after %v, want the floor %v", d, minSpeculativeDelay)
	}
	if d := tl.delay(b, 0, 99, 5*time.Millisecond); d != 5*time.Millisecond {
		t.Errorf("with 5ms to go the delay is %v, want 5ms", d)
	}
}

// TestSpeculationHybrids checks Cassandra 4's MIN(Np,Mms) and MAX(Np,Mms): the shorter or the
// longer of the percentile's delay and the fixed one.
func TestSpeculationHybrids(t *testing.T) {
	s, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3};" +
		"CREATE TABLE ks.lo (k int PRIMARY KEY) WITH speculative_retry = 'MIN(99p,5ms)';" +
		"CREATE TABLE ks.hi (k int PRIMARY KEY) WITH speculative_retry = 'MAX(99p,5ms)';")
	if err != nil {
		t.Fatal(err)
	}
	var e Executor
	l := e.latency.of(1)
	for range 50 {
		e.latency.record(l, 0, 20*time.Millisecond)
	}
	pct := e.latency.delay(l, 0, 99, time.Second)
	if pct < 20*time.Millisecond {
		t.Fatalf("the 99th percentile delay is %v, want at least 20ms", pct)
	}
	for _, tt := range []struct {
		table string
		want  time.Duration
	}{{"lo", 5 * time.Millisecond}, {"hi", pct}} {
		tb, _ := s.Table("ks", tt.table)
		kind, d := e.speculation(tb, l, 0, time.Second)
		if kind != coordinator.SpeculateDelayed || d != tt.want {
			t.Errorf("%s (%s) speculates %v after %v, want delayed after %v", tt.table, tb.SpeculativeRetry(), kind, d, tt.want)
		}
	}
}
