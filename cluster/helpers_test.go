package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/lockedbuf"
	"github.com/kvnode/kvnode/internal/poll"
)

// fakeSchema is a SchemaStore whose schema is a set of strings: the snapshot is the sorted set, one per
// line, and Merge is set union (commutative and idempotent, like the real schema's LWW merge).
type fakeSchema struct {
	mu       sync.Mutex
	items    map[string]bool
	mergeErr error // when set, Merge fails with it
}

func newFakeSchema(items ...string) *fakeSchema {
	s := &fakeSchema{items: map[string]bool{}}
	for _, it := range items {
		s.items[it] = true
	}
	return s
}

func (s *fakeSchema) sortedLocked() []string {
	out := make([]string, 0, len(s.items))
	for it := range s.items {
		out = append(out, it)
	}
	slices.Sort(out)
	return out
}

func (s *fakeSchema) Digest() string {
	sum := sha256.Sum256(s.Snapshot())
	return hex.EncodeToString(sum[:8])
}

func (s *fakeSchema) Snapshot() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []byte(strings.Join(s.sortedLocked(), "\n"))
}

func (s *fakeSchema) Merge(snapshot []byte) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mergeErr != nil {
		return false, s.mergeErr
	}
	changed := false
	for _, it := range strings.Split(string(snapshot), "\n") {
		if it != "" && !s.items[it] {
			s.items[it] = true
			changed = true
		}
	}
	return changed, nil
}

// add applies a local "DDL".
func (s *fakeSchema) add(item string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[item] = true
}

func (s *fakeSchema) has(item string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.items[item]
}

// newTestLogger returns a logger that collects a test's logs and prints them only when the test
// fails (memberlist logs a lot, and may still log from its own goroutines after the test ends,
// when t.Log would panic).
func newTestLogger(t *testing.T) *slog.Logger {
	l := &lockedbuf.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", l.String())
		}
	})
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testNode is a node of an in-process test cluster.
type testNode struct {
	*Cluster
	dir    string
	schema *fakeSchema
}

// testCluster starts nodes on 127.0.0.1 with random ports and the test profile; every node of one test
// shares a cluster name unique to the test, so tests cannot join each other's nodes.
type testCluster struct {
	t      *testing.T
	name   string
	logger *slog.Logger
	peers  *fakeInternode
}

func newTestCluster(t *testing.T) *testCluster {
	return &testCluster{t: t, name: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()), logger: newTestLogger(t),
		peers: &fakeInternode{byAddr: map[string]*Cluster{}}}
}

// config returns a node's configuration with a fresh internode address ("published only": the
// fake internode port of tc.peers answers for it once the node is started).
func (tc *testCluster) config(dir string, schema *fakeSchema, seeds ...string) Config {
	return Config{
		Options:  Options{ClusterName: tc.name, Seeds: seeds, Profile: ProfileTest},
		DataDir:  dir,
		BindAddr: "127.0.0.1:0",
		RPCAddr:  tc.peers.newAddr(),
		Logger:   tc.logger,
		Schema:   schema,
		Removals: tc.peers,
	}
}

// fakeInternode stands for the nodes' internode ports (RemovalPeers over gRPC in a real node):
// it calls the Cluster registered at a member's RPC address in process.
type fakeInternode struct {
	mu     sync.Mutex
	next   int
	byAddr map[string]*Cluster
}

func (f *fakeInternode) newAddr() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	return fmt.Sprintf("internode-%d:7000", f.next)
}

func (f *fakeInternode) register(c *Cluster) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byAddr[c.cfg.RPCAddr] = c
}

func (f *fakeInternode) at(m Member) (*Cluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.byAddr[m.RPCAddr]
	if !ok {
		return nil, fmt.Errorf("%s: connection refused", m.RPCAddr)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%s: connection refused", m.RPCAddr)
	}
	return c, nil
}

func (f *fakeInternode) Removed(ctx context.Context, peer Member) ([]Removal, []NodeID, error) {
	c, err := f.at(peer)
	if err != nil {
		return nil, nil, err
	}
	return c.Removals(), c.Removing(), nil
}

func (f *fakeInternode) AnnounceRemoving(ctx context.Context, peer Member, from NodeID, removing []NodeID) error {
	c, err := f.at(peer)
	if err != nil {
		return err
	}
	return c.LearnRemoving(from, removing)
}

func (f *fakeInternode) Announce(ctx context.Context, peer Member, from NodeID, removals []Removal) error {
	c, err := f.at(peer)
	if err != nil {
		return err
	}
	return c.LearnRemovals(from, removals)
}

// start starts a node with a fresh data directory.
func (tc *testCluster) start(seeds ...string) *testNode {
	tc.t.Helper()
	return tc.restart(tc.t.TempDir(), newFakeSchema(), seeds...)
}

// restart starts a node on an existing data directory and schema store.
func (tc *testCluster) restart(dir string, schema *fakeSchema, seeds ...string) *testNode {
	tc.t.Helper()
	return tc.startWith(tc.config(dir, schema, seeds...))
}

// startWith starts a node with cfg, one of tc.config's.
func (tc *testCluster) startWith(cfg Config) *testNode {
	tc.t.Helper()
	c, err := Start(context.Background(), cfg)
	if err != nil {
		tc.t.Fatalf("Start(dir=%s, seeds=%v) failed: %v", cfg.DataDir, cfg.Seeds, err)
	}
	tc.peers.register(c)
	tc.t.Cleanup(func() { c.Close() })
	return &testNode{Cluster: c, dir: cfg.DataDir, schema: cfg.Schema.(*fakeSchema)}
}

// crash stops n as a crashed process would: no leave message, peers must detect it.
func (n *testNode) crash() {
	n.shutdown(false)
}

// waitFor waits through internal/poll until cond returns "" (met), failing the test with cond's
// last description of what was not reached once timeout passes, and returns how long it took.
// The package's conditions describe what they await themselves, hence no separate "what".
func waitFor(t *testing.T, timeout time.Duration, cond func() string) time.Duration {
	t.Helper()
	start := time.Now()
	poll.Must(t, timeout, "cluster condition", func() error {
		if msg := cond(); msg != "" {
			return errors.New(msg)
		}
		return nil
	})
	return time.Since(start)
}

// liveView describes which nodes n sees live, e.g. "a:live b:down".
func liveView(n *testNode) string {
	var parts []string
	for _, m := range n.Members() {
		state := "down"
		if m.Live {
			state = "live"
		}
		parts = append(parts, fmt.Sprintf("%s:%s", m.ID, state))
	}
	return strings.Join(parts, " ")
}

// allSeeAllLive returns "" when every node lists exactly the given nodes, all live.
func allSeeAllLive(nodes ...*testNode) func() string {
	return func() string {
		for _, n := range nodes {
			ms := n.Members()
			ok := len(ms) == len(nodes)
			for _, want := range nodes {
				m, found := n.Member(want.LocalID())
				ok = ok && found && m.Live
			}
			if !ok {
				return fmt.Sprintf("node %s sees [%s], want all %d nodes live", n.LocalID(), liveView(n), len(nodes))
			}
		}
		return ""
	}
}

// seesDown returns "" when every observer sees node down (while still listing it).
func seesDown(down NodeID, observers ...*testNode) func() string {
	return func() string {
		for _, n := range observers {
			m, ok := n.Member(down)
			if !ok {
				return fmt.Sprintf("node %s no longer lists %s", n.LocalID(), down)
			}
			if m.Live {
				return fmt.Sprintf("node %s still sees %s live", n.LocalID(), down)
			}
		}
		return ""
	}
}

// sameSchema returns "" when every node has the same digest in its store and publishes it, and sees
// every other live node with it.
func sameSchema(nodes ...*testNode) func() string {
	return func() string {
		want := nodes[0].schema.Digest()
		for _, n := range nodes {
			if d := n.schema.Digest(); d != want {
				return fmt.Sprintf("node %s has schema digest %s, node %s has %s", n.LocalID(), d, nodes[0].LocalID(), want)
			}
			for _, o := range nodes {
				if m, _ := n.Member(o.LocalID()); m.SchemaDigest != want {
					return fmt.Sprintf("node %s sees digest %q for %s, want %s", n.LocalID(), m.SchemaDigest, o.LocalID(), want)
				}
			}
		}
		return ""
	}
}

var errRefused = errors.New("merge refused by test")
