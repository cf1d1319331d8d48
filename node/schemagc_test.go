package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/schema"
)

// TestSchemaTombstonesAreCollected: create/drop cycles do not grow the schema without bound
// (audit 18, finding 2: tombstones counted against max_schema_size forever, so enough cycles
// refused every CREATE). A tombstone goes once every member has the drop, on every node; a down
// member keeps it until it is back and has it too.
func TestSchemaTombstonesAreCollected(t *testing.T) {
	tc := startClusterWith(t, 3, func(cfg *node.Config) {
		cfg.Catalog.TombstoneGrace = time.Millisecond
	})
	c := tc.client(0)
	exec(t, c, client.Quorum, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	tc.waitSchema("every node has keyspace ks", func(s *schema.Schema) bool { _, ok := s.Keyspace("ks"); return ok })
	base := len(tc.nodes[0].Schema().Encode())
	collected := func(s *schema.Schema) bool {
		// The horizon adds a few bytes; a tombstone per cycle would add ~90.
		return s.Tombstones() == 0 && len(s.Encode()) <= base+10
	}

	const cycles = 25
	for i := range cycles {
		exec(t, c, client.Quorum, fmt.Sprintf("CREATE TABLE ks.t%d (k int PRIMARY KEY, v text)", i))
		exec(t, c, client.Quorum, fmt.Sprintf("DROP TABLE ks.t%d", i))
		tc.waitSchema(fmt.Sprintf("cycle %d: every node collects the tombstone of ks.t%d", i, i), collected)
	}
	exec(t, c, client.Quorum, "CREATE KEYSPACE gone WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c, client.Quorum, "DROP KEYSPACE gone")
	tc.waitSchema("every node collects the tombstone of keyspace gone", collected)

	// A member down during a drop blocks the collection; once back, it gets the drop (it
	// still had the table) and the tombstone goes.
	exec(t, c, client.Quorum, "CREATE TABLE ks.late (k int PRIMARY KEY)")
	tc.waitSchema("every node has ks.late", func(s *schema.Schema) bool { _, ok := s.Table("ks", "late"); return ok })
	tc.stop(2)
	tc.waitLive(30*time.Second, 2)
	exec(t, c, client.Quorum, "DROP TABLE ks.late")
	tc.waitSchema("the live nodes agree on the drop of ks.late", func(s *schema.Schema) bool {
		return s.Digest() == tc.nodes[0].Schema().Digest()
	})
	for i := range 2 {
		if n := tc.nodes[i].Schema().Tombstones(); n != 1 {
			t.Errorf("node %d holds %d tombstones while a member that missed the drop is down, want 1", i, n)
		}
	}
	tc.restart(2)
	tc.waitLive(30*time.Second, 3)
	tc.waitSchema("every node collects the tombstone of ks.late once the down member has it", collected)
	if _, ok := tc.nodes[2].Schema().Table("ks", "late"); ok {
		t.Errorf("the dropped table ks.late is back on the node that missed its drop")
	}
	exec(t, tc.client(2), client.Quorum, "CREATE TABLE ks.t0 (k int PRIMARY KEY)") // a purged name is free again
}
