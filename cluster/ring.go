package cluster

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
)

// NodeID identifies a node for its whole life. It is generated once, persisted in the node's data
// directory, and used as the node's memberlist name; a node's tokens are derived from it.
type NodeID string

// RingNode is one node of a [Ring] with its vnode tokens and its state.
type RingNode struct {
	ID     NodeID
	Tokens []int64
	// State is the node's state: a joining node owns nothing yet (its future ranges are pending),
	// a leaving node still owns its ranges, a left node is not in the ring at all.
	State NodeState
	// DC and Rack place the node for NetworkTopologyStrategy (placement.go); empty reads as
	// DefaultDataCenter and DefaultRack.
	DC, Rack string
}

// Ring is an immutable token ring: which node owns which vnode tokens, and which ranges are pending
// because nodes are joining or leaving. It holds node ids only (no connections, no liveness), so it
// can be shared freely and compared between nodes. A Ring is safe for concurrent use.
type Ring struct {
	nodes   []RingNode // sorted by ID, each with sorted tokens; joining nodes included
	tokens  []int64    // the owning nodes' vnode tokens, sorted by (token, owner id)
	owners  []int32    // owners[i] is the index in nodes of the owner of tokens[i]
	nOwners int        // how many nodes own tokens
	loc     locations  // where the owning nodes run (placement.go)
	// future is the ring once every transition has finished (joining nodes normal, leaving nodes
	// gone); nil when no node is joining or leaving.
	future *Ring
}

// NodeTokens returns the numTokens vnode tokens of the node id, sorted. They are a pure function of
// (id, numTokens): the first 8 bytes of SHA-256(id, 0x00, i, attempt) for i in 0..numTokens-1, where
// attempt starts at 0 and is raised for the (astronomically rare) token that repeats an earlier one.
func NodeTokens(id NodeID, numTokens int) []int64 {
	if numTokens <= 0 {
		return nil
	}
	tokens := make([]int64, 0, numTokens)
	seen := make(map[int64]struct{}, numTokens)
	buf := make([]byte, 0, len(id)+9)
	for i := 0; i < numTokens; i++ {
		for attempt := uint32(0); ; attempt++ {
			buf = append(buf[:0], id...)
			buf = append(buf, 0)
			buf = binary.BigEndian.AppendUint32(buf, uint32(i))
			buf = binary.BigEndian.AppendUint32(buf, attempt)
			sum := sha256.Sum256(buf)
			t := int64(binary.BigEndian.Uint64(sum[:8]))
			if _, dup := seen[t]; !dup {
				seen[t] = struct{}{}
				tokens = append(tokens, t)
				break
			}
		}
	}
	slices.Sort(tokens)
	return tokens
}

// NewRing returns the ring of nodes. Nodes are identified by ID; when an ID repeats, the first entry
// wins. Left nodes are not part of it. Two nodes holding the same token (possible only by a 2^-64
// accident) are ordered by node id, so every node still computes the same replicas.
func NewRing(nodes []RingNode) *Ring {
	r := newRing(nodes, NodeState.owns)
	for _, n := range r.nodes {
		if n.State != StateNormal {
			var next []RingNode
			for _, n := range r.nodes {
				if n.State.willOwn() {
					next = append(next, RingNode{ID: n.ID, Tokens: n.Tokens, DC: n.DC, Rack: n.Rack}) // normal once done
				}
			}
			r.future = newRing(next, NodeState.owns)
			break
		}
	}
	return r
}

// newRing builds a ring of nodes whose tokens are owned when owns(state).
func newRing(nodes []RingNode, owns func(NodeState) bool) *Ring {
	r := &Ring{}
	seen := make(map[NodeID]bool, len(nodes))
	total := 0
	for _, n := range nodes {
		if seen[n.ID] || n.State == StateLeft {
			continue
		}
		seen[n.ID] = true
		toks := slices.Clone(n.Tokens)
		slices.Sort(toks)
		toks = slices.Compact(toks)
		r.nodes = append(r.nodes, RingNode{ID: n.ID, Tokens: toks, State: n.State, DC: n.DC, Rack: n.Rack})
	}
	slices.SortFunc(r.nodes, func(a, b RingNode) int { return cmp.Compare(a.ID, b.ID) })
	r.loc = newLocations(r.nodes, owns)
	for _, n := range r.nodes {
		if owns(n.State) {
			total += len(n.Tokens)
			r.nOwners++
		}
	}

	type vnode struct {
		token int64
		owner int32
	}
	vnodes := make([]vnode, 0, total)
	for i, n := range r.nodes {
		if !owns(n.State) {
			continue
		}
		for _, t := range n.Tokens {
			vnodes = append(vnodes, vnode{t, int32(i)})
		}
	}
	// Owners are indexes into nodes sorted by id, so ordering by (token, owner) is (token, id).
	slices.SortFunc(vnodes, func(a, b vnode) int {
		if c := cmp.Compare(a.token, b.token); c != 0 {
			return c
		}
		return cmp.Compare(a.owner, b.owner)
	})
	r.tokens = make([]int64, len(vnodes))
	r.owners = make([]int32, len(vnodes))
	for i, v := range vnodes {
		r.tokens[i] = v.token
		r.owners[i] = v.owner
	}
	return r
}

// NumNodes returns the number of nodes in the ring, joining ones included.
func (r *Ring) NumNodes() int { return len(r.nodes) }

// NumOwners returns the number of nodes that own ranges: the normal and leaving ones.
func (r *Ring) NumOwners() int { return r.nOwners }

// NumTokens returns the number of vnode tokens the ring's owning nodes hold.
func (r *Ring) NumTokens() int { return len(r.tokens) }

// State returns the state of node id, and false when it is not in the ring.
func (r *Ring) State(id NodeID) (NodeState, bool) {
	if i, ok := r.find(id); ok {
		return r.nodes[i].State, true
	}
	return 0, false
}

// Transitioning reports whether a node is joining or leaving, so that some ranges are pending.
func (r *Ring) Transitioning() bool { return r.future != nil }

// Future returns the ring once every transition in progress has finished: joining nodes normal,
// leaving nodes gone. It is r itself when nothing is in transition.
func (r *Ring) Future() *Ring {
	if r.future == nil {
		return r
	}
	return r.future
}

// Without returns the ring without node id (what removing it leaves).
func (r *Ring) Without(id NodeID) *Ring {
	nodes := slices.DeleteFunc(slices.Clone(r.nodes), func(n RingNode) bool { return n.ID == id })
	return NewRing(nodes)
}

// Nodes returns the ids of the ring's nodes, joining ones included, sorted.
func (r *Ring) Nodes() []NodeID {
	ids := make([]NodeID, len(r.nodes))
	for i, n := range r.nodes {
		ids[i] = n.ID
	}
	return ids
}

// Contains reports whether id is a node of the ring.
func (r *Ring) Contains(id NodeID) bool {
	_, ok := r.find(id)
	return ok
}

// Tokens returns the sorted vnode tokens of node id, or nil when it is not in the ring. The caller must
// not modify the result.
func (r *Ring) Tokens(id NodeID) []int64 {
	if i, ok := r.find(id); ok {
		return r.nodes[i].Tokens
	}
	return nil
}

func (r *Ring) find(id NodeID) (int, bool) {
	return slices.BinarySearchFunc(r.nodes, id, func(n RingNode, id NodeID) int { return cmp.Compare(n.ID, id) })
}

// Owner returns the primary replica of token: the owner of the first vnode token ≥ token, wrapping
// around to the lowest. It returns "" for an empty ring.
func (r *Ring) Owner(token int64) NodeID {
	if len(r.tokens) == 0 {
		return ""
	}
	return r.nodes[r.owners[r.search(token)]].ID
}

// Replicas returns the replicas of token under SimpleStrategy with replication factor rf: walking the
// ring clockwise from the first vnode token ≥ token (wrapping around), the first rf distinct nodes, in
// ring order. It returns fewer than rf when the ring has fewer nodes, and none for an empty ring or
// rf ≤ 0.
func (r *Ring) Replicas(token int64, rf int) []NodeID {
	return r.AppendReplicas(make([]NodeID, 0, min(max(rf, 0), len(r.nodes))), token, rf)
}

// AppendReplicas appends the replicas of token at replication factor rf (as [Ring.Replicas] returns
// them) to dst and returns the extended slice. It does not allocate when dst has room for them and
// rf ≤ 8.
func (r *Ring) AppendReplicas(dst []NodeID, token int64, rf int) []NodeID {
	n := len(r.tokens)
	want := min(rf, r.nOwners)
	if n == 0 || want <= 0 {
		return dst
	}
	// Distinctness is checked on owner indexes (kept on the stack for small rf), not id strings.
	var small [8]int32
	taken := small[:0]
	i := r.search(token)
	for visited := 0; visited < n && len(taken) < want; visited++ {
		o := r.owners[i]
		if !slices.Contains(taken, o) {
			taken = append(taken, o)
			dst = append(dst, r.nodes[o].ID)
		}
		if i++; i == n {
			i = 0
		}
	}
	return dst
}

// RangeEnd returns the last token of the ring's token range that holds token: the first vnode
// token ≥ token, or math.MaxInt64 past the last vnode token (the range that wraps around, whose
// replicas are those of the first vnode token). ok is false for an empty ring.
func (r *Ring) RangeEnd(token int64) (end int64, ok bool) {
	if len(r.tokens) == 0 {
		return 0, false
	}
	if token > r.tokens[len(r.tokens)-1] {
		return math.MaxInt64, true
	}
	return r.tokens[r.search(token)], true
}

// search returns the index of the first vnode token ≥ token, wrapping to 0 past the last.
func (r *Ring) search(token int64) int {
	lo, hi := 0, len(r.tokens)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if r.tokens[mid] < token {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(r.tokens) {
		return 0
	}
	return lo
}

// AppendPending appends to dst the pending replicas of token under placement p: the nodes
// that will replicate it once the transitions in progress finish and do not now (a joining node, or
// the next owner of a leaving node's range). Writes go to them too, without counting toward the
// consistency level. It appends nothing when no node is joining or leaving.
func (r *Ring) AppendPending(dst []NodeID, token int64, p Replication) []NodeID {
	if r.future == nil {
		return dst
	}
	var curBuf, futBuf [8]NodeID
	cur := r.AppendReplicasFor(curBuf[:0], token, p)
	for _, id := range r.future.AppendReplicasFor(futBuf[:0], token, p) {
		if !slices.Contains(cur, id) {
			dst = append(dst, id)
		}
	}
	return dst
}

// Equal reports whether r and o have the same nodes with the same tokens and states.
func (r *Ring) Equal(o *Ring) bool {
	if r == nil || o == nil {
		return r == o
	}
	return slices.EqualFunc(r.nodes, o.nodes, func(a, b RingNode) bool {
		return a.ID == b.ID && a.State == b.State && a.DC == b.DC && a.Rack == b.Rack && slices.Equal(a.Tokens, b.Tokens)
	})
}

// TokenRange is the tokens t with Start < t ≤ End, wrapping past the largest token when End ≤ Start
// (Start == End is the whole ring).
type TokenRange struct {
	Start, End int64
}

// Contains reports whether token t is in the range.
func (tr TokenRange) Contains(t int64) bool {
	switch {
	case tr.Start < tr.End:
		return tr.Start < t && t <= tr.End
	case tr.Start > tr.End:
		return t > tr.Start || t <= tr.End
	}
	return true
}

// Transfer is a range a node must receive when the ring changes from one to another: To replicates
// Range in the new ring and not in the old one; From are the nodes that replicate it in the old ring.
type Transfer struct {
	To    NodeID
	Range TokenRange
	From  []NodeID
}

// Transfers returns what must stream for the ring to change from cur to next under placement p:
// for every range whose replicas in next include a node that does not replicate it in cur, that
// node and the range's replicas in cur. Adjacent ranges with the same receiver and sources are
// merged. The result is ordered by receiver, then by range.
func Transfers(cur, next *Ring, p Replication) []Transfer {
	bounds := slices.Concat(cur.tokens, next.tokens)
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	if len(bounds) == 0 || p.Total() <= 0 {
		return nil
	}
	var out []Transfer
	last := map[NodeID]int{} // receiver → index in out of its latest transfer
	for i, b := range bounds {
		start := bounds[(i+len(bounds)-1)%len(bounds)]
		if len(bounds) == 1 {
			start = b // one boundary: the whole ring
		}
		from := cur.AppendReplicasFor(nil, b, p)
		for _, to := range next.AppendReplicasFor(nil, b, p) {
			if slices.Contains(from, to) {
				continue
			}
			if j, ok := last[to]; ok && out[j].Range.End == start && slices.Equal(out[j].From, from) {
				out[j].Range.End = b
				continue
			}
			last[to] = len(out)
			out = append(out, Transfer{To: to, Range: TokenRange{Start: start, End: b}, From: from})
		}
	}
	slices.SortStableFunc(out, func(a, b Transfer) int { return cmp.Compare(a.To, b.To) })
	return out
}

// Ownership returns, for each node of the ring that owns ranges, the fraction of the token space it
// replicates under placement p (summing, under SimpleStrategy, to min(rf, owners) over the nodes).
func (r *Ring) Ownership(p Replication) map[NodeID]float64 {
	own := map[NodeID]float64{}
	n := len(r.tokens)
	if n == 0 || p.Total() <= 0 {
		return own
	}
	var buf [8]NodeID
	const space = float64(1<<63) * 2
	for i, t := range r.tokens {
		prev := r.tokens[(i+n-1)%n]
		width := float64(uint64(t) - uint64(prev)) // wraps correctly modulo 2^64
		if n == 1 || width == 0 && prev == t {
			width = space
		}
		for _, id := range r.AppendReplicasFor(buf[:0], t, p) {
			own[id] += width / space
		}
	}
	return own
}

// Unreplicated returns the token ranges of r that node id does not replicate under placement p,
// in token order, adjacent ones merged (the range that wraps around the ring comes first). It
// returns nil for an empty ring or a placement of no replica, and the whole ring when id owns
// nothing.
// A node deletes its data in these ranges once a topology change has finished (cleanup).
func (r *Ring) Unreplicated(id NodeID, p Replication) []TokenRange {
	bounds := slices.Compact(slices.Clone(r.tokens))
	if len(bounds) == 0 || p.Total() <= 0 {
		return nil
	}
	var out []TokenRange
	var buf [8]NodeID
	for i, b := range bounds {
		start := bounds[(i+len(bounds)-1)%len(bounds)]
		if slices.Contains(r.AppendReplicasFor(buf[:0], b, p), id) {
			continue
		}
		if len(out) > 0 && out[len(out)-1].End == start {
			out[len(out)-1].End = b
			continue
		}
		out = append(out, TokenRange{Start: start, End: b})
	}
	// The last range may end where the first (the wrapping one) starts.
	if n := len(out); n > 1 && out[n-1].End == out[0].Start {
		out[0].Start = out[n-1].Start
		out = out[:n-1]
	}
	return out
}
