package hints

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// fakeMembers is a cluster whose members and liveness the test sets; every change closes the
// channel Changed returned.
type fakeMembers struct {
	mu      sync.Mutex
	live    map[coordinator.NodeID]bool // members, up or not
	changed chan struct{}
}

func newFakeMembers(ids ...coordinator.NodeID) *fakeMembers {
	f := &fakeMembers{live: map[coordinator.NodeID]bool{}, changed: make(chan struct{})}
	for _, id := range ids {
		f.live[id] = true
	}
	return f
}

func (f *fakeMembers) IsLive(id coordinator.NodeID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live[id]
}

func (f *fakeMembers) IsMember(id coordinator.NodeID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.live[id]
	return ok
}

func (f *fakeMembers) Members() map[coordinator.NodeID]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.live)
}

func (f *fakeMembers) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// set makes id a member, up or down, and announces the change.
func (f *fakeMembers) set(id coordinator.NodeID, live bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live[id] = live
	close(f.changed)
	f.changed = make(chan struct{})
}

// remove takes id out of the cluster and announces the change.
func (f *fakeMembers) remove(id coordinator.NodeID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.live, id)
	close(f.changed)
	f.changed = make(chan struct{})
}

// fixture is a hint store on disk with a settable clock and membership.
type fixture struct {
	t       *testing.T
	dir     string
	ns      atomic.Int64
	members *fakeMembers
	store   *Store
	// throttle is the store's Options.Throttle: by default more than any test replays.
	throttle int64
}

func newFixture(t *testing.T, maxBytes int64) *fixture {
	f := &fixture{t: t, dir: t.TempDir(), members: newFakeMembers("b", "c", "d"), throttle: 1 << 40}
	f.ns.Store(time.Unix(1_700_000_000, 0).UnixNano())
	f.open(maxBytes)
	return f
}

func (f *fixture) open(maxBytes int64) {
	f.t.Helper()
	s, err := Open(Config{Dir: f.dir, Members: f.members, Now: f.now,
		Options: Options{Window: time.Hour, MaxBytes: maxBytes, Throttle: f.throttle}})
	if err != nil {
		f.t.Fatal(err)
	}
	f.store = s
	f.t.Cleanup(func() { s.Close() })
}

func (f *fixture) now() time.Time          { return time.Unix(0, f.ns.Load()) }
func (f *fixture) advance(d time.Duration) { f.ns.Add(int64(d)) }

func testSchema(t *testing.T) *schema.Schema {
	t.Helper()
	s, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};\n" +
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int);\n" +
		"CREATE TABLE ks.short (k int PRIMARY KEY, v int) WITH gc_grace_seconds = 60;\n")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mutation returns a write to table whose token is i.
func mutation(t *testing.T, s *schema.Schema, table string, i int) *replicapb.Mutation {
	t.Helper()
	tb, ok := s.Table("ks", table)
	if !ok {
		t.Fatalf("no table ks.%s", table)
	}
	ts := int64(i)
	return &replicapb.Mutation{TableId: uint64(tb.ID), PartitionKey: [][]byte{{0, 0, 0, byte(i)}}, Token: int64(i),
		Rows: []*replicapb.Row{{Marker: &ts}}}
}

func TestStoreWindowAndBound(t *testing.T) {
	s := testSchema(t)
	f := newFixture(t, 1<<20)
	m := mutation(t, s, "t", 1)

	// A live replica that timed out gets hints whatever the window.
	f.store.StoreHint("b", m)
	// A replica seen down now gets hints for the window (1 h), then none.
	f.members.set("c", false)
	f.store.StoreHint("c", m)
	f.advance(59 * time.Minute)
	f.store.StoreHint("c", m)
	f.advance(2 * time.Minute)
	f.store.StoreHint("c", m)
	if got, want := f.store.dropped[dropWindow].Load(), uint64(1); got != want {
		t.Errorf("hints dropped for the window: %d, want %d", got, want)
	}
	if n, _ := f.store.Pending(); n != 3 {
		t.Errorf("pending hints %d, want 3", n)
	}
	// Once the replica is seen up again its window restarts.
	f.members.set("c", true)
	f.store.observe(f.members.Members())
	f.members.set("c", false)
	f.store.StoreHint("c", m)
	if n, _ := f.store.Pending(); n != 4 {
		t.Errorf("pending hints %d after c came back and went down again, want 4", n)
	}
	// A replica seen down by a replay round long ago is past its window at once.
	f.members.set("d", false)
	f.store.observe(f.members.Members())
	f.advance(2 * time.Hour)
	f.store.StoreHint("d", m)
	if got, want := f.store.dropped[dropWindow].Load(), uint64(2); got != want {
		t.Errorf("hints dropped for the window after d was observed down 2 h ago: %d, want %d", got, want)
	}

	// The byte bound per target: a store that holds 3 hints' worth drops the 4th.
	g := newFixture(t, 1)
	g.store.StoreHint("b", m)
	if got := g.store.dropped[dropFull].Load(); got != 1 {
		t.Errorf("a hint larger than the bound: dropped %d as full, want 1", got)
	}
	_, one := f.store.Pending()
	one /= 4
	h := newFixture(t, 3*one)
	for range 5 {
		h.store.StoreHint("b", m)
	}
	h.store.StoreHint("c", m) // another target has its own bound
	if n, b := h.store.Pending(); n != 4 || b > 4*one {
		t.Errorf("bounded store holds %d hints (%d bytes), want 4 (3 for b, 1 for c)", n, b)
	}
	if got := h.store.dropped[dropFull].Load(); got != 2 {
		t.Errorf("hints dropped as full: %d, want 2", got)
	}

	// A target id longer than a key holds is an error, counted, not a panic.
	h.store.StoreHint(coordinator.NodeID(strings.Repeat("x", 256)), m)
	if got := h.store.dropped[dropError].Load(); got != 1 {
		t.Errorf("hints dropped as errors after a 256-byte target id: %d, want 1", got)
	}

	// The counts survive a restart.
	if err := h.store.Close(); err != nil {
		t.Fatal(err)
	}
	h.store.StoreHint("b", m) // closed: not stored, no panic
	h.open(3 * one)
	if n, _ := h.store.Pending(); n != 4 {
		t.Errorf("after reopening: %d hints, want 4", n)
	}
}

// TestStorePersistsAcrossReopen: hints stored before a restart are replayed after it, in the
// order they were stored, and the sequence of later hints continues after them.
func TestStorePersistsAcrossReopen(t *testing.T) {
	s := testSchema(t)
	f := newFixture(t, 1<<20)
	for i := 1; i <= 3; i++ {
		f.store.StoreHint("b", mutation(t, s, "t", i))
	}
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	f.open(1 << 20)
	f.advance(time.Second)
	f.store.StoreHint("b", mutation(t, s, "t", 4))

	rep := newFakeSender()
	r := newTestReplayer(t, f, s, rep)
	r.round(context.Background())
	if got, want := rep.sent(), "b:1 b:2 b:3 b:4"; got != want {
		t.Errorf("replayed after a reopen: %s, want %s", got, want)
	}
	if n, b := f.store.Pending(); n != 0 || b != 0 {
		t.Errorf("%d hints (%d bytes) pending after replay, want none", n, b)
	}
	// The deletions persist too.
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	f.open(1 << 20)
	if n, _ := f.store.Pending(); n != 0 {
		t.Errorf("%d hints after replaying all and reopening, want 0", n)
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	m := newFakeMembers()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Members: m}, "hints: Config.Dir is empty"},
		{Config{Dir: t.TempDir()}, "hints: Config.Members is nil"},
		{Config{Dir: t.TempDir(), Members: m, Options: Options{Window: -time.Second}}, "hints: Options.Window (max_hint_window) is -1s, want a positive duration"},
		{Config{Dir: t.TempDir(), Members: m, Options: Options{MaxBytes: -1}}, "hints: Options.MaxBytes (max_hints_size_per_host) is -1, want a positive number of bytes"},
		{Config{Dir: t.TempDir(), Members: m, Options: Options{Throttle: -1}}, "hints: Options.Throttle (hinted_handoff_throttle) is -1, want a positive number of bytes per second"},
	} {
		s, err := Open(tc.cfg)
		if err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded, want an error with %q", tc.cfg, tc.want)
		} else if err.Error() != tc.want {
			t.Errorf("Open(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestOptionsEnsureDefaults(t *testing.T) {
	defaults := Options{Window: DefaultWindow, MaxBytes: DefaultMaxBytes, Throttle: DefaultThrottle}
	for _, tc := range []struct {
		in, out Options
	}{
		{Options{}, defaults},
		{Options{Window: time.Minute, MaxBytes: 1, Throttle: 2}, Options{Window: time.Minute, MaxBytes: 1, Throttle: 2}},
		{Options{MaxBytes: 5}, Options{Window: DefaultWindow, MaxBytes: 5, Throttle: DefaultThrottle}},
	} {
		got := tc.in
		if got.EnsureDefaults(); got != tc.out {
			t.Errorf("Options%+v.EnsureDefaults() = %+v, want %+v", tc.in, got, tc.out)
		}
		if twice := got; *twice.EnsureDefaults() != got {
			t.Errorf("EnsureDefaults twice = %+v, want once = %+v", twice, got)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("Options%+v.Validate() = %v, want nil", got, err)
		}
	}
}

// TestStoreMetrics: the collector reports what the store did, by name.
func TestStoreMetrics(t *testing.T) {
	s := testSchema(t)
	f := newFixture(t, 1<<20)
	f.store.StoreHint("b", mutation(t, s, "t", 1))
	f.store.StoreHint("b", mutation(t, s, "t", 2))
	f.members.set("c", false)
	f.store.StoreHint("c", mutation(t, s, "t", 3))
	f.advance(2 * time.Hour)
	f.store.StoreHint("c", mutation(t, s, "t", 4)) // past the window
	f.store.DroppedHints(2)                        // by the coordinator's full hint queue
	_, bytes := f.store.Pending()

	want := fmt.Sprintf(`
# HELP kvnode_hints_dropped_total Hints this node did not store or did not replay, by reason: window (the replica was down longer than max_hint_window), full (max_hints_size_per_host), expired (older than the table's gc_grace_seconds), unknown_table, refused, removed, error, corrupt, disk (free space under half the reserve), queue (the coordinator's hint queue was full: this store fell behind). Their replicas need a repair.
# TYPE kvnode_hints_dropped_total counter
kvnode_hints_dropped_total{reason="corrupt"} 0
kvnode_hints_dropped_total{reason="disk"} 0
kvnode_hints_dropped_total{reason="error"} 0
kvnode_hints_dropped_total{reason="expired"} 0
kvnode_hints_dropped_total{reason="full"} 0
kvnode_hints_dropped_total{reason="queue"} 2
kvnode_hints_dropped_total{reason="refused"} 0
kvnode_hints_dropped_total{reason="removed"} 0
kvnode_hints_dropped_total{reason="unknown_table"} 0
kvnode_hints_dropped_total{reason="window"} 1
# HELP kvnode_hints_pending Hints this node holds, waiting for their replica.
# TYPE kvnode_hints_pending gauge
kvnode_hints_pending 3
# HELP kvnode_hints_pending_bytes Bytes of the hints this node holds.
# TYPE kvnode_hints_pending_bytes gauge
kvnode_hints_pending_bytes %d
# HELP kvnode_hints_stored_total Hints this node stored as a coordinator: writes a replica missed (down, failed or timed out), kept to replay to it.
# TYPE kvnode_hints_stored_total counter
kvnode_hints_stored_total 3
`, bytes)
	if bytes == 0 {
		t.Fatal("3 hints pending take 0 bytes")
	}
	if err := testutil.CollectAndCompare(f.store, strings.NewReader(want),
		"kvnode_hints_dropped_total", "kvnode_hints_pending", "kvnode_hints_pending_bytes", "kvnode_hints_stored_total"); err != nil {
		t.Error(err)
	}
}
