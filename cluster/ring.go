package cluster

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"slices"
)

// NodeID identifies a node for its whole life. It is generated once, persisted in the node's data
// directory, and used as the node's memberlist name; a node's tokens are derived from it.
type NodeID string

// RingNode is one node of a [Ring] with its vnode tokens.
type RingNode struct {
	ID     NodeID
	Tokens []int64
}

// Ring is an immutable token ring: which node owns which vnode tokens. It holds node ids only (no
// connections, no liveness), so it can be shared freely and compared between nodes. A Ring is safe for
// concurrent use.
type Ring struct {
	nodes  []RingNode // sorted by ID, each with sorted tokens
	tokens []int64    // all vnode tokens, sorted by (token, owner id)
	owners []int32    // owners[i] is the index in nodes of the owner of tokens[i]
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
// wins. Two nodes holding the same token (possible only by a 2^-64 accident) are ordered by node id, so
// every node still computes the same replicas.
func NewRing(nodes []RingNode) *Ring {
	r := &Ring{}
	seen := make(map[NodeID]bool, len(nodes))
	total := 0
	for _, n := range nodes {
		if seen[n.ID] {
			continue
		}
		seen[n.ID] = true
		toks := slices.Clone(n.Tokens)
		slices.Sort(toks)
		toks = slices.Compact(toks)
		r.nodes = append(r.nodes, RingNode{ID: n.ID, Tokens: toks})
		total += len(toks)
	}
	slices.SortFunc(r.nodes, func(a, b RingNode) int { return cmp.Compare(a.ID, b.ID) })

	type vnode struct {
		token int64
		owner int32
	}
	vnodes := make([]vnode, 0, total)
	for i, n := range r.nodes {
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

// NumNodes returns the number of nodes in the ring.
func (r *Ring) NumNodes() int { return len(r.nodes) }

// NumTokens returns the number of vnode tokens in the ring.
func (r *Ring) NumTokens() int { return len(r.tokens) }

// Nodes returns the ids of the ring's nodes, sorted.
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
	want := min(rf, len(r.nodes))
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

// Equal reports whether r and o have the same nodes with the same tokens.
func (r *Ring) Equal(o *Ring) bool {
	if r == nil || o == nil {
		return r == o
	}
	return slices.EqualFunc(r.nodes, o.nodes, func(a, b RingNode) bool {
		return a.ID == b.ID && slices.Equal(a.Tokens, b.Tokens)
	})
}
