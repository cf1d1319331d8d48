package shell_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

// TestReadsSkipUnrepairedReplicas: an unrepaired replica (started despite a corrupt log, it
// lacks writes it acknowledged) counts toward no read consistency level, even as the
// coordinator, while writes still reach it.
func TestReadsSkipUnrepairedReplicas(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.must("INSERT INTO t (k, c, v) VALUES ('a', 1, 'old')")
	// n1 misses the newer value, as a node whose log was moved aside lost it.
	c.transport.setFault(failWrites, "n1")
	c.clock.Advance(time.Second) // the clock stands still: give the update a later timestamp
	if _, err := c.exec("n2", quorum, "UPDATE t SET v = 'new' WHERE k = 'a' AND c = 1"); err != nil {
		t.Fatal(err)
	}
	// The write returned at QUORUM with n2 and n3; its call to n1 goes on after it: clearing
	// the fault before that call failed would let n1 apply the update after all.
	c.settle()
	c.transport.clearFaults()
	if got := c.localRows("n1", "SELECT v FROM t WHERE k = 'a'"); !slices.Equal(got, []string{"'old'"}) {
		t.Fatalf("n1 holds %v, want the stale 'old'", got)
	}
	c.ring.setUnrepaired("n1")

	for _, coord := range nodes {
		for _, cl := range []coordinator.Consistency{one, quorum} {
			got, err := c.query(coord, cl, "SELECT v FROM t WHERE k = 'a'")
			if err != nil || !slices.Equal(got, []string{"'new'"}) {
				t.Errorf("a read at %v through %s with n1 unrepaired = %v, %v; want 'new'", cl, coord, got, err)
			}
		}
	}
	var ue *coordinator.UnavailableError
	if _, err := c.exec("n2", all, "SELECT v FROM t WHERE k = 'a'"); !errors.As(err, &ue) || ue.Live != 2 || ue.Required != 3 {
		t.Errorf("a read at ALL with n1 unrepaired = %v, want Unavailable with 2 of 3", err)
	}
	c.ring.setDown("n3")
	if _, err := c.exec("n2", quorum, "SELECT v FROM t WHERE k = 'a'"); !errors.As(err, &ue) || ue.Live != 1 || ue.Required != 2 {
		t.Errorf("a read at QUORUM with n1 unrepaired and n3 down = %v, want Unavailable with 1 of 2", err)
	}
	c.ring.setDown()

	// Writes still reach the unrepaired replica, and count: ALL succeeds.
	c.clock.Advance(time.Second)
	if _, err := c.exec("n1", all, "UPDATE t SET v = 'newest' WHERE k = 'a' AND c = 1"); err != nil {
		t.Fatalf("a write at ALL with n1 unrepaired: %v", err)
	}
	if got := c.localRows("n1", "SELECT v FROM t WHERE k = 'a'"); !slices.Equal(got, []string{"'newest'"}) {
		t.Errorf("n1 holds %v after a write at ALL, want 'newest'", got)
	}
}
