package node

import (
	"fmt"
	"net"
	"strings"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/schema"
)

// The node's internode transport is package internode: one Mux serving every exchange the node
// answers (handleInternode), and one Sender through which every part of the node reaches its
// peers, at the addresses they gossip, and itself, in process through the Mux.

// newSender returns the node's Sender, calling itself (self) through n.mux. It needs only the
// node's security material, so membership can use it while it starts (removalPeers).
func (n *Node) newSender(self cluster.NodeID) (*internode.Sender, error) {
	return internode.NewSender(internode.Options{
		Self:            internode.NodeID(self),
		Local:           n.mux,
		Addresses:       memberAddrs{n},
		Credentials:     n.internodeCredentials(), // mutual TLS when the node has a certificate
		MaxMessageBytes: MessageLimit(n.cfg.Coordinator.MaxMutationSize),
	})
}

// memberAddrs resolves peers' internode addresses from membership (internode.Addresses): the
// address each gossips (dialAddr). The Sender asks it only for calls without internode.At,
// which are made once membership has started.
type memberAddrs struct{ n *Node }

func (a memberAddrs) InternodeAddr(id internode.NodeID) (string, bool) {
	m, ok := a.n.cluster.Member(cluster.NodeID(id))
	if !ok || m.RPCAddr == "" {
		return "", false
	}
	return dialAddr(m), true
}

// transport is the shell's Transport, DeltaSender and Batchlog, hints' Sender and the replica
// calls of repair: the Peers of the node's Sender, and the members the batchlog may use.
type transport struct {
	internode.Peers
	c *cluster.Cluster
}

// AppendNodes appends every member of the cluster, live or not (shell.Batchlog).
func (t transport) AppendNodes(dst []coordinator.NodeID) []coordinator.NodeID {
	for _, m := range t.c.Members() {
		dst = append(dst, coordinator.NodeID(m.ID))
	}
	return dst
}

// dialAddr is where to reach member m's internode listener: the address it gossips, or, when
// it listens on a wildcard address (0.0.0.0:7000), its gossip host with that port.
func dialAddr(m cluster.Member) string {
	host, port, err := net.SplitHostPort(m.RPCAddr)
	if err != nil {
		return m.RPCAddr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if gh, _, err := net.SplitHostPort(m.GossipAddr); err == nil {
			return net.JoinHostPort(gh, port)
		}
	}
	return m.RPCAddr
}

// ringView adapts the cluster's ring and failure detector to shell.Ring.
type ringView struct {
	c    *cluster.Cluster
	name string // the cluster name, for DESCRIBE CLUSTER
}

// maxRF bounds the replication factor the stack buffer in AppendReplicas covers without allocating.
const maxRF = 8

// AppendReplicas appends the replicas of token under placement rf in ring order.
func (r ringView) AppendReplicas(dst []coordinator.NodeID, token int64, rf schema.Replication) []coordinator.NodeID {
	var buf [maxRF]cluster.NodeID
	for _, id := range r.c.Ring().AppendReplicasFor(buf[:0], token, rf) {
		dst = append(dst, coordinator.NodeID(id))
	}
	return dst
}

// RangeEnd returns the end of the ring's token range that holds token (shell.RangeRing).
func (r ringView) RangeEnd(token int64) (int64, bool) { return r.c.Ring().RangeEnd(token) }

// IsLive reports whether the failure detector considers id up.
func (r ringView) IsLive(id coordinator.NodeID) bool { return r.c.IsLive(cluster.NodeID(id)) }

// DataCenter returns the data center of node id, as the ring places it.
func (r ringView) DataCenter(id coordinator.NodeID) string {
	dc, _, _ := r.c.Ring().Location(cluster.NodeID(id))
	return dc
}

// DescribeCluster renders the membership for DESCRIBE CLUSTER.
func (r ringView) DescribeCluster() string {
	var b strings.Builder
	members := r.c.Members()
	fmt.Fprintf(&b, "Cluster: %s\nPartitioner: Murmur3Partitioner\nNodes: %d\n\n", r.name, len(members))
	fmt.Fprintf(&b, "%-38s  %-21s  %-21s  %-4s  %6s  %s\n", "id (* = this node)", "internode address", "gossip address", "up", "tokens", "schema")
	for _, m := range members {
		state := "DOWN"
		if m.Live {
			state = "UP"
		}
		id := string(m.ID)
		if m.Local {
			id += " *"
		}
		fmt.Fprintf(&b, "%-38s  %-21s  %-21s  %-4s  %6d  %s\n", id, m.RPCAddr, m.GossipAddr, state, m.NumTokens, m.SchemaDigest)
	}
	return b.String()
}
