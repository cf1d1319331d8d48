package cluster

import (
	"slices"
)

// Data format versions. Each node's storage records the version of its data format
// (replica.FormatVersion); a node of an older format cannot store what a newer one introduced
// (a node of format 1 keeps an expiring cell as one that never expires). So every node tells its
// peers its version, and coordinators refuse such writes while a member of an older format
// remains (BelowFormat).
//
// The version travels in the push/pull state (gossipState.Formats), not in the node metadata:
// releases before data format versions read metadata of versions 1 to 4 only, with no unknown
// flag nor trailing byte, and would ignore a node whose metadata carried it; they ignore the
// unknown JSON field instead. A node reports its own version and those it learned of the other
// members, so a node joining through a seed learns every member's version at once. What a node
// says of itself is authoritative (a member restarted on an older release stops reporting one);
// what it says of others only raises the version known (a node's data never goes back to an
// older format). A member whose version is unknown counts as format 1.

// A node learns a version at the latest at the next push/pull (30 s with ProfileLAN), but sooner
// matters in a rolling upgrade: when a peer whose version it knows to be below its own comes up
// (perhaps restarted on a newer release), it exchanges push/pull state with that peer at once
// (pullFormats), and both learn each other's.

// pullFormats exchanges push/pull state with each peer in ids that memberlist sees alive (an
// unavailable one too), each on its own goroutine (the cluster's: c.wg), without waiting.
func (c *Cluster) pullFormats(ids map[NodeID]bool) {
	c.exchangeState(ids, "its data format version or availability")
}

// formatsLocked returns the data format versions known, the local node's among them. c.mu is
// held.
func (c *Cluster) formatsLocked() map[NodeID]int {
	var fs map[NodeID]int
	for id, p := range c.peers {
		if p.format > 0 {
			if fs == nil {
				fs = map[NodeID]int{}
			}
			fs[id] = p.format
		}
	}
	return fs
}

// learnFormatsLocked records the data format versions a push/pull state from sender reports and
// reports whether any changed. The sender's own is taken as it says (none means unknown); the
// others only raise what is known. The local node's is never learned. c.mu is held.
func (c *Cluster) learnFormatsLocked(sender NodeID, fs map[NodeID]int) bool {
	changed := false
	if p, ok := c.peers[sender]; ok && sender != c.id && validateNodeID(sender) == nil {
		v := max(fs[sender], 0)
		if p.format != v {
			c.log.Info("node reports its data format version", "peer", string(sender), "format", v)
			p.format, changed = v, true
		}
	}
	for id, v := range fs {
		p, ok := c.peers[id]
		if !ok || id == c.id || id == sender || v <= p.format {
			continue
		}
		p.format, changed = v, true
	}
	return changed
}

// rebuildFormatsLocked publishes every member's data format version. c.mu is held.
func (c *Cluster) rebuildFormatsLocked() {
	fs := make(map[NodeID]int, len(c.peers))
	for id, p := range c.peers {
		fs[id] = p.format
	}
	c.formats.Store(&fs)
}

// BelowFormat returns, sorted, the members of the ring (down ones and this node included) whose
// data format version is below v: those that reported an older one and those that reported none
// (a release before data format versions, or a member not heard from since this node started).
// It takes no lock and allocates only when it finds some.
func (c *Cluster) BelowFormat(v int) []NodeID {
	fs := c.formats.Load()
	if fs == nil {
		return nil
	}
	var below []NodeID
	for id, f := range *fs {
		if max(f, 1) < v {
			below = append(below, id)
		}
	}
	slices.Sort(below)
	return below
}
