package admission

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func newController(t *testing.T, cfg Options) *Controller {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestShedsOnceSlotsAndQueueAreFull fills the two slots and the one place in the queue, and
// checks that the next request is refused at once, that the queued one runs when a slot frees,
// and what the metrics say.
func TestShedsOnceSlotsAndQueueAreFull(t *testing.T) {
	c := newController(t, Options{MaxConcurrent: 2, MaxQueued: 1, QueueTimeout: time.Hour})
	ctx := context.Background()
	for i := range 2 {
		if w, err := c.Try("a"); w != nil || err != nil {
			t.Fatalf("Try %d with free slots = %v, %v; want a slot", i+1, w, err)
		}
	}
	w, err := c.Try("a")
	if w == nil || err != nil {
		t.Fatalf("Try with the slots taken = %v, %v; want a place in the queue", w, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- w.Wait(ctx) }()

	err = c.Acquire(ctx, "b")
	var oe *OverloadedError
	if !errors.As(err, &oe) || oe.Reason != ReasonQueueFull || !errors.Is(err, ErrOverloaded) {
		t.Fatalf("Acquire with the slots and the queue full = %v, want an *OverloadedError (queue_full)", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "2 requests are executing and 1 waiting") || !strings.Contains(msg, "retry after 1h0m0s") {
		t.Errorf("the refusal says %q; want the bounds reached and a retry hint", msg)
	}
	if got := testutil.ToFloat64(c.shed.WithLabelValues(ReasonQueueFull)); got != 1 {
		t.Errorf("kvnode_admission_shed_total{reason=queue_full} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(c.inFlightGauge); got != 2 {
		t.Errorf("kvnode_admission_in_flight = %v, want 2", got)
	}
	if c.Queued() != 1 {
		t.Errorf("Queued() = %d, want 1", c.Queued())
	}
	c.Release()
	if err := <-waited; err != nil {
		t.Fatalf("the queued request, once a slot freed: %v", err)
	}
	if c.InFlight() != 2 || c.Queued() != 0 {
		t.Errorf("after the queued request took the slot: %d in flight, %d queued; want 2 and 0", c.InFlight(), c.Queued())
	}
	c.Release()
	c.Release()
	if c.InFlight() != 0 {
		t.Errorf("after every release %d in flight, want 0", c.InFlight())
	}
}

// TestQueueTimeout: a request that waits longer than the queue timeout is refused, counted as
// shed for that reason; one whose context ends first is not counted as shed.
func TestQueueTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, Options{MaxConcurrent: 1, MaxQueued: 10, QueueTimeout: 300 * time.Millisecond})
		if err := c.Acquire(context.Background(), "a"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := c.Acquire(context.Background(), "b")
		var oe *OverloadedError
		if !errors.As(err, &oe) || oe.Reason != ReasonQueueTimeout {
			t.Fatalf("Acquire behind a slot never released = %v, want an *OverloadedError (queue_timeout)", err)
		}
		if waited := time.Since(start); waited != 300*time.Millisecond {
			t.Errorf("the refused request waited %v, want the queue timeout, 300ms", waited)
		}
		if !strings.Contains(err.Error(), "waited 300ms") || !strings.Contains(err.Error(), "retry after 300ms") {
			t.Errorf("the refusal says %q; want the wait and a retry hint", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(100 * time.Millisecond) // virtual time: the bubble's clock
			cancel()
		}()
		if err := c.Acquire(ctx, "b"); !errors.Is(err, context.Canceled) {
			t.Errorf("Acquire whose context ends while queued = %v, want context.Canceled", err)
		}
		if got := testutil.ToFloat64(c.shed.WithLabelValues(ReasonQueueTimeout)); got != 1 {
			t.Errorf("kvnode_admission_shed_total{reason=queue_timeout} = %v, want 1", got)
		}
		if c.Queued() != 0 {
			t.Errorf("Queued() = %d after both waits ended, want 0", c.Queued())
		}
	})
}

// TestNoQueue: with MaxQueued negative a request that finds every slot taken is refused at once.
func TestNoQueue(t *testing.T) {
	c := newController(t, Options{MaxConcurrent: 1, MaxQueued: -1})
	if w, err := c.Try("a"); w != nil || err != nil {
		t.Fatalf("Try = %v, %v; want a slot", w, err)
	}
	if w, err := c.Try("b"); w != nil || !errors.Is(err, ErrOverloaded) {
		t.Fatalf("Try with the slot taken and no queue = %v, %v; want refused", w, err)
	}
}

func TestOptionsDefaultsAndValidation(t *testing.T) {
	c := (&Options{}).EnsureDefaults()
	if c.MaxConcurrent < DefaultConcurrentPerCPU || c.MaxQueued != DefaultQueuedPerConcurrent*c.MaxConcurrent || c.QueueTimeout != DefaultQueueTimeout {
		t.Errorf("defaults %+v, want %d per CPU, %d queued per slot, %v", *c, DefaultConcurrentPerCPU, DefaultQueuedPerConcurrent, DefaultQueueTimeout)
	}
	if twice := *c; *twice.EnsureDefaults() != *c {
		t.Errorf("EnsureDefaults twice = %+v, want once = %+v", twice, *c)
	}
	if set := (Options{MaxConcurrent: 3, MaxQueued: -1, QueueTimeout: time.Second}); *set.EnsureDefaults() != (Options{MaxConcurrent: 3, MaxQueued: -1, QueueTimeout: time.Second}) {
		t.Errorf("EnsureDefaults changed set fields: %+v", set)
	}
	for _, tc := range []struct {
		bad  Options
		want string
	}{
		{Options{MaxConcurrent: -1}, "admission: Options.MaxConcurrent (max_concurrent_requests) is -1, want ≥ 1"},
		{Options{QueueTimeout: -time.Second}, "admission: Options.QueueTimeout (request_queue_timeout) is -1s, want a positive duration"},
	} {
		if _, err := New(tc.bad); err == nil || err.Error() != tc.want {
			t.Errorf("New(%+v) = %v, want %q", tc.bad, err, tc.want)
		}
	}
	var nilc *Controller
	if w, err := nilc.Try("a"); w != nil || err != nil {
		t.Errorf("a nil controller's Try = %v, %v; want admitted", w, err)
	}
	nilc.Release()
}

// TestFloodDoesNotDelayAnotherClient: a flooding client holds the one slot and nine places of
// the queue; a second client's request, queued after all of them, gets the slot at the second
// release (its turn comes right after the flooder's), not behind the flooder's nine.
func TestFloodDoesNotDelayAnotherClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, Options{MaxConcurrent: 1, MaxQueued: 10, QueueTimeout: time.Hour})
		ctx := context.Background()
		if err := c.Acquire(ctx, "flood"); err != nil {
			t.Fatal(err)
		}
		admitted := make(chan string, 10)
		wait := func(name string) {
			t.Helper()
			w, err := c.Try(name)
			if w == nil || err != nil {
				t.Fatalf("Try(%q) with the slot taken = %v, %v; want a place in the queue", name, w, err)
			}
			go func() {
				if err := w.Wait(ctx); err != nil {
					t.Errorf("%s's queued request: %v", name, err)
				}
				admitted <- name
			}()
		}
		for range 9 {
			wait("flood")
		}
		wait("probe")
		synctest.Wait()
		var order []string
		for len(order) < 10 {
			c.Release()
			synctest.Wait()
			order = append(order, <-admitted)
		}
		if order[0] != "flood" || order[1] != "probe" {
			t.Errorf("slots were handed out in the order %v; want the probe second, right after the flooder's oldest", order)
		}
		c.Release()
		if c.InFlight() != 0 || c.Queued() != 0 {
			t.Errorf("after every release %d in flight and %d queued, want 0 and 0", c.InFlight(), c.Queued())
		}
	})
}

// TestFloodIsShedFirst: a flooder holding the whole queue is refused beyond it, while a second
// client still queues, taking the flooder's newest places (which are refused as queue_full)
// until the two hold equal shares; beyond its share the second client is refused too.
func TestFloodIsShedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, Options{MaxConcurrent: 1, MaxQueued: 4, QueueTimeout: time.Hour})
		ctx := context.Background()
		if err := c.Acquire(ctx, "flood"); err != nil {
			t.Fatal(err)
		}
		var flood []*Waiter
		for range 4 {
			w, err := c.Try("flood")
			if w == nil || err != nil {
				t.Fatalf("the flooder's Try with the queue not full = %v, %v; want a place", w, err)
			}
			flood = append(flood, w)
		}
		if w, err := c.Try("flood"); w != nil || !errors.Is(err, ErrOverloaded) {
			t.Fatalf("the flooder's Try with the queue full = %v, %v; want refused", w, err)
		}
		var probe []*Waiter
		for i := range 2 {
			w, err := c.Try("probe")
			if w == nil || err != nil {
				t.Fatalf("the second client's Try %d with the flooder holding the queue = %v, %v; want a place", i+1, w, err)
			}
			probe = append(probe, w)
		}
		w, err := c.Try("probe")
		if w != nil || !errors.Is(err, ErrOverloaded) {
			t.Fatalf("the second client's Try beyond its half of the queue = %v, %v; want refused", w, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "this client holds its share of the 4 places in the queue") {
			t.Errorf("the refusal beyond the client's share says %q; want it to name the share", msg)
		}
		for i, w := range flood[2:] { // the newest two gave their places to the probe
			var oe *OverloadedError
			if err := w.Wait(ctx); !errors.As(err, &oe) || oe.Reason != ReasonQueueFull {
				t.Errorf("the flooder's request %d, whose place the second client took: %v; want queue_full", i+3, err)
			}
		}
		if got := testutil.ToFloat64(c.shed.WithLabelValues(ReasonQueueFull)); got != 4 {
			t.Errorf("kvnode_admission_shed_total{reason=queue_full} = %v, want 4", got)
		}
		if c.Queued() != 4 {
			t.Errorf("Queued() = %d, want 4 (two places each)", c.Queued())
		}
		done := make(chan error, 4)
		for _, w := range append(flood[:2], probe...) {
			go func() { done <- w.Wait(ctx) }()
		}
		for range 4 {
			c.Release()
			if err := <-done; err != nil {
				t.Errorf("a queued request, once a slot freed: %v", err)
			}
		}
		c.Release()
		if c.InFlight() != 0 || c.Queued() != 0 {
			t.Errorf("after every release %d in flight and %d queued, want 0 and 0", c.InFlight(), c.Queued())
		}
	})
}

// TestLeaveGivesBackAHandedSlot: a request that leaves its place after a slot was handed to it
// (its connection closed before it waited) gives the slot back, to the next in turn.
func TestLeaveGivesBackAHandedSlot(t *testing.T) {
	c := newController(t, Options{MaxConcurrent: 1, MaxQueued: 4, QueueTimeout: time.Hour})
	if err := c.Acquire(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	wa, _ := c.Try("a")
	wb, _ := c.Try("b")
	c.Release() // to a's waiter
	wa.Leave()  // which gives it on to b's
	if err := wb.Wait(context.Background()); err != nil {
		t.Fatalf("b's request after a's left with the slot: %v", err)
	}
	c.Release()
	if c.InFlight() != 0 || c.Queued() != 0 {
		t.Errorf("after every release %d in flight and %d queued, want 0 and 0", c.InFlight(), c.Queued())
	}
}

// BenchmarkAcquireReleaseFreeSlot is the cost admission control adds to a request on a node
// with a free slot.
func BenchmarkAcquireReleaseFreeSlot(b *testing.B) {
	c, _ := New(Options{MaxConcurrent: 1 << 20})
	ctx := context.Background()
	var client Key = &struct{ int }{}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Acquire(ctx, client); err != nil {
			b.Fatal(err)
		}
		c.Release()
	}
}

// BenchmarkAcquireReleaseFreeSlotParallel is the same from every core at once.
func BenchmarkAcquireReleaseFreeSlotParallel(b *testing.B) {
	c, _ := New(Options{MaxConcurrent: 1 << 20})
	ctx := context.Background()
	var client Key = &struct{ int }{}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.Acquire(ctx, client); err != nil {
				b.Fatal(err)
			}
			c.Release()
		}
	})
}

// TestConcurrentClientsKeepTheBounds runs many clients' requests at once, some timing out, some
// cancelled, some leaving their place: no more than MaxConcurrent ever run at once, and once
// all are done nothing is left in flight or queued.
func TestConcurrentClientsKeepTheBounds(t *testing.T) {
	c := newController(t, Options{MaxConcurrent: 3, MaxQueued: 5, QueueTimeout: time.Millisecond})
	var running, peak atomic.Int64
	var wg sync.WaitGroup
	for client := range 8 {
		wg.Go(func() {
			for i := range 300 {
				ctx, cancel := context.WithCancel(context.Background())
				if i%7 == 3 {
					cancel()
				}
				w, err := c.Try(client)
				switch {
				case err != nil:
				case w != nil && i%11 == 5:
					w.Leave()
					err = errors.New("left")
				case w != nil:
					err = w.Wait(ctx)
				}
				cancel()
				if err != nil {
					continue
				}
				n := running.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				runtime.Gosched()
				running.Add(-1)
				c.Release()
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 3 {
		t.Errorf("%d requests ran at once, want at most MaxConcurrent, 3", p)
	}
	if c.InFlight() != 0 || c.Queued() != 0 || len(c.clients) != 0 || c.next != nil {
		t.Errorf("after every request %d in flight, %d queued, %d clients recorded; want none", c.InFlight(), c.Queued(), len(c.clients))
	}
}

// TestRefusalAllocatesNothing: under a flood most requests are refused, so refusing one, and
// reading why (the front ends answer with the message), allocates nothing.
func TestRefusalAllocatesNothing(t *testing.T) {
	c := newController(t, Options{MaxConcurrent: 1, MaxQueued: 1, QueueTimeout: time.Hour})
	if w, err := c.Try("a"); w != nil || err != nil {
		t.Fatalf("Try with a free slot = %v, %v; want the slot", w, err)
	}
	if w, err := c.Try("a"); w == nil || err != nil {
		t.Fatalf("Try with the slot taken = %v, %v; want a place in the queue", w, err)
	}
	var msg string
	allocs := testing.AllocsPerRun(100, func() {
		_, err := c.Try("a")
		msg = err.Error()
	})
	if allocs != 0 {
		t.Errorf("refusing a request and reading its message allocates %v times, want 0", allocs)
	}
	if !strings.Contains(msg, "retry after") {
		t.Errorf("the refusal says %q; want a retry hint", msg)
	}
}

// TestHandoffRunsQueuedWorkOnTheFinishingGoroutine: work left in the queue (Go) runs on the
// goroutine of the request whose slot passes to it, as soon as that request finishes, in the
// clients' turn; once nobody waits the slot is freed.
func TestHandoffRunsQueuedWorkOnTheFinishingGoroutine(t *testing.T) {
	c := newController(t, Options{MaxConcurrent: 1, MaxQueued: 4, QueueTimeout: time.Hour})
	if w, err := c.Try("a"); w != nil || err != nil {
		t.Fatalf("Try with a free slot = %v, %v; want the slot", w, err)
	}
	var order []string
	job := func(name string) Job {
		return func(err error) bool {
			if err != nil {
				t.Errorf("%s's work was refused: %v", name, err)
				return false
			}
			order = append(order, name) // no lock: every job runs on the test's goroutine
			return true
		}
	}
	for _, name := range []string{"a2", "a3"} {
		w, err := c.Try("a")
		if w == nil || err != nil {
			t.Fatalf("Try with the slot taken = %v, %v; want a place in the queue", w, err)
		}
		w.Go(job(name))
	}
	w, err := c.Try("b")
	if w == nil || err != nil {
		t.Fatalf("Try with the slot taken = %v, %v; want a place in the queue", w, err)
	}
	w.Go(job("b"))
	c.Run(job("a1")) // the request holding the slot, and then each it passes the slot to
	if got := strings.Join(order, " "); got != "a1 a2 b a3" {
		t.Errorf("Run ran %q, want \"a1 a2 b a3\": the queued work, in the clients' turn, before Run returns", got)
	}
	if c.InFlight() != 0 || c.Queued() != 0 {
		t.Errorf("after the queue emptied %d in flight and %d queued, want 0 and 0", c.InFlight(), c.Queued())
	}
}

// TestQueuedWorkIsRefused: work left in the queue is refused at the queue timeout (counted as
// shed), when a client under its share takes its place, and by Cancel; work handed the slot
// that gives it back itself (returns false) ends Run's loop.
func TestQueuedWorkIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, Options{MaxConcurrent: 1, MaxQueued: 2, QueueTimeout: 300 * time.Millisecond})
		if w, err := c.Try("a"); w != nil || err != nil {
			t.Fatalf("Try with a free slot = %v, %v; want the slot", w, err)
		}
		// record is every queued request's work: it records its outcome, and with a slot it
		// gives the slot back itself (as a request whose answer waits for room does).
		outcomes := make(chan error, 4)
		record := func(err error) bool {
			outcomes <- err
			if err == nil {
				c.Release()
			}
			return false
		}
		w, _ := c.Try("a")
		w.Go(record)
		time.Sleep(300 * time.Millisecond) // fake time: the queue timeout passes
		synctest.Wait()
		var oe *OverloadedError
		if err := <-outcomes; !errors.As(err, &oe) || oe.Reason != ReasonQueueTimeout {
			t.Errorf("work queued past the queue timeout got %v, want queue_timeout", err)
		}
		if got := testutil.ToFloat64(c.shed.WithLabelValues(ReasonQueueTimeout)); got != 1 {
			t.Errorf("kvnode_admission_shed_total{reason=queue_timeout} = %v, want 1", got)
		}

		for range 2 {
			w, _ := c.Try("a")
			w.Go(record)
		}
		wb, err := c.Try("b") // the queue is full; b is under its share and takes a's newest place
		if wb == nil || err != nil {
			t.Fatalf("Try of a client under its share with the queue full = %v, %v; want a place", wb, err)
		}
		synctest.Wait()
		if err := <-outcomes; !errors.As(err, &oe) || oe.Reason != ReasonQueueFull {
			t.Errorf("work whose place a client under its share took got %v, want queue_full", err)
		}
		wb.Go(record)
		canceled := errors.New("connection closed")
		c.Cancel("b", canceled)
		if err := <-outcomes; err != canceled {
			t.Errorf("Cancel(b) refused b's work with %v, want %v", err, canceled)
		}
		if c.Queued() != 1 {
			t.Errorf("Queued() = %d, want 1 (a's older place)", c.Queued())
		}
		c.Run(func(error) bool { return true }) // the slot's holder finishes; a's work runs next
		if err := <-outcomes; err != nil {
			t.Errorf("a's queued work, handed the slot, got %v, want nil", err)
		}
		if c.InFlight() != 0 || c.Queued() != 0 {
			t.Errorf("after the queue emptied %d in flight and %d queued, want 0 and 0", c.InFlight(), c.Queued())
		}
	})
}
