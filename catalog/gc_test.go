package catalog

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// grace is the harness's Options.TombstoneGrace.
const grace = time.Minute

// oldestTombstone returns the timestamp of node id's oldest tombstone.
func (h *harness) oldestTombstone(id string) int64 {
	h.t.Helper()
	ts, ok := h.node(id).Schema().OldestTombstone()
	if !ok {
		h.t.Fatalf("node %s holds no tombstone", id)
	}
	return ts
}

// TestTombstoneWaitsForItsGrace: a tombstone every member has stays until it is older than the
// grace, and CollectTombstones says how long that is; then it goes on every node, whose GC
// horizon rises, and the dropped name is free again.
func TestTombstoneWaitsForItsGrace(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.mustDDL("n1", ksRF3)
	h.mustDDL("n1", "CREATE TABLE ks.t (k int PRIMARY KEY)")
	h.mustDDL("n2", "DROP TABLE ks.t")
	oldest := h.oldestTombstone("n1")
	n1 := h.node("n1")

	for _, tc := range []struct {
		now  time.Time
		want time.Duration
	}{
		{time.UnixMicro(oldest), grace + time.Microsecond},
		{time.UnixMicro(oldest).Add(grace), time.Microsecond},
	} {
		if got := n1.CollectTombstones(tc.now); got != tc.want {
			t.Errorf("CollectTombstones %v after the drop = %v, want %v until the grace has passed", tc.now.Sub(time.UnixMicro(oldest)), got, tc.want)
		}
		if n := n1.Schema().Tombstones(); n != 1 {
			t.Fatalf("a tombstone younger than the grace was collected (%d left)", n)
		}
	}

	publishes := h.publishes["n1"]
	now := time.UnixMicro(oldest).Add(grace + time.Microsecond)
	if got := n1.CollectTombstones(now); got != 0 {
		t.Errorf("CollectTombstones once the grace has passed = %v, want 0 (nothing left to wait for)", got)
	}
	if h.publishes["n1"] != publishes+1 {
		t.Errorf("the purge was published %d times, want once", h.publishes["n1"]-publishes)
	}
	for _, id := range h.ids {
		s := h.node(id).Schema()
		if s.Tombstones() != 0 || s.GCHorizon() != now.Add(-grace).UnixMicro() {
			t.Errorf("node %s holds %d tombstones with GC horizon %d after the purge, want none and %d", id, s.Tombstones(), s.GCHorizon(), now.Add(-grace).UnixMicro())
		}
	}
	h.mustDDL("n3", "CREATE TABLE ks.t (k int PRIMARY KEY)")
}

// TestTombstoneWaitsForEveryMember: past its grace a tombstone still stays while this node has
// not published the drop, while a member gossips another schema, and while a member is down
// though it has the drop; it goes once every member is up with the drop.
func TestTombstoneWaitsForEveryMember(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.mustDDL("n1", ksRF3)
	h.mustDDL("n1", "CREATE TABLE ks.t (k int PRIMARY KEY)")
	n1 := h.node("n1")
	late := func() time.Time { return h.now().Add(10 * grace) }
	stays := func(when string) {
		t.Helper()
		if got := n1.CollectTombstones(late()); got != 0 {
			t.Errorf("%s: CollectTombstones = %v, want 0 (waiting for the members, not for time)", when, got)
		}
		if n := n1.Schema().Tombstones(); n != 1 {
			t.Fatalf("%s: the tombstone was collected (%d left), want it kept", when, n)
		}
	}

	// A peer's drop merged, not yet published.
	h.advance(time.Second)
	if _, err := n1.Merge(dropped(t, n1.Schema(), "ks.t", h.now().UnixMicro()).Encode()); err != nil {
		t.Fatal(err)
	}
	if _, ok := n1.Schema().Table("ks", "t"); ok {
		t.Fatal("the merged drop left ks.t in n1's schema")
	}
	stays("the drop not yet published")

	h.noPush = true
	if err := (link{h, "n1"}).Publish(); err != nil {
		t.Fatal(err)
	}
	stays("n2 and n3 without the drop")

	h.noPush = false
	h.sync()
	h.setDown("n3", true)
	stays("n3 down, with the drop")

	h.setDown("n3", false)
	if got := n1.CollectTombstones(late()); got != 0 || n1.Schema().Tombstones() != 0 {
		t.Fatalf("every member up with the drop: CollectTombstones = %v leaving %d tombstones, want the tombstone gone", got, n1.Schema().Tombstones())
	}
	for _, id := range []string{"n2", "n3"} {
		if n := h.node(id).Schema().Tombstones(); n != 0 {
			t.Errorf("node %s holds %d tombstones after n1's purge was pushed, want none", id, n)
		}
	}
}

// TestFailedPurgeRetriesAfterTheGrace: a purge that cannot be persisted is logged, keeps the
// tombstone, and waits a grace period before the next try.
func TestFailedPurgeRetriesAfterTheGrace(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.mustDDL("n1", ksRF3)
	h.mustDDL("n1", "CREATE TABLE ks.t (k int PRIMARY KEY)")
	h.mustDDL("n1", "DROP TABLE ks.t")
	var log bytes.Buffer
	n1 := h.node("n1")
	n1.Start(Cluster{Self: "n1", Peers: link{h, "n1"}, Gossip: link{h, "n1"}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err := os.RemoveAll(h.dirs["n1"]); err != nil {
		t.Fatal(err)
	}
	if got := n1.CollectTombstones(h.now().Add(10 * grace)); got != grace {
		t.Errorf("CollectTombstones whose purge cannot be persisted = %v, want the grace %v", got, grace)
	}
	if n := n1.Schema().Tombstones(); n != 1 {
		t.Errorf("a purge that was not persisted left %d tombstones, want the one kept", n)
	}
	if !strings.Contains(log.String(), "purging schema tombstones failed") {
		t.Errorf("the failed purge logged %q, want it to say so", log.String())
	}
}
