package node

import (
	"net"
	"net/netip"
	"strconv"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator/shell/systables"
	"github.com/kvnode/kvnode/schema"
)

// systemSource is the node as its system tables (system.local, system.peers, system_schema.*)
// see it: membership and placement from the cluster, tokens from the ring, the schema.
type systemSource struct {
	n           *Node
	clusterName string
}

var _ systables.Source = systemSource{}

func (s systemSource) ClusterName() string    { return s.clusterName }
func (s systemSource) Schema() *schema.Schema { return s.n.schema.Schema() }

func (s systemSource) Local() systables.Node {
	m, _ := s.n.cluster.Member(s.n.cluster.LocalID())
	m.ID = s.n.cluster.LocalID()
	sn := s.node(m, s.n.cluster.Ring())
	sn.SchemaDigest = s.n.schema.Digest() // the current one, even before it is gossiped
	return sn
}

func (s systemSource) Peers() []systables.Node {
	ring := s.n.cluster.Ring()
	var peers []systables.Node
	for _, m := range s.n.cluster.Members() {
		if m.Local || !ring.Contains(m.ID) {
			continue
		}
		peers = append(peers, s.node(m, ring))
	}
	return peers
}

func (s systemSource) node(m cluster.Member, ring *cluster.Ring) systables.Node {
	sn := systables.Node{
		ID:           string(m.ID),
		Address:      hostAddr(m.RPCAddr),
		DataCenter:   m.DataCenter,
		Rack:         m.Rack,
		SchemaDigest: m.SchemaDigest,
		Tokens:       ring.Tokens(m.ID),
	}
	if !sn.Address.IsValid() || sn.Address.IsUnspecified() { // a wildcard listener: gossip has the real IP
		sn.Address = hostAddr(m.GossipAddr)
	}
	if _, port, err := net.SplitHostPort(m.RPCAddr); err == nil {
		sn.Port, _ = strconv.Atoi(port)
	}
	if sn.DataCenter == "" { // a member running a release that does not gossip its placement
		sn.DataCenter = cluster.DefaultDataCenter
	}
	if sn.Rack == "" {
		sn.Rack = cluster.DefaultRack
	}
	if host, port, err := net.SplitHostPort(m.NativeAddr); err == nil {
		sn.NativeAddr, _ = netip.ParseAddr(host)
		if p, err := strconv.Atoi(port); err == nil && p > 0 && p <= 65535 {
			sn.NativePort = p
		}
	}
	return sn
}

// hostAddr returns the IP of a host:port address, or the zero Addr when the host is not an IP.
func hostAddr(hostport string) netip.Addr {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}
