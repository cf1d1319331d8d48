package shell

import (
	"testing"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// TestHideShadowed: what a replica that has not yet learned of a TRUNCATE or a DROP column
// returns is hidden by the coordinator that has, and nothing newer is.
func TestHideShadowed(t *testing.T) {
	s, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}; CREATE TABLE ks.t (k int, c int, v int, w int, PRIMARY KEY (k, c))")
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"ALTER TABLE ks.t DROP w", "ALTER TABLE ks.t ADD w int", "TRUNCATE ks.t"} {
		st, _ := cql.ParseStatement(stmt)
		at := map[string]int64{"ALTER TABLE ks.t DROP w": 200, "ALTER TABLE ks.t ADD w int": 250, "TRUNCATE ks.t": 100}[stmt]
		if s, err = s.Apply(st, "", schema.Change{Version: schema.Version{Timestamp: at, Node: "n"}}); err != nil {
			t.Fatal(err)
		}
	}
	tb, _ := s.Table("ks", "t")
	// Versions are raised above the table's: the TRUNCATE lands at 251.
	if at, _ := tb.TruncatedAt(); at != 251 {
		t.Fatalf("TruncatedAt = %d, want 251", at)
	}
	row := func(marker, del int64, cols ...cell.Column) coordinator.ClusteredRow {
		r := cell.EmptyRow()
		r.Marker, r.Deletion, r.Columns = marker, del, cols
		return coordinator.ClusteredRow{Row: r}
	}
	p := coordinator.Page{
		PartitionDeletion: 50,
		RangeTombstones:   []coordinator.RangeTombstone{{Timestamp: 60}, {Timestamp: 300}},
		Rows: []coordinator.ClusteredRow{
			row(100, 90, cell.Column{Name: "v", Cell: cell.Cell{Timestamp: 100}}),
			row(300, cell.NoTimestamp, cell.Column{Name: "v", Cell: cell.Cell{Timestamp: 300}}, cell.Column{Name: "w", Cell: cell.Cell{Timestamp: 300}}),
		},
	}
	hideShadowed(tb, &p)
	if p.PartitionDeletion != cell.NoTimestamp || len(p.RangeTombstones) != 1 || p.RangeTombstones[0].Timestamp != 300 {
		t.Errorf("tombstones after hiding: partition %d, ranges %v; want none and the one at 300", p.PartitionDeletion, p.RangeTombstones)
	}
	if r := p.Rows[0].Row; r.Marker != cell.NoTimestamp || r.Deletion != cell.NoTimestamp || len(r.Columns) != 0 {
		t.Errorf("a truncated row keeps %+v, want an empty row", r)
	}
	if r := p.Rows[1].Row; r.Marker != 300 || len(r.Columns) != 2 {
		t.Errorf("a row written after the truncation became %+v, want it whole", r)
	}
}
