package shell

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// DeltaSender sends account-only deltas to a replica: the replica counts them in its limiter and
// never rejects anything (an internode account_delta request). The node's transport implements
// it, serving the local node in process.
type DeltaSender interface {
	AccountDelta(ctx context.Context, to coordinator.NodeID, req *replicapb.AccountDeltaRequest) (*replicapb.AccountDeltaResponse, error)
}

// propagationTimeout bounds one flush's delta RPC to one replica. Deltas are best effort: a
// replica that does not take them in time loses them, which only makes its counter a little low.
const propagationTimeout = 500 * time.Millisecond

// propagator drives account propagation's Batcher for the executor (docs/architecture.md, the limiter): requests add
// to it under a mutex, and every interval its own goroutine drains it and sends each live
// replica its batch as one AccountDelta RPC. The RPCs never run on a request's goroutine.
type propagator struct {
	send     DeltaSender
	live     func(coordinator.NodeID) bool
	interval time.Duration
	logger   *slog.Logger
	now      func() time.Time // stamps each batch (replicapb.AccountDeltaRequest.stamp_unix_nanos)

	mu      sync.Mutex
	batcher coordinator.Batcher

	// hurry asks run for a flush before the next tick (coordinator.Step.Urgent); it holds at
	// most one request, so urgent operations arriving during a flush cause one more.
	hurry chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

func newPropagator(send DeltaSender, live func(coordinator.NodeID) bool, interval time.Duration, now func() time.Time, logger *slog.Logger) *propagator {
	p := &propagator{
		send: send, live: live, interval: interval, now: now, logger: logger,
		hurry: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go p.run()
	return p
}

// add records that the replicas in to did not count one op on (table, token).
func (p *propagator) add(to []coordinator.NodeID, table schema.TableID, token int64, op coordinator.Op) {
	if len(to) == 0 {
		return
	}
	p.mu.Lock()
	p.batcher.Add(to, table, token, op)
	p.mu.Unlock()
}

// urge asks for the pending deltas to be flushed now rather than at the next tick: a young
// partition's replicas each judge it on their own share of its operations until they arrive
// (coordinator.Step.Urgent). It never blocks.
func (p *propagator) urge() {
	select {
	case p.hurry <- struct{}{}:
	default:
	}
}

func (p *propagator) run() {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.flush()
		case <-p.hurry:
			p.flush()
		}
	}
}

// flush sends every live replica its pending deltas, one batch each, concurrently, and waits for
// the batches (each bounded by propagationTimeout) so at most one is in flight per replica.
func (p *propagator) flush() {
	p.mu.Lock()
	batches := p.batcher.Drain(p.live)
	p.mu.Unlock()

	var wg sync.WaitGroup
	stamp := stampNanos(p.now())
	for _, b := range batches {
		req := &replicapb.AccountDeltaRequest{Deltas: make([]*replicapb.AccountDelta, len(b.Deltas)), StampUnixNanos: stamp}
		for i, d := range b.Deltas {
			req.Deltas[i] = &replicapb.AccountDelta{TableId: uint64(d.Table), Token: d.Token, Op: internode.WireOp(d.Op), Count: d.Count}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer recovered(p.logger, "an account delta", b.To, nil) // its deltas are lost, as when undelivered
			ctx, cancel := context.WithTimeout(context.Background(), propagationTimeout)
			defer cancel()
			resp, err := p.send.AccountDelta(ctx, b.To, req)
			if err == nil && resp.GetStatus() != replicapb.Status_STATUS_OK {
				p.logger.Debug("account delta not applied", "replica", b.To, "error", resp.GetError().GetMessage())
			} else if err != nil {
				p.logger.Debug("account delta not delivered", "replica", b.To, "deltas", len(req.Deltas), "err", err)
			}
		}()
	}
	wg.Wait()
}

// close stops the propagator; deltas still pending are dropped.
func (p *propagator) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// stampNanos returns t as the internode protocol's limiter stamp: nanoseconds since the Unix
// epoch, or 0 (no stamp) for the zero time.
func stampNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
