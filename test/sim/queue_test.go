package sim

import (
	"math/rand/v2"
	"testing"
)

// TestQueueOrdersByTimeThenScheduling: events leave by time, and events at the same time in the
// order they were scheduled.
func TestQueueOrdersByTimeThenScheduling(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q queue
	for i := range 5000 {
		q.push(event{at: rng.Int64N(50), op: int32(i)})
		if i%3 == 0 { // interleave pops with pushes, as the simulator does
			q.pop()
		}
	}
	prev := q.pop()
	for q.len() > 0 {
		e := q.pop()
		if e.at < prev.at || (e.at == prev.at && e.seq <= prev.seq) {
			t.Fatalf("popped (at=%d, seq=%d) after (at=%d, seq=%d), want (time, sequence) order", e.at, e.seq, prev.at, prev.seq)
		}
		prev = e
	}
}
