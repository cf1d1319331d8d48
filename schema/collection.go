package schema

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// Non-frozen collections. A column of type list<T>, set<T> or map<K, V> (written without frozen)
// is a multi-cell column: replicas store one cell per element (cell.Column.Path) and a collection
// tombstone, and its Type is the canonical name without the frozen wrapper ("list<int>",
// "map<text, frozen<list<int>>>"). Its value, as clients read and bind it, is the frozen
// collection's (Frozen), so every value function (Check, Compare, Decode, the native encoding)
// takes the frozen type's rules. Element types are frozen, as Cassandra requires.

// MultiCell reports whether t is a non-frozen collection, stored a cell per element.
func (t Type) MultiCell() bool {
	s := string(t)
	return strings.HasPrefix(s, "list<") || strings.HasPrefix(s, "set<") || strings.HasPrefix(s, "map<") || strings.HasPrefix(s, "udt<")
}

// FieldPath returns the element path of field i of a non-frozen user type: its position, 2 bytes
// big-endian (Cassandra's cell path of a field).
func FieldPath(i int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(i)) }

// ParamKind returns the parametric kind of c's type (a non-frozen collection's or user type's
// too; NotParametric for a scalar), without parsing the type again.
func (c *Column) ParamKind() ParamKind {
	n := c.parsed
	if n == nil {
		n = c.Type.node()
	}
	if n == nil {
		return NotParametric
	}
	return n.kind
}

// Frozen returns the type of t's values: for a non-frozen collection the frozen collection of
// the same elements, t itself for every other type.
func (t Type) Frozen() Type {
	if t.MultiCell() {
		return "frozen<" + t + ">"
	}
	return t
}

// FormatCollections is the data format version from which a release of kvnode stores the
// elements of non-frozen collections (replica keys of their own) and decodes such columns in a
// table's schema. A node of an older format refuses a schema with one (it parses list<int> as a
// refused type), so coordinators refuse such a table while a member of an older format remains.
const FormatCollections = 7

// CollectionsFormatFeatures returns the names of t's features that a release of a data format
// before FormatCollections cannot decode: its non-frozen collection columns, dropped ones
// included.
func (t *Table) CollectionsFormatFeatures() []string {
	if t.dropped {
		return nil
	}
	var fs []string
	for _, c := range t.Columns {
		if c.Type.MultiCell() {
			fs = append(fs, "column "+cql.QuoteIdent(c.Name)+" of type "+c.Type.CQL())
		}
	}
	for _, c := range t.droppedCols {
		if c.Type.MultiCell() {
			fs = append(fs, "a record of dropped column "+cql.QuoteIdent(c.Name)+" of type "+c.Type.CQL())
		}
	}
	return fs
}

// MaxElementKey is the largest set element or map key of a non-frozen collection, in bytes:
// Cassandra keeps them in cell paths with a 2-byte length.
const MaxElementKey = 1<<16 - 1

// ListPathLen is the length of a list element's path: the ordering key the coordinator gives
// each element it appends or prepends (see ListPath).
const ListPathLen = 16

// CheckElement checks one element cell of non-frozen collection type t: its path (a set's
// element, a map's key, a list's ordering key) and, unless it is a tombstone, its value (empty
// for a set, the value for a map or list).
func (t Type) CheckElement(path, value []byte, tombstone bool) error {
	kind, elems := t.Params()
	if !t.MultiCell() {
		return fmt.Errorf("an element of a column of type %s, which is no non-frozen collection", t.CQL())
	}
	switch kind {
	case ParamUDT:
		if len(path) != 2 || int(binary.BigEndian.Uint16(path)) >= len(elems) {
			return fmt.Errorf("field path %x of a user type of %d fields", path, len(elems))
		}
		if tombstone {
			return nil
		}
		return elems[binary.BigEndian.Uint16(path)].Check(nonNilBytes(value))
	case ParamList:
		if len(path) != ListPathLen {
			return fmt.Errorf("list element path of %d bytes, want %d", len(path), ListPathLen)
		}
	case ParamSet, ParamMap:
		if len(path) > MaxElementKey {
			return fmt.Errorf("%s of %d bytes: at most %d bytes", elementKeyName(kind), len(path), MaxElementKey)
		}
		if err := elems[0].Check(path); err != nil {
			return fmt.Errorf("%s: %w", elementKeyName(kind), err)
		}
	}
	if tombstone {
		return nil
	}
	switch kind {
	case ParamSet:
		if len(value) != 0 {
			return fmt.Errorf("set element with a value of %d bytes, want none", len(value))
		}
		return nil
	case ParamList:
		return elems[0].Check(nonNilBytes(value))
	default:
		return elems[1].Check(nonNilBytes(value))
	}
}

// elementKeyName names what a set's or map's element path is.
func elementKeyName(kind ParamKind) string {
	if kind == ParamMap {
		return "map key"
	}
	return "set element"
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// CollectionOp says what a write does to a non-frozen collection column (Cell.Op).
type CollectionOp uint8

// The collection operations. CollectionRemove on a list and CollectionPut on a list read the
// list before writing (as in Cassandra); none of the others reads.
const (
	// CollectionAssign replaces the whole value: a collection tombstone at the write's
	// timestamp − 1, then the elements (Cell.Value, a value of the column's type). A null
	// Value (DELETE c, c = null) is a collection tombstone at the write's timestamp.
	CollectionAssign CollectionOp = iota
	// CollectionAppend adds Value's elements: s = s + {..}, m = m + {..}, l = l + [..].
	CollectionAppend
	// CollectionPrepend adds Value's elements before the list's: l = [..] + l.
	CollectionPrepend
	// CollectionRemove deletes elements: s = s - {..} and l = l - [..] by value (Value is of
	// the column's type), m = m - {..} by key (Value is a set of the key type).
	CollectionRemove
	// CollectionPut sets element Element (a map key, or a list index as an int) to Value, or
	// deletes it when Value is nil: m[k] = v, l[i] = v, DELETE m[k], DELETE l[i].
	CollectionPut
)

// Reads reports whether c needs the list's current value: an operation on a list by index or
// by value.
func (c Cell) Reads() bool {
	if !c.Column.Type.MultiCell() || (c.Op != CollectionPut && c.Op != CollectionRemove) {
		return false
	}
	kind, _ := c.Column.Type.Params()
	return kind == ParamList
}

// elementColumn is a stand-in column for a bind marker or literal that gives part of column c:
// named as Cassandra names the marker (key(m), value(m), idx(l)), of type typ.
func elementColumn(c *Column, name string, typ Type) *Column {
	return &Column{Name: name, Type: typ, Kind: RegularColumn, Index: c.Index, parsed: typ.node()}
}

// opName writes an assignment as Cassandra's messages quote it.
func opName(a cql.Assignment) string {
	switch {
	case a.Element != nil:
		return cql.QuoteIdent(a.Column.Name) + "[" + cql.Format(a.Element) + "] = " + cql.Format(a.Value)
	case a.Field != nil:
		return cql.QuoteIdent(a.Column.Name) + "." + cql.QuoteIdent(a.Field.Name) + " = " + cql.Format(a.Value)
	case a.Prepend:
		return cql.QuoteIdent(a.Column.Name) + " = " + cql.Format(a.Value) + " + " + cql.QuoteIdent(a.Column.Name)
	}
	return cql.QuoteIdent(a.Column.Name) + " = " + cql.QuoteIdent(a.Column.Name) + " " + a.Op.String() + " " + cql.Format(a.Value)
}

// collectionOp validates a (an element assignment or an operation, c[e] = v or c = c ± v) on
// column c and returns the cell it writes; ok is false when an unset marker leaves it out.
func (b *binder) collectionOp(c *Column, a cql.Assignment) (cl Cell, ok bool, err error) {
	kind, elems := c.Type.Params()
	if a.Field != nil || kind == ParamUDT {
		return b.fieldOp(c, a)
	}
	if !c.Type.MultiCell() {
		what := "non counter column"
		if kind == ParamList || kind == ParamSet || kind == ParamMap {
			what = "frozen collection column"
		} else if a.Element != nil {
			what = "non collection column"
		}
		return Cell{}, false, fmt.Errorf("invalid operation (%s) for %s %s", opName(a), what, cql.QuoteIdent(c.Name))
	}
	cl = Cell{Column: c}
	if a.Element != nil {
		var key, value *Column
		switch kind {
		case ParamMap:
			key, value = elementColumn(c, "key("+c.Name+")", elems[0]), elementColumn(c, "value("+c.Name+")", elems[1])
		case ParamList:
			key, value = elementColumn(c, "idx("+c.Name+")", TypeInt), elementColumn(c, "value("+c.Name+")", elems[0])
		default:
			return Cell{}, false, fmt.Errorf("invalid operation (%s) for set column %s: sets have no elements to assign; add or remove them (s = s + {...})", opName(a), cql.QuoteIdent(c.Name))
		}
		k, ok, err := b.term(key, a.Element)
		switch {
		case err != nil:
			return Cell{}, false, err
		case !ok && !b.check:
			return Cell{}, false, fmt.Errorf("invalid unset %s for column %s", key.Name, cql.QuoteIdent(c.Name))
		case ok && k == nil:
			return Cell{}, false, fmt.Errorf("invalid null %s for column %s", key.Name, cql.QuoteIdent(c.Name))
		case kind == ParamMap && len(k) > MaxElementKey:
			return Cell{}, false, fmt.Errorf("map key of column %s is %d bytes; at most %d bytes", cql.QuoteIdent(c.Name), len(k), MaxElementKey)
		}
		v, vok, err := b.term(value, a.Value)
		if err != nil {
			return Cell{}, false, err
		}
		cl.Op, cl.Element, cl.Value = CollectionPut, k, v
		return cl, ok && vok, nil
	}
	switch {
	case a.Op == cql.PLUS && a.Prepend:
		if kind != ParamList {
			return Cell{}, false, fmt.Errorf("invalid operation (%s) for non list column %s", opName(a), cql.QuoteIdent(c.Name))
		}
		cl.Op = CollectionPrepend
	case a.Op == cql.PLUS:
		cl.Op = CollectionAppend
	default:
		cl.Op = CollectionRemove
	}
	vc := c
	if cl.Op == CollectionRemove && kind == ParamMap { // m = m - {keys}: a set of the key type
		vc = elementColumn(c, c.Name, Type("frozen<set<"+string(elems[0])+">>"))
	}
	v, ok, err := b.term(vc, a.Value)
	switch {
	case err != nil:
		return Cell{}, false, err
	case ok && v == nil: // adding or removing null does nothing, as in Cassandra
		return Cell{}, false, nil
	}
	cl.Value = v
	if err := checkElementKeys(c, kind, cl); ok && err != nil {
		return Cell{}, false, err
	}
	return cl, ok, nil
}

// checkElementKeys refuses a set element or map key over MaxElementKey bytes in what cl writes.
func checkElementKeys(c *Column, kind ParamKind, cl Cell) error {
	if cl.Value == nil || cl.Op == CollectionRemove || (kind != ParamSet && kind != ParamMap) {
		return nil
	}
	keys, _, err := SplitCollection(cl.Value, kind == ParamMap)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if len(k) > MaxElementKey {
			return fmt.Errorf("%s of column %s is %d bytes; at most %d bytes", elementKeyName(kind), cql.QuoteIdent(c.Name), len(k), MaxElementKey)
		}
	}
	return nil
}

// SplitCollection splits v, the value of a list, set or map (isMap), into its elements: a list's
// or set's elements in keys (values nil), a map's keys and values.
func SplitCollection(v []byte, isMap bool) (keys, values [][]byte, err error) {
	n, rest, err := collectionCount(v)
	if err != nil {
		return nil, nil, err
	}
	keys = make([][]byte, n)
	if isMap {
		values = make([][]byte, n)
	}
	for i := range n {
		if keys[i], rest, err = collectionElement(rest); err != nil {
			return nil, nil, err
		}
		if isMap {
			if values[i], rest, err = collectionElement(rest); err != nil {
				return nil, nil, err
			}
		}
	}
	if len(rest) != 0 {
		return nil, nil, fmt.Errorf("%d bytes after the last of %d elements", len(rest), n)
	}
	return keys, values, nil
}

// JoinCollection is the inverse of SplitCollection: the value of the collection of these
// elements (values nil for a list or set), in the order given.
func JoinCollection(keys, values [][]byte) []byte {
	size := 4
	for i, k := range keys {
		size += 4 + len(k)
		if values != nil {
			size += 4 + len(values[i])
		}
	}
	out := make([]byte, 0, size)
	out = binary.BigEndian.AppendUint32(out, uint32(len(keys)))
	for i, k := range keys {
		out = appendElement(out, k)
		if values != nil {
			out = appendElement(out, values[i])
		}
	}
	return out
}

// checkCollectionCells refuses set elements and map keys over MaxElementKey bytes in the whole
// values w assigns to non-frozen collections (the operations were checked as they were bound).
func checkCollectionCells(w *Write) error {
	for _, c := range w.Cells {
		if c.Op != CollectionAssign || !c.Column.Type.MultiCell() {
			continue
		}
		kind, _ := c.Column.Type.Params()
		if err := checkElementKeys(c.Column, kind, c); err != nil {
			return err
		}
	}
	return nil
}

// elementMarker is a term of a collection operation, with the name and type its bind marker
// has.
type elementMarker struct {
	term      cql.Term
	col, name string
	typ       Type
}

// elementMarkers returns the terms of a collection operation a (an element assignment or
// deletion, or c = c ± v) on a column of t, named as Cassandra names their markers.
func elementMarkers(t *Table, a cql.Assignment) []elementMarker {
	c, ok := t.Column(a.Column.Name)
	if !ok {
		return nil
	}
	kind, elems := c.Type.Params()
	var out []elementMarker
	if a.Field != nil {
		if u, ok := c.Type.UserType(); ok {
			if i := slices.Index(u.FieldNames, a.Field.Name); i >= 0 && a.Value != nil {
				out = append(out, elementMarker{a.Value, c.Name, c.Name + "." + a.Field.Name, u.FieldTypes[i]})
			}
		}
		return out
	}
	if a.Element != nil {
		switch kind {
		case ParamMap:
			out = append(out, elementMarker{a.Element, c.Name, "key(" + c.Name + ")", elems[0]})
			if a.Value != nil {
				out = append(out, elementMarker{a.Value, c.Name, "value(" + c.Name + ")", elems[1]})
			}
		case ParamList:
			out = append(out, elementMarker{a.Element, c.Name, "idx(" + c.Name + ")", TypeInt})
			if a.Value != nil {
				out = append(out, elementMarker{a.Value, c.Name, "value(" + c.Name + ")", elems[0]})
			}
		}
		return out
	}
	typ := c.Type
	if kind == ParamMap && a.Op == cql.MINUS {
		typ = Type("frozen<set<" + string(elems[0]) + ">>")
	}
	return append(out, elementMarker{a.Value, c.Name, c.Name, typ})
}

// CollectionKind returns the kind of c's collection type (ParamList, ParamSet or ParamMap;
// NotParametric for any other type), without parsing the type again (see Column.Check).
func (c *Column) CollectionKind() ParamKind {
	n := c.parsed
	if n == nil {
		n = c.Type.node()
	}
	if n == nil || (n.kind != ParamList && n.kind != ParamSet && n.kind != ParamMap) {
		return NotParametric
	}
	return n.kind
}

// CompareKeys orders two set elements or two map keys of c, a set or map column, by the
// element or key type's order (Type.Compare), without parsing the type again.
func (c *Column) CompareKeys(a, b []byte) int {
	n := c.parsed
	if n == nil {
		n = c.Type.node()
	}
	return n.elems[0].compare(a, b)
}

// elementSel is a bound element or slice selection of a SELECT item (cql.SelectElement).
type elementSel struct {
	col      *Column
	name     string // the result column's name: m['k'], s[1..3]
	typ      Type   // the result's type
	slice    bool
	key      []byte // an element's key
	from, to []byte // a slice's bounds; nil for an open end
}

// bindElement binds item i of r, an element or slice selection e of column c.
func (r *Read) bindElement(i int, c *Column, e *cql.ElementSelection, b *binder) error {
	if r.Funcs == nil {
		r.Funcs = make([]cql.SelectKind, len(r.Columns))
	}
	for len(r.Funcs) < len(r.Columns) {
		r.Funcs = append(r.Funcs, cql.SelectColumn)
	}
	if r.elements == nil {
		r.elements = make([]*elementSel, len(r.Funcs))
	}
	for len(r.elements) < len(r.Funcs) {
		r.elements = append(r.elements, nil)
	}
	kind, elems := c.Type.Params()
	switch kind {
	case ParamMap, ParamSet:
	case ParamList:
		return fmt.Errorf("element selection is only allowed on sets and maps, but %s is a list", cql.QuoteIdent(c.Name))
	default:
		return fmt.Errorf("element selection is only allowed on sets and maps, but %s is %s", cql.QuoteIdent(c.Name), c.Type.CQL())
	}
	sel := &elementSel{col: c, name: c.Name + cql.ElementSelectionString(e), slice: e.Slice, typ: c.Type}
	if !e.Slice {
		sel.typ = elems[0]
		if kind == ParamMap {
			sel.typ = elems[1]
		}
	}
	name := selectionMarkerName(c, kind)
	bind := func(t cql.Term) ([]byte, error) {
		if t == nil {
			return nil, nil
		}
		v, ok, err := b.term(elementColumn(c, name, elems[0]), t)
		switch {
		case err != nil:
			return nil, err
		case !ok && !b.check:
			return nil, fmt.Errorf("invalid unset %s in the selection of %s", name, cql.QuoteIdent(c.Name))
		case ok && v == nil:
			return nil, fmt.Errorf("invalid null %s in the selection of %s", name, cql.QuoteIdent(c.Name))
		}
		return v, nil
	}
	var err error
	if sel.key, err = bind(e.Key); err != nil {
		return err
	}
	if sel.from, err = bind(e.From); err != nil {
		return err
	}
	if sel.to, err = bind(e.To); err != nil {
		return err
	}
	r.elements[i], r.Funcs[i] = sel, cql.SelectElement
	return nil
}

// selectionMarkerName names the bind marker of an element selection's key or bound.
func selectionMarkerName(c *Column, kind ParamKind) string {
	if kind == ParamMap {
		return "key(" + c.Name + ")"
	}
	return "value(" + c.Name + ")"
}

// selectionMarkers returns the terms of st's element selections with their markers' names and
// types.
func selectionMarkers(t *Table, st *cql.SelectStmt) []elementMarker {
	var out []elementMarker
	for i, f := range st.Funcs {
		if f.Element == nil || i >= len(st.Columns) {
			continue
		}
		c, ok := t.Column(st.Columns[i].Name)
		if !ok {
			continue
		}
		kind, elems := c.Type.Params()
		if kind != ParamMap && kind != ParamSet {
			continue
		}
		for _, x := range []cql.Term{f.Element.Key, f.Element.From, f.Element.To} {
			if x != nil {
				out = append(out, elementMarker{x, c.Name, selectionMarkerName(c, kind), elems[0]})
			}
		}
	}
	return out
}

// SelectElement returns what item i of r, an element or slice selection, selects of v, the
// whole value of its map or set: the map's value or the set's element at the key (nil when
// absent), or the elements between the bounds, both included (nil when none is).
func (r *Read) SelectElement(i int, v []byte) []byte {
	sel := r.elements[i]
	if v == nil || sel == nil {
		return nil
	}
	isMap := sel.col.CollectionKind() == ParamMap
	if sel.col.CollectionKind() == NotParametric { // a frozen collection
		kind, _ := sel.col.Type.Params()
		isMap = kind == ParamMap
	}
	keys, values, err := SplitCollection(v, isMap)
	if err != nil {
		return nil
	}
	cmp := sel.col.CompareKeys
	if !sel.slice {
		for j, k := range keys {
			if cmp(k, sel.key) == 0 {
				if isMap {
					return values[j]
				}
				return k
			}
		}
		return nil
	}
	var ks, vs [][]byte
	for j, k := range keys {
		if (sel.from != nil && cmp(k, sel.from) < 0) || (sel.to != nil && cmp(k, sel.to) > 0) {
			continue
		}
		ks = append(ks, k)
		if isMap {
			vs = append(vs, values[j])
		}
	}
	if len(ks) == 0 {
		return nil
	}
	return JoinCollection(ks, vs)
}

// fieldOp validates a, an assignment to a field of column c (c.f = v; v null for DELETE c.f),
// and returns the cell it writes: the field's element of a non-frozen user type.
func (b *binder) fieldOp(c *Column, a cql.Assignment) (cl Cell, ok bool, err error) {
	u, isUDT := c.Type.UserType()
	switch {
	case !isUDT || a.Field == nil:
		return Cell{}, false, fmt.Errorf("invalid operation (%s) for column %s of type %s", opName(a), cql.QuoteIdent(c.Name), c.Type.CQL())
	case !c.Type.MultiCell():
		return Cell{}, false, fmt.Errorf("invalid operation (%s) for frozen user-defined type column %s: a frozen value is written whole", opName(a), cql.QuoteIdent(c.Name))
	}
	i := slices.Index(u.FieldNames, a.Field.Name)
	if i < 0 {
		return Cell{}, false, fmt.Errorf("user type %s has no field %s", qualified(u.Keyspace, u.Name), cql.QuoteIdent(a.Field.Name))
	}
	v, ok, err := b.term(elementColumn(c, c.Name+"."+a.Field.Name, u.FieldTypes[i]), a.Value)
	if err != nil {
		return Cell{}, false, err
	}
	return Cell{Column: c, Op: CollectionPut, Element: FieldPath(i), Value: v}, ok, nil
}

// SplitFields splits v, a well-formed value of a user type, into its fields (nil for null; the
// fields missing at the end are left out).
func SplitFields(v []byte) [][]byte {
	var out [][]byte
	for len(v) > 0 {
		f, rest, err := paramElement(v)
		if err != nil {
			return out
		}
		out, v = append(out, f), rest
	}
	return out
}

// JoinFields is the inverse of SplitFields: the canonical value of a user type with these fields
// (nil for null), trailing null fields left out.
func JoinFields(fields [][]byte) []byte {
	for len(fields) > 0 && fields[len(fields)-1] == nil {
		fields = fields[:len(fields)-1]
	}
	out := []byte{}
	for _, f := range fields {
		if f == nil {
			out = binary.BigEndian.AppendUint32(out, ^uint32(0))
			continue
		}
		out = appendElement(out, f)
	}
	return out
}
