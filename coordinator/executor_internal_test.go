package coordinator

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
// "c [marker@T] [deleted@T] [col=val@T | col=null@T]...".
func replicaAnswer(from NodeID, s string) Response {
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
	return Response{From: from, Status: StatusOK, Payload: resp}
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
		answers  map[NodeID]string
		limit    int
		rows     []string          // the live rows, as repairRow renders them
		complete bool              // false: the read must be repeated without a limit
		repairs  map[NodeID]string // what each stale replica is sent, rows joined by "; "
	}{
		{
			name:     "replicas that agree need no repair",
			answers:  map[NodeID]string{"n1": "1 marker@1 v=a@1", "n2": "1 marker@1 v=a@1"},
			rows:     []string{"1 marker@1 v=a@1"},
			complete: true,
			repairs:  map[NodeID]string{},
		},
		{
			name:     "the newest cell wins and the stale replica gets it",
			answers:  map[NodeID]string{"n1": "1 v=a@1 w=x@1", "n2": "1 v=b@2"},
			rows:     []string{"1 v=b@2 w=x@1"},
			complete: true,
			repairs:  map[NodeID]string{"n1": "1 v=b@2", "n2": "1 w=x@1"},
		},
		{
			name:     "a cell tombstone beats an older value",
			answers:  map[NodeID]string{"n1": "1 marker@1 v=a@1", "n2": "1 marker@1 v=null@2"},
			rows:     []string{"1 marker@1 v=null@2"},
			complete: true,
			repairs:  map[NodeID]string{"n1": "1 v=null@2"},
		},
		{
			name:     "a partition tombstone shadows the other replica's older rows",
			answers:  map[NodeID]string{"n1": "partition@5", "n2": "1 marker@3 v=a@3; 2 marker@4"},
			rows:     nil,
			complete: true,
			repairs:  map[NodeID]string{"n2": "partition"},
		},
		{
			name:     "a row written after the partition tombstone survives",
			answers:  map[NodeID]string{"n1": "partition@5", "n2": "1 marker@3; 2 marker@6 v=b@6"},
			rows:     []string{"2 marker@6 v=b@6"},
			complete: true,
			repairs:  map[NodeID]string{"n1": "2 marker@6 v=b@6", "n2": "partition"},
		},
		{
			name:     "a row tombstone deletes the other replica's row",
			answers:  map[NodeID]string{"n1": "1 deleted@5; 2 marker@1", "n2": "1 marker@3 v=a@3; 2 marker@1"},
			rows:     []string{"2 marker@1"},
			complete: true,
			repairs:  map[NodeID]string{"n2": "1 deleted@5"},
		},
		{
			name:     "rows are merged in clustering order",
			answers:  map[NodeID]string{"n1": "-5 marker@1; 3 marker@1", "n2": "1 marker@1; 300 marker@1"},
			rows:     []string{"-5 marker@1", "1 marker@1", "3 marker@1", "300 marker@1"},
			complete: true,
			repairs:  map[NodeID]string{"n1": "1 marker@1; 300 marker@1", "n2": "-5 marker@1; 3 marker@1"},
		},
		{
			name:     "the limit stops the merge",
			answers:  map[NodeID]string{"n1": "1 marker@1; 2 marker@1", "n2": "1 marker@1; 2 marker@1"},
			limit:    1,
			rows:     []string{"1 marker@1"},
			complete: true,
			repairs:  map[NodeID]string{},
		},
		{
			name: "rows past a replica's limit are not trusted",
			// n1 stopped after its one live row, which n2 deleted; n2's row 2 may be deleted on
			// n1 too, past where n1 stopped.
			answers:  map[NodeID]string{"n1": "1 marker@1", "n2": "1 deleted@5; 2 marker@1"},
			limit:    1,
			rows:     nil,
			complete: false,
			repairs:  map[NodeID]string{"n1": "1 deleted@5"},
		},
	}
	for _, tt := range tests {
		var resps []Response
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
		repairs := map[NodeID]string{}
		for id, rs := range rec.repairs {
			var parts []string
			if rs.partitionDeletion {
				parts = append(parts, "partition")
			}
			for _, r := range rs.rows {
				parts = append(parts, formatRow(r))
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
	}
	for _, tt := range tests {
		_, err := reconcile(tbl, []Response{{From: "n1", Status: StatusOK, Payload: tt.resp}}, 0, false)
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
	answer := func(from NodeID, marker int64, value string, ts int64) Response {
		row := &replicapb.Row{Marker: &marker, Cells: []*replicapb.Cell{{Column: "v", Value: []byte(value), Timestamp: ts}}}
		return Response{From: from, Status: StatusOK, Payload: &replicapb.ReadResponse{Status: replicapb.Status_STATUS_OK, Rows: []*replicapb.Row{row}}}
	}
	for _, limit := range []int{0, 1} {
		for _, clustering := range [][][]byte{nil, {}} {
			resps := []Response{answer("n1", 1, "old", 1), answer("n2", 1, "new", 2)}
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
