package partitionlimit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// t0Unix is an arbitrary whole second, in unix seconds, used as the origin of test time.
const t0Unix = 1_700_000_000

// at returns the origin of test time plus d.
func at(d time.Duration) time.Time { return time.Unix(t0Unix, 0).Add(d) }

func newTable(t testing.TB, opts Options) *Table {
	t.Helper()
	tb, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v) failed: %v", opts, err)
	}
	return tb
}

// step is one line of a counter transcript: account n operations (n = 0: peek) on a key at a
// time and expect the returned count.
type step struct {
	at    time.Duration
	token int64
	label uint32
	n     uint32
	want  uint32
}

func runTranscript(t *testing.T, tb *Table, steps []step) {
	t.Helper()
	for i, s := range steps {
		got := tb.AccountN(s.token, s.label, s.n, at(s.at))
		if got != s.want {
			t.Fatalf("step %d: AccountN(token=%d, label=%d, n=%d, t0+%v) = %d, want %d",
				i, s.token, s.label, s.n, s.at, got, s.want)
		}
	}
}

func TestHalving(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{{
		name: "the halving example from the issue",
		steps: []step{
			{at: 0, token: 7, n: 16, want: 16},
			{at: time.Second, token: 7, n: 1, want: 9},      // 16/2 + 1
			{at: 3 * time.Second, token: 7, n: 1, want: 3},  // 9/4 + 1
			{at: 13 * time.Second, token: 7, n: 1, want: 1}, // 3/1024 + 1
		},
	}, {
		name: "no halving within a second, one at each boundary",
		steps: []step{
			{at: 0, token: 7, n: 100, want: 100},
			{at: 999 * time.Millisecond, token: 7, n: 1, want: 101},
			{at: 999_999_999 * time.Nanosecond, token: 7, n: 0, want: 101},
			{at: time.Second, token: 7, n: 0, want: 50},
			{at: 1999 * time.Millisecond, token: 7, n: 1, want: 51},
			{at: 2 * time.Second, token: 7, n: 1, want: 26},
		},
	}, {
		name: "boundaries are wall-clock seconds, not seconds since the last access",
		steps: []step{
			{at: 900 * time.Millisecond, token: 7, n: 8, want: 8},
			{at: 1100 * time.Millisecond, token: 7, n: 0, want: 4},
		},
	}, {
		name: "a counter decays to zero after enough seconds, including more than 32",
		steps: []step{
			{at: 0, token: 7, n: math.MaxUint32, want: math.MaxUint32},
			{at: 31 * time.Second, token: 7, n: 0, want: 1},
			{at: 32 * time.Second, token: 7, n: 0, want: 0},
			{at: 100 * time.Second, token: 7, n: 0, want: 0},
			{at: 100 * time.Second, token: 7, n: 1, want: 1},
		},
	}, {
		name: "counts saturate instead of wrapping",
		steps: []step{
			{at: 0, token: 7, n: math.MaxUint32 - 1, want: math.MaxUint32 - 1},
			{at: 0, token: 7, n: 1, want: math.MaxUint32},
			{at: 0, token: 7, n: 5, want: math.MaxUint32},
			{at: time.Second, token: 7, n: 1, want: math.MaxUint32/2 + 1},
		},
	}, {
		name: "peek of an unknown key is zero and does not insert it",
		steps: []step{
			{at: 0, token: 7, n: 0, want: 0},
			{at: 0, token: 7, n: 0, want: 0},
			{at: 0, token: 7, n: 1, want: 1},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runTranscript(t, newTable(t, Options{Capacity: 1024}), tt.steps)
		})
	}
}

func TestKeysAreCountedSeparately(t *testing.T) {
	// Keys that differ only in the label, only in the low or high half of the token, or by sign.
	keys := []struct {
		token int64
		label uint32
	}{
		{0, 0}, {0, 1}, {1, 0}, {1, 1}, {1, 2}, {1 << 32, 1}, {1<<32 | 1, 1}, {-1, 1},
		{math.MinInt64, 1}, {math.MaxInt64, 1}, {-1, math.MaxUint32},
	}
	tb := newTable(t, Options{Capacity: 1024})
	for i, k := range keys {
		for range i + 1 {
			tb.Account(k.token, k.label, at(0))
		}
	}
	for i, k := range keys {
		if got := tb.Peek(k.token, k.label, at(0)); got != uint32(i+1) {
			t.Errorf("Peek(token=%d, label=%d) = %d after %d increments of that key, want %d",
				k.token, k.label, got, i+1, i+1)
		}
	}
	if st := tb.Stats(at(0)); st.Entries != len(keys) {
		t.Errorf("Stats().Entries = %d with %d distinct keys accounted, want %d", st.Entries, len(keys), len(keys))
	}
}

func TestClockGoingBackwards(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{{
		name: "a few seconds back: no decay, and the stamp is kept so halving resumes on time",
		steps: []step{
			{at: 10 * time.Second, token: 7, n: 16, want: 16},
			{at: 5 * time.Second, token: 7, n: 1, want: 17},
			{at: 5 * time.Second, token: 7, n: 0, want: 17},
			{at: 10 * time.Second, token: 7, n: 0, want: 17},
			{at: 11 * time.Second, token: 7, n: 1, want: 9}, // 17/2 + 1: halved once, not six times
		},
	}, {
		name: "a caller that read the clock just before a boundary another caller has crossed",
		steps: []step{
			{at: 10 * time.Second, token: 7, n: 16, want: 16},
			{at: 9999 * time.Millisecond, token: 7, n: 1, want: 17},
			{at: 10500 * time.Millisecond, token: 7, n: 1, want: 18},
			{at: 11 * time.Second, token: 7, n: 0, want: 9},
		},
	}, {
		name: "a clock stepped back an hour: no decay, then halving follows the new clock",
		steps: []step{
			{at: 3610 * time.Second, token: 7, n: 16, want: 16},
			{at: 10 * time.Second, token: 7, n: 1, want: 17},
			{at: 10 * time.Second, token: 7, n: 0, want: 17},
			{at: 11 * time.Second, token: 7, n: 1, want: 9},
			{at: 13 * time.Second, token: 7, n: 0, want: 2},
		},
	}, {
		name: "a peek in the past does not restamp the counter",
		steps: []step{
			{at: 3610 * time.Second, token: 7, n: 16, want: 16},
			{at: 10 * time.Second, token: 7, n: 0, want: 16},
			{at: 3611 * time.Second, token: 7, n: 0, want: 8},
		},
	}, {
		name: "before 1970 and across the 32-bit wrap of the stamp",
		steps: []step{
			{at: -1_700_000_001 * time.Second, token: 7, n: 8, want: 8},
			{at: -1_700_000_000 * time.Second, token: 7, n: 0, want: 4},
			{at: (1<<32 - 1_700_000_000 - 1) * time.Second, token: 8, n: 8, want: 8},
			{at: (1<<32 - 1_700_000_000 + 1) * time.Second, token: 8, n: 0, want: 2},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runTranscript(t, newTable(t, Options{Capacity: 1024}), tt.steps)
		})
	}

	t.Run("random times never raise a count above the last stored count plus the increment", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		tb := newTable(t, Options{Capacity: 1024})
		stored := uint32(0) // the count the last AccountN with n > 0 returned
		for i := range 20_000 {
			now := at(time.Duration(rng.Int64N(int64(40 * time.Second))))
			n := uint32(rng.IntN(3))
			got := tb.AccountN(7, 1, n, now)
			if got > stored+n {
				t.Fatalf("op %d: AccountN(n=%d, t0+%v) = %d after the stored count was %d; a count rose by more than its increment",
					i, n, now.Sub(at(0)), got, stored)
			}
			if n > 0 {
				stored = got
			}
		}
	})
}

func TestEviction(t *testing.T) {
	// One shard of exactly one window: every key competes for the same eight slots.
	tb := newTable(t, Options{Capacity: Window, Shards: 1})
	const hot = 100
	tb.AccountN(hot, 0, 1000, at(0))
	for k := int64(1); k < Window; k++ {
		tb.AccountN(k, 0, uint32(k+1), at(0)) // counts 2 … 8
	}
	if got := tb.Account(50, 0, at(0)); got != 1 {
		t.Fatalf("Account(new key) = %d into a full window, want 1", got)
	}
	checks := []struct {
		token int64
		want  uint32
		why   string
	}{
		{hot, 1000, "the hot key must never be the one evicted"},
		{1, 0, "key 1 had the smallest count (2) and must be the one evicted"},
		{2, 3, "key 2 was not the smallest and must survive"},
		{7, 8, "key 7 was not the smallest and must survive"},
		{50, 1, "the new key must be tracked"},
	}
	for _, c := range checks {
		if got := tb.Peek(c.token, 0, at(0)); got != c.want {
			t.Errorf("Peek(token=%d) = %d, want %d: %s", c.token, got, c.want, c.why)
		}
	}
	if st := tb.Stats(at(0)); st.Evictions != 1 || st.Entries != Window || st.Inserts != Window+1 {
		t.Errorf("Stats() = %+v, want 1 eviction, %d entries and %d inserts", st, Window, Window+1)
	}

	// Three seconds later only the hot key (125) and key 7 (8>>3 = 1) are live: the others'
	// slots are free and a new key takes one without evicting anything.
	later := at(3 * time.Second)
	if got := tb.Account(51, 0, later); got != 1 {
		t.Fatalf("Account(new key, t0+3s) = %d, want 1", got)
	}
	if got := tb.Peek(hot, 0, later); got != 125 {
		t.Errorf("Peek(hot, t0+3s) = %d, want 1000>>3 = 125", got)
	}
	if st := tb.Stats(later); st.Evictions != 1 || st.Entries != 3 {
		t.Errorf("Stats(t0+3s) = %+v, want still 1 eviction and 3 live entries (hot, key 7, new key)", st)
	}

	// A key whose own counter decayed to zero is re-inserted in place.
	if got := tb.Account(7, 0, at(10*time.Second)); got != 1 {
		t.Errorf("Account(key 7, t0+10s) = %d after its count decayed to 0, want 1", got)
	}
}

func TestMillionDistinctTokensInOneSecond(t *testing.T) {
	for _, capacity := range []int{DefaultCapacity, 65_536} {
		t.Run(fmt.Sprintf("%d slots", capacity), func(t *testing.T) {
			tb := newTable(t, Options{Capacity: capacity})
			rng := rand.New(rand.NewPCG(3, uint64(capacity)))
			const n = 1_000_000
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i := range n {
				// Distinct tokens: a random odd multiplier is a bijection on 64 bits.
				token := int64(uint64(i) * (rng.Uint64() | 1))
				now := at(time.Duration(i) * (time.Second / n))
				if got := tb.Account(token, 3, now); got != 1 {
					t.Fatalf("Account(distinct token %d of %d) = %d, want 1", i, n, got)
				}
			}
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
				t.Errorf("accounting %d keys allocated %d bytes, want the table to stay at its %d slots", n, grew, tb.Capacity())
			}
			st := tb.Stats(at(time.Second - 1))
			if tb.Capacity() != capacity || st.Capacity != capacity {
				t.Errorf("Capacity() = %d, Stats().Capacity = %d, want the configured %d", tb.Capacity(), st.Capacity, capacity)
			}
			if st.Entries > capacity {
				t.Errorf("Stats().Entries = %d, above the capacity %d", st.Entries, capacity)
			}
			if st.Entries+int(st.Evictions) != n || st.Inserts != n || st.Lookups != n {
				t.Errorf("Stats() = %+v, want entries + evictions = inserts = lookups = %d", st, n)
			}
			t.Logf("%d distinct keys into %d slots: %d tracked, %d evicted", n, capacity, st.Entries, st.Evictions)
		})
	}
}

func TestHotPartitionSurvivesColdFlood(t *testing.T) {
	t.Parallel()
	const (
		limit   = 1000
		hotRate = 10 * limit // offered to the hot partition, per second
		cold    = 1_000_000  // distinct cold partitions per second
		seconds = 3
		hot     = int64(0x5eed)
	)
	flooded := newTable(t, Options{Capacity: 65_536})
	quiet := newTable(t, Options{Capacity: 65_536})
	rng := rand.New(rand.NewPCG(4, 5))
	perSecond := cold + hotRate
	worst := 0.0
	for s := range seconds {
		for i := range perSecond {
			now := at(time.Duration(s)*time.Second + time.Duration(i)*(time.Second/time.Duration(perSecond)))
			if i%(perSecond/hotRate) != 0 {
				flooded.Account(int64(rng.Uint64()), 1, now)
				continue
			}
			got, want := flooded.Account(hot, 1, now), quiet.Account(hot, 1, now)
			if dev := math.Abs(float64(got)-float64(want)) / float64(want); dev > worst {
				worst = dev
			}
			if 10*got < 9*want || 10*got > 11*want {
				t.Fatalf("second %d op %d: hot counter = %d under a flood of %d cold partitions/s, want within 10%% of %d (no flood)",
					s, i, got, cold, want)
			}
		}
	}
	st := flooded.Stats(at(seconds * time.Second))
	if st.Evictions < cold {
		t.Errorf("Stats().Evictions = %d, want at least %d: the flood should have overflowed the table", st.Evictions, cold)
	}
	t.Logf("largest deviation of the hot counter from the unflooded one: %.4f%%; %d evictions", 100*worst, st.Evictions)
}

func TestOptions(t *testing.T) {
	tests := []struct {
		opts         Options
		wantCapacity int
		wantShards   int
		wantErr      string
	}{
		{opts: Options{}, wantCapacity: DefaultCapacity, wantShards: DefaultShards},
		{opts: Options{Capacity: 65_536}, wantCapacity: 65_536, wantShards: 256},
		{opts: Options{Capacity: 1_000_000}, wantCapacity: 1_000_192, wantShards: 256},
		{opts: Options{Capacity: 1000}, wantCapacity: 1000, wantShards: 8},
		{opts: Options{Capacity: 100}, wantCapacity: 100, wantShards: 1},
		{opts: Options{Capacity: Window}, wantCapacity: Window, wantShards: 1},
		{opts: Options{Capacity: 100, Shards: 4}, wantCapacity: 100, wantShards: 4},
		{opts: Options{Capacity: 101, Shards: 4}, wantCapacity: 104, wantShards: 4},
		{opts: Options{Capacity: -1}, wantErr: "Options.Capacity (limiter_capacity) is -1, want 8 to 1073741824"},
		{opts: Options{Capacity: Window - 1}, wantErr: "Options.Capacity (limiter_capacity) is 7"},
		{opts: Options{Capacity: MaxCapacity + 1}, wantErr: "is 1073741825, want 8 to"},
		{opts: Options{Shards: -2}, wantErr: "Options.Shards is -2, want 1 to"},
		{opts: Options{Shards: 2 * MaxShards}, wantErr: "Options.Shards is"},
		{opts: Options{Shards: 3}, wantErr: "Options.Shards is 3, want a power of two"},
		{opts: Options{Capacity: 64, Shards: 16}, wantErr: "Options.Capacity (limiter_capacity) 64 over Options.Shards 16 leaves fewer than 8 slots per shard"},
	}
	for _, tt := range tests {
		tb, err := New(tt.opts)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "partitionlimit: ") {
				t.Errorf("New(%+v) error = %v, want a partitionlimit error containing %q", tt.opts, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("New(%+v) failed: %v", tt.opts, err)
		case tb.Capacity() != tt.wantCapacity || len(tb.shards) != tt.wantShards:
			t.Errorf("New(%+v) has capacity %d in %d shards, want %d in %d",
				tt.opts, tb.Capacity(), len(tb.shards), tt.wantCapacity, tt.wantShards)
		}
	}
	if got := (*Options)(nil).EnsureDefaults(); got.Capacity != DefaultCapacity || got.Shards != DefaultShards {
		t.Errorf("(*Options)(nil).EnsureDefaults() = %+v, want the defaults", got)
	}
	for _, o := range []Options{{}, {Capacity: 1000}, {Capacity: 100, Shards: 4, NoOnsetBound: true}} {
		once := *o.EnsureDefaults()
		if twice := *o.EnsureDefaults(); twice != once {
			t.Errorf("EnsureDefaults twice = %+v, want once = %+v", twice, once)
		}
	}
}

func TestSlotIsTwentyFourBytes(t *testing.T) {
	if size := unsafe.Sizeof(slot{}); size != 24 {
		t.Errorf("a slot takes %d bytes, want 24", size)
	}
	tb := newTable(t, Options{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tb2 := newTable(t, Options{})
	runtime.ReadMemStats(&after)
	perSlot := float64(after.TotalAlloc-before.TotalAlloc) / float64(tb2.Capacity())
	if perSlot > 24.1 {
		t.Errorf("New(Options{}) allocated %.2f bytes per slot, want at most 24.1", perSlot)
	}
	runtime.KeepAlive(tb)
	runtime.KeepAlive(tb2)
}

func TestNoAllocations(t *testing.T) {
	tb := newTable(t, Options{})
	i := int64(0)
	allocs := testing.AllocsPerRun(10_000, func() {
		i++
		now := at(time.Duration(i) * time.Millisecond)
		tb.Account(i, 1, now)
		tb.AccountN(i%97, 2, 3, now)
		tb.Peek(i, 1, now)
		d := tb.Decide(i%5, 1, 10, 0.5, now)
		_ = Admit(d.Count, 10, 0.5)
		_ = RetryAfter(d.Count, 10, now)
	})
	if allocs != 0 {
		t.Errorf("Account, AccountN, Peek, Decide, Admit and RetryAfter allocate %.1f times per call, want 0", allocs)
	}
}

func TestConcurrentAccounting(t *testing.T) {
	const (
		goroutines = 8
		ops        = 20_000
		hot        = int64(-42)
	)
	tb := newTable(t, Options{Capacity: 65_536})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for i := range ops {
				// All within one second, so no count decays and totals are exact.
				now := at(time.Duration(rng.Int64N(int64(time.Second))))
				tb.Account(hot, 1, now)
				tb.Account(int64(g), 2, now)
				if i%1000 == 0 {
					tb.Peek(hot, 1, now)
					tb.Stats(now)
				}
			}
		})
	}
	wg.Wait()
	now := at(time.Second - 1)
	if got := tb.Peek(hot, 1, now); got != goroutines*ops {
		t.Errorf("Peek(hot) = %d after %d goroutines accounted it %d times each, want %d", got, goroutines, ops, goroutines*ops)
	}
	for g := range goroutines {
		if got := tb.Peek(int64(g), 2, now); got != ops {
			t.Errorf("Peek(goroutine %d's key) = %d, want %d", g, got, ops)
		}
	}
}
