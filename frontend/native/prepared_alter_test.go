package native

import (
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// TestPreparedDroppedWhenTableAltered: a statement prepared before an ALTER TABLE is answered
// Unprepared at its next EXECUTE, even before the schema watch hears of the change.
func TestPreparedDroppedWhenTableAltered(t *testing.T) {
	s, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}; CREATE TABLE ks.t (k int PRIMARY KEY, v int); CREATE TABLE ks.u (k int PRIMARY KEY)")
	if err != nil {
		t.Fatal(err)
	}
	cur := s
	c := newPreparedCache(DefaultPreparedCacheSize, DefaultPreparedCacheBytes, func() *schema.Schema { return cur })
	tt, _ := s.Table("ks", "t")
	tu, _ := s.Table("ks", "u")
	pt := &coordinator.Prepared{ID: [16]byte{1}, Text: "SELECT * FROM ks.t", Tables: []coordinator.PreparedTable{{Keyspace: "ks", Table: "t", Version: tt.Version}}}
	pu := &coordinator.Prepared{ID: [16]byte{2}, Text: "SELECT * FROM ks.u", Tables: []coordinator.PreparedTable{{Keyspace: "ks", Table: "u", Version: tu.Version}}}
	c.put(pt)
	c.put(pu)
	if _, ok := c.get(pt.ID[:]); !ok {
		t.Fatalf("a statement of an unchanged table is not found")
	}
	st, err := cql.ParseStatement("ALTER TABLE ks.t ADD w text")
	if err != nil {
		t.Fatal(err)
	}
	if cur, err = s.Apply(st, "", schema.Change{Version: schema.Version{Timestamp: tt.Version.Timestamp + 10, Node: "n"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.get(pt.ID[:]); ok {
		t.Errorf("a statement of ks.t is still found after ALTER TABLE ks.t ADD: its EXECUTE would not be answered Unprepared")
	}
	if _, ok := c.get(pu.ID[:]); !ok {
		t.Errorf("a statement of ks.u was dropped by an ALTER of ks.t")
	}
	if n := c.len(); n != 1 {
		t.Errorf("the cache holds %d statements, want 1", n)
	}
}
