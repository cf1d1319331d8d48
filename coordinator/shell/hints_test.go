package shell_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// hintRecorder is a shell.HintSink that remembers the hints it was given.
type hintRecorder struct {
	mu    sync.Mutex
	hints []string // "target table-id/token"
	muts  []*replicapb.Mutation
}

func (h *hintRecorder) StoreHint(target coordinator.NodeID, m *replicapb.Mutation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hints = append(h.hints, string(target))
	h.muts = append(h.muts, m)
}

func (h *hintRecorder) targets() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.hints)
	slices.Sort(out)
	return out
}

func (h *hintRecorder) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hints, h.muts = nil, nil
}

func TestHintsForReplicasThatMissAWrite(t *testing.T) {
	rec := &hintRecorder{}
	c := newCluster(t, options{hints: rec})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int)")
	rec.reset()

	// All replicas acknowledge: no hint.
	if _, err := c.exec("n1", one, "INSERT INTO t (k, v) VALUES ('a', 1)"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if got := rec.targets(); len(got) != 0 {
		t.Errorf("a write every replica acknowledged left hints for %v", got)
	}

	// n3 is down (never sent to) and n2 fails: both get a hint once every call has returned,
	// the coordinator n1 (which applied it) none.
	c.ring.setDown("n3")
	c.transport.setFault(failWrites, "n2")
	if _, err := c.exec("n1", one, "INSERT INTO t (k, v) VALUES ('b', 2)"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if got, want := rec.targets(), []string{"n2", "n3"}; !slices.Equal(got, want) {
		t.Fatalf("hints for %v, want %v", got, want)
	}
	for _, m := range rec.muts {
		if len(m.Rows) != 1 || len(m.Rows[0].Cells) != 1 || m.Rows[0].Marker == nil {
			t.Errorf("hinted mutation %v, want the INSERT's row", m)
		}
	}

	// A write that fails its consistency level but reached n1 is still hinted to the others.
	rec.reset()
	c.ring.setDown()
	if _, err := c.exec("n1", all, "INSERT INTO t (k, v) VALUES ('c', 3)"); err == nil {
		t.Fatal("a write at ALL with n2 failing succeeded")
	}
	c.settle()
	if got, want := rec.targets(), []string{"n2"}; !slices.Equal(got, want) {
		t.Errorf("failed write at ALL: hints for %v, want %v", got, want)
	}

	// A write no replica applied is not hinted.
	rec.reset()
	c.transport.setFault(failWrites, "n1", "n2", "n3")
	if _, err := c.exec("n1", one, "INSERT INTO t (k, v) VALUES ('d', 4)"); err == nil {
		t.Fatal("a write every replica failed succeeded")
	}
	c.settle()
	if got := rec.targets(); len(got) != 0 {
		t.Errorf("a write no replica applied left hints for %v", got)
	}

	// An unavailable write sends nothing and hints nothing.
	c.transport.clearFaults()
	c.ring.setDown("n2", "n3")
	if _, err := c.exec("n1", all, "INSERT INTO t (k, v) VALUES ('e', 5)"); err == nil {
		t.Fatal("a write at ALL with two replicas down succeeded")
	}
	c.settle()
	if got := rec.targets(); len(got) != 0 {
		t.Errorf("an unavailable write left hints for %v", got)
	}
}
