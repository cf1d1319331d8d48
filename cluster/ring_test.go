package cluster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// fixedRing is a ring with hand-picked tokens: a owns 0 and 300, b owns 100, c owns 200.
func fixedRing() *Ring {
	return NewRing([]RingNode{
		{ID: "c", Tokens: []int64{200}},
		{ID: "a", Tokens: []int64{300, 0}},
		{ID: "b", Tokens: []int64{100}},
	})
}

func TestReplicasWalkTheRingClockwise(t *testing.T) {
	r := fixedRing()
	tests := []struct {
		token int64
		rf    int
		want  []NodeID
	}{
		{0, 1, []NodeID{"a"}},                       // a token equal to a vnode token belongs to it
		{1, 1, []NodeID{"b"}},                       // the next vnode token at or after the token
		{100, 3, []NodeID{"b", "c", "a"}},           // ring order, not id order
		{150, 2, []NodeID{"c", "a"}},                //
		{250, 3, []NodeID{"a", "b", "c"}},           // a(300) then wrap to a(0) (skipped: already taken), b, c
		{301, 2, []NodeID{"a", "b"}},                // past the last token: wrap to the first (a at 0)
		{math.MaxInt64, 1, []NodeID{"a"}},           // wrap-around at the top of the token space
		{math.MinInt64, 3, []NodeID{"a", "b", "c"}}, // the bottom of the token space
		{50, 5, []NodeID{"b", "c", "a"}},            // RF above the node count is capped
		{50, 0, nil},                                // RF 0 yields nothing
		{-7, -1, nil},                               // so does a negative RF
	}
	for _, tt := range tests {
		got := r.Replicas(tt.token, tt.rf)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Replicas(token=%d, rf=%d) = %v, want %v", tt.token, tt.rf, got, tt.want)
		}
	}
}

func TestReplicasOfAnEmptyRing(t *testing.T) {
	r := NewRing(nil)
	if got := r.Replicas(42, 3); len(got) != 0 {
		t.Errorf("Replicas on an empty ring = %v, want none", got)
	}
	if got := r.Owner(42); got != "" {
		t.Errorf("Owner on an empty ring = %q, want \"\"", got)
	}
}

func TestReplicasAreDistinctInRingOrderAndStartAtTheOwner(t *testing.T) {
	ids := []NodeID{"n1", "n2", "n3", "n4", "n5"}
	var nodes []RingNode
	for _, id := range ids {
		nodes = append(nodes, RingNode{ID: id, Tokens: NodeTokens(id, DefaultNumTokens)})
	}
	r := NewRing(nodes)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		token := int64(rng.Uint64())
		rf := 1 + rng.IntN(7)
		got := r.Replicas(token, rf)
		if want := min(rf, len(ids)); len(got) != want {
			t.Fatalf("Replicas(%d, rf=%d) has %d nodes, want %d", token, rf, len(got), want)
		}
		seen := map[NodeID]bool{}
		for _, id := range got {
			if seen[id] {
				t.Fatalf("Replicas(%d, rf=%d) = %v repeats %s", token, rf, got, id)
			}
			seen[id] = true
		}
		if got[0] != r.Owner(token) {
			t.Fatalf("Replicas(%d)[0] = %s, want the owner %s", token, got[0], r.Owner(token))
		}
		if want := naiveReplicas(nodes, token, rf); !slices.Equal(got, want) {
			t.Fatalf("Replicas(%d, rf=%d) = %v, but a linear walk of the ring gives %v", token, rf, got, want)
		}
	}
}

// naiveReplicas is the SimpleStrategy definition written without binary search or indexes.
func naiveReplicas(nodes []RingNode, token int64, rf int) []NodeID {
	type vnode struct {
		token int64
		id    NodeID
	}
	var vs []vnode
	for _, n := range nodes {
		for _, t := range n.Tokens {
			vs = append(vs, vnode{t, n.ID})
		}
	}
	slices.SortFunc(vs, func(a, b vnode) int {
		if a.token != b.token {
			if a.token < b.token {
				return -1
			}
			return 1
		}
		if a.id < b.id {
			return -1
		}
		return 1
	})
	start := 0
	for start < len(vs) && vs[start].token < token {
		start++
	}
	var out []NodeID
	for i := 0; i < len(vs) && len(out) < rf; i++ {
		id := vs[(start+i)%len(vs)].id
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func TestNodeTokensAreDeterministicAndDistinct(t *testing.T) {
	a := NodeTokens("node-a", 256)
	b := NodeTokens("node-a", 256)
	if !slices.Equal(a, b) {
		t.Fatalf("NodeTokens(node-a, 256) differs between calls")
	}
	if len(a) != 256 {
		t.Fatalf("NodeTokens(node-a, 256) returned %d tokens, want 256", len(a))
	}
	if !slices.IsSorted(a) {
		t.Errorf("NodeTokens(node-a, 256) is not sorted")
	}
	if len(slices.Compact(slices.Clone(a))) != len(a) {
		t.Errorf("NodeTokens(node-a, 256) has duplicates")
	}
	// A node's first tokens do not depend on how many it has: raising num_tokens would only add ranges.
	small := NodeTokens("node-a", 16)
	for _, tok := range small {
		if !slices.Contains(a, tok) {
			t.Errorf("token %d of NodeTokens(node-a, 16) is missing from NodeTokens(node-a, 256)", tok)
		}
	}
	if c := NodeTokens("node-b", 16); slices.Equal(c, small) {
		t.Errorf("NodeTokens gives node-a and node-b the same tokens")
	}
	if got := NodeTokens("x", 0); got != nil {
		t.Errorf("NodeTokens(x, 0) = %v, want nil", got)
	}
}

func TestNewRingIgnoresDuplicateIDsAndOrdersTiedTokensByID(t *testing.T) {
	r := NewRing([]RingNode{
		{ID: "b", Tokens: []int64{10}},
		{ID: "a", Tokens: []int64{10}},
		{ID: "b", Tokens: []int64{99}}, // ignored: b is already in the ring
	})
	if r.NumNodes() != 2 || r.NumTokens() != 2 {
		t.Fatalf("ring has %d nodes and %d tokens, want 2 and 2", r.NumNodes(), r.NumTokens())
	}
	if got := r.Replicas(5, 2); !slices.Equal(got, []NodeID{"a", "b"}) {
		t.Errorf("Replicas(5, 2) with a tie at token 10 = %v, want [a b] (ties ordered by id)", got)
	}
	if got := r.Tokens("b"); !slices.Equal(got, []int64{10}) {
		t.Errorf("Tokens(b) = %v, want [10]", got)
	}
	if r.Contains("c") || !r.Contains("a") {
		t.Errorf("Contains(c) = %v, Contains(a) = %v; want false, true", r.Contains("c"), r.Contains("a"))
	}
}

func TestRingEqual(t *testing.T) {
	if !fixedRing().Equal(fixedRing()) {
		t.Errorf("two rings built from the same nodes are not Equal")
	}
	other := NewRing([]RingNode{{ID: "a", Tokens: []int64{0, 300}}, {ID: "b", Tokens: []int64{101}}, {ID: "c", Tokens: []int64{200}}})
	if fixedRing().Equal(other) {
		t.Errorf("rings differing in one token are Equal")
	}
}

func TestAppendReplicasDoesNotAllocate(t *testing.T) {
	var nodes []RingNode
	for i := range 6 {
		id := NodeID(fmt.Sprintf("node-%d", i))
		nodes = append(nodes, RingNode{ID: id, Tokens: NodeTokens(id, DefaultNumTokens)})
	}
	r := NewRing(nodes)
	buf := make([]NodeID, 0, 3)
	token := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		token += 0x1E3779B97F4A7C15
		buf = r.AppendReplicas(buf[:0], token, 3)
	})
	if allocs != 0 {
		t.Errorf("AppendReplicas into a buffer with room allocates %.1f times per call, want 0", allocs)
	}
}

func BenchmarkAppendReplicas(b *testing.B) {
	for _, n := range []int{3, 12, 48} {
		var nodes []RingNode
		for i := range n {
			id := NodeID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
			nodes = append(nodes, RingNode{ID: id, Tokens: NodeTokens(id, DefaultNumTokens)})
		}
		r := NewRing(nodes)
		b.Run(fmt.Sprintf("nodes=%d/rf=3", n), func(b *testing.B) {
			buf := make([]NodeID, 0, 3)
			token := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				token += 0x1E3779B97F4A7C15
				buf = r.AppendReplicas(buf[:0], token, 3)
			}
		})
	}
}

func TestUnreplicated(t *testing.T) {
	r := fixedRing() // a: 0, 300; b: 100; c: 200
	tests := []struct {
		id   NodeID
		rf   int
		want []TokenRange
	}{
		{"a", 1, []TokenRange{{0, 200}}},   // a owns (200, 300] and (300, 0]
		{"b", 1, []TokenRange{{100, 0}}},   // wraps: (100, 0]
		{"b", 2, []TokenRange{{100, 200}}}, // (100, 200] goes to c and a
		{"c", 3, nil},                      // every node replicates everything
		{"d", 2, []TokenRange{{300, 300}}}, // a node owning nothing: the whole ring
		{"a", 0, nil},                      //
	}
	for _, tt := range tests {
		if got := r.Unreplicated(tt.id, Simple(tt.rf)); !slices.Equal(got, tt.want) {
			t.Errorf("Unreplicated(%s, rf=%d) = %v, want %v", tt.id, tt.rf, got, tt.want)
		}
	}
	if got := NewRing(nil).Unreplicated("a", Simple(1)); got != nil {
		t.Errorf("Unreplicated on an empty ring = %v, want none", got)
	}

	// Random rings: a token is in an unreplicated range exactly when id is not its replica.
	rng := rand.New(rand.NewPCG(3, 4))
	ids := []NodeID{"n1", "n2", "n3", "n4", "n5"}
	var nodes []RingNode
	for _, id := range ids {
		nodes = append(nodes, RingNode{ID: id, Tokens: NodeTokens(id, 8)})
	}
	big := NewRing(nodes)
	for _, rf := range []int{1, 2, 3} {
		for _, id := range ids {
			un := big.Unreplicated(id, Simple(rf))
			for range 2000 {
				tok := int64(rng.Uint64())
				in := slices.ContainsFunc(un, func(tr TokenRange) bool { return tr.Contains(tok) })
				if rep := slices.Contains(big.Replicas(tok, rf), id); in == rep {
					t.Fatalf("token %d at rf %d: %s replicates it = %v, and it is in Unreplicated = %v", tok, rf, id, rep, in)
				}
			}
		}
	}
}
