package cluster

import (
	"sync/atomic"
	"time"
)

// Unavailable nodes. A node whose store cannot take writes (its disk is under its free-space
// reserve, or its storage failed under disk_failure_policy stop) still answers gossip probes, so
// failure detection alone would keep it up and coordinators would keep sending it writes that
// fail. It says so instead (SetUnavailable, with a reason such as ReasonDiskFull), and its peers
// treat it as down for the data path from then on: IsLive and Member.Live are false for it (so
// coordinators hint its writes and read from the other replicas, and `kvnode status` and
// system.peers show it down) while memberlist still sees it alive, and it stays in the ring
// (down, never removed). It clears the flag once it can take writes again, and is up again for
// its peers as soon as they learn it.
//
// The flag travels in the push/pull state (gossipState.Availability), as data format versions
// do (dataformat.go): releases before it ignore the unknown JSON field, where an unknown metadata
// flag would make them ignore the node's metadata altogether. A push/pull comes only every 30 s
// with ProfileLAN, so a node whose flag changes exchanges push/pull state with every peer
// memberlist sees alive at once (pushAvailability): its peers learn it within one round trip,
// well within the failure detector's suspicion time. Only what a node says of itself counts,
// and a later report (by its At, the sender's clock) wins over an earlier one that arrives
// after it. A peer that comes up again while flagged is asked for its state at once, so that a
// node restarted or healed with its disk freed is not held down until the next push/pull. A
// member that reports nothing (an older release) is available.

// Reasons a node gives for being unavailable.
const (
	// ReasonDiskFull: the node's disk is under its free-space reserve; it refuses writes.
	ReasonDiskFull = "disk full"
	// ReasonStorageFailed: the node's storage failed and it stopped serving (disk_failure_policy
	// stop).
	ReasonStorageFailed = "storage failed"
)

// Availability is what a node says of its own availability in the push/pull state.
type Availability struct {
	// Reason is why the node is unavailable; empty when it is available.
	Reason string `json:"reason,omitempty"`
	// At is when (unix nanoseconds, by the node's clock) it last changed: a later report wins.
	At int64 `json:"at"`
}

// maxReasonLen bounds a reason learned from a peer.
const maxReasonLen = 64

// SetUnavailable publishes whether the local node can take writes: reason is why it cannot
// (ReasonDiskFull, ReasonStorageFailed), "" when it can again. Its peers treat it as down while
// it is set. It returns at once, with a channel closed once every peer memberlist sees alive was
// told (or could not be); the exchanges run on the cluster's goroutines.
func (c *Cluster) SetUnavailable(reason string) <-chan struct{} {
	c.mu.Lock()
	p := c.peers[c.id]
	if p == nil || p.unavail == reason || c.closed {
		c.mu.Unlock()
		return closedChan()
	}
	p.unavail = reason
	p.unavailAt = max(time.Now().UnixNano(), p.unavailAt+1)
	c.rebuildLiveLocked()
	c.notifyLocked()
	ids := c.gossipLivePeersLocked()
	c.mu.Unlock()
	if reason != "" {
		c.log.Warn("this node is unavailable: its peers see it down until it can take writes again", "reason", reason)
	} else {
		c.log.Info("this node is available again: its peers see it up")
	}
	return c.exchangeState(ids, "its availability")
}

// closedChan returns a closed channel: what is awaited is done.
func closedChan() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// Unavailable returns why member id, as it last reported, cannot take writes; "" when it can
// (or reported nothing).
func (c *Cluster) Unavailable(id NodeID) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.peers[id]; ok {
		return p.unavail
	}
	return ""
}

// localAvailabilityLocked returns the local node's availability for the push/pull state. c.mu
// is held.
func (c *Cluster) localAvailabilityLocked() *Availability {
	p := c.peers[c.id]
	if p == nil {
		return nil
	}
	return &Availability{Reason: p.unavail, At: p.unavailAt}
}

// learnAvailabilityLocked records what sender says of its own availability (nil: it reports
// none, an older release, hence available) and reports whether it changed. c.mu is held.
func (c *Cluster) learnAvailabilityLocked(sender NodeID, a *Availability) bool {
	p, ok := c.peers[sender]
	if !ok || sender == c.id || validateNodeID(sender) != nil {
		return false
	}
	reason, at := "", p.unavailAt
	if a != nil {
		if a.At < p.unavailAt {
			return false // an earlier report, arrived after a later one
		}
		reason, at = a.Reason, a.At
		if len(reason) > maxReasonLen {
			reason = reason[:maxReasonLen]
		}
	}
	p.unavailAt = at
	if p.unavail == reason {
		return false
	}
	p.unavail = reason
	if reason != "" {
		c.log.Warn("node is unavailable: it is treated as down", "peer", string(sender), "reason", reason)
	} else {
		c.log.Info("node is available again", "peer", string(sender))
	}
	return true
}

// gossipLivePeersLocked returns the peers memberlist sees alive, whatever they say of their
// availability. c.mu is held.
func (c *Cluster) gossipLivePeersLocked() map[NodeID]bool {
	ids := map[NodeID]bool{}
	for id, p := range c.peers {
		if id != c.id && p.live {
			ids[id] = true
		}
	}
	return ids
}

// exchangeState exchanges push/pull state with each peer in ids that memberlist sees alive,
// each on its own goroutine (the cluster's: c.wg), without waiting; what names the reason in the
// log. The channel it returns is closed once every exchange has ended.
func (c *Cluster) exchangeState(ids map[NodeID]bool, what string) <-chan struct{} {
	if c.ml == nil {
		return closedChan()
	}
	// left counts the exchanges started and not ended, plus one while they are being started:
	// whoever brings it to zero closes done.
	done := make(chan struct{})
	var left atomic.Int64
	left.Store(1)
	end := func() {
		if left.Add(-1) == 0 {
			close(done)
		}
	}
	defer end()
	for id := range ids {
		c.mu.Lock()
		p, ok := c.peers[id]
		addr, live := "", false
		if ok {
			addr, live = p.rec.GossipAddr, p.live
		}
		if !live || addr == "" || c.closed {
			c.mu.Unlock()
			continue
		}
		c.wg.Add(1) // under c.mu, not closed: shutdown's Wait has not begun
		left.Add(1)
		c.mu.Unlock()
		go func() {
			defer c.wg.Done()
			defer end()
			if _, err := c.ml.Join([]string{addr}); err != nil {
				c.log.Debug("exchanging gossip state with a peer failed; the next push/pull will", "peer", string(id), "for", what, "err", err)
			}
		}()
	}
	return done
}
