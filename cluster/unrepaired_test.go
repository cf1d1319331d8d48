package cluster

import (
	"fmt"
	"testing"
	"time"
)

// sees returns "" when every observer lists node id with the given unrepaired flag.
func seesUnrepaired(id NodeID, want bool, observers ...*testNode) func() string {
	return func() string {
		for _, n := range observers {
			m, ok := n.Member(id)
			if !ok || m.Unrepaired != want || n.IsUnrepaired(id) != want {
				return fmt.Sprintf("node %s sees %s unrepaired %v (member %v, set %v), want %v", n.LocalID(), id, m.Unrepaired, ok, n.IsUnrepaired(id), want)
			}
		}
		return ""
	}
}

// TestUnrepairedTravels: a node started unrepaired says so in its first metadata; its peers see
// it, and see it cleared when it calls SetUnrepaired(false).
func TestUnrepairedTravels(t *testing.T) {
	tc := newTestCluster(t)
	a := tc.start()
	cfg := tc.config(t.TempDir(), newFakeSchema(), a.GossipAddr())
	cfg.Unrepaired = true
	b := tc.startWith(cfg)
	waitFor(t, 30*time.Second, allSeeAllLive(a, b))
	waitFor(t, 30*time.Second, seesUnrepaired(b.LocalID(), true, a, b))
	if a.IsUnrepaired(a.LocalID()) {
		t.Errorf("node a is unrepaired; only b started so")
	}
	if err := b.SetUnrepaired(false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, seesUnrepaired(b.LocalID(), false, a, b))
	if err := a.SetUnrepaired(true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, seesUnrepaired(a.LocalID(), true, a, b))
}
