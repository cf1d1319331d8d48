package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/schema"
)

// ntsReference is NetworkTopologyStrategy.calculateNaturalReplicas of Cassandra 4.1, written as
// plainly as that code: the walk over every vnode token from token's, each data center filling
// its replicas from racks it has not used, then from repeats while it has fewer racks than RF.
func ntsReference(r *Ring, token int64, p Replication) []NodeID {
	type dcState struct{ left, repeats int }
	owners, racks := map[string]int{}, map[string]map[string]bool{}
	for _, n := range r.nodes {
		if !n.State.owns() {
			continue
		}
		dc, rack := nodeLocation(n)
		owners[dc]++
		if racks[dc] == nil {
			racks[dc] = map[string]bool{}
		}
		racks[dc][rack] = true
	}
	dcs := map[string]*dcState{}
	for _, f := range p.DataCenters {
		if f.RF > 0 && owners[f.DC] > 0 {
			dcs[f.DC] = &dcState{left: min(f.RF, owners[f.DC]), repeats: f.RF - len(racks[f.DC])}
		}
	}
	seen := map[[2]string]bool{}
	var out []NodeID
	if len(r.tokens) == 0 {
		return nil
	}
	for k, i := 0, r.search(token); k < len(r.tokens); k, i = k+1, (i+1)%len(r.tokens) {
		n := r.nodes[r.owners[i]]
		dc, rack := nodeLocation(n)
		st := dcs[dc]
		if st == nil || st.left == 0 || slices.Contains(out, n.ID) {
			continue
		}
		if !seen[[2]string{dc, rack}] {
			seen[[2]string{dc, rack}] = true
		} else if st.repeats <= 0 {
			continue
		} else {
			st.repeats--
		}
		st.left--
		out = append(out, n.ID)
	}
	return out
}

// randomPlacedRing returns a ring of n nodes spread over dcs data centers of up to racks racks
// each, some joining or leaving.
func randomPlacedRing(rng *rand.Rand, n, dcs, racks, vnodes int) *Ring {
	nodes := make([]RingNode, n)
	for i := range nodes {
		id := NodeID(fmt.Sprintf("n%03d", i))
		state := StateNormal
		switch rng.IntN(10) {
		case 0:
			state = StateJoining
		case 1:
			state = StateLeaving
		}
		nodes[i] = RingNode{ID: id, Tokens: NodeTokens(id, vnodes), State: state,
			DC: fmt.Sprintf("dc%d", rng.IntN(dcs)+1), Rack: fmt.Sprintf("r%d", rng.IntN(racks)+1)}
		if rng.IntN(8) == 0 {
			nodes[i].DC, nodes[i].Rack = "", "" // a member that does not say: datacenter1, rack1
		}
	}
	return NewRing(nodes)
}

// TestNetworkTopologyPlacement: AppendReplicasFor under NetworkTopologyStrategy places what
// Cassandra 4.1's walk places, in its order, on random rings of several data centers and racks
// (joining nodes own nothing, the future ring too), and its placement's invariants hold: distinct
// nodes, min(RF, nodes) per data center, spread over min(RF, racks) racks.
func TestNetworkTopologyPlacement(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 300 {
		r := randomPlacedRing(rng, 1+rng.IntN(12), 1+rng.IntN(3), 1+rng.IntN(4), 1+rng.IntN(8))
		if rng.IntN(2) == 0 {
			r = r.Future()
		}
		rfs := map[string]int{"datacenter1": rng.IntN(3)}
		for d := 1; d <= 3; d++ {
			rfs[fmt.Sprintf("dc%d", d)] = rng.IntN(5)
		}
		p, err := schema.NetworkTopology(rfs)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			token := int64(rng.Uint64())
			got := r.AppendReplicasFor(nil, token, p)
			if want := ntsReference(r, token, p); !slices.Equal(got, want) {
				t.Fatalf("round %d, %v, token %d: replicas %v, Cassandra's walk gives %v", round, p, token, got, want)
			}
			perDC, racksPerDC := map[string]int{}, map[string]map[string]bool{}
			for _, id := range got {
				dc, rack, ok := r.Location(id)
				if !ok {
					t.Fatalf("replica %s is not in the ring", id)
				}
				perDC[dc]++
				if racksPerDC[dc] == nil {
					racksPerDC[dc] = map[string]bool{}
				}
				racksPerDC[dc][rack] = true
			}
			if len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
				t.Fatalf("replicas %v repeat a node", got)
			}
			owners := r.DataCenters()
			for _, f := range p.DataCenters {
				if perDC[f.DC] != min(f.RF, owners[f.DC]) {
					t.Fatalf("%v, token %d: %d replicas in %s, want min(%d, %d nodes)", p, token, perDC[f.DC], f.DC, f.RF, owners[f.DC])
				}
			}
			for dc, n := range perDC {
				if p.InDC(dc) == 0 {
					t.Fatalf("%v: %d replicas in %s, which has no replication factor", p, n, dc)
				}
			}
		}
	}
}

// TestNetworkTopologyRacks: the cases Cassandra's placement is known for, on a ring whose
// tokens are chosen by hand.
func TestNetworkTopologyRacks(t *testing.T) {
	node := func(id string, token int64, dc, rack string) RingNode {
		return RingNode{ID: NodeID(id), Tokens: []int64{token}, DC: dc, Rack: rack}
	}
	// Ring order a1 a2 b1 a3 b2 c1 (dc1 racks: a, b, c); dc2's nodes d1, d2 in between.
	r := NewRing([]RingNode{
		node("a1", 10, "dc1", "a"), node("a2", 20, "dc1", "a"), node("d1", 25, "dc2", "x"),
		node("b1", 30, "dc1", "b"), node("a3", 40, "dc1", "a"), node("b2", 50, "dc1", "b"),
		node("d2", 55, "dc2", "x"), node("c1", 60, "dc1", "c"),
	})
	for _, c := range []struct {
		token int64
		rfs   map[string]int
		want  []NodeID
	}{
		// One replica per rack: a2 and a3 are skipped for a1's rack.
		{5, map[string]int{"dc1": 3}, []NodeID{"a1", "b1", "c1"}},
		// RF 4 over 3 racks: one repeat allowed, taken by the first node of a used rack met (a2).
		{5, map[string]int{"dc1": 4}, []NodeID{"a1", "a2", "b1", "c1"}},
		// Wrapping: from 45, b2 then c1 then a1 (racks b, c, a).
		{45, map[string]int{"dc1": 3}, []NodeID{"b2", "c1", "a1"}},
		// Two data centers interleave in walk order; dc2 has one rack, so its second replica is a repeat.
		{5, map[string]int{"dc1": 2, "dc2": 2}, []NodeID{"a1", "d1", "b1", "d2"}},
		// An RF above a data center's nodes places every node of it.
		{5, map[string]int{"dc2": 5}, []NodeID{"d1", "d2"}},
		// A data center the ring does not have places nothing.
		{5, map[string]int{"dc9": 3}, nil},
	} {
		p, err := schema.NetworkTopology(c.rfs)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.AppendReplicasFor(nil, c.token, p); !slices.Equal(got, c.want) {
			t.Errorf("%v from token %d: %v, want %v", p, c.token, got, c.want)
		}
	}
	if _, err := schema.NetworkTopology(map[string]int{"dc1": -1}); err == nil {
		t.Error("a negative replication factor was accepted")
	}
	if _, err := schema.NetworkTopology(map[string]int{"dc 1": 1}); err == nil {
		t.Error("a data center name with a space was accepted")
	}
}

// TestSimplePlacementUnchanged: under SimpleStrategy the placement functions of a Replication are
// the replication factor's, whatever the nodes' data centers and racks.
func TestSimplePlacementUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 50 {
		r := randomPlacedRing(rng, 1+rng.IntN(10), 3, 3, 4)
		rf := rng.IntN(5)
		token := int64(rng.Uint64())
		if got, want := r.AppendReplicasFor(nil, token, Simple(rf)), r.Replicas(token, rf); !slices.Equal(got, want) {
			t.Fatalf("Simple(%d): %v, want %v", rf, got, want)
		}
	}
}

// TestNetworkTopologyTransfers: the streams of a topology change under NetworkTopologyStrategy
// bring every node exactly the ranges it replicates in the next ring and not in the current one.
func TestNetworkTopologyTransfers(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 13))
	for range 40 {
		r := randomPlacedRing(rng, 2+rng.IntN(8), 2, 3, 4)
		p, _ := schema.NetworkTopology(map[string]int{"dc1": 1 + rng.IntN(3), "dc2": 1 + rng.IntN(3)})
		next := r.Future()
		ts := Transfers(r, next, p)
		for range 50 {
			token := int64(rng.Uint64())
			cur, fut := r.AppendReplicasFor(nil, token, p), next.AppendReplicasFor(nil, token, p)
			for _, to := range fut {
				if slices.Contains(cur, to) {
					continue
				}
				found := false
				for _, tr := range ts {
					if tr.To == to && tr.Range.Contains(token) {
						found = slices.Equal(tr.From, cur)
					}
				}
				if !found {
					t.Fatalf("%v: no transfer of token %d to %s from %v in %v", p, token, to, cur, ts)
				}
			}
			pending := r.AppendPending(nil, token, p)
			for _, id := range pending {
				if slices.Contains(cur, id) || !slices.Contains(fut, id) {
					t.Fatalf("pending replica %s of token %d: current %v, future %v", id, token, cur, fut)
				}
			}
		}
	}
}

// BenchmarkReplicasFor: the cost of placing a token's replicas, SimpleStrategy's against
// NetworkTopologyStrategy's over two data centers of three racks, on rings of 100 and 1,000
// nodes with 16 vnodes each.
func BenchmarkReplicasFor(b *testing.B) {
	for _, n := range []int{100, 1000} {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		nodes := make([]RingNode, n)
		for i := range nodes {
			id := NodeID(fmt.Sprintf("node-%04d", i))
			nodes[i] = RingNode{ID: id, Tokens: NodeTokens(id, 16), DC: fmt.Sprintf("dc%d", i%2+1), Rack: fmt.Sprintf("r%d", i%3+1)}
		}
		r := NewRing(nodes)
		nts, _ := schema.NetworkTopology(map[string]int{"dc1": 3, "dc2": 3})
		for _, c := range []struct {
			name string
			p    Replication
		}{{"simple-rf3", Simple(3)}, {"nts-3+3", nts}} {
			b.Run(fmt.Sprintf("nodes=%d/%s", n, c.name), func(b *testing.B) {
				dst := make([]NodeID, 0, 8)
				b.ReportAllocs()
				for b.Loop() {
					dst = r.AppendReplicasFor(dst[:0], int64(rng.Uint64()), c.p)
				}
			})
		}
	}
}
