package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Replication is a keyspace's replica placement: SimpleStrategy's Factor replicas in ring order
// when PerDC is empty, else NetworkTopologyStrategy's replication factor per data center (Factor
// is then unused).
type Replication struct {
	Factor int
	PerDC  []DCFactor // sorted by DC, each DC once, each RF ≥ 1
}

// DCFactor is a data center's replication factor under NetworkTopologyStrategy.
type DCFactor struct {
	DC string
	RF int
}

// Simple returns SimpleStrategy's placement at replication factor rf.
func Simple(rf int) Replication { return Replication{Factor: rf} }

// NetworkTopology returns NetworkTopologyStrategy's placement with the replication factor of each
// data center in rfs; data centers with a factor of 0 place nothing and are left out. It refuses
// a negative factor or a name that is no data center's (ValidatePlacementName).
func NetworkTopology(rfs map[string]int) (Replication, error) {
	var p Replication
	for dc, rf := range rfs {
		if err := ValidatePlacementName(dc); err != nil {
			return Replication{}, fmt.Errorf("data center %q: %v", dc, err)
		}
		if rf < 0 {
			return Replication{}, fmt.Errorf("data center %q: replication factor %d is negative", dc, rf)
		}
		if rf > 0 {
			p.PerDC = append(p.PerDC, DCFactor{DC: dc, RF: rf})
		}
	}
	slices.SortFunc(p.PerDC, func(a, b DCFactor) int { return cmp.Compare(a.DC, b.DC) })
	return p, nil
}

// Total returns the number of replicas the placement asks for: Factor, or the sum of the data
// centers' factors (Cassandra's QUORUM counts over it).
func (p Replication) Total() int {
	if len(p.PerDC) == 0 {
		return p.Factor
	}
	n := 0
	for _, f := range p.PerDC {
		n += f.RF
	}
	return n
}

// InDC returns the replication factor of data center dc: Factor under SimpleStrategy, which
// does not place by data center, else the data center's factor (0 when it has none).
func (p Replication) InDC(dc string) int {
	if len(p.PerDC) == 0 {
		return p.Factor
	}
	if i, ok := slices.BinarySearchFunc(p.PerDC, dc, func(f DCFactor, dc string) int { return cmp.Compare(f.DC, dc) }); ok {
		return p.PerDC[i].RF
	}
	return 0
}

// String returns the placement as CQL's replication map writes it.
func (p Replication) String() string {
	if len(p.PerDC) == 0 {
		return fmt.Sprintf("{'class': 'SimpleStrategy', 'replication_factor': %d}", p.Factor)
	}
	var b strings.Builder
	b.WriteString("{'class': 'NetworkTopologyStrategy'")
	for _, f := range p.PerDC {
		fmt.Fprintf(&b, ", '%s': %d", f.DC, f.RF)
	}
	b.WriteString("}")
	return b.String()
}

// locations indexes where the ring's owning nodes run, for NetworkTopologyStrategy's walk: each
// node's data center and (data center, rack) pair as small integers, and per data center how
// many owning nodes and racks it has.
type locations struct {
	nodeDC   []int32 // by index in Ring.nodes; -1 for a node that owns nothing
	nodeRack []int32 // by index in Ring.nodes: the index of its (DC, rack) pair
	dcs      []dcInfo
}

// dcInfo is a data center's part of the ring's owners.
type dcInfo struct {
	name          string
	owners, racks int
}

// nodeLocation returns where n runs, with Cassandra's defaults for a node that does not say (a
// member of a release before placement was gossiped).
func nodeLocation(n RingNode) (dc, rack string) {
	dc, rack = n.DC, n.Rack
	if dc == "" {
		dc = DefaultDataCenter
	}
	if rack == "" {
		rack = DefaultRack
	}
	return dc, rack
}

// newLocations indexes the locations of nodes (sorted by id) whose tokens are owned when owns.
func newLocations(nodes []RingNode, owns func(NodeState) bool) locations {
	l := locations{nodeDC: make([]int32, len(nodes)), nodeRack: make([]int32, len(nodes))}
	type pair struct{ dc, rack string }
	racks := map[pair]int32{}
	for i, n := range nodes {
		l.nodeDC[i] = -1
		if !owns(n.State) {
			continue
		}
		dc, rack := nodeLocation(n)
		d := slices.IndexFunc(l.dcs, func(x dcInfo) bool { return x.name == dc })
		if d < 0 {
			d = len(l.dcs)
			l.dcs = append(l.dcs, dcInfo{name: dc})
		}
		l.dcs[d].owners++
		r, ok := racks[pair{dc, rack}]
		if !ok {
			r = int32(len(racks))
			racks[pair{dc, rack}] = r
			l.dcs[d].racks++
		}
		l.nodeDC[i], l.nodeRack[i] = int32(d), r
	}
	return l
}

// dcWalk is one data center's state in NetworkTopologyStrategy's replica walk.
type dcWalk struct {
	dc      int32 // index in locations.dcs
	left    int   // replicas still to place
	repeats int   // replicas it may still place in a rack it already has one in
}

// AppendReplicasFor appends the replicas of token under placement p to dst and returns the
// extended slice. SimpleStrategy's are [Ring.AppendReplicas]'. NetworkTopologyStrategy's are
// Cassandra 4.1's: walking the ring clockwise from the first vnode token ≥ token, each data
// center of p takes min(RF, its owning nodes) distinct nodes, each in a rack it has none in yet,
// except that a data center with fewer racks than its RF takes the first RF − racks nodes it
// meets in racks it already has; replicas come in walk order. It does not allocate when dst has
// room for them, p has at most 8 data centers and the walk meets at most 16 racks.
func (r *Ring) AppendReplicasFor(dst []NodeID, token int64, p Replication) []NodeID {
	if len(p.PerDC) == 0 {
		return r.AppendReplicas(dst, token, p.Factor)
	}
	n := len(r.tokens)
	if n == 0 {
		return dst
	}
	var walkBuf [8]dcWalk
	walk := walkBuf[:0]
	for _, f := range p.PerDC {
		d := slices.IndexFunc(r.loc.dcs, func(x dcInfo) bool { return x.name == f.DC })
		if d < 0 || f.RF <= 0 {
			continue
		}
		info := r.loc.dcs[d]
		walk = append(walk, dcWalk{dc: int32(d), left: min(f.RF, info.owners), repeats: f.RF - info.racks})
	}
	toFill := len(walk)
	var racksBuf [16]int32
	var takenBuf [16]int32
	racks, taken := racksBuf[:0], takenBuf[:0]
	i := r.search(token)
	for visited := 0; visited < n && toFill > 0; visited++ {
		o := r.owners[i]
		if i++; i == n {
			i = 0
		}
		w := slices.IndexFunc(walk, func(x dcWalk) bool { return x.dc == r.loc.nodeDC[o] })
		if w < 0 || walk[w].left == 0 || slices.Contains(taken, o) {
			continue
		}
		if rack := r.loc.nodeRack[o]; !slices.Contains(racks, rack) {
			racks = append(racks, rack)
		} else if walk[w].repeats <= 0 {
			continue // the data center's remaining replicas must go to racks it has none in
		} else {
			walk[w].repeats--
		}
		taken = append(taken, o)
		dst = append(dst, r.nodes[o].ID)
		if walk[w].left--; walk[w].left == 0 {
			toFill--
		}
	}
	return dst
}

// DataCenters returns the data centers of the ring's owning nodes with how many each has, in
// the order the ring first meets them (by node id).
func (r *Ring) DataCenters() map[string]int {
	out := make(map[string]int, len(r.loc.dcs))
	for _, d := range r.loc.dcs {
		out[d.name] = d.owners
	}
	return out
}

// Location returns the data center and rack of node id (Cassandra's defaults when it did not
// say), and false when it is not in the ring.
func (r *Ring) Location(id NodeID) (dc, rack string, ok bool) {
	i, ok := r.find(id)
	if !ok {
		return "", "", false
	}
	dc, rack = nodeLocation(r.nodes[i])
	return dc, rack, true
}
