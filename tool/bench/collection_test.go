package bench

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

const collectionDDL = `
CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
CREATE TABLE ks.coll (k text, c int, s set<text>, l list<int>, m map<text, bigint>, f frozen<set<int>>, PRIMARY KEY (k, c));
`

// TestCollectionWrites checks --collection: writes are element updates of the column that
// parse, fit the schema, write without reading and bind as many values as they have markers.
func TestCollectionWrites(t *testing.T) {
	s, err := schema.Build(collectionDDL)
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := s.Table("ks", "coll")
	for _, col := range []string{"s", "l", "m"} {
		for _, p := range []Protocol{ProtocolGRPC, ProtocolCQL} {
			w, err := newWorkload(tbl, Config{Protocol: p, Partitions: 3, Hot: 0.5, Writes: 1, Collection: col})
			if err != nil {
				t.Fatal(err)
			}
			bound, err := cql.ParseStatement(w.writeStatement())
			if err != nil {
				t.Fatalf("%s: %v", w.writeStatement(), err)
			}
			vars, _, err := s.Variables(bound, "")
			if err != nil {
				t.Fatalf("%s: %v", w.writeStatement(), err)
			}
			o := w.next(rand.New(rand.NewPCG(1, 2)))
			if !o.write || len(o.args) != len(vars) {
				t.Fatalf("--collection %s: a write with %d values for %d markers (%s)", col, len(o.args), len(vars), w.writeStatement())
			}
			if p == ProtocolCQL {
				continue
			}
			st, err := cql.ParseStatement(o.stmt)
			if err != nil {
				t.Fatalf("%s: %v", o.stmt, err)
			}
			pw, err := s.PrepareWrite(st, "")
			if err != nil || len(pw.Cells) != 1 || pw.Cells[0].Op == schema.CollectionAssign || pw.Cells[0].Reads() {
				t.Fatalf("--collection %s: %s prepares as %+v, %v; want one element update that does not read", col, o.stmt, pw, err)
			}
		}
	}
	for col, want := range map[string]string{"f": "not a non-frozen set, list or map", "nope": "no such column"} {
		if _, err := newWorkload(tbl, Config{Protocol: ProtocolCQL, Collection: col}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--collection %s: error %v, want %q", col, err, want)
		}
	}
}
