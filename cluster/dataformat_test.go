package cluster

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// seesBelowFormat returns "" when every observer's BelowFormat(v) is want.
func seesBelowFormat(v int, want []NodeID, observers ...*testNode) func() string {
	return func() string {
		for _, n := range observers {
			if got := n.BelowFormat(v); !slices.Equal(got, want) {
				return fmt.Sprintf("node %s: BelowFormat(%d) = %v, want %v", n.LocalID(), v, got, want)
			}
		}
		return ""
	}
}

// TestDataFormatTravels: a rolling upgrade in miniature. Node b starts as a release before data
// format versions (it reports none), a and c on format 2: everyone counts b as below format 2,
// and c, which joined through a alone, knows a's version at once. Once b restarts on format 2,
// every node sees the whole ring at format 2.
// Periodic push/pull is off (an hour) in these tests: a node learns versions from the push/pull
// of joins, and from the exchange it starts when it sees a peer come up with a version below its
// own.
func TestDataFormatTravels(t *testing.T) {
	tc := newTestCluster(t)
	config := formatConfig(tc)
	a := tc.startWith(config(t.TempDir(), newFakeSchema(), 2))
	bDir, bSchema := t.TempDir(), newFakeSchema()
	b := tc.startWith(config(bDir, bSchema, 0, a.GossipAddr())) // an older release: it reports none
	c := tc.startWith(config(t.TempDir(), newFakeSchema(), 2, a.GossipAddr()))
	waitFor(t, 30*time.Second, allSeeAllLive(a, b, c))
	waitFor(t, 30*time.Second, seesBelowFormat(2, []NodeID{b.LocalID()}, a, c))
	if got := a.BelowFormat(1); len(got) != 0 {
		t.Errorf("BelowFormat(1) = %v, want none: a member reporting no version is format 1", got)
	}
	if got := a.BelowFormat(3); len(got) != 3 {
		t.Errorf("BelowFormat(3) = %v, want every member", got)
	}
	if m, _ := a.Member(c.LocalID()); m.DataFormat != 2 {
		t.Errorf("a sees c's DataFormat %d, want 2", m.DataFormat)
	}

	b.shutdown(true)
	waitFor(t, 30*time.Second, seesDown(b.LocalID(), a, c))
	b = tc.startWith(config(bDir, bSchema, 2, a.GossipAddr()))
	waitFor(t, 30*time.Second, allSeeAllLive(a, b, c))
	waitFor(t, 30*time.Second, seesBelowFormat(2, nil, a, b, c))
}

// formatConfig returns a function that makes a node's configuration with the given data format
// version and periodic push/pull off.
func formatConfig(tc *testCluster) func(dir string, schema *fakeSchema, format int, seeds ...string) Config {
	return func(dir string, schema *fakeSchema, format int, seeds ...string) Config {
		cfg := tc.config(dir, schema, seeds...)
		cfg.DataFormat = format
		cfg.Tune = func(mc *memberlist.Config) { mc.PushPullInterval = time.Hour }
		return cfg
	}
}

// TestDataFormatLearnedAtStart: three fresh nodes of format 2, b and c joining through a. b's join
// happened before c existed, and no periodic push/pull runs: b learns c's version because it
// saw c come up with none known and exchanged state with it.
func TestDataFormatLearnedAtStart(t *testing.T) {
	tc := newTestCluster(t)
	config := formatConfig(tc)
	a := tc.startWith(config(t.TempDir(), newFakeSchema(), 2))
	b := tc.startWith(config(t.TempDir(), newFakeSchema(), 2, a.GossipAddr()))
	waitFor(t, 30*time.Second, allSeeAllLive(a, b))
	c := tc.startWith(config(t.TempDir(), newFakeSchema(), 2, a.GossipAddr()))
	waitFor(t, 30*time.Second, allSeeAllLive(a, b, c))
	waitFor(t, 30*time.Second, seesBelowFormat(2, nil, a, b, c))
}

// TestLearnFormats: what a push/pull state says of its sender is taken as it is; what it says of
// other members only raises their version; an older release's state (no formats) makes its
// sender unknown again; the local node's own version is never learned.
func TestLearnFormats(t *testing.T) {
	tc := newTestCluster(t)
	cfg := tc.config(t.TempDir(), newFakeSchema())
	cfg.DataFormat = 2
	a := tc.startWith(cfg)
	c := a.Cluster
	b, d := NodeID("node-b"), NodeID("node-d")
	c.mu.Lock()
	c.peers[b] = &peerState{rec: peerRecord{ID: b, NumTokens: 1}}
	c.peers[d] = &peerState{rec: peerRecord{ID: d, NumTokens: 1}}
	c.rebuildRingLocked()
	c.mu.Unlock()
	merge := func(from NodeID, formats map[NodeID]int) {
		st := gossipState{Version: 1, From: from, Formats: formats}
		buf, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		delegate{c}.MergeRemoteState(buf, false)
	}
	check := func(step string, want []NodeID) {
		t.Helper()
		if got := c.BelowFormat(2); !slices.Equal(got, want) {
			t.Errorf("%s: BelowFormat(2) = %v, want %v", step, got, want)
		}
	}
	check("before any state", []NodeID{b, d})
	merge(b, map[NodeID]int{b: 2, d: 2, c.id: 1})
	check("b reports 2 for itself and for d", nil)
	merge(d, map[NodeID]int{b: 1, d: 2})
	check("d reports 1 for b", nil)
	merge(b, nil)
	check("b sends a state without formats (an older release)", []NodeID{b})
	merge(b, map[NodeID]int{b: 3})
	check("b reports 3", nil)
	if m, _ := c.Member(c.id); m.DataFormat != 2 {
		t.Errorf("the local node's DataFormat is %d after peers reported it 1, want its own 2", m.DataFormat)
	}
}
