package cluster

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestThreeNodeJoin(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.start()
	n2 := tc.start(n1.GossipAddr())
	n3 := tc.start(n1.GossipAddr())
	took := waitFor(t, 10*time.Second, allSeeAllLive(n1, n2, n3))
	t.Logf("all 3 nodes saw each other live after %v", took)

	// Every node builds the same ring and so computes the same replicas.
	r1 := n1.Ring()
	for _, n := range []*testNode{n2, n3} {
		if !n.Ring().Equal(r1) {
			t.Fatalf("node %s's ring %v differs from node %s's %v", n.LocalID(), n.Ring().Nodes(), n1.LocalID(), r1.Nodes())
		}
	}
	if r1.NumNodes() != 3 || r1.NumTokens() != 3*DefaultNumTokens {
		t.Fatalf("ring has %d nodes and %d tokens, want 3 and %d", r1.NumNodes(), r1.NumTokens(), 3*DefaultNumTokens)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var b1, b2, b3 []NodeID
	for range 10000 {
		token := int64(rng.Uint64())
		b1 = n1.Ring().AppendReplicas(b1[:0], token, 3)
		b2 = n2.Ring().AppendReplicas(b2[:0], token, 3)
		b3 = n3.Ring().AppendReplicas(b3[:0], token, 3)
		if len(b1) != 3 || !slices.Equal(b1, b2) || !slices.Equal(b1, b3) {
			t.Fatalf("replicas of token %d at RF=3 disagree: %v, %v, %v", token, b1, b2, b3)
		}
	}
}

func TestDownNodeKeepsItsRangesAndRejoinsAfterRestart(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.start()
	n2 := tc.start(n1.GossipAddr())
	n3 := tc.start(n1.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(n1, n2, n3))
	ringBefore := n1.Ring()
	id3, tokens3, dir3 := n3.LocalID(), slices.Clone(n3.Ring().Tokens(n3.LocalID())), n3.dir

	// A crash (no leave message): failure detection must mark it down everywhere.
	n3.crash()
	took := waitFor(t, 15*time.Second, seesDown(id3, n1, n2))
	t.Logf("crashed node seen down by both peers after %v", took)
	for _, n := range []*testNode{n1, n2} {
		if !n.Ring().Equal(ringBefore) {
			t.Errorf("node %s's ring changed when %s went down; a down node must keep its ranges", n.LocalID(), id3)
		}
		if n.IsLive(id3) {
			t.Errorf("node %s: IsLive(%s) = true after it crashed", n.LocalID(), id3)
		}
	}
	owned := 0
	for _, tok := range tokens3 {
		if n1.Ring().Owner(tok) == id3 {
			owned++
		}
	}
	if owned != len(tokens3) {
		t.Errorf("down node %s is the owner of %d of its %d tokens, want all", id3, owned, len(tokens3))
	}

	// Restart on the same data directory with no seeds: same id, same tokens, and the persisted peers
	// let it rejoin.
	oldAddr := n3.GossipAddr()
	n3 = tc.restart(dir3, n3.schema)
	if n3.GossipAddr() != oldAddr {
		t.Errorf("restarted node (bind port 0) listens on %s, want its previous address %s", n3.GossipAddr(), oldAddr)
	}
	if n3.LocalID() != id3 {
		t.Fatalf("restarted node has id %s, want %s (persisted)", n3.LocalID(), id3)
	}
	if got := n3.Ring().Tokens(id3); !slices.Equal(got, tokens3) {
		t.Fatalf("restarted node has tokens %v, want %v", got, tokens3)
	}
	took = waitFor(t, 10*time.Second, allSeeAllLive(n1, n2, n3))
	t.Logf("restarted node (no seeds) rejoined after %v", took)
	if !n3.Ring().Equal(ringBefore) {
		t.Errorf("restarted node's ring %v differs from the ring before %v", n3.Ring().Nodes(), ringBefore.Nodes())
	}

	// A graceful Close is seen at once (leave message) and also keeps the ranges.
	id2 := n2.LocalID()
	if err := n2.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitFor(t, 10*time.Second, seesDown(id2, n1, n3))
	if !n1.Ring().Equal(ringBefore) {
		t.Errorf("node %s's ring changed after %s closed", n1.LocalID(), id2)
	}
}

func TestSchemaChangeReachesLiveNodesAndARestartedNode(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.start()
	n2 := tc.start(n1.GossipAddr())
	n3 := tc.start(n1.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(n1, n2, n3))

	n1.schema.add("CREATE KEYSPACE ks1")
	if err := n1.NotifySchemaChanged(); err != nil {
		t.Fatalf("NotifySchemaChanged: %v", err)
	}
	ctx := context.Background()
	start := time.Now()
	disagreeing, err := n1.AwaitSchemaAgreement(ctx, 2*time.Second)
	if err != nil || len(disagreeing) != 0 {
		t.Fatalf("AwaitSchemaAgreement after a DDL on %s = %v, %v; want agreement within 2s", n1.LocalID(), disagreeing, err)
	}
	t.Logf("schema agreement after %v", time.Since(start))
	for _, n := range []*testNode{n2, n3} {
		if !n.schema.has("CREATE KEYSPACE ks1") {
			t.Errorf("node %s does not have the new keyspace after agreement", n.LocalID())
		}
	}
	waitFor(t, 2*time.Second, sameSchema(n1, n2, n3))

	// n3 is down while n2 changes the schema; agreement among the live nodes does not wait for it.
	dir3, schema3 := n3.dir, n3.schema
	if err := n3.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitFor(t, 10*time.Second, seesDown(n3.LocalID(), n1, n2))
	n2.schema.add("CREATE TABLE ks1.t")
	if err := n2.NotifySchemaChanged(); err != nil {
		t.Fatalf("NotifySchemaChanged: %v", err)
	}
	if d, err := n2.AwaitSchemaAgreement(ctx, 2*time.Second); err != nil || len(d) != 0 {
		t.Fatalf("AwaitSchemaAgreement with one node down = %v, %v; want agreement of the live nodes", d, err)
	}
	if schema3.has("CREATE TABLE ks1.t") {
		t.Fatalf("the down node's store got the change; the test is not testing catch-up")
	}

	// When n3 comes back it catches up.
	n3 = tc.restart(dir3, schema3)
	waitFor(t, 10*time.Second, allSeeAllLive(n1, n2, n3))
	waitFor(t, 5*time.Second, sameSchema(n1, n2, n3))
	if !schema3.has("CREATE TABLE ks1.t") {
		t.Errorf("restarted node did not get the change made while it was down")
	}
}

func TestAwaitSchemaAgreementTimesOutNamingTheNodes(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.start()
	n2 := tc.start(n1.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(n1, n2))
	n2.schema.mu.Lock()
	n2.schema.mergeErr = errRefused
	n2.schema.mu.Unlock()

	n1.schema.add("CREATE KEYSPACE ks1")
	if err := n1.NotifySchemaChanged(); err != nil {
		t.Fatalf("NotifySchemaChanged: %v", err)
	}
	disagreeing, err := n1.AwaitSchemaAgreement(context.Background(), 300*time.Millisecond)
	if err != nil {
		t.Fatalf("AwaitSchemaAgreement returned error %v, want a timeout with nil error", err)
	}
	if !slices.Equal(disagreeing, []NodeID{n2.LocalID()}) {
		t.Errorf("AwaitSchemaAgreement disagreeing = %v, want [%s]", disagreeing, n2.LocalID())
	}
	if d := n1.SchemaDisagreement(); !slices.Equal(d, []NodeID{n2.LocalID()}) {
		t.Errorf("SchemaDisagreement on %s = %v, want [%s], which refuses the change", n1.LocalID(), d, n2.LocalID())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := n1.AwaitSchemaAgreement(ctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("AwaitSchemaAgreement with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestRemoveNode(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.start()
	n2 := tc.start(n1.GossipAddr())
	n3 := tc.start(n1.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(n1, n2, n3))
	id3 := n3.LocalID()

	if err := n1.RemoveNode(n2.LocalID()); !errors.Is(err, ErrNodeLive) {
		t.Errorf("RemoveNode(live node) = %v, want ErrNodeLive", err)
	}
	if err := n1.RemoveNode("no-such-node"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("RemoveNode(unknown) = %v, want ErrUnknownNode", err)
	}
	if err := n1.RemoveNode(n1.LocalID()); err == nil {
		t.Errorf("RemoveNode(local node) succeeded, want an error")
	}

	n3.Close()
	waitFor(t, 10*time.Second, seesDown(id3, n1, n2))
	if err := n1.RemoveNode(id3); err != nil {
		t.Fatalf("RemoveNode(down node): %v", err)
	}
	if err := n1.RemoveNode(id3); err != nil {
		t.Errorf("RemoveNode twice = %v, want nil (idempotent)", err)
	}
	waitFor(t, 5*time.Second, func() string {
		for _, n := range []*testNode{n1, n2} {
			if n.Ring().Contains(id3) {
				return "node " + string(n.LocalID()) + " still has the removed node in its ring"
			}
			if _, ok := n.Member(id3); ok {
				return "node " + string(n.LocalID()) + " still lists the removed node"
			}
		}
		return ""
	})
	if got := n1.Ring().NumNodes(); got != 2 {
		t.Errorf("ring has %d nodes after removing one of 3, want 2", got)
	}

	// The removal is persisted: a restarted node does not bring the removed one back.
	dir1, schema1 := n1.dir, n1.schema
	n1.Close()
	n1 = tc.restart(dir1, schema1)
	if n1.Ring().Contains(id3) {
		t.Errorf("after restart the ring contains removed node %s again", id3)
	}
	// The removed node itself, restarted on its old data directory, learns that it was removed and is
	// not let back in.
	old := tc.restart(n3.dir, n3.schema)
	waitFor(t, 10*time.Second, func() string {
		old.mu.Lock()
		defer old.mu.Unlock()
		if _, gone := old.removed[id3]; !gone {
			return "the restarted removed node has not learned of its removal"
		}
		return ""
	})
	for _, n := range []*testNode{n1, n2} {
		if _, ok := n.Member(id3); ok || n.Ring().Contains(id3) {
			t.Errorf("node %s lets removed node %s back in", n.LocalID(), id3)
		}
	}
}

func TestJoinRetriesUntilTheSeedStarts(t *testing.T) {
	tc := newTestCluster(t)
	// Reserve a port for the seed, then free it so the seed can bind it later.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seedAddr := l.Addr().String()
	l.Close()

	n2 := tc.start(seedAddr) // nothing listens at seedAddr yet
	cfg := tc.config(t.TempDir(), newFakeSchema())
	cfg.BindAddr = seedAddr
	seed, err := Start(context.Background(), cfg)
	if err != nil {
		t.Skipf("could not bind the reserved seed address %s again: %v", seedAddr, err)
	}
	t.Cleanup(func() { seed.Close() })
	n1 := &testNode{Cluster: seed, schema: cfg.Schema.(*fakeSchema)}
	took := waitFor(t, 10*time.Second, allSeeAllLive(n1, n2))
	t.Logf("node joined a seed that started after it, %v after the seed started", took)
}

func TestBindAddressInUseIsAClearError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tc := newTestCluster(t)
	cfg := tc.config(t.TempDir(), newFakeSchema())
	cfg.BindAddr = l.Addr().String()
	c, err := Start(context.Background(), cfg)
	if err == nil {
		c.Close()
		t.Fatalf("Start on an address in use succeeded")
	}
	if !strings.Contains(err.Error(), l.Addr().String()) || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Start on an address in use: error %q does not name the address and say it is in use", err)
	}
}

func TestMetadataOverTheLimitIsAnError(t *testing.T) {
	tc := newTestCluster(t)
	cfg := tc.config(t.TempDir(), newFakeSchema())
	cfg.RPCAddr = strings.Repeat("r", MaxMetaSize)
	c, err := Start(context.Background(), cfg)
	if !errors.Is(err, ErrMetaTooLarge) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Start with a %d-byte RPC address = %v, want ErrMetaTooLarge", len(cfg.RPCAddr), err)
	}

	// At update: a digest that no longer fits is refused and the node keeps running.
	huge := &hugeDigestSchema{fakeSchema: newFakeSchema()}
	cfg = tc.config(t.TempDir(), huge.fakeSchema)
	cfg.Schema = huge
	c, err = Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer c.Close()
	huge.huge.Store(true)
	if err := c.NotifySchemaChanged(); !errors.Is(err, ErrMetaTooLarge) {
		t.Errorf("NotifySchemaChanged with a %d-byte digest = %v, want ErrMetaTooLarge", len(huge.Digest()), err)
	}
	if got := len(*c.meta.Load()); got > MaxMetaSize {
		t.Errorf("published metadata is %d bytes, over the limit", got)
	}
}

// hugeDigestSchema's digest becomes too large for the node metadata once huge is set.
type hugeDigestSchema struct {
	*fakeSchema
	huge atomic.Bool
}

func (h *hugeDigestSchema) Digest() string {
	if h.huge.Load() {
		return strings.Repeat("d", MaxMetaSize)
	}
	return h.fakeSchema.Digest()
}

func TestNodeIDIsPersistedAndACorruptFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	id, err := LoadOrCreateNodeID(dir, "")
	if err != nil {
		t.Fatalf("LoadOrCreateNodeID on an empty dir: %v", err)
	}
	again, err := LoadOrCreateNodeID(dir, "")
	if err != nil || again != id {
		t.Fatalf("LoadOrCreateNodeID again = %q, %v; want the persisted %q", again, err, id)
	}
	if _, err := LoadOrCreateNodeID(dir, "other-id"); err == nil {
		t.Errorf("LoadOrCreateNodeID with a configured id different from the persisted one succeeded")
	}

	path := filepath.Join(dir, nodeIDFile)
	for _, content := range []string{"", "has space\n", "\x00\x01", strings.Repeat("x", 65)} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadOrCreateNodeID(dir, "")
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "corrupt") {
			t.Errorf("node id file containing %q: error %v, want one naming %s as corrupt", content, err, path)
		}
	}

	// Through Start, too.
	tc := newTestCluster(t)
	if _, err := Start(context.Background(), tc.config(dir, newFakeSchema())); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Start with a corrupt node id file: error %v, want one naming %s", err, path)
	}
}

func TestConfiguredNodeIDIsUsedAndValidated(t *testing.T) {
	tc := newTestCluster(t)
	cfg := tc.config(t.TempDir(), newFakeSchema())
	cfg.NodeID = "node-one"
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start with NodeID node-one: %v", err)
	}
	defer c.Close()
	if c.LocalID() != "node-one" {
		t.Errorf("LocalID() = %q, want node-one", c.LocalID())
	}
	cfg2 := tc.config(t.TempDir(), newFakeSchema())
	cfg2.NodeID = "bad id"
	if _, err := Start(context.Background(), cfg2); err == nil {
		t.Errorf("Start with NodeID %q succeeded, want an error", cfg2.NodeID)
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"no data dir", func(c *Config) { c.DataDir = "" }, "DataDir"},
		{"no schema", func(c *Config) { c.Schema = nil }, "Schema"},
		{"negative num_tokens", func(c *Config) { c.NumTokens = -1 }, "num_tokens"},
		{"too many num_tokens", func(c *Config) { c.NumTokens = MaxNumTokens + 1 }, "num_tokens"},
		{"bind address without port", func(c *Config) { c.BindAddr = "127.0.0.1" }, "BindAddr"},
		{"bad advertise address", func(c *Config) { c.AdvertiseAddr = "x:y" }, "AdvertiseAddr"},
		{"unknown profile", func(c *Config) { c.Profile = 9 }, "profile"},
	}
	for _, tt := range tests {
		cfg := Config{DataDir: t.TempDir(), Schema: newFakeSchema(), BindAddr: "127.0.0.1:0", Options: Options{Profile: ProfileTest}}
		tt.modify(&cfg)
		c, err := Start(context.Background(), cfg)
		if err == nil {
			c.Close()
			t.Errorf("%s: Start succeeded, want an error mentioning %q", tt.name, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Start error %q does not mention %q", tt.name, err, tt.want)
		}
	}
}

func TestNumTokensCannotChangeAcrossRestarts(t *testing.T) {
	tc := newTestCluster(t)
	n := tc.start()
	n.Close()
	cfg := tc.config(n.dir, n.schema)
	cfg.NumTokens = 32
	if c, err := Start(context.Background(), cfg); err == nil {
		c.Close()
		t.Errorf("restart with num_tokens 32 after 16 succeeded, want an error")
	} else if !strings.Contains(err.Error(), "num_tokens") {
		t.Errorf("restart with a different num_tokens: error %q does not mention num_tokens", err)
	}
}

func TestCloseStopsAndIsIdempotent(t *testing.T) {
	tc := newTestCluster(t)
	n := tc.start()
	ch := n.Changed()
	if err := n.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	select {
	case <-ch:
	default:
		t.Errorf("Changed() channel not closed by Close")
	}
	if err := n.NotifySchemaChanged(); !errors.Is(err, ErrClosed) {
		t.Errorf("NotifySchemaChanged after Close = %v, want ErrClosed", err)
	}
}

func TestPortZeroPublishesTheRealAddressAndSeedsSkipSelf(t *testing.T) {
	tc := newTestCluster(t)
	n := tc.start()
	host, port, err := splitHostPort(n.GossipAddr())
	if err != nil || port == 0 || host != "127.0.0.1" {
		t.Fatalf("GossipAddr() = %q, want 127.0.0.1 with the real (non-zero) port", n.GossipAddr())
	}
	if m, _ := n.Member(n.LocalID()); m.GossipAddr != n.GossipAddr() || !m.Local || !m.Live {
		t.Errorf("Member(self) = %+v, want the real gossip address %s, local and live", m, n.GossipAddr())
	}
	n.Close()
	pf, err := loadPeers(n.dir)
	if err != nil {
		t.Fatalf("loadPeers: %v", err)
	}
	if len(pf.Peers) != 1 || pf.Peers[0].GossipAddr != n.GossipAddr() {
		t.Errorf("persisted peers = %+v, want the local node at %s", pf.Peers, n.GossipAddr())
	}

	tests := []struct {
		addr string
		self bool
	}{
		{n.GossipAddr(), true},
		{"localhost:" + strconv.Itoa(port), true},
		{"127.0.0.1:" + strconv.Itoa(port+1), false},
		{"10.255.255.1:" + strconv.Itoa(port), false},
		{"garbage", false},
	}
	for _, tt := range tests {
		if got := n.isSelf(tt.addr); got != tt.self {
			t.Errorf("isSelf(%q) = %v, want %v (node at %s)", tt.addr, got, tt.self, n.GossipAddr())
		}
	}
}

// TestRemovingMakesTheNodeLeavingEverywhere: SetRemoving of a down node makes it leaving in the
// ring of every live node (told over the internode port), with its ranges' next owners pending,
// and removes nothing; ending it returns every ring to what it was. A removal in progress counts
// only while the node running it is up, and one whose node restarted (forgetting it) ends on the
// other nodes when they see that node come back.
func TestRemovingMakesTheNodeLeavingEverywhere(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.start()
	n2 := tc.start(n1.GossipAddr())
	n3 := tc.start(n1.GossipAddr())
	n4 := tc.start(n1.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(n1, n2, n3, n4))
	id4 := n4.LocalID()
	n4.Close()
	waitFor(t, 10*time.Second, seesDown(id4, n1, n2, n3))
	before := n2.Ring()

	if err := n1.SetRemoving(n2.LocalID(), true); !errors.Is(err, ErrNodeLive) {
		t.Errorf("SetRemoving(live node) = %v, want ErrNodeLive", err)
	}
	if err := n1.SetRemoving(id4, true); err != nil {
		t.Fatalf("SetRemoving(down node): %v", err)
	}
	for _, n := range []*testNode{n1, n2, n3} {
		r := n.Ring()
		if st, ok := r.State(id4); !ok || st != StateLeaving || !r.Transitioning() || r.Future().Contains(id4) {
			t.Errorf("node %s: the node being removed is %v (in the ring: %v, transitioning: %v), want leaving", n.LocalID(), st, ok, r.Transitioning())
		}
		if m, ok := n.Member(id4); !ok || m.State != StateLeaving {
			t.Errorf("node %s lists the node being removed as %+v, want leaving", n.LocalID(), m)
		}
	}
	if err := n1.SetRemoving(id4, false); err != nil {
		t.Fatalf("SetRemoving(off): %v", err)
	}
	for _, n := range []*testNode{n1, n2, n3} {
		if !n.Ring().Equal(before) || n.Ring().Transitioning() {
			t.Errorf("node %s: the ring after an abandoned removal differs from the one before", n.LocalID())
		}
	}

	// The node running the removal crashes: the others stop treating the node as leaving, and
	// when it comes back (without the removal, which ended with it) they learn that it ended.
	if err := n1.SetRemoving(id4, true); err != nil {
		t.Fatal(err)
	}
	dir1, schema1 := n1.dir, n1.schema
	n1.crash()
	waitFor(t, 10*time.Second, seesDown(n1.LocalID(), n2, n3))
	for _, n := range []*testNode{n2, n3} {
		if st, _ := n.Ring().State(id4); st != StateNormal {
			t.Errorf("node %s: the node being removed by a down node is %v, want normal", n.LocalID(), st)
		}
	}
	n1 = tc.restart(dir1, schema1, n2.GossipAddr())
	waitFor(t, 10*time.Second, func() string {
		for _, n := range []*testNode{n2, n3} {
			n.mu.Lock()
			_, ok := n.removing[id4]
			n.mu.Unlock()
			if ok {
				return "node " + string(n.LocalID()) + " still knows the removal that ended with its node's restart"
			}
		}
		return ""
	})
	for _, n := range []*testNode{n1, n2, n3} {
		if st, ok := n.Ring().State(id4); !ok || st != StateNormal {
			t.Errorf("node %s: the dead node is %v (in the ring: %v) after the removal ended, want normal", n.LocalID(), st, ok)
		}
	}
}
