package hints

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// fakeSender answers replayed mutations as the test says, and records what it applied.
type fakeSender struct {
	mu        sync.Mutex
	got       []string // "target:token"
	modes     []replicapb.Limiter_Mode
	fail      map[coordinator.NodeID]error // the target's every call fails so
	failToken map[int64]error              // the call of the hint with this token fails so
	bad       map[coordinator.NodeID]bool  // the target calls every hint malformed
	onSend    func(to coordinator.NodeID)  // called before answering, without mu
}

func newFakeSender() *fakeSender {
	return &fakeSender{fail: map[coordinator.NodeID]error{}, failToken: map[int64]error{}, bad: map[coordinator.NodeID]bool{}}
}

func (r *fakeSender) Mutate(_ context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	if r.onSend != nil {
		r.onSend(to)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fail[to]; err != nil {
		return nil, err
	}
	if err := r.failToken[req.GetMutation().GetToken()]; err != nil {
		return nil, err
	}
	if r.bad[to] {
		return &replicapb.MutateResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_BAD_REQUEST, Message: "no"}}, nil
	}
	r.got = append(r.got, string(to)+":"+strconv.FormatInt(req.GetMutation().GetToken(), 10))
	r.modes = append(r.modes, req.GetLimiter().GetMode())
	return &replicapb.MutateResponse{Status: replicapb.Status_STATUS_OK}, nil
}

// sent returns what was applied, by target and then token (a replay sends a window of hints
// at once, which may arrive in any order; the tests store each target's hints in the order of
// their tokens), and forgets it.
func (r *fakeSender) sent() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	slices.SortFunc(got, func(a, b string) int {
		at, atok, _ := strings.Cut(a, ":")
		bt, btok, _ := strings.Cut(b, ":")
		an, _ := strconv.Atoi(atok)
		bn, _ := strconv.Atoi(btok)
		return cmp.Or(strings.Compare(at, bt), cmp.Compare(an, bn))
	})
	return strings.Join(got, " ")
}

// sentTo returns what target applied, in order, and forgets everything.
func (r *fakeSender) sentTo(target coordinator.NodeID) string {
	var out []string
	for _, s := range strings.Fields(r.sent()) {
		if strings.HasPrefix(s, string(target)+":") {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

func newTestReplayer(t *testing.T, f *fixture, s *schema.Schema, rep *fakeSender) *Replayer {
	t.Helper()
	r, err := NewReplayer(f.store, ReplayConfig{Sender: rep, Tables: s, Members: f.members, Now: f.now, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReplay(t *testing.T) {
	s := testSchema(t)
	f := newFixture(t, 1<<20)
	f.members.set("gone", true)
	rep := newFakeSender()
	r := newTestReplayer(t, f, s, rep)
	for i := 1; i <= 3; i++ {
		f.store.StoreHint("b", mutation(t, s, "t", i))
	}
	f.store.StoreHint("c", mutation(t, s, "t", 4))
	f.store.StoreHint("gone", mutation(t, s, "t", 5))
	f.store.StoreHint("d", mutation(t, s, "short", 6))
	f.members.remove("gone")

	// b is down: nothing for it. c fails: its hint stays. gone left the cluster: dropped. d's
	// hint is older than its table's gc_grace_seconds (60 s): dropped, not replayed.
	f.members.set("b", false)
	rep.fail["c"] = errors.New("connection refused")
	f.advance(61 * time.Second)
	r.round(context.Background())
	if got := rep.sent(); got != "" {
		t.Errorf("replayed %s, want nothing", got)
	}
	if n, _ := f.store.Pending(); n != 4 {
		t.Errorf("%d hints pending, want 4 (b's 3 and c's)", n)
	}
	if got := f.store.dropped[dropRemoved].Load(); got != 1 {
		t.Errorf("dropped as removed: %d, want 1", got)
	}
	if got := f.store.dropped[dropExpired].Load(); got != 1 {
		t.Errorf("dropped as expired: %d, want 1", got)
	}

	// Both up: every hint is replayed, in the order it was stored, exempt from the limiter.
	f.members.set("b", true)
	delete(rep.fail, "c")
	r.round(context.Background())
	rep.mu.Lock()
	modes := rep.modes
	rep.mu.Unlock()
	got := rep.sent()
	if b, c := strings.Count(got, "b:"), strings.Count(got, "c:"); b != 3 || c != 1 {
		t.Errorf("replayed %s, want b's 3 hints and c's", got)
	}
	if i := strings.Index(got, "b:1 b:2 b:3"); i < 0 {
		t.Errorf("replayed %s, want b's hints in the order they were stored (b:1 b:2 b:3)", got)
	}
	for _, m := range modes {
		if m != replicapb.Limiter_NONE {
			t.Errorf("a hint was replayed in limiter mode %v, want NONE", m)
		}
	}
	if n, b := f.store.Pending(); n != 0 || b != 0 {
		t.Errorf("%d hints (%d bytes) pending after replay, want none", n, b)
	}
	if got := f.store.replayed.Load(); got != 4 {
		t.Errorf("replayed counter %d, want 4", got)
	}

	// A replica that calls a hint malformed has it dropped rather than retried forever.
	f.store.StoreHint("b", mutation(t, s, "t", 7))
	rep.bad["b"] = true
	r.round(context.Background())
	if got := f.store.dropped[dropRefused].Load(); got != 1 {
		t.Errorf("dropped as refused: %d, want 1", got)
	}
	if n, _ := f.store.Pending(); n != 0 {
		t.Errorf("%d hints pending, want 0", n)
	}
}

// TestReplayStopsAtTheFirstFailure: a target's replay stops at the first hint it fails and
// keeps it and every later one, also those the replica applied meanwhile (they were in
// flight), so that the next round replays them in the order they were stored; an error
// answer (not a refusal) is a failure too.
func TestReplayStopsAtTheFirstFailure(t *testing.T) {
	s := testSchema(t)
	f := newFixture(t, 1<<20)
	rep := newFakeSender()
	r := newTestReplayer(t, f, s, rep)
	for i := 1; i <= 4; i++ {
		f.store.StoreHint("b", mutation(t, s, "t", i))
	}
	rep.failToken[2] = context.DeadlineExceeded
	r.round(context.Background())
	if got := rep.sent(); !strings.HasPrefix(got, "b:1") || strings.Contains(got, "b:2") {
		t.Errorf("with hint 2 failing: replayed %s, want b:1 and not b:2", got)
	}
	if n, _ := f.store.Pending(); n != 3 {
		t.Errorf("%d hints pending after hint 2 failed, want 3 (2, 3 and 4)", n)
	}
	if got := f.store.replayed.Load(); got != 1 {
		t.Errorf("replayed counter %d after hint 2 failed, want 1", got)
	}
	delete(rep.failToken, 2)
	r.round(context.Background())
	if got, want := rep.sent(), "b:2 b:3 b:4"; got != want {
		t.Errorf("the next round replayed %s, want %s", got, want)
	}
	if n, _ := f.store.Pending(); n != 0 {
		t.Errorf("%d hints pending after the next round, want none", n)
	}

	// A replica answering an error other than BAD_REQUEST keeps the hint.
	f.store.StoreHint("b", mutation(t, s, "t", 5))
	failing := &errorSender{}
	r2, err := NewReplayer(f.store, ReplayConfig{Sender: failing, Tables: s, Members: f.members, Now: f.now, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r2.round(context.Background())
	if n, _ := f.store.Pending(); n != 1 {
		t.Errorf("%d hints pending after the replica answered INTERNAL, want 1", n)
	}
	if err := r2.Drain(context.Background()); err == nil || !strings.Contains(err.Error(), "replica b: STATUS_ERROR: busy") {
		t.Errorf("Drain with the replica answering errors = %v, want one naming replica b and its answer", err)
	}
}

// errorSender answers every write with an error status that is not a refusal.
type errorSender struct{}

func (errorSender) Mutate(context.Context, coordinator.NodeID, *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	return &replicapb.MutateResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: replicapb.Error_INTERNAL, Message: "busy"}}, nil
}

// TestReplayDropsWhatCannotBeReplayed: a hint of a dropped table, or one that does not decode,
// is dropped with its reason, and the hints after it are replayed.
func TestReplayDropsWhatCannotBeReplayed(t *testing.T) {
	s := testSchema(t)
	f := newFixture(t, 1<<20)
	f.store.StoreHint("b", mutation(t, s, "t", 1))
	unknown := mutation(t, s, "t", 2)
	unknown.TableId = 999_999
	f.store.StoreHint("b", unknown)
	f.advance(time.Nanosecond)
	// A corrupt hint, written past the store's API, between the others; counted on reopening.
	key := hintPrefix("b")
	key = append(key, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	for i := range 8 {
		key[len(key)-16+i] = byte(uint64(f.now().UnixNano()) >> (56 - 8*i))
	}
	if err := f.store.db.Set(key, []byte{0xff}, nil); err != nil {
		t.Fatal(err)
	}
	f.advance(time.Nanosecond)
	f.store.StoreHint("b", mutation(t, s, "t", 3))
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	f.open(1 << 20)
	if n, _ := f.store.Pending(); n != 4 {
		t.Fatalf("%d hints after reopening, want 4", n)
	}

	rep := newFakeSender()
	newTestReplayer(t, f, s, rep).round(context.Background())
	if got, want := rep.sent(), "b:1 b:3"; got != want {
		t.Errorf("replayed %s, want %s", got, want)
	}
	for reason, want := range map[string]uint64{dropTable: 1, dropCorrupt: 1} {
		if got := f.store.dropped[reason].Load(); got != want {
			t.Errorf("dropped as %s: %d, want %d", reason, got, want)
		}
	}
	if n, b := f.store.Pending(); n != 0 || b != 0 {
		t.Errorf("%d hints (%d bytes) pending, want none", n, b)
	}
}

func TestDrain(t *testing.T) {
	s := testSchema(t)
	f := newFixture(t, 1<<20)
	rep := newFakeSender()
	paused := true
	r, err := NewReplayer(f.store, ReplayConfig{Sender: rep, Tables: s, Members: f.members, Now: f.now, Timeout: time.Second,
		Paused: func() bool { return paused }})
	if err != nil {
		t.Fatal(err)
	}
	f.members.set("gone", true)
	f.store.StoreHint("b", mutation(t, s, "t", 1))
	f.store.StoreHint("b", mutation(t, s, "t", 2))
	f.store.StoreHint("gone", mutation(t, s, "t", 3))
	f.members.remove("gone")

	// Paused rounds replay nothing; Drain replays everything anyway.
	r.round(context.Background())
	if got := rep.sent(); got != "" {
		t.Errorf("a paused round replayed %s, want nothing", got)
	}
	if err := r.Drain(context.Background()); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if got, want := rep.sent(), "b:1 b:2"; got != want {
		t.Errorf("Drain replayed %s, want %s", got, want)
	}
	if got := f.store.dropped[dropRemoved].Load(); got != 1 {
		t.Errorf("Drain dropped %d hints of a removed node, want 1", got)
	}

	// A target down fails the drain, naming it; its hint stays.
	f.members.set("c", false)
	f.store.StoreHint("c", mutation(t, s, "t", 4))
	if err := r.Drain(context.Background()); err == nil || !strings.Contains(err.Error(), "node c, which this node holds hints for, is down") {
		t.Errorf("Drain with c down = %v, want an error naming c down", err)
	}
	// A failing target fails it, naming it and wrapping the cause.
	f.members.set("c", true)
	rep.fail["c"] = context.DeadlineExceeded
	if err := r.Drain(context.Background()); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "replaying hints to c (0 replayed)") {
		t.Errorf("Drain with c failing = %v, want the failure, naming c", err)
	}
	if n, _ := f.store.Pending(); n != 1 {
		t.Errorf("%d hints pending after the failed drains, want c's 1", n)
	}
	// A canceled context ends it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Drain(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Drain with a canceled context = %v, want context.Canceled", err)
	}
}

// TestReplayerLoop: a started replayer replays at once, at every membership change, and every
// ReplayInterval; a change during a round starts another at once; while paused it replays
// nothing; Stop ends it.
func TestReplayerLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := testSchema(t)
		f := newFixture(t, 1<<20)
		rep := newFakeSender()
		var paused atomic.Bool
		r, err := NewReplayer(f.store, ReplayConfig{Sender: rep, Tables: s, Members: f.members, Now: f.now, Timeout: time.Second,
			Paused: paused.Load})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		f.members.set("b", false)
		f.store.StoreHint("b", mutation(t, s, "t", 1))
		r.Start()
		defer r.Stop()
		synctest.Wait()
		if got := rep.sent(); got != "" {
			t.Fatalf("replayed %s with b down, want nothing", got)
		}

		// b comes up: replayed at once, without waiting for the period.
		f.members.set("b", true)
		synctest.Wait()
		if got, want := rep.sent(), "b:1"; got != want || time.Since(start) != 0 {
			t.Fatalf("after b came up: replayed %s after %v, want %s at once", got, time.Since(start), want)
		}

		// A hint stored with no change is replayed at the next period.
		f.store.StoreHint("b", mutation(t, s, "t", 2))
		time.Sleep(ReplayInterval - time.Millisecond)
		synctest.Wait()
		if got := rep.sent(); got != "" {
			t.Fatalf("replayed %s before the period ended, want nothing", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got, want := rep.sent(), "b:2"; got != want {
			t.Fatalf("after one period: replayed %s, want %s", got, want)
		}

		// A change during a round (here: while b's hint is sent, c gets a hint and d changes)
		// starts another round at once, which replays c's.
		var once sync.Once
		rep.onSend = func(to coordinator.NodeID) {
			once.Do(func() {
				f.store.StoreHint("c", mutation(t, s, "t", 4))
				f.members.set("d", true)
			})
		}
		f.store.StoreHint("b", mutation(t, s, "t", 3))
		at := time.Now()
		f.members.set("e", false)
		synctest.Wait()
		if got, want := rep.sent(), "b:3 c:4"; got != want || time.Since(at) != 0 {
			t.Fatalf("a change during a round: replayed %s after %v, want %s at once", got, time.Since(at), want)
		}

		// Paused: neither changes nor periods replay.
		paused.Store(true)
		f.store.StoreHint("b", mutation(t, s, "t", 5))
		f.members.set("e", true)
		time.Sleep(2 * ReplayInterval)
		synctest.Wait()
		if got := rep.sent(); got != "" {
			t.Fatalf("a paused replayer replayed %s, want nothing", got)
		}
		paused.Store(false)
		time.Sleep(ReplayInterval)
		synctest.Wait()
		if got, want := rep.sent(), "b:5"; got != want {
			t.Fatalf("after unpausing: replayed %s, want %s", got, want)
		}

		// Stopped: nothing more.
		r.Stop()
		f.store.StoreHint("b", mutation(t, s, "t", 6))
		f.members.set("e", false)
		time.Sleep(2 * ReplayInterval)
		synctest.Wait()
		if got := rep.sent(); got != "" {
			t.Fatalf("a stopped replayer replayed %s, want nothing", got)
		}
	})
}

// TestReplayThrottle: replay sends at most the store's Options.Throttle bytes per second, in
// bursts of at most ReplayConfig.MaxBurst; a hint larger than the burst takes the whole burst.
func TestReplayThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := testSchema(t)
		f := newFixture(t, 1<<20)
		rep := newFakeSender()
		const perSecond, burst = 1000, 500
		f.store.Close()
		f.throttle = perSecond
		f.open(1 << 20)
		r, err := NewReplayer(f.store, ReplayConfig{Sender: rep, Tables: s, Members: f.members, Now: f.now, Timeout: time.Second,
			MaxBurst: burst})
		if err != nil {
			t.Fatal(err)
		}
		var total int
		for i := 1; i <= 6; i++ {
			m := mutation(t, s, "t", i)
			m.PartitionKey = [][]byte{make([]byte, 400*i)} // the last ones are larger than the burst
			f.store.StoreHint("b", m)
		}
		hs, err := f.store.next("b", nil, batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			total += min(len(h.val), burst)
		}
		start := time.Now()
		r.round(context.Background())
		took := time.Since(start)
		if got, want := rep.sent(), "b:1 b:2 b:3 b:4 b:5 b:6"; got != want {
			t.Fatalf("replayed %s, want %s", got, want)
		}
		// The first burst is free; the rest comes at perSecond.
		want := time.Duration(float64(total-burst) / perSecond * float64(time.Second))
		if took < want-time.Millisecond || took > want+time.Millisecond {
			t.Errorf("%d throttled bytes at %d bytes/s (burst %d) took %v, want %v", total, perSecond, burst, took, want)
		}
	})
}

func TestNewReplayerRejectsBadConfig(t *testing.T) {
	s := testSchema(t)
	f := newFixture(t, 1<<20)
	ok := ReplayConfig{Sender: newFakeSender(), Tables: s, Members: f.members, Timeout: time.Second}
	for _, tc := range []struct {
		edit func(*ReplayConfig)
		want string
	}{
		{func(o *ReplayConfig) { o.Sender = nil }, "Sender is nil"},
		{func(o *ReplayConfig) { o.Tables = nil }, "Tables is nil"},
		{func(o *ReplayConfig) { o.Members = nil }, "Members is nil"},
		{func(o *ReplayConfig) { o.Timeout = 0 }, "Timeout is 0s"},
		{func(o *ReplayConfig) { o.MaxBurst = -1 }, "ReplayConfig.MaxBurst is -1, want ≥ 0 bytes"},
	} {
		o := ok
		tc.edit(&o)
		if _, err := NewReplayer(f.store, o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewReplayer with %s: %v, want an error with it", tc.want, err)
		}
	}
	if _, err := NewReplayer(nil, ok); err == nil {
		t.Error("NewReplayer(nil store) succeeded, want an error")
	}
	var r *Replayer
	r.Stop() // a nil replayer stops
	r2, _ := NewReplayer(f.store, ok)
	r2.Stop() // so does an unstarted one
}

func TestReplayConfigEnsureDefaults(t *testing.T) {
	var c ReplayConfig
	c.EnsureDefaults()
	if c.Logger == nil || c.Now == nil {
		t.Errorf("EnsureDefaults on zero ReplayConfig: logger %v, clock set %v; want both set", c.Logger, c.Now != nil)
	}
	logger, at := c.Logger, time.Unix(7, 0)
	set := ReplayConfig{Logger: logger, Now: func() time.Time { return at }, Timeout: time.Second, MaxBurst: 5}
	set.EnsureDefaults().EnsureDefaults()
	if set.Logger != logger || !set.Now().Equal(at) || set.Timeout != time.Second || set.MaxBurst != 5 {
		t.Errorf("EnsureDefaults changed set fields: %+v", set)
	}
}

// TestReplayPipelines: a target's hints are sent replayWindow at a time, without waiting for
// each answer (a replica a WAN round trip away takes a window per round trip), never more, and
// no more than replayWindowBytes of them; none is deleted before it is acknowledged, and once
// answered all are.
func TestReplayPipelines(t *testing.T) {
	for _, tc := range []struct {
		name        string
		hints, size int // size: the partition key's bytes
		window      int64
	}{
		{"small hints", 3*replayWindow + 5, 0, replayWindow},
		{"300 KiB hints", 8, 300 << 10, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := testSchema(t)
				f := newFixture(t, 64<<20)
				rep := newFakeSender()
				release := make(chan struct{})
				var inFlight, most atomic.Int64
				rep.onSend = func(coordinator.NodeID) {
					n := inFlight.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					<-release
					inFlight.Add(-1)
				}
				r := newTestReplayer(t, f, s, rep)
				for i := 1; i <= tc.hints; i++ {
					m := mutation(t, s, "t", i)
					if tc.size > 0 {
						m.PartitionKey = [][]byte{make([]byte, tc.size)}
					}
					f.store.StoreHint("b", m)
				}
				if n, _ := f.store.Pending(); n != tc.hints {
					t.Fatalf("%d hints stored, want %d", n, tc.hints)
				}
				done := make(chan struct{})
				go func() {
					r.round(context.Background())
					close(done)
				}()
				synctest.Wait()
				if got := inFlight.Load(); got != tc.window {
					t.Errorf("%d hints in flight while none is answered, want %d", got, tc.window)
				}
				if n, _ := f.store.Pending(); n != tc.hints {
					t.Errorf("%d hints pending while none is answered, want all %d", n, tc.hints)
				}
				close(release)
				<-done
				if got := most.Load(); got != tc.window {
					t.Errorf("at most %d hints were in flight at once, want %d", got, tc.window)
				}
				if got := len(strings.Fields(rep.sent())); got != tc.hints {
					t.Errorf("%d hints replayed, want %d", got, tc.hints)
				}
				if n, b := f.store.Pending(); n != 0 || b != 0 {
					t.Errorf("%d hints (%d bytes) pending after replay, want none", n, b)
				}
			})
		})
	}
}
