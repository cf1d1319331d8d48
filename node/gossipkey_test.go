package node_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
)

// gossipKeyFile writes a key file with one new random key and returns its path.
func gossipKeyFile(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gossip.keys")
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(k)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGossipKeyFile is issue 18's "a node with a different gossip key does not appear in
// membership", with real nodes: members started with one key file never list a node started
// with another, nor one without a key, while a node with the key joins them.
func TestGossipKeyFile(t *testing.T) {
	keys := gossipKeyFile(t)
	start := func(keyFile string, log *slog.Logger, seeds ...string) *node.Node {
		cfg := nodeConfig(t.TempDir(), seeds)
		cfg.Security.GossipKeyFile, cfg.Logger = keyFile, log
		return startNode(t, cfg)
	}
	counting := quietLogger()
	n1 := start(keys, counting)
	n2 := start(keys, counting, n1.GossipAddr())
	// A node without the key reaches no seed: it starts, stays joining and keeps trying.
	other := start(gossipKeyFile(t), quietLogger(), n1.GossipAddr(), n2.GossipAddr())
	none := start("", quietLogger(), n1.GossipAddr(), n2.GossipAddr())
	poll.Must(t, 30*time.Second, "the members refused the outsiders' gossip", func() error {
		// Gossip no key decrypts, and plaintext, are junk to the members.
		if refused := n1.Cluster().JunkMessages() + n2.Cluster().JunkMessages(); refused < 2 {
			return fmt.Errorf("%d refusals", refused)
		}
		return nil
	})
	n3 := start(keys, counting, n1.GossipAddr())
	poll.Must(t, 30*time.Second, "the three nodes with the key see each other live", poll.Bool(func() bool {
		return liveCount(n1) == 3 && liveCount(n2) == 3 && liveCount(n3) == 3
	}))
	for _, member := range []*node.Node{n1, n2, n3} {
		for _, m := range member.Cluster().Members() {
			if m.ID == other.Cluster().LocalID() || m.ID == none.Cluster().LocalID() {
				t.Errorf("member %s lists %s, a node without the gossip key", member.ID(), m.ID)
			}
		}
	}
	for _, out := range []*node.Node{other, none} {
		if ms := out.Cluster().Members(); len(ms) != 1 {
			t.Errorf("the outsider %s learned %d members, want only itself", out.ID(), len(ms))
		}
	}
}
