package cluster

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func ringNode(id NodeID, st NodeState) RingNode {
	return RingNode{ID: id, Tokens: NodeTokens(id, 16), State: st}
}

// TestRingPendingRanges checks the replicas and pending replicas of every token while a node joins
// and while one leaves: owners are normal and leaving nodes; pending replicas are exactly the
// nodes that replicate the token once the transition finished and do not now.
func TestRingPendingRanges(t *testing.T) {
	a, b, c, d := ringNode("a", StateNormal), ringNode("b", StateNormal), ringNode("c", StateNormal), ringNode("d", StateNormal)
	before := NewRing([]RingNode{a, b, c})
	joinedD := NewRing([]RingNode{a, b, c, d})
	joining := d
	joining.State = StateJoining
	leaving := c
	leaving.State = StateLeaving
	tests := []struct {
		name      string
		ring      *Ring
		cur, next *Ring
	}{
		{"d joining", NewRing([]RingNode{a, b, c, joining}), before, joinedD},
		{"c leaving", NewRing([]RingNode{a, b, leaving}), before, NewRing([]RingNode{a, b})},
		{"settled", before, before, before},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range tests {
		for _, rf := range []int{1, 2, 3} {
			sawPending := false
			for range 2000 {
				tok := int64(rng.Uint64())
				got := tt.ring.Replicas(tok, rf)
				if want := tt.cur.Replicas(tok, rf); !slices.Equal(got, want) {
					t.Fatalf("%s rf=%d token %d: replicas %v, want the current owners' %v", tt.name, rf, tok, got, want)
				}
				var want []NodeID
				for _, id := range tt.next.Replicas(tok, rf) {
					if !slices.Contains(got, id) {
						want = append(want, id)
					}
				}
				pending := tt.ring.AppendPending(nil, tok, Simple(rf))
				if !slices.Equal(pending, want) {
					t.Fatalf("%s rf=%d token %d: pending %v, want %v", tt.name, rf, tok, pending, want)
				}
				sawPending = sawPending || len(pending) > 0
			}
			if sawPending != (tt.name != "settled") && !(tt.name == "c leaving" && rf == 3) {
				t.Errorf("%s rf=%d: saw pending replicas %v", tt.name, rf, sawPending)
			}
		}
	}
	if r := NewRing([]RingNode{a, b, joining}); r.NumOwners() != 2 || r.NumNodes() != 3 || !r.Transitioning() {
		t.Errorf("ring with a joining node: %d owners of %d nodes, transitioning %v; want 2 of 3, true", r.NumOwners(), r.NumNodes(), r.Transitioning())
	}
	left := c
	left.State = StateLeft
	if r := NewRing([]RingNode{a, b, left}); r.Contains("c") || r.Transitioning() {
		t.Errorf("a left node is still in the ring (or makes it transition)")
	}
}

// TestTransfersCoverEveryMovedToken checks the stream plan of a join, a decommission and a
// removal: every token whose new replicas include a node that did not replicate it is in exactly
// one transfer to that node, sourced from the token's old replicas, and no other token is.
func TestTransfersCoverEveryMovedToken(t *testing.T) {
	a, b, c, d := ringNode("a", StateNormal), ringNode("b", StateNormal), ringNode("c", StateNormal), ringNode("d", StateNormal)
	three := NewRing([]RingNode{a, b, c})
	cases := []struct {
		name      string
		cur, next *Ring
	}{
		{"join", three, NewRing([]RingNode{a, b, c, d})},
		{"leave", three, NewRing([]RingNode{a, b})},
		{"remove", three, three.Without("b")},
		{"first node", NewRing(nil), NewRing([]RingNode{a})},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tt := range cases {
		for _, rf := range []int{1, 2, 3} {
			plan := Transfers(tt.cur, tt.next, Simple(rf))
			toks := []int64{}
			for range 3000 {
				toks = append(toks, int64(rng.Uint64()))
			}
			for _, tr := range plan {
				toks = append(toks, tr.Range.End, tr.Range.Start)
			}
			for _, tok := range toks {
				from := tt.cur.Replicas(tok, rf)
				for _, to := range tt.next.Replicas(tok, rf) {
					var hits []Transfer
					for _, tr := range plan {
						if tr.To == to && tr.Range.Contains(tok) {
							hits = append(hits, tr)
						}
					}
					moved := !slices.Contains(from, to)
					switch {
					case moved && len(hits) != 1:
						t.Fatalf("%s rf=%d token %d moves to %s: %d transfers cover it (%v)", tt.name, rf, tok, to, len(hits), hits)
					case !moved && len(hits) != 0:
						t.Fatalf("%s rf=%d token %d stays on %s but transfers %v cover it", tt.name, rf, tok, to, hits)
					case moved && !slices.Equal(hits[0].From, from):
						t.Fatalf("%s rf=%d token %d: transfer from %v, want the old replicas %v", tt.name, rf, tok, hits[0].From, from)
					}
				}
			}
		}
	}
	if got := Transfers(three, three, Simple(2)); len(got) != 0 {
		t.Errorf("Transfers of an unchanged ring = %v, want none", got)
	}
}

func TestOwnershipSumsToTheReplicationFactor(t *testing.T) {
	r := NewRing([]RingNode{ringNode("a", StateNormal), ringNode("b", StateNormal), ringNode("c", StateNormal), ringNode("d", StateJoining)})
	for _, rf := range []int{1, 2, 3, 5} {
		sum := 0.0
		own := r.Ownership(Simple(rf))
		for _, f := range own {
			sum += f
		}
		if want := float64(min(rf, 3)); sum < want-1e-9 || sum > want+1e-9 || len(own) != min(rf*16, 3) {
			t.Errorf("rf=%d: ownership %v sums to %v over %d nodes, want %v over 3 (the joining node owns nothing)", rf, own, sum, len(own), want)
		}
	}
}

func TestNodeStateTextAndTransitions(t *testing.T) {
	for st := StateNormal; st <= StateLeft; st++ {
		b, err := st.MarshalText()
		var back NodeState
		if err != nil || back.UnmarshalText(b) != nil || back != st {
			t.Errorf("state %v does not round-trip through text (%q, %v)", st, b, err)
		}
	}
	var st NodeState
	if err := st.UnmarshalText([]byte("bootstrapping")); err == nil {
		t.Errorf("UnmarshalText(bootstrapping) succeeded, want an error")
	}
}

// TestJoiningNodeBecomesOwnerOnlyWhenNormal runs real memberlist nodes: a new node started with
// Joining is seen joining by its peers (pending, not an owner) and persists the state; once it
// sets itself normal every node sees it own ranges, and a restart stays normal (no re-bootstrap).
// Illegal transitions are refused.
func TestJoiningNodeBecomesOwnerOnlyWhenNormal(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.start()
	cfg := tc.config(t.TempDir(), newFakeSchema(), n1.GossipAddr())
	cfg.Joining = true
	c2, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n2 := &testNode{Cluster: c2, dir: cfg.DataDir, schema: cfg.Schema.(*fakeSchema)}
	defer func() { n2.Close() }()
	id2 := n2.LocalID()
	seesState := func(want NodeState, nodes ...*testNode) func() string {
		return func() string {
			for _, n := range nodes {
				m, ok := n.Member(id2)
				if !ok || m.State != want {
					return fmt.Sprintf("node %s sees %s as %v (known %v), want %v", n.LocalID(), id2, m.State, ok, want)
				}
				if st, _ := n.Ring().State(id2); st != want {
					return fmt.Sprintf("node %s's ring has %s %v, want %v", n.LocalID(), id2, st, want)
				}
			}
			return ""
		}
	}
	waitFor(t, 10*time.Second, seesState(StateJoining, n1, n2))
	if n1.Ring().NumOwners() != 1 || !n1.Ring().Transitioning() {
		t.Fatalf("while %s joins, node 1's ring has %d owners (transitioning %v), want 1 (true)", id2, n1.Ring().NumOwners(), n1.Ring().Transitioning())
	}
	if err := n2.SetState(StateLeaving); err == nil {
		t.Errorf("joining → leaving succeeded, want an error")
	}
	if err := n2.SetState(StateNormal); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, seesState(StateNormal, n1, n2))
	if n1.Ring().NumOwners() != 2 || n1.Ring().Transitioning() {
		t.Errorf("after the join node 1's ring has %d owners (transitioning %v), want 2 (false)", n1.Ring().NumOwners(), n1.Ring().Transitioning())
	}
	n2.Close()
	c2, err = Start(t.Context(), cfg) // a restart with data does not bootstrap again
	if err != nil {
		t.Fatal(err)
	}
	n2 = &testNode{Cluster: c2, dir: cfg.DataDir, schema: n2.schema}
	if st := n2.State(); st != StateNormal {
		t.Errorf("restarted node is %v, want normal", st)
	}
}

// TestDecommissionedNodeLeavesForGood: a leaving node keeps its ranges; once it is left it owns
// nothing, and once it stops every node forgets it and it cannot start again on its directory.
func TestDecommissionedNodeLeavesForGood(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.start()
	n2 := tc.start(n1.GossipAddr())
	n3 := tc.start(n1.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(n1, n2, n3))
	id3 := n3.LocalID()
	if err := n3.SetState(StateLeaving); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() string {
		if st, _ := n1.Ring().State(id3); st != StateLeaving {
			return fmt.Sprintf("node 1 sees %s %v, want leaving", id3, st)
		}
		return ""
	})
	if n1.Ring().NumOwners() != 3 {
		t.Errorf("a leaving node must still own its ranges: %d owners, want 3", n1.Ring().NumOwners())
	}
	if err := n3.SetState(StateLeft); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() string {
		if n1.Ring().Contains(id3) || n2.Ring().Contains(id3) {
			return "a left node is still in a ring"
		}
		return ""
	})
	n3.Close()
	waitFor(t, 10*time.Second, func() string {
		for _, n := range []*testNode{n1, n2} {
			if _, ok := n.Member(id3); ok {
				return fmt.Sprintf("node %s still lists the left node", n.LocalID())
			}
		}
		return ""
	})
	if _, err := Start(t.Context(), tc.config(n3.dir, n3.schema, n1.GossipAddr())); err == nil || !strings.Contains(err.Error(), "decommissioned") {
		t.Errorf("restarting a decommissioned node: %v, want an error saying it was decommissioned", err)
	}
}

// TestRemovalMessageNeverRemovesALiveNode: removals in gossip are hints only. A forged removal
// message or push/pull state (anyone reaching the gossip port can send them) naming a live node,
// or a node nobody knows, never removes it: the receiver asks the claimed sender over the
// internode port, which knows of no such removal. Not while the node is up, not once it has
// crashed, and not after it comes back (nor after the receiver restarts).
func TestRemovalMessageNeverRemovesALiveNode(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.start()
	n2 := tc.start(n1.GossipAddr())
	n3 := tc.start(n1.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(n1, n2, n3))
	id2, id3 := n2.LocalID(), n3.LocalID()
	const ghost = NodeID("ghost-node")

	// forge sends node 1 a removal message and a push/pull state, both claiming to come from
	// node 2, removing node 3 and a node nobody knows; then waits until node 1 has asked node 2.
	forge := func() {
		t.Helper()
		d := delegate{n1.Cluster}
		d.NotifyMsg(encodeMsg(kindRemove, id2, []byte(id3)))
		st, _ := json.Marshal(gossipState{Version: 1, From: id2, Removed: []Removal{
			{ID: id3, At: time.Now().UnixNano()}, {ID: ghost, At: time.Now().UnixNano()}}})
		d.MergeRemoteState(st, false)
		waitFor(t, 10*time.Second, func() string {
			n1.mu.Lock()
			defer n1.mu.Unlock()
			if n1.confirm[id2] || n1.asking[id2] {
				return "node 1 has not asked node 2 to confirm the forged removals yet"
			}
			return ""
		})
	}
	kept := func(when string) {
		t.Helper()
		if !n1.Ring().Contains(id3) {
			t.Fatalf("%s: a forged removal took node %s out of node 1's ring", when, id3)
		}
		n1.mu.Lock()
		defer n1.mu.Unlock()
		for _, id := range []NodeID{id3, ghost} {
			if _, gone := n1.removed[id]; gone {
				t.Fatalf("%s: node 1 recorded the forged removal of %s", when, id)
			}
			if _, ok := n1.deferred[id]; ok {
				t.Fatalf("%s: node 1 deferred the forged removal of %s until it is seen down", when, id)
			}
		}
	}

	forge()
	kept("while the node is up")
	if m, ok := n1.Member(id3); !ok || !m.Live {
		t.Fatalf("a forged removal dropped live node %s (known %v)", id3, ok)
	}

	n3.crash()
	waitFor(t, 10*time.Second, seesDown(id3, n1, n2))
	forge()
	kept("once the node crashed")

	// The node comes back on its data directory, and the receiver restarts on its own.
	n3 = tc.restart(n3.dir, n3.schema, n1.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(n1, n2, n3))
	dir1, schema1 := n1.dir, n1.schema
	n1.Close()
	n1 = tc.restart(dir1, schema1, n2.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(n1, n2, n3))
	kept("after the node came back")
	for _, n := range []*testNode{n2, n3} {
		if rs := n.Removals(); len(rs) != 0 {
			t.Errorf("node %s knows removals %v, want none", n.LocalID(), rs)
		}
	}
}
