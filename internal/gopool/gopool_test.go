package gopool

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestGoNeverWaits: functions that block all run at once, each on a goroutine of its own, and a
// Go call never waits for a worker to be free.
func TestGoNeverWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Minute)
		const n = 100
		release := make(chan struct{})
		var started atomic.Int64
		for range n {
			p.Go(func() {
				started.Add(1)
				<-release
			})
		}
		synctest.Wait()
		if got := started.Load(); got != n {
			t.Fatalf("%d of %d blocking functions started", got, n)
		}
		if got := p.Workers(); got != n {
			t.Errorf("%d workers for %d functions running at once, want %d", got, n, n)
		}
		close(release)
		synctest.Wait()
		if got := p.Workers(); got != n {
			t.Errorf("%d workers after the functions returned, want all %d waiting for work", got, n)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := p.Workers(); got != 0 {
			t.Errorf("%d workers after the idle timeout, want 0", got)
		}
	})
}

// TestWorkersAreReused: functions run one after another reuse one worker instead of starting a
// goroutine each, and that worker ends once it has waited the idle timeout for work.
func TestWorkersAreReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Second)
		var ran int
		for range 1000 {
			p.Go(func() { ran++ })
			synctest.Wait() // the worker has run it and waits for the next
		}
		if ran != 1000 {
			t.Fatalf("ran %d of 1000 functions", ran)
		}
		if got := p.Workers(); got != 1 {
			t.Errorf("%d workers after 1000 functions in turn, want 1", got)
		}
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if got := p.Workers(); got != 1 {
			t.Errorf("%d workers before the idle timeout, want 1", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := p.Workers(); got != 0 {
			t.Errorf("%d workers after waiting the idle timeout, want 0", got)
		}
		p.Go(func() { ran++ }) // a pool whose workers ended starts another
		synctest.Wait()
		if ran != 1001 || p.Workers() != 1 {
			t.Errorf("after the workers ended: ran %d (want 1001), %d workers (want 1)", ran, p.Workers())
		}
		time.Sleep(time.Second) // the bubble ends when its goroutines have
	})
}

// TestSetReuseOff: with reuse off every function gets a goroutine of its own, and the pool keeps
// none.
func TestSetReuseOff(t *testing.T) {
	SetReuse(false)
	t.Cleanup(func() { SetReuse(true) })
	if Reusing() {
		t.Fatal("Reusing() after SetReuse(false)")
	}
	p := New(time.Minute)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		p.Go(wg.Done)
	}
	wg.Wait()
	if got := p.Workers(); got != 0 {
		t.Errorf("%d workers with reuse off, want 0", got)
	}
}

// deep uses about n KiB of stack, as a request's call chain does.
//
//go:noinline
func deep(n int) byte {
	var buf [1024]byte
	buf[n%len(buf)] = byte(n)
	if n <= 1 {
		return buf[0]
	}
	return deep(n-1) + buf[n%len(buf)]
}

var sink atomic.Int64

// BenchmarkDeepStack runs functions that need 32 KiB of stack, b.N in all with
// GOMAXPROCS of them at a time, on goroutines of their own ("go") and on a pool ("pool"):
//
//	go test -run '^$' -bench DeepStack ./internal/gopool/
func BenchmarkDeepStack(b *testing.B) {
	f := func(wg *sync.WaitGroup) func() {
		return func() {
			sink.Add(int64(deep(32)))
			wg.Done()
		}
	}
	run := func(b *testing.B, start func(func())) {
		par := runtime.GOMAXPROCS(0)
		var wg sync.WaitGroup
		for i := 0; i < b.N; i += par {
			for range min(par, b.N-i) {
				wg.Add(1)
				start(f(&wg))
			}
			wg.Wait()
		}
	}
	b.Run("go", func(b *testing.B) { run(b, func(f func()) { go f() }) })
	b.Run("pool", func(b *testing.B) { p := New(time.Minute); run(b, p.Go) })
}
