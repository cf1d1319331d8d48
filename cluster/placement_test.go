package cluster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"testing"
)

// driverRing is the token map a token-aware driver builds from system.local and system.peers:
// every node's tokens (read as decimal text), sorted, each with its owner. It is written from
// Cassandra's algorithm (TokenMetadata.firstTokenIndex and SimpleStrategy's ring walk, which
// gocql's tokenRing, the Python driver's TokenMap and the Node driver reproduce), independently
// of Ring.
type driverRing struct {
	tokens []int64
	owners []string
}

func newDriverRing(hosts map[string][]string) (*driverRing, error) {
	type entry struct {
		token int64
		owner string
	}
	var es []entry
	for host, toks := range hosts {
		for _, s := range toks {
			t, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("host %s token %q: %v", host, s, err)
			}
			es = append(es, entry{t, host})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].token < es[j].token })
	d := &driverRing{}
	for _, e := range es {
		d.tokens = append(d.tokens, e.token)
		d.owners = append(d.owners, e.owner)
	}
	return d, nil
}

// replicas walks clockwise from the first ring token ≥ token (wrapping past the last) and collects
// the first rf distinct owners.
func (d *driverRing) replicas(token int64, rf int) []string {
	i := sort.Search(len(d.tokens), func(i int) bool { return d.tokens[i] >= token })
	var out []string
	for n := 0; n < len(d.tokens) && len(out) < rf; n++ {
		o := d.owners[(i+n)%len(d.tokens)]
		if !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// TestRingPlacementEqualsDriversTokenAwareRouting checks that the replicas kvnode places a token on
// are exactly the replicas a token-aware driver computes for it from the tokens the nodes report
// (system.local and system.peers report Ring.Tokens as decimal text): a driver then sends every
// request to a replica, in kvnode's replica order. Rings are random (1 to 8 nodes, tokens derived
// as kvnode derives them or drawn at random), tokens too, plus the edges: every vnode token, one
// either side of it, and the extremes of the token range.
func TestRingPlacementEqualsDriversTokenAwareRouting(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 6))
	checked := 0
	for trial := range 300 {
		numNodes := 1 + rng.IntN(8)
		var nodes []RingNode
		hosts := map[string][]string{}
		for i := range numNodes {
			id := NodeID(fmt.Sprintf("%08x-node-%d", rng.Uint32(), i))
			var toks []int64
			if trial%2 == 0 {
				toks = NodeTokens(id, 1+rng.IntN(32))
			} else {
				for range 1 + rng.IntN(32) {
					toks = append(toks, int64(rng.Uint64()))
				}
			}
			nodes = append(nodes, RingNode{ID: id, Tokens: toks})
			r := NewRing([]RingNode{{ID: id, Tokens: toks}})
			for _, tok := range r.Tokens(id) { // as system.local / system.peers report them
				hosts[string(id)] = append(hosts[string(id)], strconv.FormatInt(tok, 10))
			}
		}
		ring := NewRing(nodes)
		drv, err := newDriverRing(hosts)
		if err != nil {
			t.Fatal(err)
		}
		probes := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}
		for _, tok := range drv.tokens {
			probes = append(probes, tok, tok-1, tok+1)
		}
		for range 200 {
			probes = append(probes, int64(rng.Uint64()))
		}
		for _, tok := range probes {
			for rf := 1; rf <= 5; rf++ {
				var got []string
				for _, id := range ring.Replicas(tok, rf) {
					got = append(got, string(id))
				}
				want := drv.replicas(tok, rf)
				if !slices.Equal(got, want) {
					t.Fatalf("ring of %d nodes: Replicas(token %d, rf %d) = %v, the drivers' token map says %v", numNodes, tok, rf, got, want)
				}
				checked++
			}
		}
	}
	if checked < 100000 {
		t.Errorf("checked %d placements, want at least 100000", checked)
	}
}
