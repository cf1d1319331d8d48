package shell

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// descTable is ks.t (k text, c int, v text, w text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER
// BY (c DESC).
func descTable(t *testing.T) *schema.Table {
	t.Helper()
	st, err := cql.ParseStatement("CREATE TABLE ks.t (k text, c int, v text, w text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := schema.NewTable(st.(*cql.CreateTableStmt), "ks", 7, schema.Version{Timestamp: 1, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestReconcileInReadOrder runs the merge and its cut in the order the read returns rows: the
// reverse of an ASC table's order for a reversed read, and a DESC table's order for a forward
// one (both descending in c), and back to ascending for a reversed read of the DESC table.
func TestReconcileInReadOrder(t *testing.T) {
	asc, desc := reconcileTable(t), descTable(t)
	type read struct {
		table    *schema.Table
		reversed bool
	}
	descending := []read{{asc, true}, {desc, false}}
	tests := []struct {
		name     string
		reads    []read
		answers  map[coordinator.NodeID]string // in the read's order
		limit    int
		rows     []string
		complete bool
		repairs  map[coordinator.NodeID]string
	}{
		{
			name:     "rows are merged in the read's order",
			reads:    descending,
			answers:  map[coordinator.NodeID]string{"n1": "300 marker@1; 3 marker@1; -5 marker@1", "n2": "300 marker@1; 1 marker@1"},
			rows:     []string{"300 marker@1", "3 marker@1", "1 marker@1", "-5 marker@1"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n1": "1 marker@1", "n2": "3 marker@1; -5 marker@1"},
		},
		{
			name:     "the limit takes the first rows in the read's order",
			reads:    descending,
			answers:  map[coordinator.NodeID]string{"n1": "3 marker@1; 2 marker@1", "n2": "3 marker@1; 2 marker@1"},
			limit:    1,
			rows:     []string{"3 marker@1"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{},
		},
		{
			name:  "rows past a replica's limit, in the read's order, are not trusted",
			reads: descending,
			// n1 stopped after its one live row, 3, which n2 deleted; n2's row 2 comes after 3 in
			// this order and may be deleted on n1 too.
			answers:  map[coordinator.NodeID]string{"n1": "3 marker@1", "n2": "3 deleted@5; 2 marker@1"},
			limit:    1,
			rows:     nil,
			complete: false,
			repairs:  map[coordinator.NodeID]string{"n1": "3 deleted@5"},
		},
		{
			name:     "rows before a replica's cut are trusted",
			reads:    descending,
			answers:  map[coordinator.NodeID]string{"n1": "5 marker@1; 3 marker@1", "n2": "4 marker@1; 3 marker@1; 1 marker@1"},
			limit:    2,
			rows:     []string{"5 marker@1", "4 marker@1"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n1": "4 marker@1", "n2": "5 marker@1"},
		},
		{
			name:     "a reversed read of a DESC table is ascending",
			reads:    []read{{desc, true}},
			answers:  map[coordinator.NodeID]string{"n1": "-5 marker@1; 3 marker@1", "n2": "1 marker@1"},
			limit:    2,
			rows:     []string{"-5 marker@1", "1 marker@1"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n1": "1 marker@1", "n2": "-5 marker@1"},
		},
	}
	for _, tt := range tests {
		for _, rd := range tt.reads {
			var resps []coordinator.Response
			for _, id := range slices.Sorted(maps.Keys(tt.answers)) {
				resps = append(resps, replicaAnswer(id, tt.answers[id]))
			}
			rec, err := reconcile(rd.table, resps, tt.limit, rd.reversed)
			if err != nil {
				t.Errorf("%s (%s, reversed %t): reconcile: %v", tt.name, rd.table.CreateStatement(), rd.reversed, err)
				continue
			}
			var rows []string
			for _, r := range rec.rows {
				rows = append(rows, formatRow(repairRow(r.clustering, r.row)))
			}
			repairs := map[coordinator.NodeID]string{}
			for id, rs := range rec.repairs {
				var parts []string
				for _, r := range rs.rows {
					parts = append(parts, formatRow(r))
				}
				repairs[id] = strings.Join(parts, "; ")
			}
			if !slices.Equal(rows, tt.rows) || rec.complete != tt.complete || !maps.Equal(repairs, tt.repairs) {
				t.Errorf("%s (c DESC %t, reversed %t): reconcile(%v, limit %d) = rows %q complete %t repairs %q; want rows %q complete %t repairs %q",
					tt.name, rd.table.Clustering[0].Descending, rd.reversed, tt.answers, tt.limit, rows, rec.complete, repairs, tt.rows, tt.complete, tt.repairs)
			}
		}
	}

	// An answer in the other order is an error, not a silent misordering.
	for _, rd := range descending {
		_, err := reconcile(rd.table, []coordinator.Response{replicaAnswer("n1", "1 marker@1; 2 marker@1")}, 0, rd.reversed)
		if want := "coordinator: replica n1 returned rows of table ks.t out of clustering order"; err == nil || err.Error() != want {
			t.Errorf("reconcile of an ascending answer for a descending read (c DESC %t, reversed %t) = %v, want %q",
				rd.table.Clustering[0].Descending, rd.reversed, err, want)
		}
	}
}
