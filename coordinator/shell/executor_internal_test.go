package shell

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

func TestNextTimestamp(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name  string
		clock []time.Duration // offsets from base, one per call
		want  []int64         // offsets in µs from base
	}{
		{"follows a clock that advances", []time.Duration{0, time.Millisecond, 2 * time.Millisecond}, []int64{0, 1000, 2000}},
		{"ticks by 1µs while the clock stands still", []time.Duration{0, 0, 0}, []int64{0, 1, 2}},
		{"never goes back when the clock does", []time.Duration{time.Second, 0, 2 * time.Second}, []int64{1_000_000, 1_000_001, 2_000_000}},
	}
	for _, tt := range tests {
		i := 0
		e := &Executor{now: func() time.Time { return base.Add(tt.clock[i]) }}
		var got []int64
		for i = range tt.clock {
			got = append(got, e.nextTimestamp()-base.UnixMicro())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: timestamps %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNextTimestampConcurrent(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	e := &Executor{now: func() time.Time { return now }}
	const workers, n = 8, 1000
	got := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range n {
				got[w] = append(got[w], e.nextTimestamp())
			}
		})
	}
	wg.Wait()
	seen := make(map[int64]bool)
	for w, ts := range got {
		for i, v := range ts {
			if i > 0 && v <= ts[i-1] {
				t.Fatalf("worker %d got %d after %d, want strictly increasing", w, v, ts[i-1])
			}
			if seen[v] {
				t.Fatalf("timestamp %d was handed out twice", v)
			}
			seen[v] = true
		}
	}
}

// reconcileTable is ks.t (k text, c int, v text, w text, PRIMARY KEY (k, c)).
func reconcileTable(t *testing.T) *schema.Table {
	t.Helper()
	st, err := cql.ParseStatement("CREATE TABLE ks.t (k text, c int, v text, w text, PRIMARY KEY (k, c))")
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := schema.NewTable(st.(*cql.CreateTableStmt), "ks", 7, schema.Version{Timestamp: 1, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// replicaAnswer parses a replica's answer written as "[partition@T;] row; row ...", each row
// "c [marker@T] [deleted@T] [col=val@T | col=null@T]...", a range tombstone "range [1..3)@T"
// (see parseRangeTombstone), and "stopped c" when the replica stopped early after row c.
func replicaAnswer(from coordinator.NodeID, s string) coordinator.Response {
	resp := &replicapb.ReadResponse{Status: replicapb.Status_STATUS_OK}
	for _, part := range strings.Split(s, ";") {
		f := strings.Fields(part)
		if len(f) == 0 {
			continue
		}
		if ts, ok := strings.CutPrefix(f[0], "partition@"); ok {
			var v int64
			fmt.Sscan(ts, &v)
			resp.PartitionDeletion = &v
			continue
		}
		if f[0] == "range" {
			resp.RangeTombstones = append(resp.RangeTombstones, parseRangeTombstone(f[1]))
			continue
		}
		if f[0] == "stopped" {
			var c int32
			fmt.Sscan(f[1], &c)
			resp.StoppedAfter = &replicapb.ClusteringKey{Components: [][]byte{schema.EncodeInt(c)}}
			continue
		}
		var c int32
		fmt.Sscan(f[0], &c)
		row := &replicapb.Row{Clustering: [][]byte{schema.EncodeInt(c)}}
		for _, x := range f[1:] {
			what, ts, _ := strings.Cut(x, "@")
			var v int64
			fmt.Sscan(ts, &v)
			switch name, val, _ := strings.Cut(what, "="); {
			case what == "marker":
				row.Marker = &v
			case what == "deleted":
				row.Deletion = &v
			case val == "null":
				row.Cells = append(row.Cells, &replicapb.Cell{Column: name, Timestamp: v, Tombstone: true})
			default:
				row.Cells = append(row.Cells, &replicapb.Cell{Column: name, Value: []byte(val), Timestamp: v})
			}
		}
		resp.Rows = append(resp.Rows, row)
	}
	return coordinator.Response{From: from, Status: coordinator.StatusOK, Payload: resp}
}

// parseRangeTombstone parses "[1..3)@T", "(..2]@T" and the like into a range tombstone of the
// reconcile table.
func parseRangeTombstone(s string) *replicapb.RangeTombstone {
	spec, ts, _ := strings.Cut(s, "@")
	rt := &replicapb.RangeTombstone{Start: &replicapb.ClusteringBound{Inclusive: spec[0] == '['}, End: &replicapb.ClusteringBound{Inclusive: spec[len(spec)-1] == ']'}}
	fmt.Sscan(ts, &rt.Timestamp)
	lo, hi, _ := strings.Cut(spec[1:len(spec)-1], "..")
	for _, x := range []struct {
		s string
		b *replicapb.ClusteringBound
	}{{lo, rt.Start}, {hi, rt.End}} {
		if x.s != "" {
			var c int32
			fmt.Sscan(x.s, &c)
			x.b.Prefix = [][]byte{schema.EncodeInt(c)}
		}
	}
	return rt
}

// formatRangeTombstone renders a range tombstone like parseRangeTombstone's input.
func formatRangeTombstone(rt *replicapb.RangeTombstone) string {
	b := func(x *replicapb.ClusteringBound) string {
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

// formatRow renders a mutation or read row like answer's input.
func formatRow(r *replicapb.Row) string {
	parts := []string{fmt.Sprint(int32(binary.BigEndian.Uint32(r.Clustering[0])))}
	if r.Marker != nil {
		parts = append(parts, fmt.Sprintf("marker@%d", *r.Marker))
	}
	if r.Deletion != nil {
		parts = append(parts, fmt.Sprintf("deleted@%d", *r.Deletion))
	}
	for _, c := range r.Cells {
		v := string(c.Value)
		if c.Tombstone {
			v = "null"
		}
		parts = append(parts, fmt.Sprintf("%s=%s@%d", c.Column, v, c.Timestamp))
	}
	return strings.Join(parts, " ")
}

func TestReconcile(t *testing.T) {
	tbl := reconcileTable(t)
	tests := []struct {
		name     string
		answers  map[coordinator.NodeID]string
		limit    int
		rows     []string                      // the live rows, as repairRow renders them
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
		var resps []coordinator.Response
		for _, id := range slices.Sorted(maps.Keys(tt.answers)) {
			resps = append(resps, replicaAnswer(id, tt.answers[id]))
		}
		rec, err := reconcile(tbl, resps, tt.limit, false)
		if err != nil {
			t.Errorf("%s: reconcile: %v", tt.name, err)
			continue
		}
		var rows []string
		for _, r := range rec.rows {
			rows = append(rows, formatRow(repairRow(r.clustering, r.row)))
		}
		repairs := map[coordinator.NodeID]string{}
		for id, rs := range rec.repairs {
			var parts []string
			if rs.partitionDeletion {
				parts = append(parts, "partition")
			}
			for _, r := range rs.rows {
				parts = append(parts, formatRow(r))
			}
			for _, rt := range rs.rangeTombstones {
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
		resp *replicapb.ReadResponse
		want string
	}{
		{"a short clustering value", &replicapb.ReadResponse{Rows: []*replicapb.Row{{Clustering: [][]byte{{1}}, Marker: new(int64)}}},
			`coordinator: replica n1 returned a malformed row 0 of table ks.t: clustering column c: invalid int value: 1 bytes, want 4`},
		{"a missing clustering value", &replicapb.ReadResponse{Rows: []*replicapb.Row{{Marker: new(int64)}}},
			`coordinator: replica n1 returned a malformed row 0 of table ks.t: 0 clustering components, want 1`},
		{"rows out of order", &replicapb.ReadResponse{Rows: []*replicapb.Row{
			{Clustering: [][]byte{schema.EncodeInt(2)}, Marker: new(int64)},
			{Clustering: [][]byte{schema.EncodeInt(1)}, Marker: new(int64)},
		}}, `coordinator: replica n1 returned rows of table ks.t out of clustering order`},
		{"a range tombstone with too many components", &replicapb.ReadResponse{RangeTombstones: []*replicapb.RangeTombstone{{
			Start: &replicapb.ClusteringBound{Prefix: [][]byte{schema.EncodeInt(1), schema.EncodeInt(2)}}, End: &replicapb.ClusteringBound{}, Timestamp: 1,
		}}}, `coordinator: replica n1 returned a malformed range tombstone 0 of table ks.t: start bound has 2 clustering components, want at most 1`},
		{"a malformed range tombstone bound", &replicapb.ReadResponse{RangeTombstones: []*replicapb.RangeTombstone{{
			Start: &replicapb.ClusteringBound{}, End: &replicapb.ClusteringBound{Prefix: [][]byte{{1}}}, Timestamp: 1,
		}}}, `coordinator: replica n1 returned a malformed range tombstone 0 of table ks.t: end bound: clustering column c: invalid int value: 1 bytes, want 4`},
		{"stopped early without a row", &replicapb.ReadResponse{StoppedAfter: &replicapb.ClusteringKey{Components: [][]byte{schema.EncodeInt(1)}}},
			`coordinator: replica n1 stopped a read of table ks.t early without returning a row`},
		{"stopped before its last row", &replicapb.ReadResponse{
			Rows:         []*replicapb.Row{{Clustering: [][]byte{schema.EncodeInt(2)}, Marker: new(int64)}},
			StoppedAfter: &replicapb.ClusteringKey{Components: [][]byte{schema.EncodeInt(1)}},
		}, `coordinator: replica n1 stopped a read of table ks.t before its last row`},
	}
	for _, tt := range tests {
		_, err := reconcile(tbl, []coordinator.Response{{From: "n1", Status: coordinator.StatusOK, Payload: tt.resp}}, 0, false)
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
	st, err := cql.ParseStatement("CREATE TABLE ks.kv (k int PRIMARY KEY, v text)")
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := schema.NewTable(st.(*cql.CreateTableStmt), "ks", 8, schema.Version{Timestamp: 1, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	answer := func(from coordinator.NodeID, marker int64, value string, ts int64) coordinator.Response {
		row := &replicapb.Row{Marker: &marker, Cells: []*replicapb.Cell{{Column: "v", Value: []byte(value), Timestamp: ts}}}
		return coordinator.Response{From: from, Status: coordinator.StatusOK, Payload: &replicapb.ReadResponse{Status: replicapb.Status_STATUS_OK, Rows: []*replicapb.Row{row}}}
	}
	for _, limit := range []int{0, 1} {
		for _, clustering := range [][][]byte{nil, {}} {
			resps := []coordinator.Response{answer("n1", 1, "old", 1), answer("n2", 1, "new", 2)}
			for _, r := range resps {
				r.Payload.(*replicapb.ReadResponse).Rows[0].Clustering = clustering
			}
			rec, err := reconcile(tbl, resps, limit, false)
			if err != nil {
				t.Fatalf("limit %d, clustering %#v: reconcile: %v", limit, clustering, err)
			}
			if len(rec.rows) != 1 || !rec.complete {
				t.Fatalf("limit %d, clustering %#v: got %d rows (complete %t), want the one row", limit, clustering, len(rec.rows), rec.complete)
			}
			if got := rec.rows[0].row.Columns[0].Value; string(got) != "new" {
				t.Errorf("limit %d, clustering %#v: v = %q, want the newer %q", limit, clustering, got, "new")
			}
			if rec.rows[0].clustering == nil || len(rec.rows[0].clustering) != 0 {
				t.Errorf("limit %d: clustering key %#v, want the empty, non-nil key", limit, rec.rows[0].clustering)
			}
			if rs := rec.repairs["n1"]; rs == nil || len(rs.rows) != 1 {
				t.Errorf("limit %d, clustering %#v: repairs for the stale replica = %+v, want its row", limit, clustering, rs)
			}
		}
	}
}

// TestMergeAcrossPages merges answers that come in pages, with a range tombstone that
// straddles a page boundary and that only one replica holds.
func TestMergeAcrossPages(t *testing.T) {
	tbl := reconcileTable(t)
	m := newMerger(tbl, 0, false)
	add := func(id coordinator.NodeID, s string) {
		t.Helper()
		if err := m.add(replicaAnswer(id, s), 0); err != nil {
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
		for _, i := range m.merge() {
			ids = append(ids, string(m.vs[i].from))
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
	rec := m.result()
	var rows []string
	for _, r := range rec.rows {
		rows = append(rows, formatRow(repairRow(r.clustering, r.row)))
	}
	if want := []string{"1 marker@1", "6 marker@1", "7 marker@1", "8 marker@12"}; !slices.Equal(rows, want) {
		t.Errorf("merged rows %q, want %q", rows, want)
	}
	if len(rec.repairs) != 1 || len(rec.repairs["n2"].rangeTombstones) != 1 || len(rec.repairs["n2"].rows) != 0 {
		t.Errorf("repairs %+v, want n2 to get the range tombstone alone", rec.repairs)
	}
	// A page that does not start after the previous one is refused: the merge could loop.
	if err := m.add(replicaAnswer("n1", "7 marker@1; stopped 7"), 0); err != nil {
		t.Fatalf("a page after n1's last, which ended the range: %v", err)
	}
	if err := m.add(replicaAnswer("n1", "7 marker@1; stopped 7"), 0); err == nil || !strings.Contains(err.Error(), "does not start after the previous one") {
		t.Errorf("a page repeating the last one: %v, want an error", err)
	}
}
