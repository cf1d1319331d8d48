package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

const (
	// DefaultNumTokens is the number of vnode tokens per node when Options.NumTokens is zero.
	DefaultNumTokens = 16
	// DefaultDataCenter and DefaultRack place a node when Options.DataCenter and Options.Rack are
	// empty: Cassandra's defaults, which drivers' default load balancing expects.
	DefaultDataCenter = "datacenter1"
	DefaultRack       = "rack1"
	// MaxPlacementNameLen bounds a data center or rack name.
	MaxPlacementNameLen = 64
	// DefaultBindAddr is the gossip address when Config.BindAddr is empty.
	DefaultBindAddr = "0.0.0.0:7946"
	// DefaultClusterName is the cluster name when Options.ClusterName is empty.
	DefaultClusterName = "kvnode"
	// DefaultSchemaAgreementTimeout bounds AwaitSchemaAgreement when it is given no timeout.
	DefaultSchemaAgreementTimeout = 10 * time.Second
	// MaxNumTokens is the largest Options.NumTokens accepted.
	MaxNumTokens = 4096
	// MaxClusterNameSize is the longest Options.ClusterName accepted, in bytes: memberlist's
	// label limit.
	MaxClusterNameSize = memberlist.LabelMaxSize
)

// Profile selects failure-detection and gossip timings.
type Profile int

const (
	// ProfileLAN suits a data-centre network: memberlist's DefaultLANConfig (1 s probes, 30 s push/pull).
	ProfileLAN Profile = iota
	// ProfileLocal suits nodes on one host: memberlist's DefaultLocalConfig.
	ProfileLocal
	// ProfileTest is for in-process tests on loopback: fast probes, gossip and push/pull so that joins,
	// failures and schema changes are seen within about a second. Too aggressive for real networks.
	ProfileTest
	// ProfileWAN suits a cluster spread over data centers: 1.5 s probes with 750 ms timeouts (a
	// WAN round trip of up to a few hundred milliseconds; a TCP probe runs to the end of the
	// interval), a fixed suspicion time of 18 s (wanSuspicion, for up to 9 nodes: memberlist
	// scales it with log10 of the members), lifeguard's probe slow-down capped at 2×, 30 s
	// push/pull, 3 s for a TCP exchange (push/pull, join). A peer is marked down only once
	// suspected for that long, and a suspected peer refutes as soon as a probe reaches it again:
	// a silence of less than 10 s (a WAN blip) never marks it down, and a cut of 30 s marks it
	// down within those 30 s (measured: test/fault TestDataCenterFailureDetection). A node that
	// dies is found as slowly.
	ProfileWAN
)

// wanSuspicion is how long a peer stays suspected under ProfileWAN before it is declared dead:
// SuspicionMult × ProbeInterval (memberlist's minimum suspicion time for up to 9 nodes), with
// no longer maximum, so confirmations from other members cannot make it vary. It is the
// window in which a blip's suspicion must be refuted (a probe reaching the suspect after the
// blip: about wanProbeInterval × the members one node probes in turn, halved by the other
// suspecting nodes of its data center), and it plus the first failed probe (one or two probe
// intervals) is how long a cut takes to mark a peer down. wanAwarenessMax caps how much
// lifeguard stretches the probe interval while probes fail, so that the probes that refute
// after a blip come soon.
const (
	wanProbeInterval  = 1500 * time.Millisecond
	wanSuspicionMult  = 12
	wanSuspicion      = wanSuspicionMult * wanProbeInterval
	wanProbeTimeout   = 750 * time.Millisecond
	wanAwarenessMax   = 2
	wanPushPull       = 30 * time.Second
	wanTCPTimeout     = 3 * time.Second // a push/pull or join over the WAN: a few round trips
	wanGossipInterval = 500 * time.Millisecond
)

// String returns the profile's name.
func (p Profile) String() string {
	switch p {
	case ProfileLAN:
		return "lan"
	case ProfileLocal:
		return "local"
	case ProfileTest:
		return "test"
	case ProfileWAN:
		return "wan"
	}
	return "Profile(" + strconv.Itoa(int(p)) + ")"
}

// ParseProfile returns the profile named s ("lan", "wan", "local" or "test").
func ParseProfile(s string) (Profile, error) {
	for _, p := range []Profile{ProfileLAN, ProfileWAN, ProfileLocal, ProfileTest} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("cluster: unknown profile %q (want lan, wan, local or test)", s)
}

// MarshalText returns the profile's name, so a Profile reads and writes as "lan", "wan",
// "local" or "test" in configuration files and flags.
func (p Profile) MarshalText() ([]byte, error) {
	switch p {
	case ProfileLAN, ProfileWAN, ProfileLocal, ProfileTest:
		return []byte(p.String()), nil
	}
	return nil, fmt.Errorf("cluster: unknown profile %d", int(p))
}

// UnmarshalText sets p to the profile named text (see ParseProfile).
func (p *Profile) UnmarshalText(text []byte) error {
	q, err := ParseProfile(string(text))
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// timings are the cluster's own intervals, chosen with the memberlist profile.
type timings struct {
	joinRetryMin   time.Duration // first retry delay while no seed could be reached
	joinRetryMax   time.Duration // backoff cap
	reconnect      time.Duration // how often to try down peers again once joined (see Cluster.rejoin)
	leaveTimeout   time.Duration // how long Close waits for the leave broadcast
	updateTimeout  time.Duration // how long a metadata update waits for its broadcast
	reclaimDeadAge time.Duration // memberlist DeadNodeReclaimTime: a dead node's name may take a new address after this
}

func (p Profile) settings() (*memberlist.Config, timings) {
	switch p {
	case ProfileLocal:
		return memberlist.DefaultLocalConfig(), timings{
			joinRetryMin: 200 * time.Millisecond, joinRetryMax: 5 * time.Second, reconnect: time.Second,
			leaveTimeout: time.Second, updateTimeout: time.Second, reclaimDeadAge: 5 * time.Second,
		}
	case ProfileTest:
		c := memberlist.DefaultLocalConfig()
		c.ProbeInterval = 200 * time.Millisecond
		c.ProbeTimeout = 100 * time.Millisecond
		c.SuspicionMult = 3
		c.GossipInterval = 50 * time.Millisecond
		c.PushPullInterval = time.Second
		c.TCPTimeout = time.Second
		c.GossipToTheDeadTime = 2 * time.Second
		return c, timings{
			joinRetryMin: 50 * time.Millisecond, joinRetryMax: 500 * time.Millisecond, reconnect: 500 * time.Millisecond,
			leaveTimeout: 500 * time.Millisecond, updateTimeout: 500 * time.Millisecond, reclaimDeadAge: time.Second,
		}
	case ProfileWAN:
		c := memberlist.DefaultWANConfig()
		c.ProbeInterval, c.ProbeTimeout = wanProbeInterval, wanProbeTimeout
		c.SuspicionMult, c.SuspicionMaxTimeoutMult = wanSuspicionMult, 1
		c.PushPullInterval, c.GossipInterval = wanPushPull, wanGossipInterval
		c.AwarenessMaxMultiplier = wanAwarenessMax
		c.TCPTimeout = wanTCPTimeout
		return c, timings{
			joinRetryMin: time.Second, joinRetryMax: 30 * time.Second, reconnect: 5 * time.Second,
			// leaveTimeout plus wanTCPTimeout (the rejoins a cut left hanging, which Close
			// waits for) stay inside the node's default shutdown grace (5 s).
			leaveTimeout: time.Second, updateTimeout: 5 * time.Second, reclaimDeadAge: 60 * time.Second,
		}
	default:
		return memberlist.DefaultLANConfig(), timings{
			joinRetryMin: time.Second, joinRetryMax: 30 * time.Second, reconnect: time.Second,
			leaveTimeout: 3 * time.Second, updateTimeout: 2 * time.Second, reclaimDeadAge: 10 * time.Second,
		}
	}
}

// SchemaStore is the schema as the cluster sees it. Implementations must be safe for concurrent use;
// Digest is called often and must be cheap.
type SchemaStore interface {
	// Digest returns a digest of the current schema; it is gossiped in the node's metadata, so it must be
	// short (the metadata limit is 512 bytes, shared with the node id and RPC address).
	Digest() string
	// Snapshot returns a deterministic encoding of the whole schema.
	Snapshot() []byte
	// Merge merges a peer's snapshot (last writer wins per object), persists the result when it changed,
	// and reports whether it changed. Merge must be commutative and idempotent so nodes converge.
	Merge(snapshot []byte) (changed bool, err error)
}

// RemovalPeers is how removals travel between nodes other than by gossip: over the internode
// port, mutually authenticated when TLS is on. The node implements it over gRPC. Gossip carries
// removals only as hints; a node applies a removal only once a peer confirms it through
// RemovalPeers (or announces it, see [Cluster.LearnRemovals]). Calls are made from the cluster's
// own goroutines, never from memberlist callbacks; they must honour ctx.
type RemovalPeers interface {
	// Removed asks member peer for every removal it knows ([Cluster.Removals] on that node) and
	// for the nodes it is removing now ([Cluster.Removing] on that node).
	Removed(ctx context.Context, peer Member) ([]Removal, []NodeID, error)
	// Announce tells member peer that node from removed the nodes of removals
	// ([Cluster.LearnRemovals] on that node).
	Announce(ctx context.Context, peer Member, from NodeID, removals []Removal) error
	// AnnounceRemoving tells member peer that node from is removing the nodes of removing now,
	// the whole set ([Cluster.LearnRemoving] on that node).
	AnnounceRemoving(ctx context.Context, peer Member, from NodeID, removing []NodeID) error
}

// Options are the settings of a node's membership that its operator chooses. The zero value of
// each field means its default (EnsureDefaults). The YAML tags are the keys of kvnode's
// configuration file (node.Config nests Options).
type Options struct {
	// ClusterName keeps clusters apart: nodes only talk to nodes with the same name (memberlist
	// label), at most MaxClusterNameSize bytes. Default DefaultClusterName.
	ClusterName string `yaml:"cluster_name"`
	// Seeds are gossip host:port addresses of nodes to join. The node's own address is ignored,
	// and the addresses of peers known from earlier runs are tried as well.
	Seeds []string `yaml:"seeds"`
	// NumTokens is the number of vnode tokens, 1 to MaxNumTokens, fixed for the node's life.
	// Default DefaultNumTokens.
	NumTokens int `yaml:"num_tokens"`
	// Profile selects gossip and failure-detection timings. Default ProfileLAN.
	Profile Profile `yaml:"profile"`
	// DataCenter and Rack place the node, published to peers (drivers read them from
	// system.local and system.peers; see ValidatePlacementName). Default DefaultDataCenter and
	// DefaultRack.
	DataCenter string `yaml:"dc"`
	Rack       string `yaml:"rack"`
	// SchemaAgreementTimeout bounds AwaitSchemaAgreement when called without a timeout.
	// Default DefaultSchemaAgreementTimeout.
	SchemaAgreementTimeout time.Duration `yaml:"schema_agreement_timeout"`
}

// EnsureDefaults replaces zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.ClusterName == "" {
		o.ClusterName = DefaultClusterName
	}
	if o.NumTokens == 0 {
		o.NumTokens = DefaultNumTokens
	}
	if o.DataCenter == "" {
		o.DataCenter = DefaultDataCenter
	}
	if o.Rack == "" {
		o.Rack = DefaultRack
	}
	if o.SchemaAgreementTimeout == 0 {
		o.SchemaAgreementTimeout = DefaultSchemaAgreementTimeout
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, holds usable settings. Each error names the
// field, its configuration key and the values allowed.
func (o *Options) Validate() error {
	if len(o.ClusterName) > MaxClusterNameSize {
		return fmt.Errorf("cluster: Options.ClusterName (cluster_name) is %d bytes, want at most %d", len(o.ClusterName), MaxClusterNameSize)
	}
	for i, s := range o.Seeds {
		if _, _, err := splitHostPort(s); err != nil {
			return fmt.Errorf("cluster: Options.Seeds[%d] (seeds) %q is not host:port with a port 0 to 65535: %v", i, s, err)
		}
	}
	if o.NumTokens < 1 || o.NumTokens > MaxNumTokens {
		return fmt.Errorf("cluster: Options.NumTokens (num_tokens) is %d, want 1 to %d", o.NumTokens, MaxNumTokens)
	}
	if _, err := o.Profile.MarshalText(); err != nil {
		return fmt.Errorf("cluster: Options.Profile (profile) is %d, want lan, wan, local or test", int(o.Profile))
	}
	if err := ValidatePlacementName(o.DataCenter); err != nil {
		return fmt.Errorf("cluster: Options.DataCenter (dc): %v", err)
	}
	if err := ValidatePlacementName(o.Rack); err != nil {
		return fmt.Errorf("cluster: Options.Rack (rack): %v", err)
	}
	if o.SchemaAgreementTimeout <= 0 {
		return fmt.Errorf("cluster: Options.SchemaAgreementTimeout (schema_agreement_timeout) is %v, want a positive duration", o.SchemaAgreementTimeout)
	}
	return nil
}

// Config configures Start: a node's Options and what the program running the node wires in.
// DataDir and Schema are required; the zero value of every other field means its default.
type Config struct {
	Options
	// DataDir is the directory holding the node id and the known peers (created if missing).
	DataDir string
	// NodeID, when set, is the id to use on first start; afterwards it must equal the persisted id.
	// Empty means generate one on first start.
	NodeID NodeID
	// BindAddr is the gossip host:port to listen on (TCP and UDP). Port 0 picks a free port, and a
	// restarted node first tries the port it had before. Default DefaultBindAddr.
	BindAddr string
	// AdvertiseAddr is the gossip host:port other nodes should use, when it differs from BindAddr (NAT,
	// or a wildcard bind address). Empty means derived from BindAddr.
	AdvertiseAddr string
	// RPCAddr is the node's internode RPC address, published to peers in the node metadata.
	RPCAddr string
	// NativeAddr is the host:port where the node serves the CQL native protocol, published to peers
	// in the node metadata (drivers read it from system.peers); SetNativeAddr sets it later. Empty
	// means none yet.
	NativeAddr string
	// Keyring, when set, encrypts and authenticates all gossip (memberlist's AES-GCM keyring):
	// a node without one of its keys can neither join nor inject state, and plaintext gossip is
	// refused. The keyring may change while the node runs (AddKey, UseKey, RemoveKey), which is
	// how keys rotate. Nil means plaintext gossip.
	Keyring *memberlist.Keyring
	// Tune, when set, is called with the memberlist configuration after the profile and the fields above
	// are applied, for knobs the profiles do not cover. It must not change Name, Delegate, Events,
	// Alive, Ping, Logger or LogOutput.
	Tune func(*memberlist.Config)
	// GossipDelay, when positive, delays every gossip packet this node sends and every gossip
	// stream it opens by that much (a memberlist Transport wrapper): for fault tests of slow
	// gossip links only.
	GossipDelay time.Duration
	// GossipDelayTo, when set, limits GossipDelay to what is sent to these hosts (IP addresses,
	// as the members' gossip addresses name them): a slow link to a remote data center.
	GossipDelayTo []string
	// Logger receives the cluster's and memberlist's logs. Default slog.Default().
	Logger *slog.Logger
	// Schema is the node's schema store.
	Schema SchemaStore
	// Joining makes a new node (one with no state persisted in DataDir) start in StateJoining: it
	// owns nothing until it calls SetState(StateNormal) once it has streamed its ranges. A node that
	// has run before starts in the state it persisted (a leaving one as normal: its decommission did
	// not finish, so it still owns its ranges).
	Joining bool
	// Unrepaired starts the node unrepaired (SetUnrepaired): its first metadata already says it
	// serves no reads.
	Unrepaired bool
	// DataFormat is the data format version of the node's storage (replica.FormatVersion), which
	// the node gossips (dataformat.go) so that coordinators refuse what members of an older format
	// cannot store. 0 gossips none, as a release before data format versions did.
	DataFormat int
	// Removals is how the node confirms removals with its peers and announces its own
	// (RemoveNode). Nil means removals never travel between nodes: each node learns of one only
	// through LearnRemovals.
	Removals RemovalPeers
	// Now is the node's clock as its peers measure it (see ClockOffsets): the clock that
	// stamps its writes. Default time.Now; tests shift it to give a node a skewed clock.
	Now func() time.Time
}

// secureGossip applies the keyring to memberlist's configuration: every message encrypted with
// the primary key, and incoming and outgoing messages verified.
func (c *Config) secureGossip(mc *memberlist.Config) {
	if c.Keyring == nil {
		return
	}
	mc.Keyring = c.Keyring
	mc.GossipVerifyIncoming = true
	mc.GossipVerifyOutgoing = true
}

// EnsureDefaults replaces zero fields with their defaults, the Options' among them, and
// returns c.
func (c *Config) EnsureDefaults() *Config {
	c.Options.EnsureDefaults()
	if c.BindAddr == "" {
		c.BindAddr = DefaultBindAddr
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports whether c, after EnsureDefaults, describes a node Start can run.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("cluster: Config.DataDir is required")
	}
	if c.Schema == nil {
		return errors.New("cluster: Config.Schema is required")
	}
	if err := c.Options.Validate(); err != nil {
		return err
	}
	if _, _, err := splitHostPort(c.BindAddr); err != nil {
		return fmt.Errorf("cluster: Config.BindAddr %q is not host:port with a port 0 to 65535: %v", c.BindAddr, err)
	}
	if c.AdvertiseAddr != "" {
		if _, _, err := splitHostPort(c.AdvertiseAddr); err != nil {
			return fmt.Errorf("cluster: Config.AdvertiseAddr %q is not host:port with a port 0 to 65535: %v", c.AdvertiseAddr, err)
		}
	}
	return nil
}

func splitHostPort(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", portStr)
	}
	return host, port, nil
}

// slogWriter adapts memberlist's log lines ("[LEVEL] memberlist: message") to log/slog.
type slogWriter struct {
	log *slog.Logger
}

func newMemberlistLogger(l *slog.Logger) *log.Logger {
	return log.New(slogWriter{l.With("component", "memberlist")}, "", 0)
}

func (w slogWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	level := slog.LevelInfo
	for _, l := range []struct {
		tag   string
		level slog.Level
	}{{"[DEBUG]", slog.LevelDebug}, {"[INFO]", slog.LevelInfo}, {"[WARN]", slog.LevelWarn}, {"[ERR]", slog.LevelError}, {"[ERROR]", slog.LevelError}} {
		if bytes.HasPrefix(line, []byte(l.tag)) {
			level = l.level
			line = bytes.TrimSpace(line[len(l.tag):])
			break
		}
	}
	line = bytes.TrimPrefix(line, []byte("memberlist: "))
	// memberlist's gossip and probe goroutines race the close of its own sockets during Shutdown
	// and report the closed socket as an error; it is an expected part of every clean stop, so
	// it must not page an operator.
	if level > slog.LevelDebug && bytes.Contains(line, []byte("use of closed network connection")) {
		level = slog.LevelDebug
	}
	ctx := context.Background()
	if w.log.Enabled(ctx, level) {
		w.log.Log(ctx, level, string(line))
	}
	return len(p), nil
}

// ValidatePlacementName reports why name cannot be a data center or rack name, or nil: it must be 1
// to MaxPlacementNameLen bytes of printable ASCII other than quotes and backslash (drivers compare
// these names and operators type them in configuration).
func ValidatePlacementName(name string) error {
	if name == "" {
		return errors.New("name is empty")
	}
	if len(name) > MaxPlacementNameLen {
		return fmt.Errorf("name is %d bytes, the limit is %d", len(name), MaxPlacementNameLen)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' || c == '\'' || c == '"' || c == '\\' {
			return fmt.Errorf("name %q has byte %#x at offset %d; allowed are printable ASCII characters other than space, quotes and backslash", name, c, i)
		}
	}
	return nil
}
