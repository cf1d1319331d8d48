package shell_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// pipeTransport is a node's transport whose mutations to each other node go on one pipe, as
// internode's do: one goroutine per peer (the pipe's reader) makes them in order and hands
// every answer to its done on that goroutine, so an answer whose done blocks holds up every
// later answer of that pipe. A pipe held (hold) takes its next call only once released.
type pipeTransport struct {
	shell.Transport
	from  coordinator.NodeID
	mu    sync.Mutex
	pipes map[coordinator.NodeID]*fakePipe
	wg    *sync.WaitGroup
}

type fakePipe struct {
	calls chan pipeCall
	mu    sync.Mutex
	gate  chan struct{} // when not nil, the next call waits for it to close
}

type pipeCall struct {
	ctx  context.Context
	req  *replicapb.MutateRequest
	done func(*replicapb.MutateResponse, error)
}

func (p *pipeTransport) MutateAsync(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest, done func(*replicapb.MutateResponse, error)) bool {
	if to == p.from {
		return false
	}
	p.pipe(to).calls <- pipeCall{ctx, req, done}
	return true
}

// pipe returns the pipe to node to, starting its reader.
func (p *pipeTransport) pipe(to coordinator.NodeID) *fakePipe {
	p.mu.Lock()
	defer p.mu.Unlock()
	fp := p.pipes[to]
	if fp == nil {
		fp = &fakePipe{calls: make(chan pipeCall, 64)}
		p.pipes[to] = fp
		p.wg.Go(func() {
			for c := range fp.calls {
				fp.mu.Lock()
				gate := fp.gate
				fp.gate = nil
				fp.mu.Unlock()
				if gate != nil {
					<-gate
				}
				c.done(p.Mutate(c.ctx, to, c.req))
			}
		})
	}
	return fp
}

// hold makes the pipe to node to wait before its next call until the returned function is
// called.
func (p *pipeTransport) hold(to coordinator.NodeID) (release func()) {
	fp := p.pipe(to)
	gate := make(chan struct{})
	fp.mu.Lock()
	fp.gate = gate
	fp.mu.Unlock()
	return func() { close(gate) }
}

func (p *pipeTransport) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, fp := range p.pipes {
		close(fp.calls)
	}
}

// blockingSink is a HintSink whose StoreHint blocks until released, as a hint store does while
// pebble stalls its writes; it counts the drops the executor reports (shell.HintDropCounter).
type blockingSink struct {
	entered chan struct{} // gets a value as each StoreHint starts
	release chan struct{} // closed (open): StoreHint returns
	once    sync.Once
	mu      sync.Mutex
	hints   []string
	dropped int
}

func newBlockingSink() *blockingSink {
	return &blockingSink{entered: make(chan struct{}, 64), release: make(chan struct{})}
}

// open lets every StoreHint return, now and from now on.
func (b *blockingSink) open() { b.once.Do(func() { close(b.release) }) }

func (b *blockingSink) StoreHint(target coordinator.NodeID, m *replicapb.Mutation) {
	b.entered <- struct{}{}
	<-b.release
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hints = append(b.hints, string(target))
}

func (b *blockingSink) DroppedHints(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropped += n
}

func (b *blockingSink) state() (hints []string, dropped int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.hints), b.dropped
}

// newPipeCluster returns a cluster whose n1 sends mutations to the replicas n2, n3 and n4 on
// pipes and keeps hints in sink, and n1's transport.
func newPipeCluster(t *testing.T, sink *blockingSink) (*cluster, *pipeTransport) {
	var wg sync.WaitGroup
	var n1 *pipeTransport
	// n1 coordinates and is no replica: every answer of its writes comes on a pipe.
	o := options{hints: sink, writeTimeout: 2 * time.Second, order: []coordinator.NodeID{"n2", "n3", "n4"}}
	o.transport = func(id coordinator.NodeID, base shell.Transport) shell.Transport {
		if id != "n1" {
			return base
		}
		n1 = &pipeTransport{Transport: base, from: id, pipes: map[coordinator.NodeID]*fakePipe{}, wg: &wg}
		return n1
	}
	c := newCluster(t, o)
	t.Cleanup(func() { // before the executors close (cleanups run last first)
		sink.open()
		n1.close()
		wg.Wait()
	})
	c.must(schemaRF3...)
	return c, n1
}

// writeAnsweredLate runs stmt through n1 at QUORUM with n1's pipe to n2 held until the write
// returned on n3's and n4's answers: n2's answer is its last, and when n2 fails it, the
// write's hint for n2 is decided on that pipe's reader.
func writeAnsweredLate(t *testing.T, c *cluster, p *pipeTransport, stmt string) {
	t.Helper()
	release := p.hold("n2")
	defer release()
	if _, err := c.exec("n1", quorum, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// A hint decided on a pipe's reader, whose store blocks (pebble stalling its writes), does not
// hold up the pipe's other answers: it waits in the executor's hint queue, and reaches the sink
// once the sink takes it.
func TestHintStoreBlockingHoldsUpNoAnswers(t *testing.T) {
	sink := newBlockingSink()
	c, p := newPipeCluster(t, sink)

	c.transport.setFault(failWrites, "n2")
	writeAnsweredLate(t, c, p, "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')")
	<-sink.entered // the hint for n2 is being stored, and blocks
	c.transport.clearFaults()

	// The next write's answer from n2 comes on the same pipe: at ALL it needs it.
	if _, err := c.exec("n1", all, "INSERT INTO t (k, c, v) VALUES ('b', 2, 'y')"); err != nil {
		t.Fatalf("a write at ALL while a hint store blocks: %v, want its answers, n2's on the pipe whose answer left the hint", err)
	}
	if got := c.localRows("n2", "SELECT c, v FROM t WHERE k = 'b'"); !slices.Equal(got, []string{"2 'y'"}) {
		t.Errorf("n2 holds %q, want the write at ALL", got)
	}

	sink.open()
	c.settle()
	if hints, dropped := sink.state(); !slices.Equal(hints, []string{"n2"}) || dropped != 0 {
		t.Errorf("the sink holds hints for %v and counted %d dropped, want one for n2 and none dropped", hints, dropped)
	}
}

// Hints decided on a pipe's reader while the sink stays blocked fill the hint queue; those
// beyond its bound are dropped and counted (Executor.HintsDropped and the sink's
// DroppedHints), never waited for, and the queued ones reach the sink once it takes them.
func TestHintQueueDropsBeyondItsBound(t *testing.T) {
	sink := newBlockingSink()
	c, p := newPipeCluster(t, sink)
	e := c.executors["n1"]
	e.SetHintQueueLimit(1)

	c.transport.setFault(failWrites, "n2")
	writeAnsweredLate(t, c, p, "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')")
	<-sink.entered // stored: the queue is empty again, and its goroutine blocked
	for i := range 3 {
		// Queued, then dropped twice: the answers come in order on the pipe.
		writeAnsweredLate(t, c, p, fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('b', %d, 'x')", i))
	}
	poll.Must(t, 10*time.Second, "two hints dropped", func() error {
		if n := e.HintsDropped(); n != 2 {
			return fmt.Errorf("%d dropped", n)
		}
		return nil
	})
	if _, dropped := sink.state(); dropped != 2 {
		t.Errorf("the sink counted %d hints dropped, want the executor's 2", dropped)
	}
	c.transport.clearFaults()
	if _, err := c.exec("n1", all, "INSERT INTO t (k, c, v) VALUES ('c', 1, 'y')"); err != nil {
		t.Fatalf("a write at ALL with the hint queue full: %v", err)
	}

	sink.open()
	c.settle()
	if hints, _ := sink.state(); !slices.Equal(hints, []string{"n2", "n2"}) {
		t.Errorf("the sink holds hints for %v, want the first and the queued one for n2", hints)
	}
}
