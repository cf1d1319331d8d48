package shell

import (
	"context"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// PendingRing is implemented by a Ring that knows the ring's transitions: while a node joins (or
// leaves), the ranges it will own (or the next owners of its ranges) are pending. Writes to a
// pending range also go to its pending replicas, so that the new owner misses no write made while
// it streams the range; they never count toward the consistency level (the pending replica may
// not own the range in the end, and it cannot serve reads yet), and a pending replica that fails
// them fails nothing.
//
// A write takes its natural and its pending replicas from one ring, when it starts: were the
// pending ones looked up later, a joining node that turned normal meanwhile (its stream already
// past the write's key) would get the write from neither set.
type PendingRing interface {
	// AppendWriteReplicas appends to replicas the distinct nodes replicating token under
	// placement rf, in ring order (as Ring.AppendReplicas), and to pending its pending replicas
	// under rf (the nodes that will replicate it and do not now), both from one ring, and
	// returns the extended slices.
	AppendWriteReplicas(replicas, pending []coordinator.NodeID, token int64, rf schema.Replication) ([]coordinator.NodeID, []coordinator.NodeID)
}

// writeReplicaSet is replicaSet for a write: it appends the replicas of token to dst (marking
// the down ones) and the token's pending replicas to pending, both from one ring.
func (e *Executor) writeReplicaSet(dst []coordinator.Replica, pending []coordinator.NodeID, token int64, rf schema.Replication) ([]coordinator.Replica, []coordinator.NodeID) {
	var buf [8]coordinator.NodeID
	return e.writeReplicaSetWith(dst, pending, buf[:0], token, rf)
}

// writeReplicaSetWith is writeReplicaSet with ids as the scratch space for the ring's answer.
func (e *Executor) writeReplicaSetWith(dst []coordinator.Replica, pending, ids []coordinator.NodeID, token int64, rf schema.Replication) ([]coordinator.Replica, []coordinator.NodeID) {
	pr, ok := e.ring.(PendingRing)
	if !ok {
		return e.replicaSetWith(dst, ids, token, rf), pending
	}
	ids, pending = pr.AppendWriteReplicas(ids[:0], pending, token, rf)
	return e.appendReplicas(dst, ids), pending
}

// writePending sends m, a write of the partition with the given token that the replicas did not
// reject as rate limited, to pending, the token's pending replicas when the write started. The sends run
// detached from the client (a write must reach every replica it can), bounded by a write timeout
// and by Close, and are exempt from the rate limiter: the natural replicas already decided. A
// pending replica that is down or fails the write gets a hint for it.
func (e *Executor) writePending(ctx context.Context, token int64, pending []coordinator.NodeID, m *replicapb.Mutation, o coordinator.Outcome, deadline time.Time) {
	if len(pending) == 0 {
		return
	}
	if _, limited := o.(coordinator.RateLimited); limited {
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
		if !e.isLive(to) {
			// A pending replica that is down gets the write by hint once it is up, as a
			// natural replica that was down does: it may have streamed this range already.
			if e.hints != nil {
				e.hints.StoreHint(to, m)
			}
			continue
		}
		if !e.extend(f) {
			continue
		}
		go func() {
			defer e.wg.Done()
			defer e.release(f)
			if err := e.mutatePending(rpcCtx, to, m); err != nil {
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

// mutatePending writes m to the pending replica to; a panic in the call counts as its failure.
func (e *Executor) mutatePending(ctx context.Context, to coordinator.NodeID, m *replicapb.Mutation) (err error) {
	defer recovered(e.logger, "a write to a pending replica", to, &err)
	resp, err := e.transport.Mutate(ctx, to, &replicapb.MutateRequest{Mutation: m})
	if err == nil && resp.GetStatus() != replicapb.Status_STATUS_OK {
		err = fmt.Errorf("status %v: %s", resp.GetStatus(), resp.GetError().GetMessage())
	}
	return err
}
