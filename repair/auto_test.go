package repair_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kvnode/kvnode/repair"
	"github.com/kvnode/kvnode/schema"
)

// autoService returns node a's repair service with the automatic repair's state in dir, on the
// clock now (nanoseconds since the epoch).
func (c *testCluster) autoService(dir string, now *atomic.Int64, o repair.Options) *repair.Service {
	c.t.Helper()
	s, err := repair.New(repair.Config{Host: testHost{c, "a"}, Now: func() time.Time { return time.Unix(0, now.Load()) },
		WriteTimeout: time.Minute, Options: o, StateFile: filepath.Join(dir, "auto_repair.json")})
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}

// TestAutoRepairRepairsADueTable: a table never repaired is due; a round repairs all of its
// ranges and records the repair (which lets its tombstones be purged: TestRepairPurges), and
// the table is not due again until its period has passed: then the next round repairs it
// again.
func TestAutoRepairRepairsADueTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 1200) // gc_grace_seconds 20 minutes: a period of 10
		c.diverge()
		var now atomic.Int64
		now.Store(time.Now().Add(time.Minute).UnixNano())
		s := c.autoService(t.TempDir(), &now, repair.Options{})
		s.AutoRound(context.Background())
		if got := c.takeStreamed(); len(got) == 0 {
			t.Fatal("the first round streamed nothing, want the diverged partitions repaired")
		}
		if c.hashes("a") != c.hashes("b") || c.hashes("b") != c.hashes("c") {
			t.Error("after the automatic repair the replicas still differ")
		}
		at, ok, err := c.stores["a"].RepairedAt(c.table.ID)
		if err != nil || !ok || at.UnixNano() != now.Load() {
			t.Errorf("RepairedAt after the round = %v, %v, %v; want the round's start", at, ok, err)
		}
		if got := c.purged; len(got) != 1 {
			t.Errorf("purge passes after the round: %v, want one of ks.t", got)
		}
		want := `
# HELP kvnode_auto_repair_ranges_total Token ranges of tables this node's automatic repair repaired, by result: ok, or failed (a replica down or failing).
# TYPE kvnode_auto_repair_ranges_total counter
kvnode_auto_repair_ranges_total{result="failed"} 0
kvnode_auto_repair_ranges_total{result="ok"} 4
`
		if err := testutil.CollectAndCompare(s, strings.NewReader(want), "kvnode_auto_repair_ranges_total"); err != nil {
			t.Error(err)
		}

		c.write("p9", 9, 50, "b")
		now.Add(int64(repair.MinAutoRepairPeriod - time.Second))
		s.AutoRound(context.Background())
		if got := c.takeStreamed(); len(got) != 0 {
			t.Errorf("a round before the period passed streamed %v, want nothing (not due)", got)
		}
		now.Add(int64(time.Second))
		s.AutoRound(context.Background())
		if got := c.takeStreamed(); len(got) != 2 {
			t.Errorf("a round once the period passed streamed %v, want p9 to a and c", got)
		}
	})
}

// TestAutoRepairResumes: a round stopped after its first range (the node stopping) saved its
// progress; the service of the restarted node resumes with the second range, and the repair it
// records started when the first round did.
func TestAutoRepairResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 864000)
		c.diverge()
		dir := t.TempDir()
		var now atomic.Int64
		start := time.Now().Add(time.Minute).UnixNano()
		now.Store(start)
		o := repair.Options{AutoRepairPause: time.Hour}
		s := c.autoService(dir, &now, o)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { s.AutoRound(ctx); close(done) }()
		synctest.Wait() // in the pause after the first range
		st, err := s.AutoStatus()
		if err != nil || len(st) != 1 || st[0].Done != 1 || st[0].Total != 4 {
			t.Fatalf("AutoStatus during the round = %+v, %v; want 1 of 4 ranges done", st, err)
		}
		var saved struct{ Done int }
		b, err := os.ReadFile(filepath.Join(dir, "auto_repair.json"))
		if err != nil || json.Unmarshal(b, &saved) != nil || saved.Done != 1 {
			t.Fatalf("the saved round: %s, %v; want done 1", b, err)
		}
		cancel()
		<-done
		if _, ok, _ := c.stores["a"].RepairedAt(c.table.ID); ok {
			t.Fatal("a stopped round recorded the table as repaired")
		}

		now.Add(int64(time.Hour))
		s2 := c.autoService(dir, &now, o)
		s2.AutoRound(context.Background())
		want := `
# HELP kvnode_auto_repair_ranges_total Token ranges of tables this node's automatic repair repaired, by result: ok, or failed (a replica down or failing).
# TYPE kvnode_auto_repair_ranges_total counter
kvnode_auto_repair_ranges_total{result="failed"} 0
kvnode_auto_repair_ranges_total{result="ok"} 3
`
		if err := testutil.CollectAndCompare(s2, strings.NewReader(want), "kvnode_auto_repair_ranges_total"); err != nil {
			t.Errorf("the resumed round: %v", err)
		}
		if at, ok, _ := c.stores["a"].RepairedAt(c.table.ID); !ok || at.UnixNano() != start {
			t.Errorf("RepairedAt after the resumed round = %v, %v; want the first round's start", at, ok)
		}
		if _, err := os.Stat(filepath.Join(dir, "auto_repair.json")); !os.IsNotExist(err) {
			t.Errorf("the state file after the round completed: %v, want it removed", err)
		}
		if c.hashes("a") != c.hashes("b") || c.hashes("b") != c.hashes("c") {
			t.Error("after the resumed round the replicas still differ")
		}
	})
}

// TestAutoRepairFailedRangeRetries: a round with a replica down records nothing, so the
// tombstones stay; the table is tried again only after auto_repair_retry.
func TestAutoRepairFailedRangeRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 0)
		c.diverge()
		c.down["c"] = true
		var now atomic.Int64
		now.Store(time.Now().Add(time.Minute).UnixNano())
		o := repair.Options{AutoRepairRetry: 30 * time.Minute}
		s := c.autoService(t.TempDir(), &now, o)
		s.AutoRound(context.Background())
		if _, ok, _ := c.stores["a"].RepairedAt(c.table.ID); ok {
			t.Fatal("a round with a failed range recorded the table as repaired")
		}
		if m := c.fetch("a", "p3"); m == nil || m.Rows[0].Deletion == nil {
			t.Errorf("a's p3 after an incomplete round: %v, want its tombstone kept", m)
		}
		c.mu.Lock()
		c.down["c"] = false
		c.mu.Unlock()
		c.takeStreamed()
		now.Add(int64(29 * time.Minute))
		s.AutoRound(context.Background())
		if got := c.takeStreamed(); len(got) != 0 {
			t.Errorf("a round before auto_repair_retry streamed %v, want nothing", got)
		}
		now.Add(int64(time.Minute))
		s.AutoRound(context.Background())
		if _, ok, _ := c.stores["a"].RepairedAt(c.table.ID); !ok {
			t.Error("the retried round with every replica up did not record the repair")
		}
	})
}

// TestAutoRepairYieldsToAManualRepair: while a manual repair runs, the automatic round waits
// for it, and resumes afterwards.
func TestAutoRepairYieldsToAManualRepair(t *testing.T) {
	c := newTestCluster(t, 864000)
	c.diverge()
	var now atomic.Int64
	now.Store(time.Now().Add(time.Minute).UnixNano())
	s := c.autoService(t.TempDir(), &now, repair.Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	first := true
	c.throttle = func(ctx context.Context) error {
		if first {
			first = false
			close(entered)
			<-release
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Repair(context.Background(), []repair.Target{{Table: c.table, RF: schema.Simple(3)}})
		done <- err
	}()
	<-entered
	s.AutoRound(context.Background())
	if _, ok, _ := c.stores["a"].RepairedAt(c.table.ID); ok {
		t.Error("the automatic round completed during a manual repair, want it to wait")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestAutoRepairOptions(t *testing.T) {
	var o repair.Options
	o.EnsureDefaults()
	if o.AutoRepair != repair.AutoRepairOn || o.AutoRepairInterval != repair.DefaultAutoRepairInterval ||
		o.AutoRepairPause != repair.DefaultAutoRepairPause || o.AutoRepairRetry != repair.DefaultAutoRepairRetry {
		t.Errorf("defaults: %+v", o)
	}
	for _, tc := range []struct {
		set  func(*repair.Options)
		want string
	}{
		{func(o *repair.Options) { o.AutoRepair = "sometimes" }, `auto_repair) is "sometimes", want "on" or "off"`},
		{func(o *repair.Options) { o.AutoRepairInterval = time.Minute }, "auto_repair_interval) is 1m0s, want at least 10m0s"},
		{func(o *repair.Options) { o.AutoRepairPause = -time.Second }, "auto_repair_pause) is -1s"},
	} {
		o := repair.Options{}
		o.EnsureDefaults()
		tc.set(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want it to say %q", err, tc.want)
		}
	}
	sc, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3};\n" +
		"CREATE TABLE ks.a (k int PRIMARY KEY);\n" +
		"CREATE TABLE ks.b (k int PRIMARY KEY) WITH gc_grace_seconds = 7200;\n" +
		"CREATE TABLE ks.c (k int PRIMARY KEY) WITH gc_grace_seconds = 60;\n")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]time.Duration{"a": 24 * time.Hour, "b": time.Hour, "c": repair.MinAutoRepairPeriod} {
		tb, _ := sc.Table("ks", name)
		if got := o.Period(tb); got != want {
			t.Errorf("Period(ks.%s) = %v, want %v", name, got, want)
		}
	}
}
