package model

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/kvnode/kvnode/schema"
)

// Non-frozen collections. A table may have one collection column, a set<int>, a map<int, int>,
// a list<int> or a non-frozen user type pt (f0 int, f1 int, f2 int, f3 int), whose elements
// (fields) the server stores as cells of their own (Cassandra's cell-per-element storage).
// The model takes each possible element (a key of collKeys; a field; a list element, see
// below) as one more component of the row, reconciled last-write-wins on its own, like a
// regular cell:
//
//   - a whole assignment at ts (INSERT, UPDATE c = {...}) is a collection tombstone at ts − 1,
//     then the elements at ts: for an element, its value at ts if the new value has it, else a
//     tombstone at ts − 1 (a collection tombstone shadows what is at or before it, as a
//     tombstone wins a tie);
//   - c = null and DELETE c are a tombstone at ts of every element;
//   - s = s + {..}, m = m + {..}, m[k] = v write the elements named, s = s - {..},
//     m = m - {..}, m[k] = null and DELETE m[k] delete them, at ts;
//   - row, range and partition deletions delete every element, as every component.
//
// A user type's fields are a map's keys: u = {f0: v, ..} assigns (its null fields are
// tombstones at ts − 1), u.f = v and u.f = null write one field, DELETE u.f deletes one.
//
// A list's elements are identified by their cell keys (paths), which the client never sees:
// each append (l = l + [..]), prepend (l = [..] + l) or assignment writes elements of its own,
// so the workload gives every element a value no other write uses (CollOp.Base plus its
// position), and a value read back names the element. Each element is a component written only
// by its own write; the others can only delete it (an assignment's collection tombstone at its
// ts − 1, DELETE l, l = null, row, range and partition deletions). The order of a read's
// elements is the order of their paths (coordinator/shell's listPath): an appended element's
// timestamp, a prepended one's negation, then the write's random salt, then the position in
// the write; so elements of writes whose timestamps differ come in that order, and elements of
// writes with equal timestamps in blocks, each write's in its own order.
//
// A read must return a collection whose every element is one the element's options allow, and
// an element absent exactly where they allow none (an empty collection reads as null).

// CollKind is a table's collection column's kind.
type CollKind uint8

// The collection kinds.
const (
	NoColl CollKind = iota
	CollSet
	CollMap
	CollList
	CollUDT // a non-frozen user type, its fields as a map's keys
	numCollKinds
)

// collKeys are the elements of the sets and the keys of the maps; collVals the maps' values.
var (
	collKeys = []int32{-3, 1, 2, 500}
	collVals = []int32{10, 20}
)

// CollOpKind is what a write does to the collection column.
type CollOpKind uint8

// The collection operations.
const (
	CollAssign  CollOpKind = iota // c = {...} (Null: c = null)
	CollAdd                       // c = c + {...}
	CollRemove                    // c = c - {...}
	CollPut                       // m[k] = v (Null: m[k] = null)
	CollDelete                    // DELETE c (Keys nil) or DELETE m[k]
	CollPrepend                   // l = [...] + l
)

// CollOp is an operation on the collection column: the keys (indexes into collKeys) and for a
// map their values (indexes into collVals).
//
// For a list, Keys are the positions 0..n-1 of the elements written and Base the value of the
// first (the others follow it), unique in the history: listBase.
type CollOp struct {
	Kind CollOpKind
	Null bool
	Keys []int
	Vals []int
	Base int32
}

// listStride is how many elements a list write may write at most; an element's key is its
// value, Base + position, and Base is listStride times the writing operation's Seq.
const listStride = 8

// listBase is the Base of the list elements of operation seq.
func listBase(seq int) int32 { return int32(seq * listStride) }

// udtType is the non-frozen user type of CollUDT columns, created in every keyspace.
const udtType = "pt"

// udtFields are udtType's fields, one per key of collKeys.
var udtFields = []string{"f0", "f1", "f2", "f3"}

// collType is the CQL type of the collection column of kind k.
func collType(k CollKind) string {
	switch k {
	case CollSet:
		return "set<int>"
	case CollList:
		return "list<int>"
	case CollUDT:
		return udtType
	}
	return "map<int, int>"
}

// collName is the collection column's name.
const collName = "coll"

// collLiteral renders keys (and values) as a set or map literal.
func (c *CollOp) literal(k CollKind) string {
	var parts []string
	if k == CollList {
		for _, pos := range c.Keys {
			parts = append(parts, fmt.Sprint(c.Base+int32(pos)))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	for i, key := range c.Keys {
		if k == CollUDT {
			parts = append(parts, fmt.Sprintf("%s: %d", udtFields[key], collVals[c.Vals[i]]))
			continue
		}
		if k == CollMap && c.Kind != CollRemove {
			parts = append(parts, fmt.Sprintf("%d: %d", collKeys[key], collVals[c.Vals[i]]))
		} else {
			parts = append(parts, fmt.Sprint(collKeys[key]))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// setClause renders the operation as an UPDATE's SET item (or an INSERT's value for CollAssign).
func (c *CollOp) setClause(k CollKind) string {
	switch c.Kind {
	case CollAssign:
		if c.Null {
			return collName + " = NULL"
		}
		return collName + " = " + c.literal(k)
	case CollAdd:
		return collName + " = " + collName + " + " + c.literal(k)
	case CollRemove:
		return collName + " = " + collName + " - " + c.literal(k)
	case CollPrepend:
		return collName + " = " + c.literal(k) + " + " + collName
	}
	v := "NULL"
	if !c.Null {
		v = fmt.Sprint(collVals[c.Vals[0]])
	}
	if k == CollUDT {
		return fmt.Sprintf("%s.%s = %s", collName, udtFields[c.Keys[0]], v)
	}
	return fmt.Sprintf("%s[%d] = %s", collName, collKeys[c.Keys[0]], v)
}

// deleteItem renders a CollDelete as a DELETE's item.
func (c *CollOp) deleteItem(k CollKind) string {
	switch {
	case c.Keys == nil:
		return collName
	case k == CollUDT:
		return collName + "." + udtFields[c.Keys[0]]
	}
	return fmt.Sprintf("%s[%d]", collName, collKeys[c.Keys[0]])
}

// collOp draws an operation on t's collection column for an op of kind k (Insert: assignments
// only; DeleteCells: deletions only); nil when t has none or the dice say so.
func (w *Workload) collOp(t *Table, k OpKind) *CollOp {
	r := w.rng
	if t.Coll == NoColl || r.IntN(2) == 0 {
		return nil
	}
	keys := func(min int) ([]int, []int) {
		var ks, vs []int
		for i := range collKeys {
			if r.IntN(2) == 0 {
				ks, vs = append(ks, i), append(vs, r.IntN(len(collVals)))
			}
		}
		for len(ks) < min {
			ks, vs = []int{r.IntN(len(collKeys))}, []int{r.IntN(len(collVals))}
		}
		return ks, vs
	}
	c := &CollOp{}
	switch {
	case k == DeleteCells:
		c.Kind = CollDelete
		if (t.Coll == CollMap || t.Coll == CollUDT) && r.IntN(2) == 0 {
			c.Keys = []int{r.IntN(len(collKeys))}
		}
		return c
	case k == Insert:
		c.Kind = CollAssign
	case t.Coll == CollList:
		c.Kind = []CollOpKind{CollAssign, CollAdd, CollPrepend, CollAdd}[r.IntN(4)]
	case t.Coll == CollUDT:
		c.Kind = []CollOpKind{CollAssign, CollPut, CollPut}[r.IntN(3)]
	default:
		c.Kind = []CollOpKind{CollAssign, CollAdd, CollRemove, CollPut}[r.IntN(4)]
		if c.Kind == CollPut && t.Coll == CollSet {
			c.Kind = CollAdd
		}
	}
	if t.Coll == CollList {
		c.Null = c.Kind == CollAssign && r.IntN(6) == 0
		if !c.Null {
			for i := range 1 + r.IntN(3) {
				c.Keys = append(c.Keys, i)
			}
			if c.Kind == CollAssign && r.IntN(8) == 0 {
				c.Keys = nil // l = []: the collection tombstone alone
			}
		}
		return c // Base: set by Next, from the operation's Seq
	}
	switch c.Kind {
	case CollAssign:
		c.Null = r.IntN(6) == 0
		if !c.Null {
			min := 0
			if t.Coll == CollUDT {
				min = 1 // {} is no user type literal
			}
			c.Keys, c.Vals = keys(min)
		}
	case CollPut:
		c.Keys, c.Vals = []int{r.IntN(len(collKeys))}, []int{r.IntN(len(collVals))}
		c.Null = r.IntN(5) == 0
	default:
		c.Keys, c.Vals = keys(1)
	}
	return c
}

// elementEntry sets e to what op writes of element key of the collection column, and reports
// whether op writes it at all.
func elementEntry(op *Op, key int, e *entry) bool {
	c := op.Coll
	if c == nil {
		return false
	}
	i := slices.Index(c.Keys, key)
	val := func() []byte {
		if op.Table.Coll == CollSet {
			return []byte{}
		}
		return intVal(collVals[c.Vals[i]]).Enc
	}
	if op.Table.Coll == CollList { // key is an element's value: only its own write writes it
		i = -1
		if pos := key - int(c.Base); c.Kind != CollDelete && pos >= 0 && pos < len(c.Keys) {
			i = pos
		}
		val = func() []byte { return intVal(int32(key)).Enc }
	}
	switch c.Kind {
	case CollAssign:
		switch {
		case c.Null:
			e.tomb = true
		case i >= 0:
			e.val = val()
		default:
			e.tomb, e.ts = true, e.ts-1
		}
	case CollAdd, CollPrepend:
		if i < 0 {
			return false
		}
		e.val = val()
	case CollRemove:
		if i < 0 {
			return false
		}
		e.tomb = true
	case CollPut:
		if i < 0 {
			return false
		}
		if c.Null {
			e.tomb = true
		} else {
			e.val = val()
		}
	case CollDelete:
		if c.Keys != nil && i < 0 {
			return false
		}
		e.tomb = true
	}
	return true
}

// elementCol is the component index of element key (see component): below -1.
func elementCol(key int) int { return -2 - key }

// collResult returns, per key of collKeys, the encoded value a read returned for the collection
// column (nil: absent), or an error for a value that is no such collection.
func collResult(k CollKind, v any) ([][]byte, error) {
	out := make([][]byte, len(collKeys))
	if v == nil {
		return out, nil
	}
	idx := func(x any) (int, error) {
		n, ok := x.(int32)
		if i := slices.Index(collKeys, n); ok && i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("element %#v is not one the workload writes", x)
	}
	var prev int32
	switch k {
	case CollUDT:
		u, ok := v.(schema.UDT)
		if !ok {
			return nil, fmt.Errorf("value %#v (%T) for a %s column", v, v, udtType)
		}
		if len(u) > len(udtFields) {
			return nil, fmt.Errorf("user type value %v has %d fields, want at most %d", u, len(u), len(udtFields))
		}
		for i, f := range u {
			if f.Name != udtFields[i] {
				return nil, fmt.Errorf("user type value %v: field %d is %q, want %q", u, i, f.Name, udtFields[i])
			}
			if f.Value == nil {
				continue
			}
			n, ok := f.Value.(int32)
			if !ok {
				return nil, fmt.Errorf("user type field %s value %#v (%T)", f.Name, f.Value, f.Value)
			}
			out[i] = intVal(n).Enc
		}
	case CollSet:
		s, ok := v.(schema.Set)
		if !ok {
			return nil, fmt.Errorf("value %#v (%T) for a set<int> column", v, v)
		}
		for j, x := range s {
			i, err := idx(x)
			if err != nil {
				return nil, err
			}
			if j > 0 && collKeys[i] <= prev {
				return nil, fmt.Errorf("set %v is not in ascending order", s)
			}
			prev, out[i] = collKeys[i], []byte{}
		}
	default:
		m, ok := v.(schema.Map)
		if !ok {
			return nil, fmt.Errorf("value %#v (%T) for a map<int, int> column", v, v)
		}
		for j, p := range m {
			i, err := idx(p.Key)
			if err != nil {
				return nil, err
			}
			n, ok := p.Value.(int32)
			if !ok {
				return nil, fmt.Errorf("map value %#v (%T)", p.Value, p.Value)
			}
			if j > 0 && collKeys[i] <= prev {
				return nil, fmt.Errorf("map %v is not in ascending key order", m)
			}
			prev, out[i] = collKeys[i], intVal(n).Enc
		}
	}
	if !slices.ContainsFunc(out, func(b []byte) bool { return b != nil }) {
		return nil, fmt.Errorf("an empty collection (or a user type value without fields), which reads as null")
	}
	return out, nil
}

// listElem is one element a list write may have left in a row: its key (its value), the write
// and its position in it, and what a read may see of it.
type listElem struct {
	key  int
	op   *Op
	pos  int
	opts options
}

// listElems returns the list elements the writes ops may have left in row ck, with what a read
// may see of each.
func listElems(ops []*Op, ck []Val, read *Op, high int64) []*listElem {
	var out []*listElem
	for _, op := range ops {
		c := op.Coll
		if c == nil || op.Kind != Insert && op.Kind != Update || c.Null || !rowEqual(op.Row, ck) {
			continue
		}
		if c.Kind != CollAssign && c.Kind != CollAdd && c.Kind != CollPrepend {
			continue
		}
		for _, pos := range c.Keys {
			key := int(c.Base) + pos
			out = append(out, &listElem{key: key, op: op, pos: pos, opts: component(ops, ck, elementCol(key), read, high)})
		}
	}
	return out
}

// order is the first part of the element's path (coordinator/shell's listPath): its write's
// timestamp, negated for a prepend; certain is false when the write's server timestamp may lie
// anywhere after its interval (maybeLate).
func (e *listElem) order() (at int64, certain bool) {
	at = e.op.timestamp()
	if e.op.Coll.Kind == CollPrepend {
		at = -at
	}
	return at, e.op.HasTS || e.op.applied() != maybeLate
}

// checkList adds the problems of a read's list value v against s's list elements: every
// element returned one that may be there, every one that must be there returned, and their
// order that of their paths.
func checkList(s *rowState, v any, rowName string) []string {
	var got []any
	if v != nil {
		l, ok := v.(schema.List)
		if !ok {
			return []string{fmt.Sprintf("%s column %s: value %#v (%T) for a list<int> column", rowName, collName, v, v)}
		}
		if len(l) == 0 {
			return []string{fmt.Sprintf("%s column %s: an empty list, which reads as null", rowName, collName)}
		}
		got = l
	}
	byKey := map[int]*listElem{}
	for _, e := range s.list {
		byKey[e.key] = e
	}
	var problems []string
	seen := map[int]bool{}
	closed := map[*Op]bool{} // writes whose block of elements the read has left
	var prev, prevCertain *listElem
	for i, x := range got {
		n, ok := x.(int32)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s column %s: element %d is %#v (%T)", rowName, collName, i, x, x))
			continue
		}
		e := byKey[int(n)]
		switch {
		case e == nil:
			problems = append(problems, fmt.Sprintf("%s has list element %d at position %d, which no write of the row wrote", rowName, n, i))
			continue
		case seen[e.key]:
			problems = append(problems, fmt.Sprintf("%s has list element %d twice", rowName, n))
			continue
		case !e.opts.accepts(intVal(n).Enc):
			problems = append(problems, fmt.Sprintf("%s has list element %d (position %d of #%d) at position %d, want %s", rowName, n, e.pos, e.op.Seq, i, e.opts.String(Int, false)))
		}
		seen[e.key] = true
		if prev != nil && prev.op != e.op {
			closed[prev.op] = true
			if closed[e.op] {
				problems = append(problems, fmt.Sprintf("%s: the elements of write #%d are not together (element %d at position %d comes after one of #%d)", rowName, e.op.Seq, n, i, prev.op.Seq))
			}
		}
		if prev != nil && prev.op == e.op && prev.pos >= e.pos {
			problems = append(problems, fmt.Sprintf("%s: list element %d (position %d of #%d) comes after element %d (position %d): out of the write's order", rowName, n, e.pos, e.op.Seq, prev.key, prev.pos))
		}
		prev = e
		at, certain := e.order()
		if !certain {
			continue
		}
		if prevCertain != nil && prevCertain.op != e.op {
			if pat, _ := prevCertain.order(); pat > at {
				problems = append(problems, fmt.Sprintf("%s: list element %d (of #%d, path time %d) comes after element %d (of #%d, path time %d): out of order", rowName, n, e.op.Seq, at, prevCertain.key, prevCertain.op.Seq, pat))
			}
		}
		prevCertain = e
	}
	for _, e := range s.list {
		if !seen[e.key] && !e.opts.accepts(nil) {
			problems = append(problems, fmt.Sprintf("%s lacks list element %d (position %d of #%d), want %s", rowName, e.key, e.pos, e.op.Seq, e.opts.String(Int, false)))
		}
	}
	return problems
}

// checkCollection adds the problems of a read's collection value v against s's element options.
func checkCollection(t *Table, s *rowState, v any, rowName string) []string {
	if t.Coll == CollList {
		return checkList(s, v, rowName)
	}
	got, err := collResult(t.Coll, v)
	if err != nil {
		return []string{fmt.Sprintf("%s column %s: %v", rowName, collName, err)}
	}
	var problems []string
	for i, o := range s.elems {
		if !o.accepts(got[i]) {
			what := "absent"
			if got[i] != nil {
				what = "present (" + formatEnc(Int, got[i]) + ")"
			}
			if bytes.Equal(got[i], []byte{}) {
				what = "present"
			}
			name := fmt.Sprintf("element %d", collKeys[i])
			if t.Coll == CollUDT {
				name = "field " + udtFields[i]
			}
			problems = append(problems, fmt.Sprintf("%s has %s of %s %s, want %s", rowName, name, collName, what, o.String(Int, t.Coll == CollSet)))
		}
	}
	return problems
}
