package cluster

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func newKeyring(t *testing.T, keys ...[]byte) *memberlist.Keyring {
	t.Helper()
	kr, err := memberlist.NewKeyring(keys, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// TestGossipKeyKeepsOutNodesWithoutIt is issue 18's gossip attack: a node that does not hold
// the cluster's key (another key, or none) must never appear in the members' membership, however
// it tries to join, and must never learn the members either.
func TestGossipKeyKeepsOutNodesWithoutIt(t *testing.T) {
	tc := newTestCluster(t)
	members := tc.logger
	key := newKey(t)
	startKeyed := func(kr *memberlist.Keyring, logger *slog.Logger, seeds ...string) *testNode {
		t.Helper()
		cfg := tc.config(t.TempDir(), newFakeSchema(), seeds...)
		cfg.Keyring, cfg.Logger = kr, logger
		c, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return &testNode{Cluster: c, schema: cfg.Schema.(*fakeSchema)}
	}
	// Each member has its own Keyring value holding the same key, as separate processes do.
	n1 := startKeyed(newKeyring(t, key), members)
	n2 := startKeyed(newKeyring(t, key), members, n1.GossipAddr())
	waitFor(t, 30*time.Second, allSeeAllLive(n1, n2))

	wrongKey := startKeyed(newKeyring(t, newKey(t)), tc.logger, n1.GossipAddr(), n2.GossipAddr())
	plaintext := startKeyed(nil, tc.logger, n1.GossipAddr(), n2.GossipAddr())
	// Wait until the members have refused the outsiders' gossip, and until a node holding the
	// key, started after them, has joined: gossip kept flowing while the outsiders tried.
	waitFor(t, 30*time.Second, func() string {
		// Messages no installed key decrypts, and plaintext where encryption is configured,
		// are junk to the members: counted, and logged once a minute.
		if refused := n1.JunkMessages() + n2.JunkMessages(); refused < 2 {
			return fmt.Sprintf("the members refused %d messages for their encryption, want the outsiders' attempts (at least 2)", refused)
		}
		return ""
	})
	n3 := startKeyed(newKeyring(t, key), members, n1.GossipAddr())
	waitFor(t, 30*time.Second, allSeeAllLive(n1, n2, n3))

	for _, n := range []*testNode{n1, n2, n3} {
		for _, out := range []*testNode{wrongKey, plaintext} {
			if _, ok := n.Member(out.LocalID()); ok {
				t.Errorf("member %s lists %s, a node without the gossip key: [%s]", n.LocalID(), out.LocalID(), liveView(n))
			}
		}
	}
	for _, out := range []*testNode{wrongKey, plaintext} {
		if ms := out.Members(); len(ms) != 1 {
			t.Errorf("the outsider %s learned the members: [%s], want only itself", out.LocalID(), liveView(out))
		}
	}
}

// TestGossipKeyRotation rotates the key of a running cluster as docs/operations.md says: add
// the new key everywhere, make it primary everywhere, remove the old one. The members stay
// live throughout, and afterwards a node holding only the old key is kept out.
func TestGossipKeyRotation(t *testing.T) {
	tc := newTestCluster(t)
	oldKey, newKey := newKey(t), newKey(t)
	var nodes []*testNode
	var rings []*memberlist.Keyring
	for i := range 3 {
		kr := newKeyring(t, oldKey)
		cfg := tc.config(t.TempDir(), newFakeSchema())
		if i > 0 {
			cfg.Seeds = []string{nodes[0].GossipAddr()}
		}
		cfg.Keyring = kr
		c, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		nodes = append(nodes, &testNode{Cluster: c, schema: cfg.Schema.(*fakeSchema)})
		rings = append(rings, kr)
	}
	waitFor(t, 30*time.Second, allSeeAllLive(nodes...))
	for step, apply := range []func(*memberlist.Keyring) error{
		func(kr *memberlist.Keyring) error { return kr.AddKey(newKey) },
		func(kr *memberlist.Keyring) error { return kr.UseKey(newKey) },
		func(kr *memberlist.Keyring) error { return kr.RemoveKey(oldKey) },
	} {
		for _, kr := range rings {
			if err := apply(kr); err != nil {
				t.Fatalf("rotation step %d: %v", step, err)
			}
		}
		// A change of metadata needs gossip both ways under the keys of this step.
		for i, n := range nodes {
			n.schema.add(fmt.Sprintf("step%d-node%d", step, i))
			if err := n.NotifySchemaChanged(); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, 30*time.Second, sameSchema(nodes...))
		waitFor(t, 30*time.Second, allSeeAllLive(nodes...))
	}
	stale := tc.config(t.TempDir(), newFakeSchema(), nodes[0].GossipAddr())
	stale.Keyring = newKeyring(t, oldKey)
	c, err := Start(context.Background(), stale)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	late := tc.config(t.TempDir(), newFakeSchema(), nodes[0].GossipAddr())
	late.Keyring = newKeyring(t, newKey)
	lc, err := Start(context.Background(), late)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	lateNode := &testNode{Cluster: lc, schema: late.Schema.(*fakeSchema)}
	waitFor(t, 30*time.Second, allSeeAllLive(append(nodes, lateNode)...))
	for _, n := range nodes {
		if _, ok := n.Member(c.LocalID()); ok {
			t.Errorf("after the rotation %s lists %s, which holds only the removed key", n.LocalID(), c.LocalID())
		}
	}
}
