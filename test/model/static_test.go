package model

import (
	"strings"
	"testing"

	"github.com/kvnode/kvnode/client"
)

// TestModelStaticColumn checks the model of a static column on a hand-written history: one
// value per partition that row and range deletions leave and a partition deletion removes, and
// the row of static values alone that a whole-partition read returns when no row is live.
func TestModelStaticColumn(t *testing.T) {
	tbl := checkTable(3, false)
	tbl.Static = true
	h := newHistory(tbl)
	five, seven := intVal(5), intVal(7)
	h.write(&Op{Kind: Insert, Row: []Val{intVal(0)}, SetStatic: true, Static: &five}, client.Quorum, 0, nil)
	h.write(&Op{Kind: Update, SetStatic: true, Static: &seven}, client.Quorum, 0, nil) // the static row alone
	read := func(rg Range, rows ...[]any) []string {
		op := &Op{Range: rg}
		op.Seq, op.Kind, op.Table, op.PK, op.CL = h.seq, Select, h.t, h.t.Partitions[0], client.Quorum
		h.seq++
		op.Cols = []int{0, 1}
		op.Outcome.Sent = true
		for _, r := range rows {
			op.Outcome.Rows = append(op.Outcome.Rows, append([]any{int32(0)}, r...))
		}
		problems, _ := h.m.Check(op)
		return problems
	}
	whole := Range{}
	if p := read(whole, []any{int32(0), nil, nil, int32(7)}); p != nil {
		t.Errorf("reading the row with s = 7: %v", p)
	}
	if p := read(whole, []any{int32(0), nil, nil, int32(5)}); p == nil {
		t.Errorf("reading the row with the overwritten s = 5: no problem, want one")
	}
	// A row deletion leaves the static value: the partition reads as its static row alone.
	h.write(&Op{Kind: DeleteRow, Row: []Val{intVal(0)}}, client.Quorum, 0, nil)
	if p := read(whole, []any{nil, nil, nil, int32(7)}); p != nil {
		t.Errorf("reading the static row alone after the row's deletion: %v", p)
	}
	for _, bad := range []struct {
		rg   Range
		rows [][]any
		why  string
	}{
		{whole, nil, "static row is missing"},
		{Range{Lower: &Bound{intVal(-7), true}}, [][]any{{nil, nil, nil, int32(7)}}, "restricts the clustering columns"},
		{whole, [][]any{{nil, nil, nil, nil}}, "null"},
		{whole, [][]any{{nil, int32(1), nil, int32(7)}}, "want null"},
	} {
		p := read(bad.rg, bad.rows...)
		if !strings.Contains(strings.Join(p, "\n"), bad.why) {
			t.Errorf("reading %v over %+v: %v, want a problem with %q", bad.rows, bad.rg, p, bad.why)
		}
	}
	// A partition deletion removes it.
	h.write(&Op{Kind: DeletePartition}, client.Quorum, 0, nil)
	if p := read(whole); p != nil {
		t.Errorf("reading nothing after the partition's deletion: %v", p)
	}
	if p := read(whole, []any{nil, nil, nil, int32(7)}); p == nil {
		t.Errorf("reading the static row after the partition's deletion: no problem, want one")
	}
}
