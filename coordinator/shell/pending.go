package shell

import (
	"context"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// PendingRing is implemented by a Ring that knows the ring's transitions: while a node joins (or
// leaves), the ranges it will own (or the next owners of its ranges) are pending. Writes to a
// pending range also go to its pending replicas, so that the new owner misses no write made while
// it streams the range; they never count toward the consistency level (the pending replica may
// not own the range in the end, and it cannot serve reads yet), and a pending replica that fails
// them fails nothing.
type PendingRing interface {
	// AppendPending appends to dst the pending replicas of token at replication factor rf (the
	// nodes that will replicate it and do not now) and returns the extended slice.
	AppendPending(dst []coordinator.NodeID, token int64, rf int) []coordinator.NodeID
}

// writePending sends m, a write of the partition with the given token that the replicas did not
// reject as rate limited, to the token's pending replicas, if the ring has any. The sends run
// detached from the client (a write must reach every replica it can), bounded by a write timeout
// and by Close, and are exempt from the rate limiter: the natural replicas already decided. A
// pending replica that fails the write gets a hint for it.
func (e *Executor) writePending(ctx context.Context, token int64, rf int, m *replicapb.Mutation, o coordinator.Outcome, deadline time.Time) {
	pr, ok := e.ring.(PendingRing)
	if !ok {
		return
	}
	if _, limited := o.(coordinator.RateLimited); limited {
		return
	}
	var buf [8]coordinator.NodeID
	pending := pr.AppendPending(buf[:0], token, rf)
	if len(pending) == 0 {
		return
	}
	// Deadlines come from the configured clock; contexts run on the real one. A pending replica
	// gets a write timeout of its own: the write's deadline may be all but spent once its
	// replicas have answered, and a pending replica busy streaming answers slowly.
	rpcCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(deadline.Sub(e.now()), e.writeTimeout))
	f := &flight{cancel: cancel}
	f.pending.Store(1)
	if !e.register(f) {
		cancel()
		return
	}
	defer e.release(f)
	for _, to := range pending {
		if !e.isLive(to) || !e.extend(f) {
			continue
		}
		go func() {
			defer e.wg.Done()
			defer e.release(f)
			resp, err := e.transport.Mutate(rpcCtx, to, &replicapb.MutateRequest{Mutation: m})
			if err == nil && resp.GetStatus() != replicapb.Status_STATUS_OK {
				err = fmt.Errorf("status %v: %s", resp.GetStatus(), resp.GetError().GetMessage())
			}
			if err != nil {
				e.logger.Debug("write to a pending replica failed; hinted", "replica", string(to), "token", token, "err", err)
				// The pending replica may have read this range's stream already: a hint
				// replays the write to it, as to a natural replica that missed it.
				if e.hints != nil {
					e.hints.StoreHint(to, m)
				}
			}
		}()
	}
}
