package shell

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// A write's last replica answer often arrives on a transport's goroutine that must not block: a
// pipe's reader (AsyncMutator), which hands every other answer of that pipe to its caller. Storing
// a hint is a disk write (package hints: pebble, which stalls writes while its compactions fall
// behind), so the hints decided on a replica's answer go to the executor's hint queue instead,
// and one goroutine of the executor's hands them to the HintSink in order. As Cassandra's hints, they are best
// effort: when the sink falls so far behind that the queue holds hintQueueMaxHints hints or
// hintQueueMaxBytes bytes of mutations, a new hint is dropped, never waited for, and counted
// (HintDropCounter: kvnode_hints_dropped_total{reason="queue"} with package hints); repair
// brings the replica the write, as it does for a replica down longer than the max hint window.
// Hints decided when the write's outcome is known, on the goroutine of the client's request (its
// replicas had all answered by then), go to the sink directly, as before: that request then waits
// for its hints, the backpressure a stalled disk should put on clients. Other writers of hints
// (ANY, pending replicas, Paxos commits) store them on goroutines of their own, directly too.
const (
	// hintQueueMaxHints bounds the hints waiting for the sink.
	hintQueueMaxHints = 4096
	// hintQueueMaxBytes bounds the mutations' bytes waiting for the sink: Cassandra's hints
	// buffer size (32 MiB).
	hintQueueMaxBytes = 32 << 20
)

// HintDropCounter is what a HintSink may also do: count the hints the executor dropped before
// they reached it, because its hint queue was full (the sink fell behind), beside the sink's own
// drops. A sink without it leaves them counted only by Executor.HintsDropped.
type HintDropCounter interface {
	// DroppedHints counts n hints dropped by a full queue. It must not block.
	DroppedHints(n int)
}

// hintQueue holds the hints for a HintSink decided on goroutines that must not block, and
// hands them to the sink on one goroutine of its own (a loop.Loop), which Close stops.
type hintQueue struct {
	sink     HintSink
	counter  HintDropCounter // nil when the sink does not count drops
	maxHints int
	maxBytes int
	wake     chan struct{} // capacity 1: the queue has hints
	loop     *loop.Loop
	dropped  atomic.Uint64
	idle     *sync.Cond // broadcast when the queue empties and nothing is being stored
	mu       sync.Mutex
	queue    []queuedHint
	next     int // queue[next:] wait; queue[:next] were handed to the sink
	bytes    int // of the mutations waiting
	storing  bool
	closed   bool
}

// queuedHint is one hint waiting for the sink, with its mutation's size.
type queuedHint struct {
	target coordinator.NodeID
	m      *replicapb.Mutation
	size   int
}

// newHintQueue starts the goroutine that hands sink its queued hints.
func newHintQueue(sink HintSink) *hintQueue {
	q := &hintQueue{sink: sink, maxHints: hintQueueMaxHints, maxBytes: hintQueueMaxBytes, wake: make(chan struct{}, 1)}
	q.counter, _ = sink.(HintDropCounter)
	q.idle = sync.NewCond(&q.mu)
	q.loop = loop.Start(loop.Options{Wake: []func() <-chan struct{}{func() <-chan struct{} { return q.wake }}}, q.drain)
	return q
}

// add queues the hints of mutation m for targets, without blocking: those that do not fit are
// dropped and counted, as are all of them once the queue is closed.
func (q *hintQueue) add(targets []coordinator.NodeID, m *replicapb.Mutation) {
	if len(targets) == 0 {
		return
	}
	size := proto.Size(m)
	dropped := 0
	q.mu.Lock()
	for _, t := range targets {
		if q.closed || len(q.queue)-q.next >= q.maxHints || q.bytes+size > q.maxBytes && len(q.queue) > q.next {
			dropped++
			continue
		}
		q.queue = append(q.queue, queuedHint{t, m, size})
		q.bytes += size
	}
	q.mu.Unlock()
	if dropped > 0 {
		q.dropped.Add(uint64(dropped))
		if q.counter != nil {
			q.counter.DroppedHints(dropped)
		}
	}
	if dropped < len(targets) {
		select {
		case q.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// drain hands the queued hints to the sink, one at a time, until the queue is empty or ctx ends
// (Close stores what is left).
func (q *hintQueue) drain(ctx context.Context) time.Duration {
	for ctx.Err() == nil && q.storeNext() {
	}
	return 0
}

// storeNext hands the oldest queued hint to the sink; it reports false when there was none.
func (q *hintQueue) storeNext() bool {
	q.mu.Lock()
	if q.next == len(q.queue) {
		q.queue, q.next = q.queue[:0], 0
		q.idle.Broadcast()
		q.mu.Unlock()
		return false
	}
	h := q.queue[q.next]
	q.queue[q.next] = queuedHint{} // the mutation is the sink's now
	q.next++
	q.bytes -= h.size
	if q.next >= 1024 && 2*q.next >= len(q.queue) { // keep the slice from growing without end
		n := copy(q.queue, q.queue[q.next:])
		clear(q.queue[n:])
		q.queue, q.next = q.queue[:n], 0
	}
	q.storing = true
	q.mu.Unlock()
	q.sink.StoreHint(h.target, h.m)
	q.mu.Lock()
	q.storing = false
	q.mu.Unlock()
	return true
}

// waitIdle waits until every hint queued so far was handed to the sink.
func (q *hintQueue) waitIdle() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.next < len(q.queue) || q.storing {
		q.idle.Wait()
	}
}

// close stops the queue's goroutine and hands the sink the hints still queued; hints added
// afterwards are dropped and counted.
func (q *hintQueue) close() {
	q.loop.Stop()
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	for q.storeNext() {
	}
}

// HintsDropped returns how many hints the executor dropped because its hint queue was full
// (hintqueue.go).
func (e *Executor) HintsDropped() uint64 {
	if e.hintq == nil {
		return 0
	}
	return e.hintq.dropped.Load()
}
