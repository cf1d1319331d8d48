package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// SchemaDigest returns the local schema digest as last published to the cluster.
func (c *Cluster) SchemaDigest() string { return *c.digest.Load() }

// NotifySchemaChanged tells the cluster that the local schema changed (a DDL was applied and
// persisted): the new digest goes into the node's metadata and the full schema is pushed to every live
// node. It returns before the push completes; use AwaitSchemaAgreement to wait for the other nodes. It
// fails with ErrMetaTooLarge when the new digest does not fit in the node metadata.
func (c *Cluster) NotifySchemaChanged() error {
	if _, err := c.buildMeta(c.cfg.Schema.Digest()); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.in.localChanged = true
	c.kickWorker()
	return nil
}

// AwaitSchemaAgreement waits until every live node gossips the same schema digest as the local schema,
// or timeout passes (DefaultSchemaAgreementTimeout, or Options.SchemaAgreementTimeout, when timeout ≤ 0).
// It returns nil, nil on agreement. On timeout it logs a warning and returns the ids of the live nodes
// that have not agreed, with a nil error: a DDL still succeeds, with that warning. It returns
// ctx.Err() or ErrClosed (with the nodes not yet agreeing) when ctx ends or the cluster closes first.
func (c *Cluster) AwaitSchemaAgreement(ctx context.Context, timeout time.Duration) ([]NodeID, error) {
	if timeout <= 0 {
		timeout = c.cfg.SchemaAgreementTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		changed := c.Changed()
		disagreeing := c.disagreeing()
		if len(disagreeing) == 0 {
			return nil, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			c.log.Warn("schema agreement not reached; these live nodes have a different schema",
				"timeout", timeout, "nodes", disagreeing, "digest", c.SchemaDigest())
			return disagreeing, nil
		case <-ctx.Done():
			return disagreeing, ctx.Err()
		case <-c.stop:
			return disagreeing, ErrClosed
		}
	}
}

// SchemaDisagreement returns the live nodes whose gossiped schema digest differs from the local
// schema's, sorted; empty when the live nodes agree. A local change not yet published counts
// every live peer as disagreeing. It is what AwaitSchemaAgreement waits on, for metrics.
func (c *Cluster) SchemaDisagreement() []NodeID { return c.disagreeing() }

// disagreeing returns the live nodes whose gossiped schema digest differs from the local digest (which
// is the store's current digest once published).
func (c *Cluster) disagreeing() []NodeID {
	local := c.cfg.Schema.Digest()
	if local != c.SchemaDigest() {
		// A local change not yet published: nobody agrees yet. Count the live peers.
		local = ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []NodeID
	for id, p := range c.peers {
		if id != c.id && p.live && (local == "" || p.digest != local) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// SchemaVoters returns the members that vote on schema changes: every ring member, down ones
// included, sorted by id (a majority of them must agree to a change). It fails while the node
// has seeds to join but has met no other member: until then it cannot know its cluster's size,
// and a change it agreed on alone could contradict the cluster's.
func (c *Cluster) SchemaVoters() ([]Member, error) {
	ms := c.Members()
	if len(ms) == 1 {
		for _, s := range c.cfg.Seeds {
			if !c.isSelf(s) {
				return nil, fmt.Errorf("cluster: this node has not joined its cluster yet (seeds %v); schema changes wait until it has", c.cfg.Seeds)
			}
		}
	}
	return ms, nil
}
