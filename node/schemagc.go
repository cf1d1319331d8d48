package node

import (
	"context"
	"time"
)

// DefaultSchemaTombstoneGrace is Config.SchemaTombstoneGrace when it is zero.
const DefaultSchemaTombstoneGrace = time.Hour

// schemaGC garbage-collects the schema's tombstones (dropped keyspaces and tables): a tombstone
// goes once it is older than Config.SchemaTombstoneGrace and every member of the ring, down ones
// included, gossips this node's schema digest, so that every node holds the drop. The purge
// raises the schema's GC horizon (schema.Schema.Purge), which travels with the schema: the other
// nodes drop the same tombstones as they merge it, and a node behind the horizon cannot bring a
// purged object back.
type schemaGC struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startSchemaGC starts the loop, which checks at every membership or digest change and when the
// oldest tombstone passes the grace period.
func (n *Node) startSchemaGC() {
	ctx, cancel := context.WithCancel(context.Background())
	g := &schemaGC{cancel: cancel, done: make(chan struct{})}
	n.schemaGC = g
	go func() {
		defer close(g.done)
		for {
			changed := n.cluster.Changed()
			local := n.schema.SchemaChanged()
			wait := n.collectSchemaTombstones(time.Now())
			var timer <-chan time.Time
			var t *time.Timer
			if wait > 0 {
				t = time.NewTimer(wait)
				timer = t.C
			}
			select {
			case <-ctx.Done():
			case <-changed:
			case <-local:
			case <-timer:
			}
			if t != nil {
				t.Stop()
			}
			if ctx.Err() != nil {
				return
			}
		}
	}()
}

// stop ends the loop and waits for it.
func (g *schemaGC) stop() {
	if g == nil {
		return
	}
	g.cancel()
	<-g.done
}

// collectSchemaTombstones purges the tombstones that may go at now, and returns how long until
// the oldest one left passes the grace period (0 when there is none, or when it waits for the
// members to agree rather than for time).
func (n *Node) collectSchemaTombstones(now time.Time) time.Duration {
	grace := n.cfg.SchemaTombstoneGrace
	cur := n.schema.Schema()
	oldest, ok := cur.OldestTombstone()
	if !ok {
		return 0
	}
	cutoff := now.Add(-grace).UnixMicro()
	if oldest >= cutoff {
		return time.Duration(oldest-cutoff+1) * time.Microsecond
	}
	digest := cur.Digest().String()
	if n.cluster.SchemaDigest() != digest {
		return 0 // not yet published: wait for the change
	}
	for _, m := range n.cluster.Members() {
		if !m.Local && (!m.Live || m.SchemaDigest != digest) {
			return 0 // a down member, or one without the drop, blocks the purge
		}
	}
	changed, err := n.schema.merge(cur.Purge(cutoff))
	if err != nil {
		n.log.Error("purging schema tombstones failed", "err", err)
		return grace
	}
	if changed {
		n.log.Info("purged schema tombstones every node had seen", "tombstones", cur.Tombstones()-n.schema.Schema().Tombstones())
		if err := n.cluster.NotifySchemaChanged(); err != nil {
			n.log.Error("publishing the purged schema failed", "err", err)
		}
	}
	return 0
}
