package node

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// hintFixture is a hint store on disk with a settable clock and liveness.
type hintFixture struct {
	t     *testing.T
	dir   string
	ns    atomic.Int64
	mu    sync.Mutex
	down  map[coordinator.NodeID]bool
	store *hintStore
}

func newHintFixture(t *testing.T, maxBytes int64) *hintFixture {
	f := &hintFixture{t: t, dir: t.TempDir(), down: map[coordinator.NodeID]bool{}}
	f.ns.Store(time.Unix(1_700_000_000, 0).UnixNano())
	f.open(maxBytes)
	return f
}

func (f *hintFixture) open(maxBytes int64) {
	s, err := openHintStore(hintStoreConfig{Dir: f.dir, Logger: slog.New(slog.DiscardHandler), Now: f.now, Window: time.Hour, MaxBytes: maxBytes, IsLive: f.isLive})
	if err != nil {
		f.t.Fatal(err)
	}
	f.store = s
	f.t.Cleanup(func() { s.close() })
}

func (f *hintFixture) now() time.Time          { return time.Unix(0, f.ns.Load()) }
func (f *hintFixture) advance(d time.Duration) { f.ns.Add(int64(d)) }
func (f *hintFixture) isLive(id coordinator.NodeID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.down[id]
}
func (f *hintFixture) setDown(id coordinator.NodeID, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[id] = down
}

func (f *hintFixture) pending() (int, int64) {
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	var n int
	var b int64
	for _, t := range f.store.targets {
		n += t.count
		b += t.bytes
	}
	return n, b
}

func hintSchema(t *testing.T) *schema.Schema {
	s, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};\n" +
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int);\n" +
		"CREATE TABLE ks.short (k int PRIMARY KEY, v int) WITH gc_grace_seconds = 60;\n")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hintMutation(t *testing.T, s *schema.Schema, table string, i int) *replicapb.Mutation {
	tb, ok := s.Table("ks", table)
	if !ok {
		t.Fatalf("no table ks.%s", table)
	}
	ts := int64(i)
	return &replicapb.Mutation{TableId: uint64(tb.ID), PartitionKey: [][]byte{{0, 0, 0, byte(i)}}, Token: int64(i),
		Rows: []*replicapb.Row{{Marker: &ts}}}
}

func TestHintStoreWindowAndBound(t *testing.T) {
	s := hintSchema(t)
	f := newHintFixture(t, 1<<20)
	m := hintMutation(t, s, "t", 1)

	// A live replica that timed out gets hints whatever the window.
	f.store.StoreHint("b", m)
	// A replica seen down now gets hints for the window (1 h), then none.
	f.setDown("c", true)
	f.store.StoreHint("c", m)
	f.advance(59 * time.Minute)
	f.store.StoreHint("c", m)
	f.advance(2 * time.Minute)
	f.store.StoreHint("c", m)
	if got, want := f.store.dropped[dropWindow].Load(), uint64(1); got != want {
		t.Errorf("hints dropped for the window: %d, want %d", got, want)
	}
	if n, _ := f.pending(); n != 3 {
		t.Errorf("pending hints %d, want 3", n)
	}
	// Once the replica is seen up again its window restarts.
	f.setDown("c", false)
	f.store.observe(map[coordinator.NodeID]bool{"c": true})
	f.setDown("c", true)
	f.store.StoreHint("c", m)
	if n, _ := f.pending(); n != 4 {
		t.Errorf("pending hints %d after c came back and went down again, want 4", n)
	}

	// The byte bound per target: a store that holds 3 hints' worth drops the 4th.
	g := newHintFixture(t, 1)
	g.store.StoreHint("b", m)
	if got := g.store.dropped[dropFull].Load(); got != 1 {
		t.Errorf("a hint larger than the bound: dropped %d as full, want 1", got)
	}
	_, one := f.pending()
	one /= 4
	h := newHintFixture(t, 3*one)
	for range 5 {
		h.store.StoreHint("b", m)
	}
	h.store.StoreHint("c", m) // another target has its own bound
	if n, b := h.pending(); n != 4 || b > 4*one {
		t.Errorf("bounded store holds %d hints (%d bytes), want 4 (3 for b, 1 for c)", n, b)
	}
	if got := h.store.dropped[dropFull].Load(); got != 2 {
		t.Errorf("hints dropped as full: %d, want 2", got)
	}

	// The counts survive a restart.
	h.store.close()
	h.open(3 * one)
	if n, _ := h.pending(); n != 4 {
		t.Errorf("after reopening: %d hints, want 4", n)
	}
}

// fakeReplica answers replayed mutations.
type fakeReplica struct {
	mu   sync.Mutex
	got  []string // "target:token"
	fail map[coordinator.NodeID]error
	bad  map[coordinator.NodeID]bool
	mode []replicapb.Limiter_Mode
}

func (r *fakeReplica) send(_ context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fail[to]; err != nil {
		return nil, err
	}
	if r.bad[to] {
		return &replicapb.MutateResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_BAD_REQUEST, Message: "no"}}, nil
	}
	r.got = append(r.got, string(to)+":"+string(rune('0'+req.Mutation.Token)))
	r.mode = append(r.mode, req.GetLimiter().GetMode())
	return &replicapb.MutateResponse{Status: replicapb.Status_STATUS_OK}, nil
}

func TestHintReplay(t *testing.T) {
	s := hintSchema(t)
	f := newHintFixture(t, 1<<20)
	rep := &fakeReplica{fail: map[coordinator.NodeID]error{}, bad: map[coordinator.NodeID]bool{}}
	members := map[coordinator.NodeID]bool{"b": true, "c": true, "d": true}
	r := &hintReplayer{
		store: f.store, log: slog.New(slog.DiscardHandler), now: f.now, send: rep.send, tables: s.TableByID,
		isMember: func(id coordinator.NodeID) bool { _, ok := members[id]; return ok },
		isLive:   f.isLive, timeout: time.Second, throttle: rate.NewLimiter(rate.Inf, 1),
	}
	for i := 1; i <= 3; i++ {
		f.store.StoreHint("b", hintMutation(t, s, "t", i))
	}
	f.store.StoreHint("c", hintMutation(t, s, "t", 4))
	f.store.StoreHint("gone", hintMutation(t, s, "t", 5))
	f.store.StoreHint("d", hintMutation(t, s, "short", 6))

	// b is down: nothing for it. c fails: its hint stays. gone left the cluster: dropped. d's
	// hint is older than its table's gc_grace_seconds (60 s): dropped, not replayed.
	f.setDown("b", true)
	rep.fail["c"] = errors.New("connection refused")
	f.advance(61 * time.Second)
	r.round(context.Background())
	if len(rep.got) != 0 {
		t.Errorf("replayed %v, want nothing", rep.got)
	}
	if n, _ := f.pending(); n != 4 {
		t.Errorf("%d hints pending, want 4 (b's 3 and c's)", n)
	}
	if got := f.store.dropped[dropRemoved].Load(); got != 1 {
		t.Errorf("dropped as removed: %d, want 1", got)
	}
	if got := f.store.dropped[dropExpired].Load(); got != 1 {
		t.Errorf("dropped as expired: %d, want 1", got)
	}

	// Both up: every hint is replayed, in the order it was stored, exempt from the limiter.
	f.setDown("b", false)
	delete(rep.fail, "c")
	r.round(context.Background())
	slices.Sort(rep.got)
	if want := []string{"b:1", "b:2", "b:3", "c:4"}; !slices.Equal(rep.got, want) {
		t.Errorf("replayed %v, want %v", rep.got, want)
	}
	for _, m := range rep.mode {
		if m != replicapb.Limiter_NONE {
			t.Errorf("a hint was replayed in limiter mode %v, want NONE", m)
		}
	}
	if n, b := f.pending(); n != 0 || b != 0 {
		t.Errorf("%d hints (%d bytes) pending after replay, want none", n, b)
	}
	if got := f.store.replayed.Load(); got != 4 {
		t.Errorf("replayed counter %d, want 4", got)
	}

	// A replica that calls a hint malformed has it dropped rather than retried forever.
	f.store.StoreHint("b", hintMutation(t, s, "t", 7))
	rep.bad["b"] = true
	r.round(context.Background())
	if got := f.store.dropped[dropRefused].Load(); got != 1 {
		t.Errorf("dropped as refused: %d, want 1", got)
	}
	if n, _ := f.pending(); n != 0 {
		t.Errorf("%d hints pending, want 0", n)
	}
}
