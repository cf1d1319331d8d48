package model

import (
	"errors"
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

// TestModelListElements checks the model of a list column on a hand-written history: every
// element its own component, an assignment's collection tombstone at ts − 1, and the order of
// paths (prepends first, later prepends before earlier ones, appends by timestamp, each
// write's elements together and in order). A read that loses an acknowledged element, returns a
// shadowed one, or reorders them, is reported.
func TestModelListElements(t *testing.T) {
	tbl := checkTable(3, false)
	tbl.Coll = CollList
	h := newHistory(tbl)
	upd := func(kind CollOpKind, n int) *Op {
		c := &CollOp{Kind: kind, Base: listBase(h.seq)}
		for i := range n {
			c.Keys = append(c.Keys, i)
		}
		return &Op{Kind: Update, Row: []Val{intVal(0)}, Coll: c}
	}
	h.write(upd(CollAdd, 2), client.Quorum, 0, nil)     // #0: 0, 1
	h.write(upd(CollAssign, 2), client.Quorum, 0, nil)  // #1: 8, 9; shadows #0's
	h.write(upd(CollAdd, 1), client.Quorum, 0, nil)     // #2: 16
	h.write(upd(CollPrepend, 2), client.Quorum, 0, nil) // #3: 24, 25 before everything
	h.write(upd(CollPrepend, 1), client.One, 0, nil)    // #4: 32 before 24, maybe seen at QUORUM
	h.write(upd(CollAdd, 1), client.All, 0, errors.New("connection reset"))
	// #5: 40, failed without an answer: maybe, anywhere after #2's
	read := func(vals ...int32) []string {
		op := &Op{SelColl: true}
		op.Seq, op.Kind, op.Table, op.PK, op.CL = h.seq, Select, h.t, h.t.Partitions[0], client.Quorum
		h.seq++
		var l any
		if vals != nil {
			s := schema.List{}
			for _, v := range vals {
				s = append(s, v)
			}
			l = s
		}
		op.Outcome = Outcome{Sent: true, Rows: [][]any{{int32(0), int32(0), nil, nil, l}}}
		op.Cols = []int{0, 1}
		problems, _ := h.m.Check(op)
		return problems
	}
	for _, good := range [][]int32{
		{24, 25, 8, 9, 16},
		{32, 24, 25, 8, 9, 16},
		{32, 24, 25, 8, 9, 16, 40},
	} {
		if p := read(good...); p != nil {
			t.Errorf("reading %v: %v, want no problem", good, p)
		}
	}
	for _, bad := range []struct {
		vals []int32
		why  string
	}{
		{[]int32{24, 25, 8, 16}, "lacks list element 9"},            // an acknowledged element lost
		{[]int32{24, 25, 0, 8, 9, 16}, "list element 0"},            // shadowed by #1's assignment
		{[]int32{24, 25, 9, 8, 16}, "out of the write's order"},     // a write's elements swapped
		{[]int32{24, 25, 16, 8, 9}, "out of order"},                 // an append before an older one
		{[]int32{24, 32, 25, 8, 9, 16}, "not together"},             // a write's elements split
		{[]int32{24, 25, 8, 9, 16, 16}, "twice"},                    // an element twice
		{[]int32{24, 25, 8, 9, 16, 7}, "which no write of the row"}, // a value nobody wrote
	} {
		p := read(bad.vals...)
		if !strings.Contains(strings.Join(p, "\n"), bad.why) {
			t.Errorf("reading %v: %v, want a problem with %q", bad.vals, p, bad.why)
		}
	}
	// DELETE of the list at a later timestamp leaves it null.
	h.write(&Op{Kind: DeleteCells, Row: []Val{intVal(0)}, Coll: &CollOp{Kind: CollDelete}}, client.All, testHigh-1, nil)
	if p := read(); p != nil {
		t.Errorf("reading null after DELETE coll: %v", p)
	}
	if p := read(24); p == nil {
		t.Errorf("reading [24] after DELETE coll: no problem, want one")
	}
}

// TestModelUserTypeFields checks the model of a non-frozen user type column: field writes
// last-write-wins per field, an assignment's null fields tombstones at ts − 1.
func TestModelUserTypeFields(t *testing.T) {
	tbl := checkTable(3, false)
	tbl.Coll = CollUDT
	h := newHistory(tbl)
	upd := func(c *CollOp) *Op { return &Op{Kind: Update, Row: []Val{intVal(0)}, Coll: c} }
	h.write(upd(&CollOp{Kind: CollAssign, Keys: []int{0, 1}, Vals: []int{0, 1}}), client.Quorum, 200, nil) // f0 10, f1 20
	h.write(upd(&CollOp{Kind: CollPut, Keys: []int{2}, Vals: []int{1}}), client.Quorum, 199, nil)          // f2 20, shadowed
	h.write(upd(&CollOp{Kind: CollPut, Keys: []int{1}, Vals: []int{0}}), client.Quorum, 300, nil)          // f1 10
	read := func(v any) []string {
		op := &Op{SelColl: true}
		op.Seq, op.Kind, op.Table, op.PK, op.CL = h.seq, Select, h.t, h.t.Partitions[0], client.All
		h.seq++
		op.Outcome = Outcome{Sent: true, Rows: [][]any{{int32(0), int32(0), nil, nil, v}}}
		op.Cols = []int{0, 1}
		problems, _ := h.m.Check(op)
		return problems
	}
	u := func(f0, f1, f2 any) schema.UDT {
		return schema.UDT{{Name: "f0", Value: f0}, {Name: "f1", Value: f1}, {Name: "f2", Value: f2}, {Name: "f3"}}
	}
	if p := read(u(int32(10), int32(10), nil)); p != nil {
		t.Errorf("reading {f0: 10, f1: 10}: %v, want no problem", p)
	}
	for _, bad := range []any{u(int32(10), int32(20), nil), u(int32(10), int32(10), int32(20)), u(nil, int32(10), nil), nil} {
		if p := read(bad); p == nil {
			t.Errorf("reading %v: no problem, want one", bad)
		}
	}
}
