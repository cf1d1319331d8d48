package model

import (
	"strings"
	"testing"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/schema"
)

// TestModelCollectionElements checks the model of a set column on a hand-written history:
// element-wise last-write-wins, the collection tombstone at ts − 1 of an assignment, and an
// empty collection reading as null.
func TestModelCollectionElements(t *testing.T) {
	tbl := checkTable(3, false)
	tbl.Coll = CollSet
	h := newHistory(tbl)
	upd := func(c *CollOp) *Op {
		v := intVal(1)
		return &Op{Kind: Update, Row: []Val{intVal(0)}, Cells: []CellWrite{{Col: 0, Val: &v}}, Coll: c}
	}
	// Keys are indexes into collKeys: -3, 1, 2, 500.
	h.write(upd(&CollOp{Kind: CollAdd, Keys: []int{0, 1}, Vals: []int{0, 0}}), client.Quorum, 200, nil)
	// An assignment at 300: a tombstone at 299 for -3 and 1, then 2.
	h.write(upd(&CollOp{Kind: CollAssign, Keys: []int{2}, Vals: []int{0}}), client.Quorum, 300, nil)
	// An addition at 299 loses to the tombstone at 299; one at 301 wins.
	h.write(upd(&CollOp{Kind: CollAdd, Keys: []int{0}, Vals: []int{0}}), client.Quorum, 299, nil)
	h.write(upd(&CollOp{Kind: CollAdd, Keys: []int{3}, Vals: []int{0}}), client.Quorum, 301, nil)
	read := func(v any) []string {
		op := &Op{SelColl: true}
		op.Seq, op.Kind, op.Table, op.PK, op.CL = h.seq, Select, h.t, h.t.Partitions[0], client.Quorum
		h.seq++
		op.Outcome = Outcome{Sent: true, Rows: [][]any{{int32(0), int32(0), int32(1), nil, v}}}
		op.Cols = []int{0, 1}
		problems, _ := h.m.Check(op)
		return problems
	}
	if p := read(schema.Set{int32(2), int32(500)}); p != nil {
		t.Errorf("reading {2, 500}: %v, want no problem", p)
	}
	for _, bad := range []any{schema.Set{int32(-3), int32(2), int32(500)}, schema.Set{int32(2)}, schema.Set{int32(500), int32(2)}, nil, schema.Set{}} {
		if p := read(bad); p == nil {
			t.Errorf("reading %v: no problem, want one", bad)
		}
	}
	// DELETE of the column at 400 leaves the set null.
	h.write(&Op{Kind: DeleteCells, Row: []Val{intVal(0)}, Coll: &CollOp{Kind: CollDelete}}, client.Quorum, 400, nil)
	if p := read(nil); p != nil {
		t.Errorf("reading null after DELETE coll: %v", p)
	}
	if p := read(schema.Set{int32(2)}); len(p) == 0 || !strings.Contains(p[0], "element 2") {
		t.Errorf("reading {2} after DELETE coll: %v, want element 2 refused", p)
	}
}
