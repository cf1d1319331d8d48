package cluster

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkRing is the ring's cost as the cluster grows (docs/performance.md, "Scaling
// curves"), on rings of 100 and 1,000 nodes with 1, 16 (the default) and 256 vnodes each:
//
//   - tokens: every node's tokens from its id (NodeTokens), which a node computes once per
//     peer it learns of;
//
//   - build: the ring from nodes with their tokens (NewRing), which a node computes on every
//     change of membership or state (Cluster.rebuildRingLocked);
//
//   - join: the ring with one more node joining (its pending ranges: the future ring) and the
//     ranges it must stream at RF 3 (Transfers), which bootstrap computes;
//
//   - lookup: one token's RF-3 replicas (AppendReplicasFor), on every request.
//
//     go test ./cluster -run '^$' -bench 'BenchmarkRing$' -benchtime 2x
func BenchmarkRing(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, v := range []int{1, 16, 256} {
			ids := make([]NodeID, n+1)
			for i := range ids {
				ids[i] = NodeID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
			}
			nodes := make([]RingNode, n)
			for i := range nodes {
				nodes[i] = RingNode{ID: ids[i], Tokens: NodeTokens(ids[i], v)}
			}
			joiner := RingNode{ID: ids[n], Tokens: NodeTokens(ids[n], v), State: StateJoining}
			name := fmt.Sprintf("nodes=%d/vnodes=%d", n, v)
			b.Run(name+"/tokens", func(b *testing.B) {
				for b.Loop() {
					for _, id := range ids[:n] {
						NodeTokens(id, v)
					}
				}
			})
			b.Run(name+"/build", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					NewRing(nodes)
				}
			})
			cur := NewRing(nodes)
			b.Run(name+"/join", func(b *testing.B) {
				for b.Loop() {
					next := NewRing(append(nodes[:n:n], joiner))
					if len(Transfers(cur, next.Future(), Simple(3))) == 0 {
						b.Fatal("a joining node receives no range")
					}
				}
			})
			b.Run(name+"/lookup", func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, uint64(n)))
				dst := make([]NodeID, 0, 3)
				b.ReportAllocs()
				for b.Loop() {
					dst = cur.AppendReplicasFor(dst[:0], int64(rng.Uint64()), Simple(3))
				}
			})
		}
	}
}
