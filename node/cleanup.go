package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/kvnode/kvnode/cluster"
)

// Cleanup: once a topology change has finished, a node deletes its data in the token ranges it no
// longer replicates (as nodetool cleanup does, but run by every node by itself). A node that lost
// a range to a bootstrap and kept its rows would hand them back once it replicated the range
// again (a decommission or removenode of the new owner streams the range back to it), though
// they may have been deleted meanwhile and their tombstones purged after a repair: deleted rows
// came back so, at every consistency level, read repair spreading them.
//
// Deleting a range a node is about to own would lose data, so a cleanup runs only when
//   - this node is normal and its ring has no transition in progress (nothing is pending);
//   - no stream into this node is running, and none ran for the ring of this moment (removenode
//     streams to the dead node's next owners before the ring changes);
//   - every member is up and sees the same members in the same states as this node (a node
//     whose view is stale, say one that missed a removal while it was down, must not act on it;
//     removing a node from a ring only adds to the others' ranges, so a view that lacks a node
//     deletes too little, never too much).
// Run after a change, it also waits out the reads and writes in flight that coordinators sent
// by the ring before (a read of a lost range may still be on its way to this node).

const (
	// cleanupRetryMin and cleanupRetryMax bound the backoff of a cleanup that could not run.
	cleanupRetryMin = time.Second
	cleanupRetryMax = 30 * time.Second
)

// CleanupStats is what one cleanup did.
type CleanupStats struct {
	// Tables is how many tables were cleaned; Ranges how many token intervals of them held data
	// this node no longer replicates, now deleted.
	Tables, Ranges int
}

// Cleanup deletes this node's data in the token ranges it does not replicate (as kvnode cleanup
// does through the Admin service). Nodes clean up by themselves after every topology change; an
// error wrapping a refusal means nothing was deleted. Like the cleanup after a change, it first
// waits until every live node sees the members as this one does, then out the requests that
// coordinators may still have sent by the previous ring (the longer of the read and write
// timeouts), so that a read sent at ONE by the old ring does not find its rows just deleted.
func (n *Node) Cleanup(ctx context.Context) (CleanupStats, error) {
	r := n.cluster.Ring()
	if err := n.agreeOnMembers(ctx); err != nil {
		return CleanupStats{}, err
	}
	if !sleepCtx(ctx, max(n.cfg.Coordinator.ReadTimeout, n.cfg.Coordinator.WriteTimeout)) {
		return CleanupStats{}, ctx.Err()
	}
	if !r.Equal(n.cluster.Ring()) {
		return CleanupStats{}, refused("the ring changed while waiting for requests in flight; run cleanup again")
	}
	return n.cleanup(ctx)
}

// cleanup deletes the local data of every streamed table in the token ranges the local node does
// not replicate at its keyspace's replication factor, if it may (see above).
func (n *Node) cleanup(ctx context.Context) (CleanupStats, error) {
	t := n.topo
	c := n.cluster
	self := c.LocalID()
	if st := c.State(); st != cluster.StateNormal {
		return CleanupStats{}, refused("node %s is %s; only a normal node cleans up", self, st)
	}
	r := c.Ring()
	if r.Transitioning() {
		return CleanupStats{}, refused("a node is joining or leaving; clean up once it has finished")
	}
	if err := n.agreeOnMembers(ctx); err != nil {
		return CleanupStats{}, err
	}
	t.streamMu.Lock()
	defer t.streamMu.Unlock()
	switch {
	case t.receiving > 0:
		return CleanupStats{}, refused("node %s is receiving a stream; clean up once it has finished", self)
	case t.receivedFor != nil && t.receivedFor.Equal(c.Ring()):
		return CleanupStats{}, refused("node %s received a stream for a topology change that has not finished (a removenode?); clean up once it has", self)
	case !r.Equal(c.Ring()):
		return CleanupStats{}, refused("the ring changed while the cleanup checked it; run it again")
	}
	if r.NumOwners() == 0 || !slices.Contains(r.Nodes(), self) {
		return CleanupStats{}, refused("node %s owns no range", self)
	}
	var st CleanupStats
	s := n.schema.Schema()
	for _, tb := range n.streamedTables() {
		ks, ok := s.Keyspace(tb.Keyspace)
		if !ok {
			if ks, ok = n.schema.System().Keyspace(tb.Keyspace); !ok {
				continue
			}
		}
		var ivs [][2]int64
		for _, tr := range r.Unreplicated(self, ks.Replication()) {
			ivs = append(ivs, intervals(tr)...)
		}
		if len(ivs) == 0 {
			continue
		}
		got, err := n.store.DeleteTokens(tb.ID, ivs)
		if err != nil {
			return st, fmt.Errorf("cleanup of %s: %w", tb.QualifiedName(), err)
		}
		st.Tables++
		st.Ranges += got
	}
	t.cleanupRanges.Add(uint64(st.Ranges))
	t.cleanedFor.Store(r)
	if st.Ranges > 0 {
		n.log.Info("cleaned up the ranges this node no longer replicates", "tables", st.Tables, "ranges_deleted", st.Ranges)
	}
	return st, nil
}

// agreeOnMembers returns nil when every member is up and sees the members this node sees (left
// ones aside) in the same states, and a refusal naming the first that is not or does not.
func (n *Node) agreeOnMembers(ctx context.Context) error {
	mine := memberStates(n.cluster.Members())
	for _, m := range n.cluster.Members() {
		if m.Local || m.State == cluster.StateLeft {
			continue
		}
		if !m.Live {
			// Its view cannot be asked, and this node's own could be stale with nobody to tell.
			return refused("node %s is down; clean up once every node is up", m.ID)
		}
		v, err := n.view(ctx, m.ID)
		if err != nil {
			return refused("cannot ask node %s how it sees the cluster: %v", m.ID, err)
		}
		theirs := map[string]string{}
		for _, mv := range v.GetMembers() {
			if mv.GetState() != cluster.StateLeft.String() {
				theirs[mv.GetId()] = mv.GetState()
			}
		}
		for id, st := range mine {
			if theirs[id] != st {
				return refused("node %s sees %s as %q, this node as %q; clean up once they agree", m.ID, id, theirs[id], st)
			}
		}
		for id, st := range theirs {
			if _, ok := mine[id]; !ok {
				return refused("node %s sees %s (%s), which this node does not know; clean up once they agree", m.ID, id, st)
			}
		}
	}
	return nil
}

// memberStates returns the members' states by id, left members aside.
func memberStates(ms []cluster.Member) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		if m.State != cluster.StateLeft {
			out[string(m.ID)] = m.State.String()
		}
	}
	return out
}

// startCleanup starts the goroutine that cleans up once the node has started and after every
// topology change this node sees finish: the ring was transitioning, or its members changed, and
// now has no transition in progress. It retries with backoff while the cleanup cannot run, and stops with the topology's
// background context.
func (n *Node) startCleanup() {
	t := n.topo
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		ctx := t.bg
		// A node also cleans up when it starts: it may have missed a change while it was down.
		last := n.cluster.Ring()
		dirty := true
		backoff := cleanupRetryMin
		for {
			ch := n.cluster.Changed()
			cur := n.cluster.Ring()
			if !cur.Equal(last) {
				dirty, backoff = true, cleanupRetryMin
				last = cur
			}
			if dirty && !cur.Transitioning() && n.cluster.State() == cluster.StateNormal {
				err := n.cleanupAfterChange(ctx, cur)
				if ctx.Err() != nil {
					return
				}
				if err == nil {
					dirty = false
				} else {
					n.log.Debug("cleanup after a topology change postponed", "err", err, "retry_in", backoff)
					if !sleepCtx(ctx, backoff+rand.N(backoff/2)) {
						return
					}
					backoff = min(2*backoff, cleanupRetryMax)
					continue
				}
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// cleanupAfterChange runs a cleanup once a change to ring r has finished: it waits until every
// live node sees the members as this node does, then waits out the requests coordinators sent
// by the ring before, then cleans up if the ring is still r.
func (n *Node) cleanupAfterChange(ctx context.Context, r *cluster.Ring) error {
	if !r.Equal(n.cluster.Ring()) {
		return refused("the ring changed again")
	}
	_, err := n.Cleanup(ctx)
	return err
}

// sleepCtx waits d, and reports false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}
