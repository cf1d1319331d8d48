package partitionlimit

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// The benchmarks compare Table with the idiomatic alternative a Go programmer would write
// first: one golang.org/x/time/rate Limiter per key in a mutex-protected map. Both sides see the
// same keys, the same times (one simulated second per million operations) and the same limit,
// and each operation is "account and decide". BenchmarkTable/X and BenchmarkXTimeRate/X pair
// up by name; each reports bytes/partition, the memory the structure holds per tracked
// partition (for Table: its slot array divided by its capacity, which is what it tracks when
// full; for the map: its growth divided by the number of keys, after inserting 1M keys).
//
//	go test -run '^$' -bench . -benchmem ./partitionlimit/

const (
	benchLimit = 1000      // ops/s allowed per partition, on both sides
	benchKeys  = 1_000_000 // distinct partitions in the uniform benchmarks
	benchLabel = uint32(3)
	streamLen  = 1 << 20 // precomputed key indices and draws, reused cyclically
)

// benchToken maps a key index to a token spread over 64 bits like a Murmur3 token
// (an odd multiplier is a bijection, so the tokens are distinct).
func benchToken(i uint32) int64 { return int64(uint64(i) * 0x9e3779b97f4a7c15) }

// benchStreams returns streamLen uniform key indices in [0, benchKeys) and as many draws.
func benchStreams() (keys []uint32, draws []float64) {
	rng := rand.New(rand.NewPCG(10, 11))
	keys = make([]uint32, streamLen)
	draws = make([]float64, streamLen)
	for i := range keys {
		keys[i] = uint32(rng.IntN(benchKeys))
		draws[i] = rng.Float64()
	}
	return keys, draws
}

// benchTime returns the simulated time of operation i: a million operations per second.
func benchTime(base time.Time, i int) time.Time { return base.Add(time.Duration(i) * time.Microsecond) }

// heapGrowth returns the bytes of live heap that build adds, measured around it after a GC.
func heapGrowth(build func()) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return float64(after.HeapAlloc) - float64(before.HeapAlloc)
}

func BenchmarkTable(b *testing.B) {
	keys, draws := benchStreams()
	base := at(0)
	var tb *Table
	perPartition := heapGrowth(func() {
		var err error
		if tb, err = New(Options{}); err != nil {
			b.Fatalf("New(Options{}): %v", err)
		}
	}) / float64(DefaultCapacity)
	// Every partition accounted once, as in steady state: the uniform benchmarks then measure
	// lookups of mostly present keys plus the evictions a full table makes.
	for k := range uint32(benchKeys) {
		tb.Account(benchToken(k), benchLabel, base)
	}
	clock := 1 // next simulated operation, so that time never runs backwards between runs
	var sink atomic.Int64

	b.Run("hot", func(b *testing.B) {
		hot := newTable(b, Options{})
		b.ReportAllocs()
		admitted, i := 0, 0
		for b.Loop() {
			c := hot.Account(benchToken(0), benchLabel, benchTime(base, i))
			if Admit(c, benchLimit, draws[i%streamLen]) {
				admitted++
			}
			i++
		}
		sink.Add(int64(admitted))
		b.ReportMetric(perPartition, "bytes/partition")
	})

	b.Run("uniform1M", func(b *testing.B) {
		b.ReportAllocs()
		admitted, i := 0, 0
		for b.Loop() {
			j := i % streamLen
			c := tb.Account(benchToken(keys[j]), benchLabel, benchTime(base, clock+i))
			if Admit(c, benchLimit, draws[j]) {
				admitted++
			}
			i++
		}
		clock += i
		sink.Add(int64(admitted))
		b.ReportMetric(perPartition, "bytes/partition")
	})

	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var worker atomic.Int64
		start := clock
		b.RunParallel(func(pb *testing.PB) {
			// Each goroutine walks the shared streams from its own offset, with its own clock.
			j := int(worker.Add(1)) * 7919 * 131
			admitted, i := 0, 0
			for pb.Next() {
				k := (j + i) % streamLen
				c := tb.Account(benchToken(keys[k]), benchLabel, benchTime(base, start+i))
				if Admit(c, benchLimit, draws[k]) {
					admitted++
				}
				i++
			}
			sink.Add(int64(admitted))
		})
		clock += b.N
		b.ReportMetric(perPartition, "bytes/partition")
	})
}

// xrateMap is the peer: one rate.Limiter per partition, created on first use, in a map guarded
// by a mutex. Each Limiter allows benchLimit operations per second with a burst of benchLimit.
type xrateMap struct {
	mu sync.Mutex
	m  map[refKey]*rate.Limiter
}

func (p *xrateMap) allow(token int64, label uint32, now time.Time) bool {
	k := refKey{token, label}
	p.mu.Lock()
	l, ok := p.m[k]
	if !ok {
		l = rate.NewLimiter(benchLimit, benchLimit)
		p.m[k] = l
	}
	p.mu.Unlock()
	return l.AllowN(now, 1)
}

func BenchmarkXTimeRate(b *testing.B) {
	keys, _ := benchStreams()
	base := at(0)
	peer := &xrateMap{m: map[refKey]*rate.Limiter{}}
	perPartition := heapGrowth(func() {
		for k := range uint32(benchKeys) {
			peer.allow(benchToken(k), benchLabel, base)
		}
	}) / benchKeys
	clock := 1
	var sink atomic.Int64

	b.Run("hot", func(b *testing.B) {
		hot := &xrateMap{m: map[refKey]*rate.Limiter{}}
		b.ReportAllocs()
		admitted, i := 0, 0
		for b.Loop() {
			if hot.allow(benchToken(0), benchLabel, benchTime(base, i)) {
				admitted++
			}
			i++
		}
		sink.Add(int64(admitted))
		b.ReportMetric(perPartition, "bytes/partition")
	})

	b.Run("uniform1M", func(b *testing.B) {
		b.ReportAllocs()
		admitted, i := 0, 0
		for b.Loop() {
			if peer.allow(benchToken(keys[i%streamLen]), benchLabel, benchTime(base, clock+i)) {
				admitted++
			}
			i++
		}
		clock += i
		sink.Add(int64(admitted))
		b.ReportMetric(perPartition, "bytes/partition")
	})

	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var worker atomic.Int64
		start := clock
		b.RunParallel(func(pb *testing.PB) {
			j := int(worker.Add(1)) * 7919 * 131
			admitted, i := 0, 0
			for pb.Next() {
				if peer.allow(benchToken(keys[(j+i)%streamLen]), benchLabel, benchTime(base, start+i)) {
					admitted++
				}
				i++
			}
			sink.Add(int64(admitted))
		})
		clock += b.N
		b.ReportMetric(perPartition, "bytes/partition")
	})
}
