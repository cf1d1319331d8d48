package cluster

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/memberlist"
)

// Message kinds sent with SendReliable. Every message is: version byte, kind byte, uvarint length and
// bytes of the sender's node id, payload.
const (
	msgVersion = 1

	kindSchemaPush byte = 1 // payload: the sender's schema snapshot
	kindSchemaSync byte = 2 // payload: the sender's schema snapshot; reply with ours
	kindRemove     byte = 3 // payload: the id of a removed node; only a hint (see NotifyMsg)
)

func encodeMsg(kind byte, from NodeID, payload []byte) []byte {
	b := make([]byte, 0, 2+binary.MaxVarintLen64+len(from)+len(payload))
	b = append(b, msgVersion, kind)
	b = binary.AppendUvarint(b, uint64(len(from)))
	b = append(b, from...)
	return append(b, payload...)
}

func decodeMsg(b []byte) (kind byte, from NodeID, payload []byte, err error) {
	if len(b) < 2 {
		return 0, "", nil, errors.New("short message")
	}
	if b[0] != msgVersion {
		return 0, "", nil, fmt.Errorf("message version %d, want %d", b[0], msgVersion)
	}
	kind = b[1]
	l, n := binary.Uvarint(b[2:])
	if n <= 0 || l > uint64(len(b)-2-n) {
		return 0, "", nil, errors.New("truncated sender id")
	}
	start := 2 + n
	from = NodeID(b[start : start+int(l)])
	if err := validateNodeID(from); err != nil {
		return 0, "", nil, err
	}
	return kind, from, b[start+int(l):], nil
}

// delegate is memberlist's Delegate. Its methods run on memberlist's goroutines and never block: work
// that does I/O goes to the worker.
type delegate struct{ c *Cluster }

func (d delegate) NodeMeta(limit int) []byte {
	m := *d.c.meta.Load()
	if len(m) > limit { // cannot happen: buildMeta enforces MaxMetaSize
		return nil
	}
	return m
}

func (d delegate) NotifyMsg(b []byte) {
	c := d.c
	kind, from, payload, err := decodeMsg(b)
	if err != nil {
		c.log.Warn("ignoring unreadable cluster message", "err", err)
		return
	}
	payload = slices.Clone(payload) // memberlist may reuse b
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	switch kind {
	case kindSchemaPush:
		c.in.snapshots[from] = payload
	case kindSchemaSync:
		c.in.snapshots[from] = payload
		c.in.replyTo[from] = true
	case kindRemove:
		id := NodeID(payload)
		if validateNodeID(id) != nil {
			c.log.Warn("ignoring removal of an invalid node id", "from", string(from))
			return
		}
		// A hint only (sent by releases that announced removals over gossip): anyone reaching
		// the gossip port can send it. Ask its sender over the internode port instead.
		if _, gone := c.removed[id]; !gone {
			c.log.Info("gossip hints at a removal; confirming it with the sender over the internode port", "removed", string(id), "from", string(from))
			c.confirmLocked(from)
		}
	default:
		c.log.Warn("ignoring cluster message of unknown kind", "kind", kind, "from", string(from))
		return
	}
	c.kickWorker()
}

func (d delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }

func (d delegate) LocalState(join bool) []byte {
	c := d.c
	st := gossipState{Version: 1, From: c.id}
	c.mu.Lock()
	for _, p := range c.peers {
		st.Peers = append(st.Peers, p.rec)
	}
	st.Formats = c.formatsLocked()
	st.Availability = c.localAvailabilityLocked()
	for id, at := range c.removed { // hints: a receiver confirms them with us over the internode port
		st.Removed = append(st.Removed, Removal{ID: id, At: at})
	}
	c.mu.Unlock()
	st.Schema = c.cfg.Schema.Snapshot()
	b, err := json.Marshal(st)
	if err != nil {
		c.log.Error("encode gossip state", "err", err)
		return nil
	}
	return b
}

func (d delegate) MergeRemoteState(buf []byte, join bool) {
	c := d.c
	if len(buf) == 0 {
		return
	}
	var st gossipState
	if err := json.Unmarshal(buf, &st); err != nil || st.Version != 1 {
		c.log.Warn("ignoring unreadable gossip state", "err", err, "version", st.Version)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	changed := false
	if len(st.Removed) > 0 && st.From != c.id && validateNodeID(st.From) == nil {
		// Removals in gossip are hints: a removal applies only once a peer confirms it over the
		// internode port. Ask the node that claims it.
		for _, r := range st.Removed {
			if _, gone := c.removed[r.ID]; !gone && validateNodeID(r.ID) == nil {
				c.confirmLocked(st.From)
				break
			}
		}
	}
	ringChanged := false
	for _, r := range st.Peers {
		if validateNodeID(r.ID) != nil || r.NumTokens < 1 || r.NumTokens > MaxNumTokens || r.ID == c.id {
			continue
		}
		if _, gone := c.removed[r.ID]; gone {
			continue
		}
		p, ok := c.peers[r.ID]
		switch {
		case !ok:
			c.peers[r.ID] = &peerState{rec: r, tokens: NodeTokens(r.ID, r.NumTokens)}
			ringChanged = true
		case !p.live && r.Updated > p.rec.Updated && r != p.rec:
			// A live node's own metadata is authoritative; for a down one, the fresher record wins.
			if r.NumTokens != p.rec.NumTokens {
				p.tokens = NodeTokens(r.ID, r.NumTokens)
				ringChanged = true
			}
			if r.State != p.rec.State {
				ringChanged = true
			}
			p.rec = r
		default:
			continue
		}
		changed = true
	}
	if c.learnFormatsLocked(st.From, st.Formats) {
		ringChanged = true // rebuilds the formats too
	}
	if c.learnAvailabilityLocked(st.From, st.Availability) {
		c.rebuildLiveLocked()
		changed = true
	}
	if ringChanged {
		c.rebuildRingLocked()
	}
	if changed {
		c.dirty = true
		c.notifyLocked()
	}
	if st.Schema != nil && validateNodeID(st.From) == nil {
		c.in.snapshots[st.From] = st.Schema
	}
	c.kickWorker()
}

// events is memberlist's EventDelegate. memberlist calls it serially; it never blocks.
type events struct{ c *Cluster }

func (e events) NotifyJoin(n *memberlist.Node)   { e.c.observe(n) }
func (e events) NotifyUpdate(n *memberlist.Node) { e.c.observe(n) }
func (e events) NotifyLeave(n *memberlist.Node) {
	c := e.c
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.peers[NodeID(n.Name)]
	if !ok || !p.live || p.rec.ID == c.id {
		return
	}
	p.live = false
	c.rebuildLiveLocked()
	c.forgetClock(p.rec.ID)
	c.notifyLocked()
	c.log.Info("node down", "peer", n.Name, "gossip_addr", n.Address())
	at, deferred := c.deferred[p.rec.ID]
	switch {
	case deferred:
		if c.applyRemovalLocked(p.rec.ID, at) {
			c.log.Info("node removed from the ring", "removed", n.Name)
		}
	case p.rec.State == StateLeft:
		// It was decommissioned and has stopped: forget it for good.
		if c.applyRemovalLocked(p.rec.ID, time.Now().UnixNano()) {
			c.log.Info("decommissioned node left the cluster", "removed", n.Name)
		}
	}
}

// observe records a live node's metadata.
func (c *Cluster) observe(n *memberlist.Node) {
	meta, err := decodeMeta(n.Meta)
	if err == nil && meta.ID != NodeID(n.Name) {
		err = fmt.Errorf("metadata names node %q", meta.ID)
	}
	if err != nil {
		c.log.Warn("ignoring node with unreadable metadata", "peer", n.Name, "gossip_addr", n.Address(), "err", err)
		return
	}
	id := meta.ID
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, gone := c.removed[id]; gone {
		return
	}
	rec := peerRecord{ID: id, RPCAddr: meta.RPCAddr, GossipAddr: n.Address(), NumTokens: meta.NumTokens, Updated: time.Now().UnixNano(),
		NativeAddr: meta.NativeAddr, DataCenter: meta.DataCenter, Rack: meta.Rack, State: meta.State}
	p, ok := c.peers[id]
	if !ok {
		p = &peerState{}
		c.peers[id] = p
	}
	if p.rec.RPCAddr != rec.RPCAddr || p.rec.GossipAddr != rec.GossipAddr || p.rec.NumTokens != rec.NumTokens ||
		p.rec.NativeAddr != rec.NativeAddr || p.rec.DataCenter != rec.DataCenter || p.rec.Rack != rec.Rack ||
		p.rec.State != rec.State {
		c.dirty = true
		c.kickWorker()
	}
	if id == c.id {
		rec.State = c.State() // SetState keeps it; the metadata echoed back may be older
	}
	tokensChanged := !ok || p.rec.NumTokens != rec.NumTokens
	stateChanged := ok && p.rec.State != rec.State
	p.rec = rec
	if tokensChanged {
		p.tokens = NodeTokens(id, rec.NumTokens)
	}
	if tokensChanged || stateChanged {
		c.rebuildRingLocked()
		c.notifyLocked()
		if stateChanged {
			c.log.Info("node state changed", "peer", string(id), "state", rec.State.String())
		}
	}
	if id == c.id {
		return // our own liveness, digest and flags are kept by Start, the worker and SetUnrepaired
	}
	c.observeUnrepairedLocked(p, meta.Unrepaired)
	wasLive := p.live
	p.live = true
	p.digest = meta.SchemaDigest
	if !wasLive {
		c.rebuildLiveLocked()
		c.log.Info("node up", "peer", string(id), "gossip_addr", rec.GossipAddr, "rpc_addr", rec.RPCAddr)
		// Learn the removals made while we did not see it (or were down ourselves).
		c.confirmLocked(id)
		if p.format < c.cfg.DataFormat || p.unavail != "" {
			// It may have come back on a newer release, or with its disk freed: ask now rather
			// than at the next push/pull.
			c.in.formatPulls[id] = true
			c.kickWorker()
		}
	}
	if meta.SchemaDigest != *c.digest.Load() {
		c.in.pulls[id] = true
		c.kickWorker()
	}
	c.notifyLocked()
}

// aliveFilter is memberlist's AliveDelegate: removed nodes may not come back.
type aliveFilter struct{ c *Cluster }

func (a aliveFilter) NotifyAlive(n *memberlist.Node) error {
	c := a.c
	if n.Name == string(c.id) {
		return nil
	}
	c.mu.Lock()
	_, gone := c.removed[NodeID(n.Name)]
	c.mu.Unlock()
	if gone {
		return fmt.Errorf("node %s was removed from the cluster", n.Name)
	}
	return nil
}

// worker does the cluster's I/O on behalf of the memberlist callbacks: merging received schema
// snapshots, publishing the local digest, pushing and pulling schema, persisting peers.
func (c *Cluster) worker() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		c.mu.Lock()
		in := c.in
		c.in = newInbox()
		c.mu.Unlock()
		if !in.empty() {
			c.process(in)
		}
		c.askRemovals()
		if err := c.persist(); err != nil {
			c.log.Error("persisting known peers failed", "err", err)
		}
	}
}

func (c *Cluster) process(in inbox) {
	changed := in.localChanged
	senders := make([]NodeID, 0, len(in.snapshots))
	for id := range in.snapshots {
		senders = append(senders, id)
	}
	slices.Sort(senders)
	for _, from := range senders {
		ch, err := c.cfg.Schema.Merge(in.snapshots[from])
		if err != nil {
			c.log.Warn("merging a peer's schema failed", "peer", string(from), "err", err)
			continue
		}
		changed = changed || ch
	}
	if changed {
		c.publishDigest()
	}

	var snapshot []byte
	msg := func(kind byte) []byte {
		if snapshot == nil {
			snapshot = c.cfg.Schema.Snapshot()
		}
		return encodeMsg(kind, c.id, snapshot)
	}
	if in.localChanged {
		for _, to := range c.livePeers() {
			c.send(to, msg(kindSchemaPush), false)
		}
	}
	for to := range in.replyTo {
		if !in.localChanged { // after a local change the push above already went to every live peer
			c.send(to, msg(kindSchemaPush), false)
		}
	}
	c.pullFormats(in.formatPulls)
	local := *c.digest.Load()
	for to := range in.pulls {
		m, ok := c.Member(to)
		if ok && m.Live && m.SchemaDigest != local {
			c.send(to, msg(kindSchemaSync), true)
		}
	}
}

// publishDigest puts the store's current digest in the local metadata and gossips it.
func (c *Cluster) publishDigest() {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	d := c.cfg.Schema.Digest()
	meta, err := c.buildMeta(d)
	if err != nil {
		c.log.Error("cannot publish the schema digest", "err", err)
		return
	}
	c.digest.Store(&d)
	c.meta.Store(&meta)
	c.mu.Lock()
	if p, ok := c.peers[c.id]; ok {
		p.digest = d
	}
	c.notifyLocked()
	c.mu.Unlock()
	if err := c.ml.UpdateNode(c.tim.updateTimeout); err != nil {
		c.log.Debug("metadata update not yet broadcast", "err", err)
	}
}
