package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// setCollection makes w's writes element updates of column name, a non-frozen set, list or map
// whose elements (and keys) are text, int or bigint.
func (w *workload) setCollection(name string) error {
	c, ok := w.table.Column(name)
	if !ok {
		return fmt.Errorf("bench: --collection %s: table %s has no such column", name, w.table.QualifiedName())
	}
	_, elems := c.Type.Params()
	if !c.Type.MultiCell() {
		return fmt.Errorf("bench: --collection %s: column %s is %s, not a non-frozen set, list or map", name, cql.QuoteIdent(c.Name), c.Type.CQL())
	}
	for _, e := range elems {
		if e != schema.TypeText && e != schema.TypeInt && e != schema.TypeBigInt {
			return fmt.Errorf("bench: --collection %s: column %s is %s; kvnode bench writes elements of text, int or bigint", name, cql.QuoteIdent(c.Name), c.Type.CQL())
		}
	}
	w.coll = c
	return nil
}

// writeStatement is the statement a write binds: the INSERT of every column, or with a
// collection the update of one element.
func (w *workload) writeStatement() string {
	if w.coll == nil {
		return w.insertBound
	}
	return w.updateText(nil)
}

// updateText is the element update of w.coll with the values lits (literals), or with bind
// markers when lits is nil: SET c = c + {e} | c = c + [e] | c[k] = v, WHERE every key column.
func (w *workload) updateText(lits []string) string {
	mark := func(i int) string {
		if lits == nil {
			return "?"
		}
		return lits[i]
	}
	name := cql.QuoteIdent(w.coll.Name)
	kind, _ := w.coll.Type.Params()
	var set string
	n := 1
	switch kind {
	case schema.ParamSet:
		set = name + " = " + name + " + {" + mark(0) + "}"
	case schema.ParamList:
		set = name + " = " + name + " + [" + mark(0) + "]"
	default:
		set = name + "[" + mark(0) + "] = " + mark(1)
		n = 2
	}
	var where []string
	for _, c := range w.table.Columns[:len(w.table.PartitionKey)+len(w.table.Clustering)] {
		where = append(where, cql.QuoteIdent(c.Name)+" = "+mark(n))
		n++
	}
	return "UPDATE " + w.table.QualifiedName() + " SET " + set + " WHERE " + strings.Join(where, " AND ")
}

// collectionWrite fills o, a write, as an element update: a random element (for a map a random
// key and value) of the collection, in one of the partition's RowsPerPartition rows. Bound, a
// set's or list's element goes as a one-element collection, as the statement's marker is the
// whole collection.
func (w *workload) collectionWrite(o op, r *rand.Rand, cold int) op {
	kind, elems := w.coll.Type.Params()
	e := randomValue(elems[0], r)
	o.args = []any{e}
	if kind == schema.ParamMap {
		o.args = append(o.args, randomValue(elems[1], r))
	}
	lits := make([]string, 0, 4)
	for _, a := range o.args {
		var b strings.Builder
		appendLiteral(&b, a)
		lits = append(lits, b.String())
	}
	if kind != schema.ParamMap {
		o.args[0] = []any{e}
	}
	o.args = append(o.args, w.key(o.hot, cold))
	row := r.IntN(RowsPerPartition)
	for _, c := range w.table.Clustering {
		o.args = append(o.args, rowValue(c.Type, row))
	}
	if w.literal {
		for _, a := range o.args[len(lits):] {
			var b strings.Builder
			appendLiteral(&b, a)
			lits = append(lits, b.String())
		}
		o.stmt = w.updateText(lits)
	}
	return o
}
