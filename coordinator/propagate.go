package coordinator

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// DeltaSender sends account-only deltas to a replica: the replica counts them in its limiter and
// never rejects anything (replicapb.Replica/AccountDelta). The node's transport implements it,
// serving the local node in process.
type DeltaSender interface {
	AccountDelta(ctx context.Context, to NodeID, req *replicapb.AccountDeltaRequest) (*replicapb.AccountDeltaResponse, error)
}

// DefaultPropagationInterval is how often a coordinator flushes account-only deltas.
const DefaultPropagationInterval = 20 * time.Millisecond

// propagationTimeout bounds one flush's delta RPC to one replica. Deltas are best effort: a
// replica that does not take them in time loses them, which only makes its counter a little low.
const propagationTimeout = 500 * time.Millisecond

// deltaKey names one counter on a replica.
type deltaKey struct {
	table schema.TableID
	token int64
	op    replicapb.Op
}

// propagator implements account propagation (DESIGN §1). Replicas that did not see a limited
// operation (the coordinator rejected it locally, a read contacted fewer than all replicas)
// would otherwise count only part of a partition's load; with coordinators spread over the
// replicas the admitted rate then climbs toward RF × limit. The propagator collects, per replica,
// the operations it missed, coalesced by (table, token, op), and every interval sends each live
// replica one AccountDelta batch. Adding is a map update under a mutex; the RPCs run on the
// propagator's own goroutine, never on a request's.
type propagator struct {
	send     DeltaSender
	live     func(NodeID) bool
	interval time.Duration
	logger   *slog.Logger

	mu      sync.Mutex
	pending map[NodeID]map[deltaKey]uint32

	stop chan struct{}
	done chan struct{}
}

func newPropagator(send DeltaSender, live func(NodeID) bool, interval time.Duration, logger *slog.Logger) *propagator {
	if interval <= 0 {
		interval = DefaultPropagationInterval
	}
	p := &propagator{
		send: send, live: live, interval: interval, logger: logger,
		pending: map[NodeID]map[deltaKey]uint32{},
		stop:    make(chan struct{}), done: make(chan struct{}),
	}
	go p.run()
	return p
}

// add records that the replicas in to did not count one op on (table, token).
func (p *propagator) add(to []NodeID, table schema.TableID, token int64, op replicapb.Op) {
	if len(to) == 0 {
		return
	}
	k := deltaKey{table: table, token: token, op: op}
	p.mu.Lock()
	for _, id := range to {
		m := p.pending[id]
		if m == nil {
			m = map[deltaKey]uint32{}
			p.pending[id] = m
		}
		if m[k] < ^uint32(0) {
			m[k]++
		}
	}
	p.mu.Unlock()
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
		}
	}
}

// flush sends every replica its pending deltas, one batch each, concurrently, and waits for the
// batches (each bounded by propagationTimeout) so at most one is in flight per replica.
func (p *propagator) flush() {
	p.mu.Lock()
	batch := p.pending
	if len(batch) == 0 {
		p.mu.Unlock()
		return
	}
	p.pending = make(map[NodeID]map[deltaKey]uint32, len(batch))
	p.mu.Unlock()

	var wg sync.WaitGroup
	for id, deltas := range batch {
		if !p.live(id) {
			continue // a down replica needs no counts; it will have decayed them anyway
		}
		req := &replicapb.AccountDeltaRequest{Deltas: make([]*replicapb.AccountDelta, 0, len(deltas))}
		for k, n := range deltas {
			req.Deltas = append(req.Deltas, &replicapb.AccountDelta{TableId: uint64(k.table), Token: k.token, Op: k.op, Count: n})
		}
		// A deterministic order makes batches comparable in tests and logs.
		slices.SortFunc(req.Deltas, func(a, b *replicapb.AccountDelta) int {
			return cmp.Or(cmp.Compare(a.TableId, b.TableId), cmp.Compare(a.Token, b.Token), cmp.Compare(a.Op, b.Op))
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), propagationTimeout)
			defer cancel()
			resp, err := p.send.AccountDelta(ctx, id, req)
			if err == nil && resp.GetStatus() != replicapb.Status_STATUS_OK {
				p.logger.Debug("account delta not applied", "replica", id, "error", resp.GetError().GetMessage())
			} else if err != nil {
				p.logger.Debug("account delta not delivered", "replica", id, "deltas", len(req.Deltas), "err", err)
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
