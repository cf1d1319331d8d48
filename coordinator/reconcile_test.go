package coordinator_test

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// newTable returns the table that create, a CREATE TABLE statement of keyspace ks, makes.
func newTable(t *testing.T, create string) *schema.Table {
	t.Helper()
	st, err := cql.ParseStatement(create)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := schema.NewTable(st.(*cql.CreateTableStmt), "ks", 7, schema.Version{Timestamp: 1, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// reconcileTable is ks.t (k text, c int, v text, w text, PRIMARY KEY (k, c)).
func reconcileTable(t *testing.T) *schema.Table {
	return newTable(t, "CREATE TABLE ks.t (k text, c int, v text, w text, PRIMARY KEY (k, c))")
}

// answer is one replica's answer to a read: a page.
type answer struct {
	from coordinator.NodeID
	page coordinator.Page
}

// reconciled is what reconcile returns: the merger's result, and whether it is complete (false
// when the merge needs a replica's next page).
type reconciled struct {
	coordinator.Reconciled
	complete bool
}

// reconcile merges the replicas' answers (one page each) as far as they go, for limit live rows
// (0 for all of them), in clustering order or its reverse.
func reconcile(t *schema.Table, answers []answer, limit int, reversed bool) (reconciled, error) {
	m := coordinator.NewMerger(t, limit, reversed, 0)
	for _, a := range answers {
		if err := m.Add(a.from, a.page, limit); err != nil {
			return reconciled{}, err
		}
	}
	need := m.Merge()
	return reconciled{m.Result(), len(need) == 0}, nil
}

// replicaAnswer parses a replica's answer written as "[partition@T;] row; row ...", each row
// "c [marker@T] [deleted@T] [col=val@T | col=null@T]...", a range tombstone "range [1..3)@T"
// (see parseRangeTombstone), and "stopped c" when the replica stopped early after row c.
func replicaAnswer(from coordinator.NodeID, s string) answer {
	p := coordinator.Page{PartitionDeletion: cell.NoTimestamp}
	for _, part := range strings.Split(s, ";") {
		f := strings.Fields(part)
		if len(f) == 0 {
			continue
		}
		if ts, ok := strings.CutPrefix(f[0], "partition@"); ok {
			fmt.Sscan(ts, &p.PartitionDeletion)
			continue
		}
		if f[0] == "range" {
			p.RangeTombstones = append(p.RangeTombstones, parseRangeTombstone(f[1]))
			continue
		}
		if f[0] == "stopped" {
			var c int32
			fmt.Sscan(f[1], &c)
			p.StoppedAfter, p.Stopped = [][]byte{schema.EncodeInt(c)}, true
			continue
		}
		var c int32
		fmt.Sscan(f[0], &c)
		row := coordinator.ClusteredRow{Clustering: [][]byte{schema.EncodeInt(c)}, Row: cell.EmptyRow()}
		for _, x := range f[1:] {
			what, ts, _ := strings.Cut(x, "@")
			var v int64
			fmt.Sscan(ts, &v)
			switch name, val, _ := strings.Cut(what, "="); {
			case what == "marker":
				row.Row.Marker = v
			case what == "deleted":
				row.Row.Deletion = v
			case val == "null":
				row.Row.Columns = append(row.Row.Columns, cell.Column{Name: name, Cell: cell.Cell{Timestamp: v, Tombstone: true}})
			default:
				row.Row.Columns = append(row.Row.Columns, cell.Column{Name: name, Cell: cell.Cell{Value: []byte(val), Timestamp: v}})
			}
		}
		p.Rows = append(p.Rows, row)
	}
	return answer{from, p}
}

// parseRangeTombstone parses "[1..3)@T", "(..2]@T" and the like into a range tombstone of the
// reconcile table.
func parseRangeTombstone(s string) coordinator.RangeTombstone {
	spec, ts, _ := strings.Cut(s, "@")
	rt := coordinator.RangeTombstone{Start: coordinator.Bound{Inclusive: spec[0] == '['}, End: coordinator.Bound{Inclusive: spec[len(spec)-1] == ']'}}
	fmt.Sscan(ts, &rt.Timestamp)
	lo, hi, _ := strings.Cut(spec[1:len(spec)-1], "..")
	for _, x := range []struct {
		s string
		b *coordinator.Bound
	}{{lo, &rt.Start}, {hi, &rt.End}} {
		if x.s != "" {
			var c int32
			fmt.Sscan(x.s, &c)
			x.b.Prefix = [][]byte{schema.EncodeInt(c)}
		}
	}
	return rt
}

// formatRangeTombstone renders a range tombstone like parseRangeTombstone's input.
func formatRangeTombstone(rt coordinator.RangeTombstone) string {
	b := func(x coordinator.Bound) string {
		if len(x.Prefix) == 0 {
			return ""
		}
		return fmt.Sprint(int32(binary.BigEndian.Uint32(x.Prefix[0])))
	}
	open, end := "(", ")"
	if rt.Start.Inclusive {
		open = "["
	}
	if rt.End.Inclusive {
		end = "]"
	}
	return fmt.Sprintf("range %s%s..%s%s@%d", open, b(rt.Start), b(rt.End), end, rt.Timestamp)
}

// formatRow renders a merged or repair row like replicaAnswer's input.
func formatRow(r coordinator.ClusteredRow) string {
	parts := []string{fmt.Sprint(int32(binary.BigEndian.Uint32(r.Clustering[0])))}
	if r.Row.Marker != cell.NoTimestamp {
		parts = append(parts, fmt.Sprintf("marker@%d", r.Row.Marker))
	}
	if r.Row.Deletion != cell.NoTimestamp {
		parts = append(parts, fmt.Sprintf("deleted@%d", r.Row.Deletion))
	}
	for _, c := range r.Row.Columns {
		v := string(c.Value)
		if c.Tombstone {
			v = "null"
		}
		parts = append(parts, fmt.Sprintf("%s=%s@%d", c.Name, v, c.Timestamp))
	}
	return strings.Join(parts, " ")
}

func TestReconcile(t *testing.T) {
	tbl := reconcileTable(t)
	tests := []struct {
		name     string
		answers  map[coordinator.NodeID]string
		limit    int
		rows     []string                      // the live rows, as formatRow renders them
		complete bool                          // false: the read must be repeated without a limit
		repairs  map[coordinator.NodeID]string // what each stale replica is sent, rows joined by "; "
	}{
		{
			name:     "replicas that agree need no repair",
			answers:  map[coordinator.NodeID]string{"n1": "1 marker@1 v=a@1", "n2": "1 marker@1 v=a@1"},
			rows:     []string{"1 marker@1 v=a@1"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{},
		},
		{
			name:     "the newest cell wins and the stale replica gets it",
			answers:  map[coordinator.NodeID]string{"n1": "1 v=a@1 w=x@1", "n2": "1 v=b@2"},
			rows:     []string{"1 v=b@2 w=x@1"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n1": "1 v=b@2", "n2": "1 w=x@1"},
		},
		{
			name:     "a cell tombstone beats an older value",
			answers:  map[coordinator.NodeID]string{"n1": "1 marker@1 v=a@1", "n2": "1 marker@1 v=null@2"},
			rows:     []string{"1 marker@1 v=null@2"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n1": "1 v=null@2"},
		},
		{
			name:     "a partition tombstone shadows the other replica's older rows",
			answers:  map[coordinator.NodeID]string{"n1": "partition@5", "n2": "1 marker@3 v=a@3; 2 marker@4"},
			rows:     nil,
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n2": "partition"},
		},
		{
			name:     "a row written after the partition tombstone survives",
			answers:  map[coordinator.NodeID]string{"n1": "partition@5", "n2": "1 marker@3; 2 marker@6 v=b@6"},
			rows:     []string{"2 marker@6 v=b@6"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n1": "2 marker@6 v=b@6", "n2": "partition"},
		},
		{
			name:     "a row tombstone deletes the other replica's row",
			answers:  map[coordinator.NodeID]string{"n1": "1 deleted@5; 2 marker@1", "n2": "1 marker@3 v=a@3; 2 marker@1"},
			rows:     []string{"2 marker@1"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n2": "1 deleted@5"},
		},
		{
			name:     "rows are merged in clustering order",
			answers:  map[coordinator.NodeID]string{"n1": "-5 marker@1; 3 marker@1", "n2": "1 marker@1; 300 marker@1"},
			rows:     []string{"-5 marker@1", "1 marker@1", "3 marker@1", "300 marker@1"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n1": "1 marker@1; 300 marker@1", "n2": "-5 marker@1; 3 marker@1"},
		},
		{
			name:     "the limit stops the merge",
			answers:  map[coordinator.NodeID]string{"n1": "1 marker@1; 2 marker@1", "n2": "1 marker@1; 2 marker@1"},
			limit:    1,
			rows:     []string{"1 marker@1"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{},
		},
		{
			name: "rows past a replica's limit are not trusted",
			// n1 stopped after its one live row, which n2 deleted; n2's row 2 may be deleted on
			// n1 too, past where n1 stopped.
			answers:  map[coordinator.NodeID]string{"n1": "1 marker@1", "n2": "1 deleted@5; 2 marker@1"},
			limit:    1,
			rows:     nil,
			complete: false,
			repairs:  map[coordinator.NodeID]string{"n1": "1 deleted@5"},
		},
		{
			name:     "a range tombstone deletes the other replica's older rows and is repaired to it",
			answers:  map[coordinator.NodeID]string{"n1": "range [1..3]@10; 4 marker@1", "n2": "1 marker@3 v=a@3; 2 marker@4; 4 marker@1"},
			rows:     []string{"4 marker@1"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n2": "range [1..3]@10"},
		},
		{
			name:     "open and exclusive ends",
			answers:  map[coordinator.NodeID]string{"n1": "range (1..)@10", "n2": "1 marker@3; 2 marker@4; 400 marker@4"},
			rows:     []string{"1 marker@3"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n1": "1 marker@3", "n2": "range (1..)@10"},
		},
		{
			name:     "cells newer than a range tombstone survive it, as in Cassandra",
			answers:  map[coordinator.NodeID]string{"n1": "range [1..1]@10", "n2": "1 marker@3 v=a@3 w=b@12"},
			rows:     []string{"1 w=b@12"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n1": "1 w=b@12", "n2": "range [1..1]@10"},
		},
		{
			name:     "the newest covering tombstone wins",
			answers:  map[coordinator.NodeID]string{"n1": "range [1..5]@4; 2 marker@5", "n2": "range [2..3]@6; 3 marker@5"},
			rows:     nil,
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n1": "range [2..3]@6", "n2": "range [1..5]@4"},
		},
		{
			name:     "replicas that hold the same range tombstone need no repair",
			answers:  map[coordinator.NodeID]string{"n1": "range [1..2]@4; 3 marker@5", "n2": "range [1..2]@4; 3 marker@5"},
			rows:     []string{"3 marker@5"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{},
		},
		{
			name:     "a range tombstone older than the partition tombstone is not repaired",
			answers:  map[coordinator.NodeID]string{"n1": "partition@9; 5 marker@10", "n2": "range [1..2]@4; 5 marker@10"},
			rows:     []string{"5 marker@10"},
			complete: true,
			repairs:  map[coordinator.NodeID]string{"n2": "partition"},
		},
		{
			name: "a replica that stopped early is not sent tombstones past where it stopped",
			// n1 stopped after row 1 (its page was full): the merge needs its next page.
			answers:  map[coordinator.NodeID]string{"n1": "1 marker@1; stopped 1", "n2": "1 marker@1; range [5..6]@9"},
			rows:     []string{"1 marker@1"},
			complete: false,
			repairs:  map[coordinator.NodeID]string{},
		},
	}
	for _, tt := range tests {
		var resps []answer
		for _, id := range slices.Sorted(maps.Keys(tt.answers)) {
			resps = append(resps, replicaAnswer(id, tt.answers[id]))
		}
		rec, err := reconcile(tbl, resps, tt.limit, false)
		if err != nil {
			t.Errorf("%s: reconcile: %v", tt.name, err)
			continue
		}
		var rows []string
		for _, r := range rec.Rows {
			rows = append(rows, formatRow(r))
		}
		repairs := map[coordinator.NodeID]string{}
		for id, rs := range rec.Repairs {
			var parts []string
			if rs.PartitionDeletion {
				parts = append(parts, "partition")
			}
			for _, r := range rs.Rows {
				parts = append(parts, formatRow(r))
			}
			for _, rt := range rs.RangeTombstones {
				parts = append(parts, formatRangeTombstone(rt))
			}
			repairs[id] = strings.Join(parts, "; ")
		}
		if !slices.Equal(rows, tt.rows) || rec.complete != tt.complete || !maps.Equal(repairs, tt.repairs) {
			t.Errorf("%s: reconcile(%v, limit %d) = rows %q complete %t repairs %q; want rows %q complete %t repairs %q",
				tt.name, tt.answers, tt.limit, rows, rec.complete, repairs, tt.rows, tt.complete, tt.repairs)
		}
	}
}

func TestReconcileRejectsMalformedAnswers(t *testing.T) {
	tbl := reconcileTable(t)
	tests := []struct {
		name string
		page coordinator.Page
		want string
	}{
		{"a short clustering value", coordinator.Page{Rows: []coordinator.ClusteredRow{{Clustering: [][]byte{{1}}, Row: cell.EmptyRow()}}},
			`coordinator: replica n1 returned a malformed row 0 of table ks.t: clustering column c: invalid int value: 1 bytes, want 4`},
		{"a missing clustering value", coordinator.Page{Rows: []coordinator.ClusteredRow{{Row: cell.EmptyRow()}}},
			`coordinator: replica n1 returned a malformed row 0 of table ks.t: 0 clustering components, want 1`},
		{"rows out of order", coordinator.Page{Rows: []coordinator.ClusteredRow{
			{Clustering: [][]byte{schema.EncodeInt(2)}, Row: cell.EmptyRow()},
			{Clustering: [][]byte{schema.EncodeInt(1)}, Row: cell.EmptyRow()},
		}}, `coordinator: replica n1 returned rows of table ks.t out of clustering order`},
		{"a column twice", coordinator.Page{Rows: []coordinator.ClusteredRow{{Clustering: [][]byte{schema.EncodeInt(1)}, Row: cell.Row{
			Marker: 1, Deletion: cell.NoTimestamp, Columns: []cell.Column{{Name: "v", Cell: cell.Cell{Timestamp: 1}}, {Name: "v", Cell: cell.Cell{Timestamp: 2}}},
		}}}}, `coordinator: replica n1 returned a malformed row 0 of table ks.t: column v appears twice`},
		{"a range tombstone with too many components", coordinator.Page{RangeTombstones: []coordinator.RangeTombstone{{
			Start: coordinator.Bound{Prefix: [][]byte{schema.EncodeInt(1), schema.EncodeInt(2)}}, Timestamp: 1,
		}}}, `coordinator: replica n1 returned a malformed range tombstone 0 of table ks.t: start bound has 2 clustering components, want at most 1`},
		{"a malformed range tombstone bound", coordinator.Page{RangeTombstones: []coordinator.RangeTombstone{{
			End: coordinator.Bound{Prefix: [][]byte{{1}}}, Timestamp: 1,
		}}}, `coordinator: replica n1 returned a malformed range tombstone 0 of table ks.t: end bound: clustering column c: invalid int value: 1 bytes, want 4`},
		{"stopped early without a row", coordinator.Page{StoppedAfter: [][]byte{schema.EncodeInt(1)}, Stopped: true},
			`coordinator: replica n1 stopped a read of table ks.t early without returning a row`},
		{"stopped after a malformed key", coordinator.Page{
			Rows:         []coordinator.ClusteredRow{{Clustering: [][]byte{schema.EncodeInt(2)}, Row: cell.EmptyRow()}},
			StoppedAfter: [][]byte{{1}}, Stopped: true,
		}, `coordinator: replica n1 stopped a read of table ks.t after a malformed key: clustering column c: invalid int value: 1 bytes, want 4`},
		{"stopped before its last row", coordinator.Page{
			Rows:         []coordinator.ClusteredRow{{Clustering: [][]byte{schema.EncodeInt(2)}, Row: cell.EmptyRow()}},
			StoppedAfter: [][]byte{schema.EncodeInt(1)}, Stopped: true,
		}, `coordinator: replica n1 stopped a read of table ks.t before its last row`},
	}
	for _, tt := range tests {
		_, err := reconcile(tbl, []answer{{"n1", tt.page}}, 0, false)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: reconcile = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestReconcileWithoutClusteringColumns reads a table whose rows have the empty clustering key.
// Over the wire that key arrives as a nil slice (protobuf does not tell an empty repeated field
// from an absent one), which the merge once took for its "no more rows" marker, so every row
// read through a coordinator that was not its replica came back as "(0 rows)".
func TestReconcileWithoutClusteringColumns(t *testing.T) {
	tbl := newTable(t, "CREATE TABLE ks.kv (k int PRIMARY KEY, v text)")
	page := func(from coordinator.NodeID, clustering [][]byte, marker int64, value string, ts int64) answer {
		row := cell.Row{Marker: marker, Deletion: cell.NoTimestamp, Columns: []cell.Column{{Name: "v", Cell: cell.Cell{Value: []byte(value), Timestamp: ts}}}}
		return answer{from, coordinator.Page{PartitionDeletion: cell.NoTimestamp, Rows: []coordinator.ClusteredRow{{Clustering: clustering, Row: row}}}}
	}
	for _, limit := range []int{0, 1} {
		for _, clustering := range [][][]byte{nil, {}} {
			resps := []answer{page("n1", clustering, 1, "old", 1), page("n2", clustering, 1, "new", 2)}
			rec, err := reconcile(tbl, resps, limit, false)
			if err != nil {
				t.Fatalf("limit %d, clustering %#v: reconcile: %v", limit, clustering, err)
			}
			if len(rec.Rows) != 1 || !rec.complete {
				t.Fatalf("limit %d, clustering %#v: got %d rows (complete %t), want the one row", limit, clustering, len(rec.Rows), rec.complete)
			}
			if got := rec.Rows[0].Row.Columns[0].Value; string(got) != "new" {
				t.Errorf("limit %d, clustering %#v: v = %q, want the newer %q", limit, clustering, got, "new")
			}
			if rec.Rows[0].Clustering == nil || len(rec.Rows[0].Clustering) != 0 {
				t.Errorf("limit %d: clustering key %#v, want the empty, non-nil key", limit, rec.Rows[0].Clustering)
			}
			if rs := rec.Repairs["n1"]; rs == nil || len(rs.Rows) != 1 {
				t.Errorf("limit %d, clustering %#v: repairs for the stale replica = %+v, want its row", limit, clustering, rs)
			}
		}
	}
}

// TestMergeAcrossPages merges answers that come in pages, with a range tombstone that
// straddles a page boundary and that only one replica holds.
func TestMergeAcrossPages(t *testing.T) {
	tbl := reconcileTable(t)
	m := coordinator.NewMerger(tbl, 0, false, 0)
	add := func(id coordinator.NodeID, s string) {
		t.Helper()
		if err := add1(m, replicaAnswer(id, s)); err != nil {
			t.Fatalf("adding %s's page %q: %v", id, s, err)
		}
	}
	// n1 holds the tombstone over 2..5; n2 does not, and its pages are smaller.
	add("n1", "1 marker@1; range [2..5]@10; 6 marker@1; stopped 6")
	add("n2", "1 marker@1; 2 marker@1; stopped 2")
	var needs []string
	need := func() {
		t.Helper()
		var ids []string
		for _, np := range m.Merge() {
			ids = append(ids, string(np.From))
		}
		needs = append(needs, strings.Join(ids, ","))
	}
	need()
	add("n2", "3 marker@1; 4 marker@1; stopped 4")
	need()
	add("n2", "5 marker@1; 6 marker@1; 7 marker@1; stopped 7")
	need()
	add("n1", "7 marker@1; 8 marker@12")
	need()
	add("n2", "8 marker@12")
	need()
	if want := []string{"n2", "n2", "n1", "n2", ""}; !slices.Equal(needs, want) {
		t.Errorf("the merge asked for the next pages of %q, want %q", needs, want)
	}
	rec := m.Result()
	var rows []string
	for _, r := range rec.Rows {
		rows = append(rows, formatRow(r))
	}
	if want := []string{"1 marker@1", "6 marker@1", "7 marker@1", "8 marker@12"}; !slices.Equal(rows, want) {
		t.Errorf("merged rows %q, want %q", rows, want)
	}
	if len(rec.Repairs) != 1 || len(rec.Repairs["n2"].RangeTombstones) != 1 || len(rec.Repairs["n2"].Rows) != 0 {
		t.Errorf("repairs %+v, want n2 to get the range tombstone alone", rec.Repairs)
	}
	// A page that does not start after the previous one is refused: the merge could loop.
	if err := add1(m, replicaAnswer("n1", "7 marker@1; stopped 7")); err != nil {
		t.Fatalf("a page after n1's last, which ended the range: %v", err)
	}
	if err := add1(m, replicaAnswer("n1", "7 marker@1; stopped 7")); err == nil || !strings.Contains(err.Error(), "does not start after the previous one") {
		t.Errorf("a page repeating the last one: %v, want an error", err)
	}
}

// descTable is ks.t (k text, c int, v text, w text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER
// BY (c DESC).
func descTable(t *testing.T) *schema.Table {
	return newTable(t, "CREATE TABLE ks.t (k text, c int, v text, w text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
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
			var resps []answer
			for _, id := range slices.Sorted(maps.Keys(tt.answers)) {
				resps = append(resps, replicaAnswer(id, tt.answers[id]))
			}
			rec, err := reconcile(rd.table, resps, tt.limit, rd.reversed)
			if err != nil {
				t.Errorf("%s (%s, reversed %t): reconcile: %v", tt.name, rd.table.CreateStatement(), rd.reversed, err)
				continue
			}
			var rows []string
			for _, r := range rec.Rows {
				rows = append(rows, formatRow(r))
			}
			repairs := map[coordinator.NodeID]string{}
			for id, rs := range rec.Repairs {
				var parts []string
				for _, r := range rs.Rows {
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
		_, err := reconcile(rd.table, []answer{replicaAnswer("n1", "1 marker@1; 2 marker@1")}, 0, rd.reversed)
		if want := "coordinator: replica n1 returned rows of table ks.t out of clustering order"; err == nil || err.Error() != want {
			t.Errorf("reconcile of an ascending answer for a descending read (c DESC %t, reversed %t) = %v, want %q",
				rd.table.Clustering[0].Descending, rd.reversed, err, want)
		}
	}
}

// add1 adds a replica's page, read without a limit, to m.
func add1(m *coordinator.Merger, a answer) error { return m.Add(a.from, a.page, 0) }
