package shell_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
)

// TestConsistencyAcrossDataCenters: four nodes, n1 and n2 in dc1, n3 and n4 in dc2, a keyspace
// placed per data center with two replicas in each. With dc2 down, writes and reads through n1
// at LOCAL_ONE and LOCAL_QUORUM succeed while QUORUM (3 of 4), THREE and EACH_QUORUM are
// Unavailable; through n3, LOCAL_ONE of a keyspace with no replica in dc2 is Unavailable where
// ONE succeeds. EACH_QUORUM on a keyspace of SimpleStrategy is refused with Cassandra's message.
func TestConsistencyAcrossDataCenters(t *testing.T) {
	c := newCluster(t, options{order: []coordinator.NodeID{"n1", "n2", "n3", "n4"},
		dcs: map[coordinator.NodeID]string{"n1": "dc1", "n2": "dc1", "n3": "dc2", "n4": "dc2"}})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
		"CREATE KEYSPACE simple WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE simple.t (k int PRIMARY KEY, v int)")
	if _, err := c.exec("n1", coordinator.EachQuorum, "INSERT INTO ks.t (k, v) VALUES (1, 1)"); err != nil {
		t.Fatalf("EACH_QUORUM with every node up: %v", err)
	}
	c.ring.setDown("n3", "n4")
	for _, cl := range []coordinator.Consistency{coordinator.LocalOne, coordinator.LocalQuorum} {
		if _, err := c.exec("n1", cl, "INSERT INTO ks.t (k, v) VALUES (2, 2)"); err != nil {
			t.Errorf("a write at %v through n1 with dc2 down: %v", cl, err)
		}
		res, err := c.exec("n1", cl, "SELECT v FROM ks.t WHERE k = 1")
		if err != nil || len(rowsOf(res)) != 1 {
			t.Errorf("a read at %v through n1 with dc2 down: %v, %v", cl, rowsOf(res), err)
		}
	}
	for _, cl := range []coordinator.Consistency{coordinator.Quorum, coordinator.EachQuorum, coordinator.Three} {
		_, err := c.exec("n1", cl, "INSERT INTO ks.t (k, v) VALUES (3, 3)")
		if un, ok := errors.AsType[*coordinator.UnavailableError](err); !ok || un.Consistency != cl {
			t.Errorf("a write at %v with dc2 down: %v, want Unavailable at %v", cl, err, cl)
		}
	}
	c.ring.setDown()
	c.must("CREATE KEYSPACE only1 WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2}",
		"CREATE TABLE only1.t (k int PRIMARY KEY, v int)")
	if _, err := c.exec("n3", coordinator.LocalOne, "SELECT v FROM only1.t WHERE k = 1"); !isUnavailable(err) {
		t.Errorf("a read at LOCAL_ONE through n3 of a keyspace with no replica in its data center: %v, want Unavailable", err)
	}
	if _, err := c.exec("n3", coordinator.One, "SELECT v FROM only1.t WHERE k = 1"); err != nil {
		t.Errorf("a read at ONE through n3 of a keyspace with no replica in its data center: %v", err)
	}
	_, err := c.exec("n1", coordinator.EachQuorum, "INSERT INTO simple.t (k, v) VALUES (1, 1)")
	if _, ok := errors.AsType[*coordinator.InvalidError](err); !ok || !strings.Contains(err.Error(), "EACH_QUORUM not compatible with replication strategy") {
		t.Errorf("EACH_QUORUM on a SimpleStrategy keyspace: %v, want Invalid", err)
	}
}

func isUnavailable(err error) bool {
	_, ok := errors.AsType[*coordinator.UnavailableError](err)
	return ok
}

// TestEachQuorumUnavailableNamesTheDataCenter: with one of dc2's two replicas down, an
// EACH_QUORUM write through n1 is Unavailable naming dc2 with its own counts (1 live, 2
// required), as Cassandra's "Cannot achieve consistency level EACH_QUORUM in DC dc2"; a read
// through n3 likewise, though n3 is in dc2.
func TestEachQuorumUnavailableNamesTheDataCenter(t *testing.T) {
	c := newCluster(t, options{order: []coordinator.NodeID{"n1", "n2", "n3", "n4"},
		dcs: map[coordinator.NodeID]string{"n1": "dc1", "n2": "dc1", "n3": "dc2", "n4": "dc2"}})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	c.ring.setDown("n4")
	for _, x := range []struct {
		via  coordinator.NodeID
		stmt string
	}{{"n1", "INSERT INTO ks.t (k, v) VALUES (1, 1)"}, {"n3", "SELECT v FROM ks.t WHERE k = 1"}} {
		_, err := c.exec(x.via, coordinator.EachQuorum, x.stmt)
		un, ok := errors.AsType[*coordinator.UnavailableError](err)
		if !ok || un.DataCenter != "dc2" || un.Live != 1 || un.Required != 2 ||
			!strings.Contains(err.Error(), "cannot achieve consistency level EACH_QUORUM in DC dc2: 1 replica live, 2 required") {
			t.Errorf("%s through %s at EACH_QUORUM with n4 down: %v (%+v), want Unavailable in DC dc2, 1 live, 2 required", x.stmt, x.via, err, un)
		}
	}
}
