package sim

import (
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

// eventKind says what an event does when its time comes.
type eventKind uint8

const (
	evHot     eventKind = iota + 1 // the hot partition's next operation arrives at its coordinator
	evCold                         // the next background cold operation arrives
	evFlood                        // the next cold-key flood operation arrives
	evDeliver                      // a Send reaches its replica
	evRespond                      // a replica's Response reaches the coordinator
	evTick                         // a request's deadline, on the coordinator's clock
	evFlush                        // a coordinator's account-propagation timer fires
	evDeltas                       // a batch of account-only deltas reaches its replica
	evWarm                         // the warm-up ends: the measurement window starts
	evUrgent                       // a coordinator drains its batcher for deltas a Step marked Urgent
)

// event is one entry of the simulator's queue. Events are ordered by (at, seq): seq is the order
// in which they were scheduled, so events at the same instant run in a deterministic order.
// Message events carry what the message carries; op and gen name the operation.
type event struct {
	at   int64 // simulated nanoseconds since the start of the run
	seq  uint64
	kind eventKind
	node int32  // evDeliver, evDeltas: the replica; evRespond: the replica that answers; evFlush, evUrgent: the coordinator
	op   int32  // index into sim.ops; evDeltas: index into sim.batches
	gen  uint32 // generation of the op slot, so events of a recycled slot are ignored
	send int32  // evDeliver, evRespond: the Send's Seq

	mode  coordinator.LimiterMode // evDeliver
	stamp int64                   // evDeliver, evDeltas: the coordinator's stamp in unix nanoseconds; 0 for none

	status     coordinator.Status // evRespond
	count      uint32             // evRespond with StatusRateLimited
	resid      uint32             // evRespond with StatusRateLimited: the counter's residual (with born)
	retryAfter time.Duration      // evRespond with StatusRateLimited
	born       int64              // evRespond with StatusRateLimited: the counter's birth in unix nanoseconds, 0 for none
}

// queue is a binary min-heap of events ordered by (at, seq). It is written out rather than built
// on container/heap to keep the simulator's inner loop free of interface conversions.
type queue struct {
	h   []event
	seq uint64
}

func (q *queue) len() int { return len(q.h) }

func less(a, b *event) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// push schedules e, stamping it with the next sequence number.
func (q *queue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(&q.h[i], &q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

// pop removes and returns the earliest event. The queue must not be empty.
func (q *queue) pop() event {
	top := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h = q.h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(&q.h[r], &q.h[l]) {
			m = r
		}
		if !less(&q.h[m], &q.h[i]) {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return top
}
