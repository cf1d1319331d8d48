package node_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
)

// countRefusals is a log handler counting the gossip a node refused for its encryption.
type countRefusals struct {
	slog.Handler
	n *atomic.Int64
}

func (h countRefusals) Handle(ctx context.Context, r slog.Record) error {
	if msg := strings.ToLower(r.Message); strings.Contains(msg, "decrypt") || strings.Contains(msg, "not encrypted") {
		h.n.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

// Enabled is true at every level: the records are counted before the wrapped handler sees
// them (and perhaps discards them).
func (h countRefusals) Enabled(context.Context, slog.Level) bool { return true }

func (h countRefusals) WithAttrs(as []slog.Attr) slog.Handler {
	return countRefusals{h.Handler.WithAttrs(as), h.n}
}

func (h countRefusals) WithGroup(name string) slog.Handler {
	return countRefusals{h.Handler.WithGroup(name), h.n}
}

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
	var refused atomic.Int64
	start := func(keyFile string, log *slog.Logger, seeds ...string) *node.Node {
		cfg := nodeConfig(t.TempDir(), seeds)
		cfg.Security.GossipKeyFile, cfg.Logger = keyFile, log
		return startNode(t, cfg)
	}
	counting := slog.New(countRefusals{slog.DiscardHandler, &refused})
	n1 := start(keys, counting)
	n2 := start(keys, counting, n1.GossipAddr())
	// A node without the key reaches no seed: it starts, stays joining and keeps trying.
	other := start(gossipKeyFile(t), quietLogger(), n1.GossipAddr(), n2.GossipAddr())
	none := start("", quietLogger(), n1.GossipAddr(), n2.GossipAddr())
	poll.Must(t, 30*time.Second, "the members refused the outsiders' gossip", func() error {
		if refused.Load() < 2 {
			return fmt.Errorf("%d refusals", refused.Load())
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
