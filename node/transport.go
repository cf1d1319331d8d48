package node

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
)

// transport sends replica requests: to the local replica service in process, to peers over gRPC
// on the internode address they publish in gossip (cluster.Member.RPCAddr; shell.Transport).
// Every internode client of the node (replica requests, account deltas, the batchlog, schema
// consensus) shares its connections.
type transport struct {
	self    coordinator.NodeID
	local   *replica.Service
	cluster *cluster.Cluster
	limit   int // the largest message sent or received, in bytes (MessageLimit)
	creds   credentials.TransportCredentials

	mu    sync.Mutex
	conns map[coordinator.NodeID]*peerConn
}

type peerConn struct {
	addr string
	conn *grpc.ClientConn
	api  replicapb.ReplicaClient
}

func newTransport(self coordinator.NodeID, local *replica.Service, c *cluster.Cluster, limit int, creds credentials.TransportCredentials) *transport {
	return &transport{self: self, local: local, cluster: c, limit: limit, creds: creds, conns: map[coordinator.NodeID]*peerConn{}}
}

// Mutate sends a mutation to replica to.
func (t *transport) Mutate(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	if to == t.self {
		return t.local.Mutate(ctx, req)
	}
	api, err := t.peer(to)
	if err != nil {
		return nil, err
	}
	return api.Mutate(ctx, req)
}

// Read sends a read to replica to.
func (t *transport) Read(ctx context.Context, to coordinator.NodeID, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error) {
	if to == t.self {
		return t.local.Read(ctx, req)
	}
	api, err := t.peer(to)
	if err != nil {
		return nil, err
	}
	return api.Read(ctx, req)
}

// AccountDelta sends account-only deltas to replica to (shell.DeltaSender).
func (t *transport) AccountDelta(ctx context.Context, to coordinator.NodeID, req *replicapb.AccountDeltaRequest) (*replicapb.AccountDeltaResponse, error) {
	if to == t.self {
		return t.local.AccountDelta(ctx, req)
	}
	api, err := t.peer(to)
	if err != nil {
		return nil, err
	}
	return api.AccountDelta(ctx, req)
}

// TopPartitions asks node to for its hot partitions.
func (t *transport) TopPartitions(ctx context.Context, to coordinator.NodeID, req *replicapb.TopPartitionsRequest) (*replicapb.TopPartitionsResponse, error) {
	if to == t.self {
		return t.local.TopPartitions(ctx, req)
	}
	api, err := t.peer(to)
	if err != nil {
		return nil, err
	}
	return api.TopPartitions(ctx, req)
}

// peer returns a client for node id, dialling (lazily, without blocking) on first use and again
// when the node's published RPC address changed (a restart on another port).
func (t *transport) peer(id coordinator.NodeID) (replicapb.ReplicaClient, error) {
	m, ok := t.cluster.Member(cluster.NodeID(id))
	if !ok || m.RPCAddr == "" {
		return nil, fmt.Errorf("node %s: no internode address known", id)
	}
	addr := dialAddr(m)
	t.mu.Lock()
	defer t.mu.Unlock()
	if pc, ok := t.conns[id]; ok {
		if pc.addr == addr {
			// Gossip says the peer is reachable at this address; a connection still backing off
			// from an earlier outage would fail fast until its backoff ran out.
			if pc.conn.GetState() == connectivity.TransientFailure {
				pc.conn.ResetConnectBackoff()
			}
			return pc.api, nil
		}
		pc.conn.Close()
		delete(t.conns, id)
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(t.creds), // mutual TLS when the node has a certificate
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(t.limit), grpc.MaxCallSendMsgSize(t.limit)),
		// gRPC's default reconnect backoff grows to 2 minutes; a peer that restarts must be
		// reachable again as soon as gossip sees it, so keep retries close together.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("node %s at %s: %w", id, addr, err)
	}
	pc := &peerConn{addr: addr, conn: conn, api: replicapb.NewReplicaClient(conn)}
	t.conns[id] = pc
	return pc.api, nil
}

// dialAddr is where to reach member m's internode services: the address it gossips, or, when
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

func (t *transport) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, pc := range t.conns {
		pc.conn.Close()
		delete(t.conns, id)
	}
}

// ringView adapts the cluster's ring and failure detector to shell.Ring.
type ringView struct {
	c    *cluster.Cluster
	name string // the cluster name, for DESCRIBE CLUSTER
}

// maxRF bounds the replication factor the stack buffer in AppendReplicas covers without allocating.
const maxRF = 8

// AppendReplicas appends the replicas of token in ring order.
func (r ringView) AppendReplicas(dst []coordinator.NodeID, token int64, rf int) []coordinator.NodeID {
	var buf [maxRF]cluster.NodeID
	for _, id := range r.c.Ring().AppendReplicas(buf[:0], token, rf) {
		dst = append(dst, coordinator.NodeID(id))
	}
	return dst
}

// IsLive reports whether the failure detector considers id up.
func (r ringView) IsLive(id coordinator.NodeID) bool { return r.c.IsLive(cluster.NodeID(id)) }

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
