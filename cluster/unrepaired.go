package cluster

// Unrepaired nodes. A node started despite a corrupt write-ahead log has lost writes it
// acknowledged; until a repair run on it completes, it takes writes but must count toward no read
// consistency level. It says so in its metadata (metaUnrepaired), and every node keeps the set of
// members that do, for its coordinator to leave them out of reads (IsUnrepaired).

// SetUnrepaired publishes whether the local node is unrepaired: in its metadata, and at once in
// the local view. The node sets it at start from its storage's mark, and clears it when a repair
// run on it completes.
func (c *Cluster) SetUnrepaired(on bool) error {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	prev := c.localUnrepaired.Swap(on)
	if prev == on {
		return nil
	}
	meta, err := c.buildMeta(*c.digest.Load())
	if err != nil {
		c.localUnrepaired.Store(prev)
		return err
	}
	c.meta.Store(&meta)
	c.mu.Lock()
	if p, ok := c.peers[c.id]; ok {
		p.unrepaired = on
	}
	c.rebuildUnrepairedLocked()
	c.notifyLocked()
	c.mu.Unlock()
	if on {
		c.log.Warn("this node is unrepaired: it counts toward no read consistency level until a repair run on it completes")
	} else {
		c.log.Info("this node is repaired: it serves reads again")
	}
	if c.ml != nil {
		if err := c.ml.UpdateNode(c.tim.updateTimeout); err != nil {
			c.log.Debug("metadata update not yet broadcast", "err", err)
		}
	}
	return nil
}

// IsUnrepaired reports whether member id, as it last gossiped, is unrepaired: it must not count
// toward a read's consistency level. It takes no lock.
func (c *Cluster) IsUnrepaired(id NodeID) bool {
	m := c.unrepaired.Load()
	return m != nil && (*m)[id]
}

// observeUnrepairedLocked records peer p's flag from its metadata. c.mu is held.
func (c *Cluster) observeUnrepairedLocked(p *peerState, on bool) {
	if p.unrepaired == on {
		return
	}
	p.unrepaired = on
	c.rebuildUnrepairedLocked()
	if on {
		c.log.Warn("node is unrepaired: it serves no reads until a repair run on it completes", "peer", string(p.rec.ID))
	} else {
		c.log.Info("node is repaired: it serves reads again", "peer", string(p.rec.ID))
	}
}

// rebuildUnrepairedLocked publishes the set of unrepaired members. c.mu is held.
func (c *Cluster) rebuildUnrepairedLocked() {
	set := map[NodeID]bool{}
	for id, p := range c.peers {
		if p.unrepaired {
			set[id] = true
		}
	}
	c.unrepaired.Store(&set)
}
