package cluster

import (
	"slices"

	"github.com/kvnode/kvnode/schema"
)

// Replication is a keyspace's replica placement (schema's: SimpleStrategy's factor or
// NetworkTopologyStrategy's per data center).
type Replication = schema.Replication

// Simple returns SimpleStrategy's placement at replication factor rf.
func Simple(rf int) Replication { return schema.Simple(rf) }

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
	if len(p.DataCenters) == 0 {
		return r.AppendReplicas(dst, token, p.Factor)
	}
	n := len(r.tokens)
	if n == 0 {
		return dst
	}
	var walkBuf [8]dcWalk
	walk := walkBuf[:0]
	for _, f := range p.DataCenters {
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

// ShortWithout reports what the ring would lack for placement p without node id: where (the
// ring, or id's data center under NetworkTopologyStrategy) would be left with left owning nodes
// while p places rf replicas there; left < rf when removing id leaves fewer nodes than p asks for.
func (r *Ring) ShortWithout(id NodeID, p Replication) (where string, left, rf int) {
	if len(p.DataCenters) == 0 {
		return "the ring", r.nOwners - 1, p.Factor
	}
	i, ok := r.find(id)
	if !ok || r.loc.nodeDC[i] < 0 {
		return "the ring", r.nOwners, 0 // id owns nothing: removing it leaves every count as it is
	}
	d := r.loc.dcs[r.loc.nodeDC[i]]
	return "data center " + d.name, d.owners - 1, p.InDC(d.name)
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
