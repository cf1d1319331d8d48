package replica

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/proto/replicapb"
)

const staticDDL = "CREATE TABLE ks.t (k text, c1 int, c2 text, v int, w text, s text STATIC, s2 text STATIC, PRIMARY KEY ((k), c1, c2))"

// staticRow builds a static row of cells "column=value@ts" or "column=null@ts".
func staticRow(cells ...string) *replicapb.Row {
	r := row(0, "", cells...)
	r.Clustering = nil
	return r
}

// staticMut is a mutation of partition pk writing the static row st and rows.
func staticMut(pk string, st *replicapb.Row, rows ...*replicapb.Row) *replicapb.Mutation {
	m := mut(pk, rows...)
	m.StaticRow = st
	return m
}

// formatStatic renders a response's static row: "s=x@5 s2=null@6", "" without one.
func formatStatic(resp *replicapb.ReadResponse) string {
	if resp.StaticRow == nil {
		return "none"
	}
	var cells []string
	for _, c := range resp.StaticRow.Cells {
		if c.Tombstone {
			cells = append(cells, c.Column+"=null@"+strconv.FormatInt(c.Timestamp, 10))
			continue
		}
		cells = append(cells, c.Column+"="+string(c.Value)+"@"+strconv.FormatInt(c.Timestamp, 10))
	}
	return strings.Join(cells, " ")
}

func TestStaticRowWritesAndReads(t *testing.T) {
	s, _ := openMem(t)
	tbl := newTable(t, staticDDL)
	mustApply(t, s, tbl,
		staticMut("p", staticRow("s=one@5")),
		staticMut("p", staticRow("s=old@4", "s2=x@6"), row(1, "a", "marker@5", "v=1@5"), row(2, "b", "v=2@5")),
		staticMut("q", staticRow("s=alone@5")),
	)
	read := func(req *replicapb.ReadRequest) *replicapb.ReadResponse {
		t.Helper()
		resp, err := s.ReadPartition(tbl, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := read(readReq("p"))
	if got, want := formatStatic(resp), "s=one@5 s2=x@6"; got != want {
		t.Errorf("static row = %q, want %q (last write wins per cell)", got, want)
	}
	if got, want := format(tbl, resp), "(1,a) marker@5 [v=1@5]; (2,b) [v=2@5]"; got != want {
		t.Errorf("rows = %q, want %q", got, want)
	}
	// Every page carries the static row.
	page := readReq("p")
	page.Limit = 1
	first := read(page)
	page.After = first.StoppedAfter
	second := read(page)
	if len(first.Rows) != 1 || len(second.Rows) != 1 || formatStatic(first) != "s=one@5 s2=x@6" || formatStatic(second) != "s=one@5 s2=x@6" {
		t.Errorf("pages: %q / %q, %q / %q", format(tbl, first), formatStatic(first), format(tbl, second), formatStatic(second))
	}
	// A partition with only a static row, a clustering slice that matches nothing, and the
	// column selection.
	if got := formatStatic(read(readReq("q"))); got != "s=alone@5" {
		t.Errorf("static-only partition: %q", got)
	}
	sel := readReq("p")
	sel.Columns = []string{"s2", "v"}
	if got := formatStatic(read(sel)); got != "s2=x@6" {
		t.Errorf("selected static columns: %q", got)
	}
	// DELETE s: a cell tombstone; a range tombstone over every row leaves the static row; the
	// partition tombstone shadows it.
	mustApply(t, s, tbl, staticMut("p", staticRow("s=null@7")), rangeDel("[1 .. 2]", 8))
	resp = read(readReq("p"))
	if got := formatStatic(resp); got != "s=null@7 s2=x@6" || len(resp.Rows) != 0 {
		t.Errorf("after DELETE s and a range deletion: static %q, rows %q", got, format(tbl, resp))
	}
	pd := mut("p")
	pd.PartitionDeletion = ts(9)
	mustApply(t, s, tbl, pd, staticMut("p", staticRow("s2=new@10")))
	if got := formatStatic(read(readReq("p"))); got != "s2=new@10" {
		t.Errorf("after a partition deletion and a newer write: %q", got)
	}

	// Repair and range reads carry it.
	m, err := s.FetchPartition(tbl, tokenOf("q"), [][]byte{[]byte("q")})
	if err != nil || m == nil || m.StaticRow == nil || len(m.StaticRow.Cells) != 1 {
		t.Fatalf("FetchPartition of a static-only partition = %v, %v", m, err)
	}
	rr, err := s.ReadRange(tbl, &replicapb.RangeReadRequest{TableId: testTableID, StartToken: -1 << 63, EndToken: 1<<63 - 1})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range rr.Partitions {
		if p.Page.StaticRow != nil {
			found++
		}
	}
	if found != 2 {
		t.Errorf("range read: %d partitions with a static row, want 2", found)
	}
	// A purge pass walks the static keys.
	if _, err := s.Purge(context.Background(), tbl, time.Now()); err != nil {
		t.Errorf("Purge: %v", err)
	}
	if got := formatStatic(read(readReq("p"))); got != "s2=new@10" {
		t.Errorf("after purge: %q", got)
	}
}

func TestStaticRowRefusals(t *testing.T) {
	s, _ := openMem(t)
	tbl := newTable(t, staticDDL)
	plain := testTable(t)
	withMarker := staticRow("s=x@1")
	withMarker.Marker = ts(1)
	withClustering := row(1, "a", "s=x@1")
	for _, tc := range []struct {
		m    *replicapb.Mutation
		want string
	}{
		{staticMut("p", staticRow("v=1@1")), `the static row writes column "v", which is not static`},
		{staticMut("p", withMarker), "holds cells only"},
		{staticMut("p", withClustering), "holds cells only"},
		{mut("p", row(1, "a", "s=x@1")), `row 0 writes static column "s"`},
	} {
		if err := s.Apply(tbl, tc.m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Apply(%v) = %v, want %q", tc.m, err, tc.want)
		}
	}
	if err := s.Apply(plain, staticMut("p", staticRow("v=1@1"))); err == nil || !strings.Contains(err.Error(), "without static columns") {
		t.Errorf("a static row for a table without static columns: %v", err)
	}
}
