package shell

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestNextTimestamp(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name  string
		clock []time.Duration // offsets from base, one per call
		want  []int64         // offsets in µs from base
	}{
		{"follows a clock that advances", []time.Duration{0, time.Millisecond, 2 * time.Millisecond}, []int64{0, 1000, 2000}},
		{"ticks by 1µs while the clock stands still", []time.Duration{0, 0, 0}, []int64{0, 1, 2}},
		{"never goes back when the clock does", []time.Duration{time.Second, 0, 2 * time.Second}, []int64{1_000_000, 1_000_001, 2_000_000}},
	}
	for _, tt := range tests {
		i := 0
		e := &Executor{now: func() time.Time { return base.Add(tt.clock[i]) }}
		var got []int64
		for i = range tt.clock {
			got = append(got, e.nextTimestamp()-base.UnixMicro())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: timestamps %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNextTimestampConcurrent(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	e := &Executor{now: func() time.Time { return now }}
	const workers, n = 8, 1000
	got := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range n {
				got[w] = append(got[w], e.nextTimestamp())
			}
		})
	}
	wg.Wait()
	seen := make(map[int64]bool)
	for w, ts := range got {
		for i, v := range ts {
			if i > 0 && v <= ts[i-1] {
				t.Fatalf("worker %d got %d after %d, want strictly increasing", w, v, ts[i-1])
			}
			if seen[v] {
				t.Fatalf("timestamp %d was handed out twice", v)
			}
			seen[v] = true
		}
	}
}
