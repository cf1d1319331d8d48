package cluster

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// seesUnavailable returns "" when every observer sees node id with the given reason, and down
// for the data path (IsLive, Member.Live) exactly while the reason is set.
func seesUnavailable(id NodeID, reason string, observers ...*testNode) func() string {
	return func() string {
		for _, n := range observers {
			m, ok := n.Member(id)
			wantLive := reason == ""
			if !ok || m.Unavailable != reason || m.Live != wantLive || n.IsLive(id) != wantLive {
				return fmt.Sprintf("node %s sees %s unavailable %q, live %v (IsLive %v), want %q", n.LocalID(), id, m.Unavailable, m.Live, n.IsLive(id), reason)
			}
		}
		return ""
	}
}

// TestUnavailableTravels: a node that says it is unavailable is down for its peers' data path
// within the failure detector's suspicion time though failure detection keeps it
// alive, it stays in the ring, and it is up again once it says it is available. A node that
// restarts with the flag cleared (its disk freed while it was down) is up again too.
func TestUnavailableTravels(t *testing.T) {
	tc := newTestCluster(t)
	a := tc.start()
	b := tc.start(a.GossipAddr())
	c := tc.start(a.GossipAddr())
	waitFor(t, 30*time.Second, allSeeAllLive(a, b, c))

	start := time.Now()
	b.SetUnavailable(ReasonDiskFull)
	waitFor(t, 30*time.Second, seesUnavailable(b.LocalID(), ReasonDiskFull, a, c))
	took := time.Since(start)
	// memberlist's suspicion timeout for a cluster under 10 nodes: SuspicionMult probe
	// intervals at first, up to SuspicionMaxTimeoutMult times that without confirmations.
	mc, _ := ProfileTest.settings()
	suspicion := time.Duration(mc.SuspicionMult) * mc.ProbeInterval
	t.Logf("peers saw the node unavailable after %v (suspicion time %v to %v)", took, suspicion, time.Duration(mc.SuspicionMaxTimeoutMult)*suspicion)
	if limit := time.Duration(mc.SuspicionMaxTimeoutMult) * suspicion; took > limit {
		t.Errorf("peers saw the node unavailable after %v, over the suspicion time %v", took, limit)
	}
	if m, _ := b.Member(b.LocalID()); !m.Live || m.Unavailable != ReasonDiskFull || !b.IsLive(b.LocalID()) {
		t.Errorf("the node sees itself %+v; want live (the local node always is) and unavailable", m)
	}
	if got := a.Ring().NumNodes(); got != 3 {
		t.Errorf("the ring has %d nodes while one is unavailable, want 3", got)
	}
	b.SetUnavailable("")
	waitFor(t, 30*time.Second, seesUnavailable(b.LocalID(), "", a, c))

	c.SetUnavailable(ReasonStorageFailed)
	waitFor(t, 30*time.Second, seesUnavailable(c.LocalID(), ReasonStorageFailed, a, b))
	c.crash()
	waitFor(t, 30*time.Second, seesDown(c.LocalID(), a, b))
	c2 := tc.restart(c.dir, c.schema, a.GossipAddr())
	waitFor(t, 30*time.Second, seesUnavailable(c2.LocalID(), "", a, b))
}

// TestLearnAvailability: a node's own report counts, a later one wins over an earlier one that
// arrives after it, and a state without one (an older release) means available.
func TestLearnAvailability(t *testing.T) {
	tc := newTestCluster(t)
	a := tc.start()
	c := a.Cluster
	b, d := NodeID("node-b"), NodeID("node-d")
	c.mu.Lock()
	c.peers[b] = &peerState{rec: peerRecord{ID: b, NumTokens: 1}, live: true}
	c.peers[d] = &peerState{rec: peerRecord{ID: d, NumTokens: 1}, live: true}
	c.rebuildRingLocked()
	c.rebuildLiveLocked()
	c.mu.Unlock()
	merge := func(from NodeID, av *Availability) {
		buf, err := json.Marshal(gossipState{Version: 1, From: from, Availability: av})
		if err != nil {
			t.Fatal(err)
		}
		delegate{c}.MergeRemoteState(buf, false)
	}
	check := func(step string, id NodeID, reason string) {
		t.Helper()
		if got := c.Unavailable(id); got != reason || c.IsLive(id) != (reason == "") {
			t.Errorf("%s: %s unavailable %q, live %v; want %q", step, id, got, c.IsLive(id), reason)
		}
	}
	merge(b, &Availability{Reason: ReasonDiskFull, At: 10})
	check("b reports a full disk", b, ReasonDiskFull)
	check("b reports a full disk", d, "")
	merge(b, &Availability{At: 5})
	check("an earlier report of b arrives late", b, ReasonDiskFull)
	merge(b, &Availability{At: 20})
	check("b reports space freed", b, "")
	merge(d, &Availability{Reason: ReasonDiskFull, At: 1})
	merge(d, nil)
	check("d sends a state without availability (an older release)", d, "")
	// An older release reads a newer state: the unknown field is ignored.
	var old struct {
		Version int    `json:"version"`
		From    NodeID `json:"from"`
	}
	buf, _ := json.Marshal(gossipState{Version: 1, From: b, Availability: &Availability{Reason: ReasonDiskFull, At: 1}})
	if err := json.Unmarshal(buf, &old); err != nil || old.From != b {
		t.Errorf("a state with availability does not decode as an older one: %v", err)
	}
}
