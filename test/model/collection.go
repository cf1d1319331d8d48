package model

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/kvnode/kvnode/schema"
)

// Non-frozen collections. A table may have one collection column, a set<int> or a map<int, int>,
// whose elements the server stores as cells of their own (Cassandra's cell-per-element storage).
// The model takes each possible element (a key of collKeys) as one more component of the row,
// reconciled last-write-wins on its own, like a regular cell:
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
// A read must return a collection whose every element is one the element's options allow, and
// an element absent exactly where they allow none (an empty collection reads as null).

// CollKind is a table's collection column's kind.
type CollKind uint8

// The collection kinds.
const (
	NoColl CollKind = iota
	CollSet
	CollMap
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
	CollAssign CollOpKind = iota // c = {...} (Null: c = null)
	CollAdd                      // c = c + {...}
	CollRemove                   // c = c - {...}
	CollPut                      // m[k] = v (Null: m[k] = null)
	CollDelete                   // DELETE c (Keys nil) or DELETE m[k]
)

// CollOp is an operation on the collection column: the keys (indexes into collKeys) and for a
// map their values (indexes into collVals).
type CollOp struct {
	Kind CollOpKind
	Null bool
	Keys []int
	Vals []int
}

// collType is the CQL type of the collection column of kind k.
func collType(k CollKind) string {
	if k == CollSet {
		return "set<int>"
	}
	return "map<int, int>"
}

// collName is the collection column's name.
const collName = "coll"

// collLiteral renders keys (and values) as a set or map literal.
func (c *CollOp) literal(k CollKind) string {
	var parts []string
	for i, key := range c.Keys {
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
	}
	v := "NULL"
	if !c.Null {
		v = fmt.Sprint(collVals[c.Vals[0]])
	}
	return fmt.Sprintf("%s[%d] = %s", collName, collKeys[c.Keys[0]], v)
}

// deleteItem renders a CollDelete as a DELETE's item.
func (c *CollOp) deleteItem() string {
	if c.Keys == nil {
		return collName
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
		if t.Coll == CollMap && r.IntN(2) == 0 {
			c.Keys = []int{r.IntN(len(collKeys))}
		}
		return c
	case k == Insert:
		c.Kind = CollAssign
	default:
		c.Kind = []CollOpKind{CollAssign, CollAdd, CollRemove, CollPut}[r.IntN(4)]
		if c.Kind == CollPut && t.Coll == CollSet {
			c.Kind = CollAdd
		}
	}
	switch c.Kind {
	case CollAssign:
		c.Null = r.IntN(6) == 0
		if !c.Null {
			c.Keys, c.Vals = keys(0)
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
	case CollAdd:
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
		return nil, fmt.Errorf("an empty collection, which reads as null")
	}
	return out, nil
}

// checkCollection adds the problems of a read's collection value v against s's element options.
func checkCollection(t *Table, s *rowState, v any, rowName string) []string {
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
			problems = append(problems, fmt.Sprintf("%s has element %d of %s %s, want %s", rowName, collKeys[i], collName, what, o.String(Int, t.Coll == CollSet)))
		}
	}
	return problems
}
