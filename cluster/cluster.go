package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Sentinel errors. They are wrapped with the details of each case.
var (
	// ErrClosed reports a call on a closed Cluster.
	ErrClosed = errors.New("cluster: closed")
	// ErrUnknownNode reports a node id the cluster has never heard of.
	ErrUnknownNode = errors.New("cluster: unknown node")
	// ErrNodeLive reports an attempt to remove a node that is live.
	ErrNodeLive = errors.New("cluster: node is live")
)

// Member is what the local node knows about one ring member.
type Member struct {
	ID NodeID
	// RPCAddr is the member's internode RPC address, from its metadata.
	RPCAddr string
	// GossipAddr is the member's gossip host:port.
	GossipAddr string
	// NumTokens is the member's number of vnode tokens.
	NumTokens int
	// Live reports whether failure detection currently considers the member up, and the member
	// does not say it is unavailable (Unavailable; the local node is live whatever it says). A
	// down member still owns its ranges.
	Live bool
	// SchemaDigest is the member's schema digest as last gossiped; empty when the member has not been
	// seen live since this node started.
	SchemaDigest string
	// Local reports whether this is the local node.
	Local bool
	// NativeAddr is the host:port where the member serves the CQL native protocol, from its
	// metadata; "" when it does not say.
	NativeAddr string
	// DataCenter and Rack place the member; empty when it does not say (a member running a
	// release that does not gossip them).
	DataCenter, Rack string
	// State is the member's state in the ring.
	State NodeState
	// Unrepaired reports whether the member, started despite a corrupt write-ahead log,
	// counts toward no read consistency level until a repair run on it completes (as it last
	// gossiped; unrepaired.go).
	Unrepaired bool
	// DataFormat is the member's data format version as gossiped (dataformat.go); 0 when it has
	// reported none (a release before data format versions, which is format 1, or a member
	// not heard from since this node started).
	DataFormat int
	// Unavailable is why the member says it cannot take writes ("disk full", "storage failed";
	// availability.go), "" when it can: its peers treat it as down.
	Unavailable string
	// Alive reports whether failure detection considers the member up, whatever it says of its
	// availability: it answers for the schema and for TRUNCATE and DROP, which free its space.
	Alive bool
}

// peerState is the local view of one ring member.
type peerState struct {
	rec        peerRecord
	tokens     []int64
	live       bool
	digest     string
	unrepaired bool // from its metadata (unrepaired.go)
	format     int  // its data format version, 0 while unknown (dataformat.go)
	// unavail is why it says it cannot take writes, "" when it can, as of unavailAt (its
	// clock; availability.go). Peers flagged so are down for the data path.
	unavail   string
	unavailAt int64
}

// inbox collects work for the worker goroutine. Memberlist callbacks fill it and must never block.
type inbox struct {
	snapshots    map[NodeID][]byte // schema snapshots received, latest per sender
	replyTo      map[NodeID]bool   // senders of a sync request, owed our snapshot
	pulls        map[NodeID]bool   // live peers whose gossiped digest differed from ours
	localChanged bool              // a local DDL happened: publish and push
	formatPulls  map[NodeID]bool   // peers come up with a data format below ours (dataformat.go)
}

func newInbox() inbox {
	return inbox{snapshots: map[NodeID][]byte{}, replyTo: map[NodeID]bool{}, pulls: map[NodeID]bool{}, formatPulls: map[NodeID]bool{}}
}

func (ib *inbox) empty() bool {
	return len(ib.snapshots) == 0 && len(ib.replyTo) == 0 && len(ib.pulls) == 0 && len(ib.formatPulls) == 0 && !ib.localChanged
}

// Cluster is one node's membership in a kvnode cluster: gossip and failure detection over memberlist,
// the token ring, known peers persisted across restarts, and schema agreement. Its methods are safe for
// concurrent use.
type Cluster struct {
	cfg      Config
	tim      timings
	log      *slog.Logger
	mlog     *memberlistLog // memberlist's logs, and its count of junk on the gossip port
	id       NodeID
	ml       *memberlist.Memberlist
	gossip   string // actual gossip host:port (advertised)
	bindIP   net.IP
	localIPs []net.IP // addresses that mean "this node" when they carry our gossip port

	ring   atomic.Pointer[Ring]
	live   atomic.Pointer[map[NodeID]bool]
	meta   atomic.Pointer[[]byte]
	metaMu sync.Mutex             // serialises rebuilding meta (schema digest, native address)
	native atomic.Pointer[string] // the native protocol address published in our metadata
	state  atomic.Uint32          // the local NodeState published in our metadata
	// unrepaired holds the members that gossip metaUnrepaired, the local node's flag among
	// them (unrepaired.go); read without locks by every read a coordinator plans.
	unrepaired atomic.Pointer[map[NodeID]bool]
	digest     atomic.Pointer[string] // local schema digest as published in our metadata
	// localUnrepaired is the local node's flag as published in our metadata.
	localUnrepaired atomic.Bool
	// formats holds every member's data format version, 0 while unknown (dataformat.go); read
	// without locks by every write a coordinator plans with a TTL.
	formats atomic.Pointer[map[NodeID]int]

	mu      sync.Mutex
	peers   map[NodeID]*peerState
	removed map[NodeID]int64
	// deferred holds removals confirmed by a peer while the removed node was still seen live
	// here: they apply once the node is seen down.
	deferred map[NodeID]int64
	// confirm holds the live peers to ask for their removals (RemovalPeers.Removed): each
	// peer once it is seen up, and the sender of a gossip hint of a removal not applied here.
	// A peer stays until it answers (or goes down); the join loop retries.
	confirm map[NodeID]bool
	// removing holds the nodes being removed (removenode streaming their ranges), each with
	// the node running the removal: while that node is live (or is this one), the removed node
	// is leaving in the ring, so that writes also reach its ranges' new owners.
	removing map[NodeID]NodeID
	asking   map[NodeID]bool // Removed calls in flight
	asked    atomic.Uint64   // Removed calls finished, answered or not (for tests)
	ctx      context.Context // ends at shutdown: bounds the calls to RemovalPeers
	cancel   context.CancelFunc
	changed  chan struct{}
	dirty    bool // peers need persisting
	closed   bool
	in       inbox
	inflight map[NodeID]bool // sync requests being sent

	clockMu sync.Mutex               // guards clocks; never held while taking mu
	clocks  map[NodeID]*offsetWindow // clock samples of peers, dropped when they go down

	// rejoinMu guards rejoins: the joins of each down peer's gossip address in flight (see
	// rejoin).
	rejoinMu sync.Mutex
	rejoins  map[string]int

	kick      chan struct{}
	stop      chan struct{}
	persistMu sync.Mutex
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Start starts the local node's membership: it loads or creates the node id in cfg.DataDir, binds
// the gossip address, joins the seeds and the peers known from earlier runs, and returns. When no seed
// can be reached, joining continues in the background with backoff until one can.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: create data directory: %w", err)
	}
	id, err := LoadOrCreateNodeID(cfg.DataDir, cfg.NodeID)
	if err != nil {
		return nil, err
	}
	pf, err := loadPeers(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	_, tim := cfg.Profile.settings()
	c := &Cluster{
		cfg:      cfg,
		tim:      tim,
		log:      cfg.Logger.With("component", "cluster", "node", string(id)),
		mlog:     newMemberlistLog(cfg.Logger),
		id:       id,
		peers:    map[NodeID]*peerState{},
		removed:  map[NodeID]int64{},
		deferred: map[NodeID]int64{},
		confirm:  map[NodeID]bool{},
		removing: map[NodeID]NodeID{},
		asking:   map[NodeID]bool{},
		changed:  make(chan struct{}),
		in:       newInbox(),
		inflight: map[NodeID]bool{},
		clocks:   map[NodeID]*offsetWindow{},
		rejoins:  map[string]int{},
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	for _, r := range pf.Removed {
		c.removed[r.ID] = r.At
	}
	if _, gone := c.removed[id]; gone {
		return nil, fmt.Errorf("cluster: node %s was removed from the cluster; start it with an empty data directory to join as a new node", id)
	}
	var prevGossip string
	state, known := StateNormal, false
	for _, p := range pf.Peers {
		if _, gone := c.removed[p.ID]; gone {
			continue
		}
		if p.ID == id {
			if p.NumTokens != cfg.NumTokens {
				return nil, fmt.Errorf("cluster: num_tokens is %d but node %s was started with %d; it cannot change (it would move the node's ranges)", cfg.NumTokens, id, p.NumTokens)
			}
			prevGossip = p.GossipAddr
			state, known = p.State, true
		}
		c.peers[p.ID] = &peerState{rec: p, tokens: NodeTokens(p.ID, p.NumTokens)}
	}

	switch {
	case !known && cfg.Joining:
		state = StateJoining
	case state == StateLeft:
		return nil, fmt.Errorf("cluster: node %s was decommissioned and left the cluster; start it with an empty data directory to join as a new node", id)
	case state == StateLeaving:
		// Its decommission did not finish: ownership never moved, so it still owns its ranges.
		state = StateNormal
	}
	c.state.Store(uint32(state))
	c.ctx, c.cancel = context.WithCancel(context.Background())

	c.localUnrepaired.Store(cfg.Unrepaired)
	digest := cfg.Schema.Digest()
	native := cfg.NativeAddr
	c.native.Store(&native)
	meta, err := c.buildMeta(digest)
	if err != nil {
		return nil, err
	}
	c.digest.Store(&digest)
	c.meta.Store(&meta)
	c.peers[id] = &peerState{
		rec: peerRecord{ID: id, RPCAddr: cfg.RPCAddr, NumTokens: cfg.NumTokens, GossipAddr: prevGossip,
			NativeAddr: cfg.NativeAddr, DataCenter: cfg.DataCenter, Rack: cfg.Rack, State: state},
		tokens:     NodeTokens(id, cfg.NumTokens),
		live:       true,
		unavailAt:  time.Now().UnixNano(), // a report of this run wins over one of an earlier run
		digest:     digest,
		unrepaired: cfg.Unrepaired,
		format:     cfg.DataFormat,
	}
	c.rebuildRingLocked()
	c.rebuildLiveLocked()
	c.rebuildUnrepairedLocked()

	if err := c.createMemberlist(ctx, prevGossip); err != nil {
		c.cancel()
		return nil, err
	}
	local := c.ml.LocalNode()
	c.gossip = local.Address()
	c.localIPs = localIPs(local.Addr, c.bindIP)
	c.mu.Lock()
	self := c.peers[id]
	self.rec.GossipAddr = c.gossip
	self.rec.Updated = time.Now().UnixNano()
	c.dirty = true
	c.mu.Unlock()
	if err := c.persist(); err != nil {
		c.cancel()
		_ = c.ml.Shutdown()
		return nil, err
	}
	c.log.Info("cluster member started", "gossip_addr", c.gossip, "rpc_addr", cfg.RPCAddr,
		"num_tokens", cfg.NumTokens, "profile", cfg.Profile.String(), "known_peers", len(c.peers)-1)

	c.wg.Add(1)
	go c.worker()

	joined := false
	if targets := c.joinTargets(true); len(targets) > 0 {
		joined = c.join(targets) > 0
		if !joined {
			c.log.Info("no seed or known peer reachable yet; retrying in the background", "targets", targets)
		}
	}
	c.wg.Add(1)
	go c.joinLoop(joined)
	return c, nil
}

// createMemberlist binds the gossip address. With port 0, a restarted node first tries its previous
// port so that peers find it where they last saw it.
func (c *Cluster) createMemberlist(ctx context.Context, prevGossip string) error {
	bindHost, bindPort, _ := splitHostPort(c.cfg.BindAddr)
	bindIP, err := resolveIP(ctx, bindHost)
	if err != nil {
		return fmt.Errorf("cluster: bind address %s: %w", c.cfg.BindAddr, err)
	}
	c.bindIP = bindIP
	var advIP net.IP
	advPort := 0
	if c.cfg.AdvertiseAddr != "" {
		h, p, _ := splitHostPort(c.cfg.AdvertiseAddr)
		if advIP, err = resolveIP(ctx, h); err != nil {
			return fmt.Errorf("cluster: advertise address %s: %w", c.cfg.AdvertiseAddr, err)
		}
		advPort = p
	}

	create := func(port int) (*memberlist.Memberlist, error) {
		mc, _ := c.cfg.Profile.settings()
		mc.Name = string(c.id)
		mc.Label = c.cfg.ClusterName
		mc.BindAddr = bindIP.String()
		mc.BindPort = port
		mc.AdvertisePort = port
		if advIP != nil {
			mc.AdvertiseAddr = advIP.String()
			if advPort != 0 {
				mc.AdvertisePort = advPort
			}
		}
		mc.DeadNodeReclaimTime = c.tim.reclaimDeadAge
		mc.Delegate = delegate{c}
		mc.Events = events{c}
		mc.Alive = aliveFilter{c}
		mc.Ping = pingDelegate{c}
		mc.Logger = c.mlog.logger()
		c.cfg.secureGossip(mc)
		if c.cfg.Tune != nil {
			c.cfg.Tune(mc)
		}
		if c.cfg.GossipDelay > 0 {
			t, err := newDelayTransport(mc, c.cfg.GossipDelay, c.cfg.GossipDelayTo)
			if err != nil {
				return nil, err
			}
			mc.Transport = t
			ml, err := memberlist.Create(mc)
			if err != nil {
				t.Shutdown()
			}
			return ml, err
		}
		return memberlist.Create(mc)
	}

	if bindPort == 0 && prevGossip != "" {
		if h, p, err := splitHostPort(prevGossip); err == nil && p != 0 {
			prevIP := net.ParseIP(h)
			if bindIP.IsUnspecified() || prevIP.Equal(bindIP) {
				ml, err := create(p)
				if err == nil {
					c.ml = ml
					return nil
				}
				c.log.Info("previous gossip port unavailable; picking a new one", "port", p, "err", err)
			}
		}
	}
	ml, err := create(bindPort)
	if err != nil {
		if strings.Contains(err.Error(), "address already in use") {
			return fmt.Errorf("cluster: gossip address %s is already in use: %w", c.cfg.BindAddr, err)
		}
		return fmt.Errorf("cluster: start gossip on %s: %w", c.cfg.BindAddr, err)
	}
	c.ml = ml
	return nil
}

func resolveIP(ctx context.Context, host string) (net.IP, error) {
	if host == "" {
		return net.IPv4zero, nil
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip, nil
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	for _, ip := range ips { // prefer IPv4, as memberlist's own address selection does
		if ip.To4() != nil {
			return ip, nil
		}
	}
	return ips[0], nil
}

// localIPs returns the addresses at which this process can be reached on its gossip port: the
// advertised and bound ones and, for a wildcard bind address, loopback and every interface address.
func localIPs(advertised, bound net.IP) []net.IP {
	ips := []net.IP{advertised, bound}
	if bound.IsUnspecified() {
		ips = append(ips, net.IPv4(127, 0, 0, 1), net.IPv6loopback)
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok {
					ips = append(ips, ipn.IP)
				}
			}
		}
	}
	return ips
}

// LocalID returns the local node's id.
func (c *Cluster) LocalID() NodeID { return c.id }

// GossipAddr returns the local node's actual gossip host:port (with the real port when bound to 0).
func (c *Cluster) GossipAddr() string { return c.gossip }

// Ring returns the current token ring. It is immutable; a membership change swaps in a new one.
func (c *Cluster) Ring() *Ring { return c.ring.Load() }

// IsLive reports whether node id is currently considered up: failure detection sees it alive and
// it does not say it is unavailable (availability.go). The local node is always live.
func (c *Cluster) IsLive(id NodeID) bool { return (*c.live.Load())[id] }

// Members returns every ring member, the local node and down members included, sorted by id.
func (c *Cluster) Members() []Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	ms := make([]Member, 0, len(c.peers))
	for _, p := range c.peers {
		ms = append(ms, c.memberLocked(p))
	}
	slices.SortFunc(ms, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	return ms
}

// Member returns what is known about node id.
func (c *Cluster) Member(id NodeID) (Member, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.peers[id]
	if !ok {
		return Member{}, false
	}
	return c.memberLocked(p), true
}

func (c *Cluster) memberLocked(p *peerState) Member {
	return Member{
		ID: p.rec.ID, RPCAddr: p.rec.RPCAddr, GossipAddr: p.rec.GossipAddr, NumTokens: p.rec.NumTokens,
		Live: p.live && (p.unavail == "" || p.rec.ID == c.id), SchemaDigest: p.digest, Local: p.rec.ID == c.id,
		NativeAddr: p.rec.NativeAddr, DataCenter: p.rec.DataCenter, Rack: p.rec.Rack, State: c.stateLocked(p),
		Unrepaired: p.unrepaired, DataFormat: p.format, Unavailable: p.unavail, Alive: p.live,
	}
}

// stateLocked returns the state of peer p in the ring: the one it gossips, except that a normal
// node being removed by a live node (or by this one) is leaving.
func (c *Cluster) stateLocked(p *peerState) NodeState {
	if p.rec.State != StateNormal {
		return p.rec.State
	}
	by, ok := c.removing[p.rec.ID]
	if !ok {
		return p.rec.State
	}
	if by != c.id {
		if q, ok := c.peers[by]; !ok || !q.live {
			return p.rec.State
		}
	}
	return StateLeaving
}

// Changed returns a channel that is closed at the next change of membership, liveness, the ring, or a
// member's schema digest (and at Close). Call it again after it fires to wait for the next change.
func (c *Cluster) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *Cluster) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Cluster) kickWorker() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *Cluster) rebuildRingLocked() {
	nodes := make([]RingNode, 0, len(c.peers))
	for _, p := range c.peers {
		nodes = append(nodes, RingNode{ID: p.rec.ID, Tokens: p.tokens, State: c.stateLocked(p), DC: p.rec.DataCenter, Rack: p.rec.Rack})
	}
	c.ring.Store(NewRing(nodes))
	c.rebuildFormatsLocked()
}

func (c *Cluster) rebuildLiveLocked() {
	live := make(map[NodeID]bool, len(c.peers))
	for id, p := range c.peers {
		if p.live && (p.unavail == "" || id == c.id) { // an unavailable peer is down (availability.go)
			live[id] = true
		}
	}
	c.live.Store(&live)
	if len(c.removing) > 0 {
		// A removal in progress counts only while the node running it is live.
		c.rebuildRingLocked()
	}
}

func (c *Cluster) buildMeta(digest string) ([]byte, error) {
	return nodeMeta{
		ID: c.id, RPCAddr: c.cfg.RPCAddr, SchemaDigest: digest, NumTokens: c.cfg.NumTokens,
		NativeAddr: *c.native.Load(), DataCenter: c.cfg.DataCenter, Rack: c.cfg.Rack,
		State: NodeState(c.state.Load()), Unrepaired: c.localUnrepaired.Load(),
	}.encode()
}

// State returns the local node's state.
func (c *Cluster) State() NodeState { return NodeState(c.state.Load()) }

// SetState changes the local node's state: it is persisted first (a node that restarts resumes
// from it), then published in the node's metadata and the local ring. The only transitions are
// joining → normal (bootstrap finished), normal → leaving (decommission started), leaving → normal
// (decommission abandoned) and leaving → left (its ranges streamed away).
func (c *Cluster) SetState(s NodeState) error {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	cur := NodeState(c.state.Load())
	if cur == s {
		return nil
	}
	switch {
	case cur == StateJoining && s == StateNormal,
		cur == StateNormal && s == StateLeaving,
		cur == StateLeaving && (s == StateNormal || s == StateLeft):
	default:
		return fmt.Errorf("cluster: node %s cannot go from %s to %s", c.id, cur, s)
	}
	c.state.Store(uint32(s))
	meta, err := c.buildMeta(*c.digest.Load())
	if err != nil {
		c.state.Store(uint32(cur))
		return err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.state.Store(uint32(cur))
		return ErrClosed
	}
	c.peers[c.id].rec.State = s
	c.dirty = true
	c.rebuildRingLocked()
	c.notifyLocked()
	c.mu.Unlock()
	if err := c.persist(); err != nil {
		return err
	}
	c.meta.Store(&meta)
	c.log.Info("node state changed", "from", cur.String(), "to", s.String())
	if c.ml != nil {
		if err := c.ml.UpdateNode(c.tim.updateTimeout); err != nil {
			c.log.Debug("metadata update not yet broadcast", "err", err)
		}
	}
	return nil
}

// SetNativeAddr publishes the host:port where the local node serves the CQL native protocol (known
// only once its listener is bound): it goes into the node's gossiped metadata, from which the other
// nodes' system.peers report it. It returns an error, and publishes nothing, when the metadata
// would exceed [MaxMetaSize].
func (c *Cluster) SetNativeAddr(addr string) error {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	prev := c.native.Swap(&addr)
	meta, err := c.buildMeta(*c.digest.Load())
	if err != nil {
		c.native.Store(prev)
		return err
	}
	c.meta.Store(&meta)
	c.mu.Lock()
	if p, ok := c.peers[c.id]; ok && p.rec.NativeAddr != addr {
		p.rec.NativeAddr = addr
		c.dirty = true
		c.notifyLocked()
	}
	c.mu.Unlock()
	if c.ml != nil {
		if err := c.ml.UpdateNode(c.tim.updateTimeout); err != nil {
			c.log.Debug("metadata update not yet broadcast", "err", err)
		}
	}
	return nil
}

// RemoveNode drops a down node from the ring for good: its ranges move to the next nodes on the ring.
// It is the only way a node leaves the ring. The removal is persisted, then announced to every live
// node through Config.Removals (the internode port, never gossip alone); nodes that miss the
// announcement ask a peer for the removals when they next see one come up. The removed id can never
// rejoin (a replacement must start with an empty data directory, hence a new id). Removing a live
// node, the local node, or an unknown node is an error; removing a removed node is not (and
// announces it again).
func (c *Cluster) RemoveNode(id NodeID) error {
	if id == c.id {
		return fmt.Errorf("cluster: cannot remove the local node %s", id)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	at, gone := c.removed[id]
	if !gone {
		p, ok := c.peers[id]
		if !ok {
			c.mu.Unlock()
			return fmt.Errorf("%w: %s", ErrUnknownNode, id)
		}
		if p.live {
			c.mu.Unlock()
			return fmt.Errorf("%w: %s at %s; stop it (and wait until it is seen down) before removing it", ErrNodeLive, id, p.rec.GossipAddr)
		}
		at = time.Now().UnixNano()
		c.applyRemovalLocked(id, at)
		c.log.Info("node removed from the ring", "removed", string(id))
	}
	c.mu.Unlock()
	if err := c.persist(); err != nil {
		return err
	}
	c.announce([]Removal{{ID: id, At: at}})
	return nil
}

// SetRemoving starts (on) or ends (!on) the removal of the down node id by this node
// (removenode): while it runs, id is leaving in the ring, so that its ranges' new owners are
// pending replicas and get the writes made while the ranges stream to them. It is announced to
// every live peer over the internode port (Config.Removals); a peer that does not get it is an
// error when starting (the caller abandons the removal). It never removes id: RemoveNode does,
// once the ranges have streamed; ending it returns the ring to its previous state.
func (c *Cluster) SetRemoving(id NodeID, on bool) error {
	if id == c.id {
		return fmt.Errorf("cluster: cannot remove the local node %s", id)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if on {
		p, ok := c.peers[id]
		if !ok {
			c.mu.Unlock()
			return fmt.Errorf("%w: %s", ErrUnknownNode, id)
		}
		if p.live {
			c.mu.Unlock()
			return fmt.Errorf("%w: %s at %s; stop it (and wait until it is seen down) before removing it", ErrNodeLive, id, p.rec.GossipAddr)
		}
		c.removing[id] = c.id
	} else if by, ok := c.removing[id]; ok && by == c.id {
		delete(c.removing, id)
	}
	c.rebuildRingLocked()
	c.notifyLocked()
	mine := c.removingByLocked(c.id)
	c.mu.Unlock()
	return c.announceRemoving(mine)
}

// RemovingBy returns the node that is removing node id now (SetRemoving there), if any.
func (c *Cluster) RemovingBy(id NodeID) (NodeID, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	by, ok := c.removing[id]
	return by, ok
}

// Removing returns the nodes this node is removing now (SetRemoving), sorted.
func (c *Cluster) Removing() []NodeID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.removingByLocked(c.id)
}

func (c *Cluster) removingByLocked(by NodeID) []NodeID {
	var ids []NodeID
	for id, b := range c.removing {
		if b == by {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// LearnRemoving records that member from is removing the nodes of removing now, the whole set
// (what it told over the internode port: an announcement, or its answer to RemovalPeers.Removed).
// Only such a channel may call it. It removes no node: each is leaving in the ring while from is
// live, so that writes reach their ranges' new owners.
func (c *Cluster) LearnRemoving(from NodeID, removing []NodeID) error {
	if len(removing) > MaxRemovals {
		return fmt.Errorf("cluster: %d removals in progress from %s, the limit is %d", len(removing), from, MaxRemovals)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if from == c.id {
		return nil
	}
	changed := false
	for id, by := range c.removing {
		if by == from && !slices.Contains(removing, id) {
			delete(c.removing, id)
			changed = true
		}
	}
	for _, id := range removing {
		if id == c.id || validateNodeID(id) != nil {
			continue
		}
		if _, gone := c.removed[id]; gone {
			continue
		}
		if by, ok := c.removing[id]; !ok || by != from {
			c.removing[id] = from
			changed = true
			c.log.Info("node being removed: its ranges' new owners get its writes", "removing", string(id), "by", string(from))
		}
	}
	if changed {
		c.rebuildRingLocked()
		c.notifyLocked()
	}
	return nil
}

// announceRemoving tells every live peer of the nodes this node is removing now, in parallel,
// and returns the peers' errors.
func (c *Cluster) announceRemoving(removing []NodeID) error {
	if c.cfg.Removals == nil {
		return nil
	}
	return errors.Join(c.toLivePeers(func(ctx context.Context, m Member) error {
		return c.cfg.Removals.AnnounceRemoving(ctx, m, c.id, removing)
	})...)
}

// removalTimeout bounds one call to Config.Removals.
const removalTimeout = 5 * time.Second

// announce tells every live peer of removals through Config.Removals, in parallel, and waits for
// them. A peer that misses it learns of it later, by asking (see confirm).
func (c *Cluster) announce(removals []Removal) {
	if c.cfg.Removals == nil {
		return
	}
	for _, err := range c.toLivePeers(func(ctx context.Context, m Member) error {
		return c.cfg.Removals.Announce(ctx, m, c.id, removals)
	}) {
		c.log.Warn("announcing a removal failed; the peer will learn of it when it asks", "err", err)
	}
}

// toLivePeers calls call for every live peer at once, each bounded by removalTimeout, and
// returns their errors, each naming its peer.
func (c *Cluster) toLivePeers(call func(ctx context.Context, m Member) error) []error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, to := range c.livePeers() {
		m, ok := c.Member(to)
		if !ok {
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(c.ctx, removalTimeout)
			defer cancel()
			if err := call(ctx, m); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("node %s: %w", to, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errs
}

// Removals returns every removal the node knows, sorted by id: what a peer asking over the
// internode port is told (RemovalPeers.Removed).
func (c *Cluster) Removals() []Removal {
	c.mu.Lock()
	rs := make([]Removal, 0, len(c.removed))
	for id, at := range c.removed {
		rs = append(rs, Removal{ID: id, At: at})
	}
	c.mu.Unlock()
	slices.SortFunc(rs, func(a, b Removal) int { return cmp.Compare(a.ID, b.ID) })
	return rs
}

// MaxRemovals bounds the removals one peer may tell of at once.
const MaxRemovals = 1 << 16

// LearnRemovals applies removals that member from confirmed over the internode port (its
// announcement after a removenode, or its answer to RemovalPeers.Removed) and persists them
// before returning. Only such a channel may call it, never gossip. A removal of a node still seen
// live here applies once it is seen down. Invalid ids are skipped.
func (c *Cluster) LearnRemovals(from NodeID, removals []Removal) error {
	if len(removals) > MaxRemovals {
		return fmt.Errorf("cluster: %d removals from %s, the limit is %d", len(removals), from, MaxRemovals)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	for _, r := range removals {
		if validateNodeID(r.ID) != nil {
			c.log.Warn("ignoring the removal of an invalid node id", "from", string(from))
			continue
		}
		if c.applyRemovalLocked(r.ID, r.At) {
			c.log.Info("node removed from the ring", "removed", string(r.ID), "confirmed_by", string(from))
		}
	}
	c.mu.Unlock()
	return c.persist()
}

// confirmLocked asks peer id for its removals at the worker's next pass.
func (c *Cluster) confirmLocked(id NodeID) {
	if c.cfg.Removals == nil || id == c.id || validateNodeID(id) != nil {
		return
	}
	c.confirm[id] = true
	c.kickWorker()
}

// askRemovals asks every peer in c.confirm that is live and not already being asked for its
// removals, each on its own goroutine; a peer that answers leaves c.confirm.
func (c *Cluster) askRemovals() {
	c.mu.Lock()
	var ms []Member
	for id := range c.confirm {
		p, ok := c.peers[id]
		if !ok || !p.live || p.rec.RPCAddr == "" {
			delete(c.confirm, id) // asked again when it comes up
			continue
		}
		if c.closed || c.asking[id] {
			continue
		}
		c.asking[id] = true
		ms = append(ms, c.memberLocked(p))
		c.wg.Add(1)
	}
	c.mu.Unlock()
	for _, m := range ms {
		go func() {
			defer c.wg.Done()
			ctx, cancel := context.WithTimeout(c.ctx, removalTimeout)
			defer cancel()
			rs, removing, err := c.cfg.Removals.Removed(ctx, m)
			if err == nil {
				err = c.LearnRemovals(m.ID, rs)
			}
			if err == nil {
				err = c.LearnRemoving(m.ID, removing)
			}
			c.mu.Lock()
			delete(c.asking, m.ID)
			if err == nil {
				delete(c.confirm, m.ID)
			}
			c.mu.Unlock()
			if err != nil {
				c.log.Debug("asking a peer for its removals failed; retrying", "peer", string(m.ID), "err", err)
			}
			c.asked.Add(1)
		}()
	}
}

// applyRemovalLocked records the removal of id and drops it from the ring. It reports whether anything
// changed.
func (c *Cluster) applyRemovalLocked(id NodeID, at int64) bool {
	if _, gone := c.removed[id]; gone {
		return false
	}
	if p, ok := c.peers[id]; ok && p.live && id != c.id {
		// A confirmed removal (removenode checked that every live node saw it down) that
		// reaches a node still seeing it up waits until it is seen down.
		if _, ok := c.deferred[id]; !ok {
			c.deferred[id] = at
			c.log.Warn("removal of a node still seen up deferred until it is seen down", "removed", string(id))
		}
		return false
	}
	delete(c.deferred, id)
	delete(c.removing, id)
	for r, by := range c.removing {
		if by == id {
			delete(c.removing, r) // its removal in progress ends with it
		}
	}
	c.removed[id] = at
	c.dirty = true
	if id == c.id {
		c.log.Error("this node was removed from the cluster by an operator; stop it and start it with an empty data directory to rejoin as a new node")
		c.notifyLocked()
		return true
	}
	if _, ok := c.peers[id]; ok {
		delete(c.peers, id)
		c.rebuildRingLocked()
		c.rebuildLiveLocked()
	}
	c.notifyLocked()
	return true
}

// livePeers returns the ids of the live members other than the local node.
func (c *Cluster) livePeers() []NodeID {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []NodeID
	for id, p := range c.peers {
		if p.live && id != c.id {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// send sends msg to node to over memberlist's reliable (TCP) channel from an owned goroutine. With
// oneAtATime, a send to a node that has one in flight is dropped.
func (c *Cluster) send(to NodeID, msg []byte, oneAtATime bool) {
	var node *memberlist.Node
	for _, n := range c.ml.Members() {
		if n.Name == string(to) {
			node = &memberlist.Node{Name: n.Name, Addr: n.Addr, Port: n.Port}
			break
		}
	}
	if node == nil {
		return
	}
	c.mu.Lock()
	if c.closed || (oneAtATime && c.inflight[to]) {
		c.mu.Unlock()
		return
	}
	if oneAtATime {
		c.inflight[to] = true
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		err := c.ml.SendReliable(node, msg)
		if oneAtATime {
			c.mu.Lock()
			delete(c.inflight, to)
			c.mu.Unlock()
		}
		if err != nil {
			c.log.Debug("send to peer failed", "peer", string(to), "addr", node.Address(), "err", err)
		}
	}()
}

// persist writes the known peers when they changed.
func (c *Cluster) persist() error {
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return nil
	}
	pf := peerFileV1{Version: 1}
	for _, p := range c.peers {
		pf.Peers = append(pf.Peers, p.rec)
	}
	for id, at := range c.removed {
		pf.Removed = append(pf.Removed, Removal{ID: id, At: at})
	}
	c.dirty = false
	c.mu.Unlock()
	if err := savePeers(c.cfg.DataDir, pf); err != nil {
		c.mu.Lock()
		c.dirty = true
		c.mu.Unlock()
		return err
	}
	return nil
}

// joinTargets returns the gossip addresses to join: the seeds (when withSeeds) and the known peers
// that are not live, without the local node's own addresses.
func (c *Cluster) joinTargets(withSeeds bool) []string {
	var targets []string
	if withSeeds {
		targets = append(targets, c.cfg.Seeds...)
	}
	c.mu.Lock()
	for id, p := range c.peers {
		if id != c.id && !p.live && p.rec.GossipAddr != "" {
			targets = append(targets, p.rec.GossipAddr)
		}
	}
	c.mu.Unlock()
	slices.Sort(targets)
	targets = slices.Compact(targets)
	return slices.DeleteFunc(targets, c.isSelf)
}

// isSelf reports whether the gossip address addr points at this node.
func (c *Cluster) isSelf(addr string) bool {
	if addr == c.gossip {
		return true
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	_, myPort, _ := splitHostPort(c.gossip)
	if portStr != strconv.Itoa(myPort) {
		return false
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		ips, _ = net.DefaultResolver.LookupIP(ctx, "ip", host)
	}
	for _, ip := range ips {
		for _, mine := range c.localIPs {
			if ip.Equal(mine) {
				return true
			}
		}
	}
	return false
}

// join tries every target at once and returns how many it reached.
func (c *Cluster) join(targets []string) int {
	var reached atomic.Int64
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := c.ml.Join([]string{t})
			if err != nil {
				c.log.Debug("join attempt failed", "target", t, "err", err)
				return
			}
			reached.Add(int64(n))
		}()
	}
	wg.Wait()
	return int(reached.Load())
}

// maxRejoins bounds the joins of one down peer in flight (see rejoin): a join into a partition
// waits up to memberlist's TCPTimeout (10 s on a LAN) for its connection, whose SYN the kernel
// retries after 1, 2 and 4 s; with four joins started a second apart, some SYN leaves every
// second, so a healed link is found within about a second.
const maxRejoins = 4

// rejoin starts a join of each target (the gossip addresses of known peers that are down, and
// the seeds when the node is alone) that has fewer than maxRejoins joins in flight, without
// waiting for them: one that hangs on a peer still cut off (or paused) delays neither the
// others nor the next round. Once a join reaches a peer, memberlist's push/pull merges the two
// views: each side learns the other is alive (after refuting the death the other had
// declared), and gossip carries that to the rest. It removes nothing. The joins are the
// cluster's goroutines (c.wg); each ends within memberlist's TCPTimeout.
func (c *Cluster) rejoin(targets []string) {
	c.rejoinMu.Lock()
	defer c.rejoinMu.Unlock()
	for _, t := range targets {
		if c.rejoins[t] >= maxRejoins {
			continue
		}
		c.rejoins[t]++
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			n, err := c.ml.Join([]string{t})
			c.rejoinMu.Lock()
			if c.rejoins[t]--; c.rejoins[t] == 0 {
				delete(c.rejoins, t)
			}
			c.rejoinMu.Unlock()
			if err != nil {
				c.log.Debug("rejoin attempt failed", "target", t, "err", err)
				return
			}
			c.log.Info("reached a peer that was down", "target", t, "reached", n)
		}()
	}
}

// joinLoop keeps the node connected: until the first successful join it retries the seeds and known
// peers with exponential backoff; afterwards it contacts the known peers that are down every
// reconnect interval (a second; to heal partitions, which memberlist does not do by itself: it
// stops gossiping to a dead node after GossipToTheDeadTime), and the seeds again if the node
// finds itself alone (see rejoin).
func (c *Cluster) joinLoop(joined bool) {
	defer c.wg.Done()
	delay := c.tim.joinRetryMin
	for {
		wait := delay
		if joined {
			wait = c.tim.reconnect
		}
		t := time.NewTimer(wait)
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-t.C:
		}
		c.mu.Lock()
		if len(c.confirm) > 0 {
			c.kickWorker() // retry the peers that have not told their removals yet
		}
		c.mu.Unlock()
		alone := c.ml.NumMembers() <= 1
		if !joined && !alone {
			joined = true // someone joined us
			continue
		}
		targets := c.joinTargets(alone)
		if len(targets) == 0 {
			continue
		}
		if joined {
			c.rejoin(targets)
			continue
		}
		n := c.join(targets)
		switch {
		case n > 0 && !joined:
			c.log.Info("joined the cluster", "reached", n)
			joined = true
		case n == 0 && !joined:
			delay = min(delay*2, c.tim.joinRetryMax)
		}
	}
}

// Close leaves the cluster gracefully (peers see the node down at once rather than after failure
// detection), shuts memberlist down, stops every goroutine and persists the known peers.
func (c *Cluster) Close() error {
	return c.shutdown(true)
}

// Kill stops the node without telling its peers, as a crashed process would: they find it down
// by failure detection. Tests use it to crash a node in process; Close is the way to stop one.
func (c *Cluster) Kill() error {
	return c.shutdown(false)
}

// shutdown stops the node; without leave it vanishes as a crashed node would.
func (c *Cluster) shutdown(leave bool) error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.stop)
		c.cancel()
		if leave {
			if err := c.ml.Leave(c.tim.leaveTimeout); err != nil {
				c.log.Debug("leave broadcast not confirmed", "err", err)
			}
		}
		err := c.ml.Shutdown()
		c.wg.Wait()
		c.closeErr = errors.Join(err, c.persist())
		c.mu.Lock()
		c.notifyLocked()
		c.mu.Unlock()
		c.log.Info("cluster member stopped")
	})
	return c.closeErr
}

// HasJoinTargets reports whether the node has anyone to join: a seed or a known peer that is not
// the node itself. A node whose seeds all point at itself founds its cluster.
func (c *Cluster) HasJoinTargets() bool { return len(c.joinTargets(true)) > 0 }
