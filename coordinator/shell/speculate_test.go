package shell_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// Speculative retry and replica scores (read.go, score.go, latency.go): reads route around a
// replica that is live to the failure detector but never answers, as a paused process or one
// behind a one-sided partition is.

// cutTransport is the cluster's transport as seen from node from, with the links in cut silent:
// a call over a cut link hangs until its context ends, as a call into a partition does.
type cutTransport struct {
	*transport
	from coordinator.NodeID
	mu   *sync.Mutex
	cut  map[[2]coordinator.NodeID]bool
}

func (c cutTransport) silent(ctx context.Context, to coordinator.NodeID) bool {
	c.mu.Lock()
	cut := c.cut[[2]coordinator.NodeID{c.from, to}]
	c.mu.Unlock()
	if cut {
		<-ctx.Done()
	}
	return cut
}

func (c cutTransport) Read(ctx context.Context, to coordinator.NodeID, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error) {
	if c.silent(ctx, to) {
		return nil, ctx.Err()
	}
	return c.transport.Read(ctx, to, req)
}

func (c cutTransport) Mutate(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	if c.silent(ctx, to) {
		return nil, ctx.Err()
	}
	return c.transport.Mutate(ctx, to, req)
}

// faultyCluster is a cluster whose links can be cut.
type faultyCluster struct {
	*cluster
	mu  sync.Mutex
	cut map[[2]coordinator.NodeID]bool
}

func newFaultyCluster(t *testing.T) *faultyCluster {
	return &faultyCluster{cluster: newCluster(t, options{}), cut: map[[2]coordinator.NodeID]bool{}}
}

// coordinator returns a new coordinator on node id (with no scores or latencies yet) whose
// calls go through a cutTransport.
func (f *faultyCluster) coordinator(id coordinator.NodeID) *shell.Executor {
	e, err := shell.NewExecutor(shell.Config{
		LocalID:   id,
		Ring:      f.ring,
		Transport: cutTransport{transport: f.transport, from: id, mu: &f.mu, cut: f.cut},
		Local:     f.services[id],
		Schema:    f.schema,
		Now:       f.clock.Now,
		Observer:  f.observer,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { e.Close() })
	return e
}

// silence makes the links from each of from to each of to silent, one way.
func (f *faultyCluster) silence(from, to []coordinator.NodeID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range from {
		for _, b := range to {
			if a != b {
				f.cut[[2]coordinator.NodeID{a, b}] = true
			}
		}
	}
}

func (f *faultyCluster) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.cut)
}

// readStats is what a run of reads through one coordinator saw.
type readStats struct {
	reads, failed int
	latencies     []time.Duration
	firstErr      error
}

func (s readStats) String() string {
	slices.Sort(s.latencies)
	q := func(p float64) time.Duration { return s.latencies[int(p*float64(len(s.latencies)-1))] }
	return fmt.Sprintf("%d reads, %d failed (%.1f%%); latency p50 %v, p99 %v, max %v",
		s.reads, s.failed, 100*float64(s.failed)/float64(s.reads), q(0.5).Round(time.Microsecond),
		q(0.99).Round(time.Microsecond), q(1).Round(time.Microsecond))
}

// readMany runs n QUORUM reads of rows of table tbl through e, each with a client timeout of
// one second; it stops after the first read that takes that long.
func readMany(e *shell.Executor, tbl string, n int) readStats {
	var s readStats
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		start := time.Now()
		_, err := e.Execute(ctx, coordinator.Statement{
			Text: fmt.Sprintf("SELECT * FROM %s WHERE k = 'k%d'", tbl, i%10), Consistency: quorum, Keyspace: "ks"})
		d := time.Since(start)
		cancel()
		s.latencies = append(s.latencies, d)
		s.reads++
		if err != nil {
			s.failed++
			if s.firstErr == nil {
				s.firstErr = err
			}
		}
		if d >= time.Second {
			break
		}
	}
	return s
}

// TestReadsRouteAroundASilentReplica is issue 29's finding 3 in process: in a bridge partition
// (n1 and n2 cut from each other, both reaching n3) and while a replica is paused (n1 never
// answers anyone), with the failure detector calling every node live, QUORUM reads through
// every coordinator that is not paused succeed, none waiting for the 5 s timeout: the first
// asks a spare after its speculative delay, and the scores stop asking the silent replica
// first. Every node prefers itself, then ring order n1, n2, n3, so each coordinator's default
// pair holds the silent replica. Both an unlimited table and a limited one (whose calls
// outlive the read) are read, each by new coordinators.
func TestReadsRouteAroundASilentReplica(t *testing.T) {
	f := newFaultyCluster(t)
	f.must(schemaRF3...)
	f.must("CREATE TABLE ks.lim (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_reads_per_second': 1000000}")
	for i := range 10 {
		f.must(fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('k%d', 1, 'x')", i), fmt.Sprintf("INSERT INTO lim (k, v) VALUES ('k%d', 1)", i))
	}
	const reads = 200
	for _, sc := range []struct {
		name         string
		from, to     []coordinator.NodeID
		coordinators []coordinator.NodeID
	}{
		{"bridge", []coordinator.NodeID{"n1", "n2"}, []coordinator.NodeID{"n1", "n2"}, nodes},
		{"pause", nodes, []coordinator.NodeID{"n1"}, []coordinator.NodeID{"n2", "n3"}},
	} {
		f.silence(sc.from, sc.to)
		for _, tbl := range []string{"t", "lim"} {
			for _, id := range sc.coordinators {
				s := readMany(f.coordinator(id), tbl, reads)
				t.Logf("%s, table %s, through %s: %v", sc.name, tbl, id, s)
				if s.reads < reads || s.failed > reads/100 {
					t.Errorf("%s: %d of %d QUORUM reads of %s through %s failed (first: %v), want at most 1 %%", sc.name, s.failed, s.reads, tbl, id, s.firstErr)
				}
				if m := slices.Max(s.latencies); m >= time.Second {
					t.Errorf("%s: a QUORUM read of %s through %s took %v: it waited on the silent replica", sc.name, tbl, id, m)
				}
			}
		}
		f.heal()
	}
	f.observer.mu.Lock()
	spec := len(f.observer.speculative)
	f.observer.mu.Unlock()
	if spec == 0 {
		t.Error("no read was reported as speculative")
	}
}

// TestSilentReplicaIsNoLongerAskedFirst: after a read that had to speculate around n2, n1's
// scores keep n2 out of its reads; once n2 answers again and its misses have decayed it is
// asked again, behind n1 itself as before.
func TestSilentReplicaIsNoLongerAskedFirst(t *testing.T) {
	c := newCluster(t, options{})
	var mono time.Duration // stands still unless the test moves it
	var monoMu sync.Mutex
	e := c.executors["n1"]
	e.SetMonoClock(func() time.Duration { monoMu.Lock(); defer monoMu.Unlock(); return mono })
	c.must(schemaRF3...)
	c.must("INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')")
	calls := func(id coordinator.NodeID) int {
		c.transport.mu.Lock()
		defer c.transport.mu.Unlock()
		return c.transport.calls[id]
	}
	read := func() {
		t.Helper()
		if _, err := c.exec("n1", quorum, "SELECT * FROM t WHERE k = 'a'"); err != nil {
			t.Fatalf("QUORUM read through n1: %v", err)
		}
	}
	// Healthy: n1 reads itself and n2 (ring order), not n3.
	n2, n3 := calls("n2"), calls("n3")
	read()
	if calls("n2") != n2+1 || calls("n3") != n3 {
		t.Fatalf("a healthy QUORUM read through n1 asked n2 %d and n3 %d times, want n2 once", calls("n2")-n2, calls("n3")-n3)
	}
	c.transport.setFault(hang, "n2")
	read() // speculates to n3
	n2 = calls("n2")
	for range 5 {
		read()
	}
	if got := calls("n2") - n2; got != 0 {
		t.Errorf("after a read that had to do without n2, 5 more reads asked it %d times, want none", got)
	}
	// n2 recovers; its penalty decays (half-life 1 s) and it is asked again.
	c.transport.clearFaults()
	monoMu.Lock()
	mono += 30 * time.Second
	monoMu.Unlock()
	n2, n3 = calls("n2"), calls("n3")
	read()
	if calls("n2") != n2+1 || calls("n3") != n3 {
		t.Errorf("30 s after n2 recovered, a QUORUM read through n1 asked n2 %d and n3 %d times, want n2 once and n3 not", calls("n2")-n2, calls("n3")-n3)
	}
}

// TestSpeculativeRetryPolicies: with n2 silent, a read through n1 at QUORUM
//   - with 'NONE' waits for the timeout, and the next one avoids n2 (the scores work without
//     speculation);
//   - with 'ALWAYS' asks all three at once and answers without waiting;
//   - with '20ms' asks n3 after 20 ms;
//
// and the speculative reads are reported per table.
func TestSpeculativeRetryPolicies(t *testing.T) {
	c := newCluster(t, options{readTimeout: 300 * time.Millisecond})
	c.must(schemaRF3...)
	c.must("CREATE TABLE ks.never (k text PRIMARY KEY, v int) WITH speculative_retry = 'NONE'",
		"CREATE TABLE ks.always (k text PRIMARY KEY, v int) WITH speculative_retry = 'always'",
		"CREATE TABLE ks.fixed (k text PRIMARY KEY, v int) WITH speculative_retry = '20MS'")
	c.transport.setFault(hang, "n2")

	_, err := c.exec("n1", quorum, "SELECT * FROM never WHERE k = 'a'")
	var te *coordinator.TimeoutError
	if !errors.As(err, &te) {
		t.Errorf("a QUORUM read of a NONE table with n2 silent: %v, want a timeout", err)
	}
	if _, err := c.exec("n1", quorum, "SELECT * FROM never WHERE k = 'a'"); err != nil {
		t.Errorf("the next QUORUM read of the NONE table, n2 scored down: %v", err)
	}

	c.transport.mu.Lock()
	n3 := c.transport.calls["n3"]
	c.transport.mu.Unlock()
	start := time.Now()
	if _, err := c.exec("n3", quorum, "SELECT * FROM always WHERE k = 'a'"); err != nil {
		t.Errorf("a QUORUM read of an ALWAYS table with n2 silent: %v", err)
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("a QUORUM read of an ALWAYS table took %v, want no wait", d)
	}
	c.transport.mu.Lock()
	if got := c.transport.calls["n3"] - n3; got != 1 {
		t.Errorf("the ALWAYS read asked n3 %d times", got)
	}
	c.transport.mu.Unlock()

	start = time.Now()
	if _, err := c.exec("n2", quorum, "SELECT * FROM fixed WHERE k = 'a'"); err != nil {
		t.Errorf("a QUORUM read of a 20ms table with n2 silent: %v", err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("a QUORUM read of a 20ms table through n2, which cannot answer itself, took %v, want ≥ 20ms", d)
	}

	c.observer.mu.Lock()
	defer c.observer.mu.Unlock()
	if want := []string{"ks.always 1", "ks.fixed 1"}; !slices.Equal(c.observer.speculative, want) {
		t.Errorf("speculative reads reported %q, want %q", c.observer.speculative, want)
	}
}
