package catalog

import (
	"time"
)

// DefaultTombstoneGrace is Options.TombstoneGrace when it is zero.
const DefaultTombstoneGrace = time.Hour

// CollectTombstones garbage-collects the schema's tombstones (dropped keyspaces and tables) that
// may go at now, and returns how long until the oldest one left passes the grace period (0 when
// there is none, or when it waits for the members to agree rather than for time). The node
// calls it again at every membership or digest change and after that wait.
//
// A tombstone goes once it is older than Options.TombstoneGrace and every member of the ring,
// down ones included, gossips this node's schema digest, so that every node holds the drop. The
// purge raises the schema's GC horizon (schema.Schema.Purge), which travels with the schema: the
// other nodes drop the same tombstones as they merge it, and a node behind the horizon cannot
// bring a purged object back. It does nothing before Start.
func (h *Holder) CollectTombstones(now time.Time) time.Duration {
	h.mu.Lock()
	gossip, log := h.gossip, h.log
	h.mu.Unlock()
	if gossip == nil {
		return 0
	}
	grace := h.grace
	cur := h.Schema()
	oldest, ok := cur.OldestTombstone()
	if !ok {
		return 0
	}
	cutoff := now.Add(-grace).UnixMicro()
	if oldest >= cutoff {
		return time.Duration(oldest-cutoff+1) * time.Microsecond
	}
	digest := cur.Digest().String()
	if gossip.PublishedDigest() != digest {
		return 0 // not yet published: wait for the change
	}
	for _, m := range gossip.Members() {
		if !m.Local && (!m.Live || m.SchemaDigest != digest) {
			return 0 // a down member, or one without the drop, blocks the purge
		}
	}
	changed, err := h.merge(cur.Purge(cutoff))
	if err != nil {
		log.Error("purging schema tombstones failed", "err", err)
		return grace
	}
	if changed {
		log.Info("purged schema tombstones every node had seen", "tombstones", cur.Tombstones()-h.Schema().Tombstones())
		if err := gossip.Publish(); err != nil {
			log.Error("publishing the purged schema failed", "err", err)
		}
	}
	return 0
}
