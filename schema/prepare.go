package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cql"
)

// WriteKind says which statement a Write comes from.
type WriteKind uint8

// The write kinds.
const (
	// WriteInsert writes cells and marks the row as existing (a row written
	// by INSERT exists even if all its regular cells are null).
	WriteInsert WriteKind = iota + 1
	// WriteUpdate writes cells only.
	WriteUpdate
	// WriteDelete deletes cells (Cells set) or rows (Cells empty).
	WriteDelete
)

// String returns "INSERT", "UPDATE" or "DELETE".
func (k WriteKind) String() string {
	switch k {
	case WriteInsert:
		return "INSERT"
	case WriteUpdate:
		return "UPDATE"
	case WriteDelete:
		return "DELETE"
	}
	return "WriteKind(" + strconv.Itoa(int(k)) + ")"
}

// Cell is one cell a write sets or deletes, or for a non-frozen collection column one
// operation on its elements (see CollectionOp).
type Cell struct {
	Column *Column
	Value  []byte // canonical encoding; nil deletes the cell
	// Op is what the write does to a non-frozen collection column; CollectionAssign, the zero
	// value, for every other column.
	Op CollectionOp
	// Element is the map key or list index (an int) of CollectionPut.
	Element []byte
}

// Bound is one end of a range of clustering values.
type Bound struct {
	Value     []byte
	Inclusive bool // <= or >= rather than < or >
}

// ClusteringRange selects rows of a partition by their clustering key:
// the rows whose first len(Prefix) clustering values equal Prefix and,
// when Lower or Upper is set, whose next clustering value (column
// len(Prefix)) lies within those bounds. The zero ClusteringRange selects
// the whole partition. Ranges end at the clustering key; what is supported
// in WHERE is exactly: = on a prefix of the clustering columns, then
// optionally one or two bounds (<, <=, >, >=) on the next one.
type ClusteringRange struct {
	Prefix [][]byte
	Lower  *Bound
	Upper  *Bound
}

// IsRow reports whether r selects exactly one row of table t: = on every
// clustering column (always true for a table without clustering columns).
func (r ClusteringRange) IsRow(t *Table) bool {
	return len(r.Prefix) == len(t.Clustering) && r.Lower == nil && r.Upper == nil
}

// Write is a validated INSERT, UPDATE or DELETE, as plain data.
type Write struct {
	Table *Table
	Kind  WriteKind
	// PartitionKey holds the partition key values in key order. The
	// partition key for the token is the single value, or for a composite
	// key the values composed as Cassandra does (package partitioner).
	PartitionKey [][]byte
	// Clustering is the row for INSERT and UPDATE and for DELETE of cells
	// (IsRow is true), or the rows a DELETE without columns removes: one
	// row, a range, or the whole partition.
	Clustering ClusteringRange
	// Cells are the cells written (INSERT, UPDATE; nil Value for NULL) or
	// deleted (DELETE with columns; Value always nil), in table column
	// order. An INSERT of key columns only has no cells.
	Cells []Cell
	// Timestamp is the USING TIMESTAMP value when HasTimestamp; otherwise
	// the coordinator assigns the write timestamp.
	Timestamp    int64
	HasTimestamp bool
	// TTL is the time to live in seconds of what an INSERT or UPDATE writes
	// (its cells, and the row marker of an INSERT): USING TTL's value, or
	// the table's default_time_to_live when it gives none (or binds its
	// marker unset); 0 for none (USING TTL 0, or a null marker).
	TTL int32
	// Timeout is the USING TIMEOUT duration; 0 without one.
	Timeout time.Duration
	// Scan is set for a SELECT without a partition key restriction (IsScan): it reads the
	// partitions whose tokens lie in Tokens, in token order, and PartitionKey is nil.
	Scan   bool
	Tokens TokenRange
}

// Read is a validated SELECT, as plain data: one partition, a clustering
// range of it, the columns to return and a row limit.
type Read struct {
	Table        *Table
	PartitionKey [][]byte // in key order, as for Write
	Clustering   ClusteringRange
	// Columns are the selected columns in SELECT order (SELECT * gives
	// Table.Columns in order). A column may appear more than once. A
	// function call or CAST (Funcs cql.SelectExpr) has a nil entry: Eval
	// computes its value.
	Columns []*Column
	// Funcs is nil when every selected item is a plain column; else it has
	// one entry per Columns entry: cql.SelectWritetime or cql.SelectTTL
	// for WRITETIME(column) or TTL(column) (of regular columns only),
	// cql.SelectExpr for a function call or CAST.
	Funcs []cql.SelectKind
	// exprs has, for a cql.SelectExpr item, its compiled selector.
	exprs []*expr
	// elements has, for a cql.SelectElement item, its bound selection.
	elements []*elementSel
	binder   *binder
	Limit    int // the most rows to return; 0 means no limit
	// Reversed is set when ORDER BY asks for the reverse of the table's
	// clustering order: rows are returned, and Limit counts them, from the
	// last row of the range backwards.
	Reversed bool
	// Timeout is the USING TIMEOUT duration; 0 without one.
	Timeout time.Duration
	// Shape is what the SELECT asks beyond one partition's rows (selectread.go).
	Shape
	// Scan is set for a SELECT without a partition key restriction (IsScan): it reads the
	// partitions whose tokens lie in Tokens, in token order, and PartitionKey is nil.
	Scan   bool
	Tokens TokenRange
	// Index is set for a scan that a secondary index serves (WHERE col = v on an indexed
	// column, without a partition key restriction): the coordinator asks the replicas of
	// each token range in Tokens for the partitions the index holds for IndexValue, and reads
	// their rows back through Filters, which include col = v (index.go).
	Index      *Index
	IndexValue []byte
}

// BindValue is the value of one bind marker: its canonical encoding (nil
// for null; Type.Check must hold), or Unset, which leaves an INSERT's or
// UPDATE's cell as it is, a LIMIT unlimited and a USING TIMESTAMP to the
// coordinator.
type BindValue struct {
	Bytes []byte
	Unset bool
}

// Variable describes one bind marker of a statement: the column it gives a
// value for, or for LIMIT ?, USING TIMESTAMP ? and USING TTL ? the names
// "[limit]" (int), "[timestamp]" (bigint) and "[ttl]" (int) with Keyspace and Table those of the
// statement's table.
type Variable struct {
	Keyspace, Table, Name string
	Type                  Type
}

// binder gives bind markers their values.
type binder struct {
	values []BindValue
	// check is set when the statement is only validated (Variables): markers
	// have no values yet and the checks of their values are skipped.
	check bool
	// now is the time of the statement's execution, which now() and the
	// other current-time functions give; zero means time.Now when first
	// asked.
	now time.Time
	// table is the statement's table, once looked up.
	table *Table
	// args holds, when the binder checks, the variables of the markers that
	// are functions' arguments, by marker index.
	args map[int]Variable
}

// newBinder returns the binder of stmt's markers: values must hold exactly
// one value per marker.
func newBinder(stmt cql.Statement, values []BindValue) (binder, error) {
	b := binder{values: values}
	if len(values) > 0 { // without values a marker reports itself when it is met
		if n := len(cql.BindMarkers(stmt)); n != len(values) {
			return b, fmt.Errorf("the statement has %d bind markers but %d values were given", n, len(values))
		}
	}
	return b, nil
}

// value returns the value of marker lit, or ok false when it is unset (or
// the binder only checks). The marker binds column c, or when c is nil the
// role what (LIMIT, USING TIMESTAMP).
func (b *binder) value(lit *cql.Literal, c *Column, what string) (v []byte, ok bool, err error) {
	switch {
	case b.check:
		return nil, false, nil
	case lit.Index < 0 || lit.Index >= len(b.values):
		if c != nil {
			what = "column " + cql.QuoteIdent(c.Name)
		}
		if len(b.values) == 0 {
			return nil, false, fmt.Errorf("bind marker %d (%s) has no value: the statement has bind markers but no values were given", lit.Index, what)
		}
		return nil, false, fmt.Errorf("bind marker %d (%s) has no value: %d values were given", lit.Index, what, len(b.values))
	case b.values[lit.Index].Unset:
		return nil, false, nil
	}
	return b.values[lit.Index].Bytes, true, nil
}

// term returns the value of t for column c: a literal's, or a bound
// marker's checked against c's type. ok is false for an unset marker (and
// any marker when the binder only checks); an unset primary key column is
// an error.
func (b *binder) term(c *Column, t cql.Term) (v []byte, ok bool, err error) {
	if _, isCall := t.(*cql.FuncCall); isCall {
		v, ok, err = b.funcTerm(b.table, c, t)
		if err == nil && !ok && !b.check && c.Kind != RegularColumn {
			return nil, false, fmt.Errorf("%s column %s needs a value: its function's argument is unset", c.Kind, cql.QuoteIdent(c.Name))
		}
		return v, ok, err
	}
	lit, isLit := t.(*cql.Literal)
	if !isLit && c.Type.IsParametric() {
		// A collection or tuple literal, whose elements may be bind markers.
		if b.check {
			return nil, false, nil
		}
		v, err := c.boundValue(t, func(l *cql.Literal) ([]byte, bool, error) { return b.value(l, c, "") })
		return v, err == nil, err
	}
	if !isLit || lit.Kind != cql.LitBind {
		v, err := c.Value(t)
		return v, err == nil, err
	}
	v, ok, err = b.value(lit, c, "")
	switch {
	case err != nil:
		return nil, false, err
	case !ok && !b.check && c.Kind != RegularColumn:
		return nil, false, fmt.Errorf("bind marker %d for %s column %s is unset: a primary key column needs a value", lit.Index, c.Kind, cql.QuoteIdent(c.Name))
	case !ok:
		return nil, false, nil
	}
	if v, err = c.Type.Normalize(v); err != nil { // sets and maps sorted, as drivers need not
		return nil, false, fmt.Errorf("bind marker %d (column %s %s): %w", lit.Index, cql.QuoteIdent(c.Name), c.Type, err)
	}
	return v, true, nil
}

// maxKeyComponent is the largest partition key component or clustering
// value: composite keys store each component's length in two bytes.
const maxKeyComponent = 1<<16 - 1

// PrepareWrite validates an INSERT, UPDATE or DELETE against s, with
// keyspace as the current keyspace for unqualified table names, and returns
// it as plain data. Checked: the keyspace, table and columns exist, every
// literal fits its column's type, the full partition key is given with =
// (and the full primary key for INSERT, UPDATE and DELETE of cells), the
// clustering restrictions have a supported shape, no primary key column is
// SET or deleted as a cell.
func (s *Schema) PrepareWrite(stmt cql.Statement, keyspace string) (*Write, error) {
	return s.BindWrite(stmt, keyspace, nil)
}

// BindWrite is PrepareWrite for a statement with bind markers: values holds
// one value per marker, in marker order (cql.Literal.Index). Each value is
// checked against its column's type (the error names the marker and the
// column); an unset value leaves its cell unwritten, and is an error for a
// primary key column.
func (s *Schema) BindWrite(stmt cql.Statement, keyspace string, values []BindValue) (*Write, error) {
	return s.BindWriteAt(stmt, keyspace, values, time.Time{})
}

// BindWriteAt is BindWrite for a statement executed at now, the time its
// functions (now(), currentTimestamp(), ...) give; zero means time.Now.
func (s *Schema) BindWriteAt(stmt cql.Statement, keyspace string, values []BindValue, now time.Time) (*Write, error) {
	b, err := newBinder(stmt, values)
	if err != nil {
		return nil, err
	}
	b.now = now
	return s.bindWrite(stmt, keyspace, &b)
}

func (s *Schema) bindWrite(stmt cql.Statement, keyspace string, b *binder) (*Write, error) {
	var w *Write
	var err error
	var timeout *cql.Literal
	switch st := stmt.(type) {
	case *cql.InsertStmt:
		w, err = s.prepareInsert(st, keyspace, b)
		timeout = st.Timeout
	case *cql.UpdateStmt:
		w, err = s.prepareUpdate(st, keyspace, b)
		timeout = st.Timeout
	case *cql.DeleteStmt:
		w, err = s.prepareDelete(st, keyspace, b)
		timeout = st.Timeout
	default:
		return nil, fmt.Errorf("%s is not a write statement", StatementName(stmt))
	}
	if err != nil {
		return nil, err
	}
	if err := checkCollectionCells(w); err != nil {
		return nil, err
	}
	if err := checkCounterWrite(stmt, w); err != nil {
		return nil, err
	}
	if w.Timeout, err = usingTimeout(timeout); err != nil {
		return nil, err
	}
	return w, nil
}

func (s *Schema) prepareInsert(st *cql.InsertStmt, keyspace string, b *binder) (*Write, error) {
	t, err := s.lookupTable(st.Table, keyspace)
	if err != nil {
		return nil, err
	}
	if len(st.Columns) != len(st.Values) {
		return nil, fmt.Errorf("INSERT names %d columns but gives %d values", len(st.Columns), len(st.Values))
	}
	if t.IsCounter() {
		return nil, errCounterInsert
	}
	b.table = t
	w := &Write{Table: t, Kind: WriteInsert}
	if w.Timestamp, w.HasTimestamp, err = b.usingTimestamp(st.Timestamp); err != nil {
		return nil, err
	}
	if w.TTL, err = b.usingTTL(st.TTL, t); err != nil {
		return nil, err
	}
	values := make([][]byte, len(t.Columns))
	flags := make([]bool, 2*len(t.Columns))
	given, set := flags[:len(t.Columns)], flags[len(t.Columns):] // set: given and not an unset marker
	if st.JSON != nil {
		if err := b.insertJSON(t, st, values, given, set); err != nil {
			return nil, err
		}
	}
	for i, x := range st.Columns {
		c, err := column(t, x)
		if err != nil {
			return nil, err
		}
		if given[c.Index] {
			return nil, fmt.Errorf("column %s is given twice", cql.QuoteIdent(c.Name))
		}
		given[c.Index] = true
		if values[c.Index], set[c.Index], err = b.term(c, st.Values[i]); err != nil {
			return nil, err
		}
	}
	staticOnly, err := staticOnlyInsert(t, given, set)
	if err != nil {
		return nil, err
	}
	for _, c := range t.Columns[:len(t.PartitionKey)+len(t.Clustering)] {
		if staticOnly && c.Kind == ClusteringColumn {
			break
		}
		if !given[c.Index] {
			return nil, fmt.Errorf("missing %s column %s: INSERT needs a value for every primary key column (%s)",
				c.Kind, cql.QuoteIdent(c.Name), columnList(t.Columns[:len(t.PartitionKey)+len(t.Clustering)]))
		}
		if !set[c.Index] { // only when the binder checks
			continue
		}
		if err := checkKeyValue(t, &t.Columns[c.Index], values[c.Index]); err != nil {
			return nil, err
		}
	}
	w.PartitionKey = values[:len(t.PartitionKey):len(t.PartitionKey)]
	if len(t.Clustering) > 0 && !staticOnly {
		w.Clustering.Prefix = values[len(t.PartitionKey) : len(t.PartitionKey)+len(t.Clustering)]
	}
	for _, c := range t.Regular {
		if set[c.Index] {
			w.Cells = append(w.Cells, Cell{Column: &t.Columns[c.Index], Value: values[c.Index]})
		}
	}
	return w, nil
}

func (s *Schema) prepareUpdate(st *cql.UpdateStmt, keyspace string, b *binder) (*Write, error) {
	t, err := s.lookupTable(st.Table, keyspace)
	if err != nil {
		return nil, err
	}
	b.table = t
	w := &Write{Table: t, Kind: WriteUpdate}
	if w.Timestamp, w.HasTimestamp, err = b.usingTimestamp(st.Timestamp); err != nil {
		return nil, err
	}
	if w.TTL, err = b.usingTTL(st.TTL, t); err != nil {
		return nil, err
	}
	values := make(map[int][]Cell, len(st.Set))
	assigned := make(map[int]bool, len(st.Set))
	byOps := make(map[int]bool) // assigned by element operations only, which may be several
	for _, a := range st.Set {
		c, err := column(t, a.Column)
		if err != nil {
			return nil, err
		}
		if c.Kind != RegularColumn {
			return nil, fmt.Errorf("cannot SET %s column %s: primary key columns identify the row; write the new row with INSERT", c.Kind, cql.QuoteIdent(c.Name))
		}
		if c.Type == TypeCounter {
			if assigned[c.Index] {
				return nil, fmt.Errorf("column %s is assigned twice", cql.QuoteIdent(c.Name))
			}
			assigned[c.Index] = true
			cl, ok, err := b.counterOp(c, a)
			if err != nil {
				return nil, err
			}
			if ok {
				values[c.Index] = []Cell{cl}
			}
			continue
		}
		if a.Element != nil || a.Field != nil || a.Op != cql.ILLEGAL {
			// Operations on a collection's elements: several on one column may be combined
			// (m['a'] = 1, m['b'] = 2), as in Cassandra.
			if assigned[c.Index] && !byOps[c.Index] {
				return nil, fmt.Errorf("column %s is assigned twice", cql.QuoteIdent(c.Name))
			}
			cl, ok, err := b.collectionOp(c, a)
			if err != nil {
				return nil, err
			}
			assigned[c.Index], byOps[c.Index] = true, true
			if ok {
				values[c.Index] = append(values[c.Index], cl)
			}
			continue
		}
		if assigned[c.Index] {
			return nil, fmt.Errorf("column %s is assigned twice", cql.QuoteIdent(c.Name))
		}
		assigned[c.Index] = true
		v, ok, err := b.term(c, a.Value)
		if err != nil {
			return nil, err
		}
		if ok {
			values[c.Index] = []Cell{{Column: c, Value: v}}
		}
	}
	staticOnly := staticOnlyCells(t, assigned)
	if w.PartitionKey, w.Clustering, err = where(t, st.Where, "UPDATE", !staticOnly, b); err != nil {
		return nil, err
	}
	if err := staticOnlyRange(t, staticOnly, w.Clustering, "UPDATE"); err != nil {
		return nil, err
	}
	for _, c := range t.Regular {
		w.Cells = append(w.Cells, values[c.Index]...)
	}
	return w, nil
}

func (s *Schema) prepareDelete(st *cql.DeleteStmt, keyspace string, b *binder) (*Write, error) {
	t, err := s.lookupTable(st.Table, keyspace)
	if err != nil {
		return nil, err
	}
	b.table = t
	w := &Write{Table: t, Kind: WriteDelete}
	if w.Timestamp, w.HasTimestamp, err = b.usingTimestamp(st.Timestamp); err != nil {
		return nil, err
	}
	named := make(map[int]bool, len(st.Columns))
	elements := make(map[int][]Cell)
	for i, x := range st.Columns {
		c, err := column(t, x)
		if err != nil {
			return nil, err
		}
		if c.Kind != RegularColumn {
			return nil, fmt.Errorf("cannot DELETE %s column %s: delete the row instead (DELETE FROM ... WHERE ...)", c.Kind, cql.QuoteIdent(c.Name))
		}
		if st.Fields != nil && st.Fields[i].Name != "" {
			f := st.Fields[i]
			cl, _, err := b.collectionOp(c, cql.Assignment{Column: x, Field: &f, Value: &cql.Literal{Kind: cql.LitNull}})
			if err != nil {
				return nil, err
			}
			elements[c.Index] = append(elements[c.Index], cl)
			continue
		}
		if st.Elements != nil && st.Elements[i] != nil {
			cl, ok, err := b.collectionOp(c, cql.Assignment{Column: x, Element: st.Elements[i], Value: &cql.Literal{Kind: cql.LitNull}})
			if err != nil {
				return nil, err
			}
			if ok {
				elements[c.Index] = append(elements[c.Index], cl)
			}
			continue
		}
		if named[c.Index] {
			return nil, fmt.Errorf("column %s is named twice", cql.QuoteIdent(c.Name))
		}
		named[c.Index] = true
	}
	staticOnly := len(st.Columns) > 0 && staticOnlyCells(t, named) && staticOnlyCells(t, elementCols(elements))
	if w.PartitionKey, w.Clustering, err = where(t, st.Where, "DELETE", len(st.Columns) > 0 && !staticOnly, b); err != nil {
		return nil, err
	}
	if err := staticOnlyRange(t, staticOnly, w.Clustering, "DELETE"); err != nil {
		return nil, err
	}
	for _, c := range t.Regular {
		if named[c.Index] {
			w.Cells = append(w.Cells, Cell{Column: &t.Columns[c.Index]})
		} else {
			w.Cells = append(w.Cells, elements[c.Index]...)
		}
	}
	return w, nil
}

// PrepareRead validates a SELECT against s, with keyspace as the current
// keyspace for unqualified table names, and returns it as plain data. It
// needs = on every partition key column; clustering restrictions are = on a
// prefix of the clustering columns, then optionally bounds on the next one.
// ORDER BY follows Cassandra's rules (see orderBy).
func (s *Schema) PrepareRead(st *cql.SelectStmt, keyspace string) (*Read, error) {
	return s.BindRead(st, keyspace, nil)
}

// BindRead is PrepareRead for a SELECT with bind markers: values holds one
// value per marker, in marker order, each checked against its column's
// type; an unset LIMIT ? means no limit.
func (s *Schema) BindRead(st *cql.SelectStmt, keyspace string, values []BindValue) (*Read, error) {
	return s.BindReadAt(st, keyspace, values, time.Time{})
}

// BindReadAt is BindRead for a SELECT executed at now, the time its
// functions give; zero means time.Now.
func (s *Schema) BindReadAt(st *cql.SelectStmt, keyspace string, values []BindValue, now time.Time) (*Read, error) {
	b, err := newBinder(st, values)
	if err != nil {
		return nil, err
	}
	b.now = now
	return s.bindRead(st, keyspace, &b)
}

func (s *Schema) bindRead(st *cql.SelectStmt, keyspace string, b *binder) (*Read, error) {
	t, err := s.lookupTable(st.Table, keyspace)
	if err != nil {
		return nil, err
	}
	b.table = t
	r := &Read{Table: t, binder: b}
	if st.Star {
		r.Columns = make([]*Column, len(t.Columns))
		for i := range t.Columns {
			r.Columns[i] = &t.Columns[i]
		}
	}
	for i, x := range st.Columns {
		if st.Funcs != nil && st.Funcs[i].Kind == cql.SelectAggregate {
			if err := r.bindAggregate(i, st.Funcs[i], b); err != nil {
				return nil, err
			}
			continue
		}
		if st.Funcs != nil && st.Funcs[i].Kind == cql.SelectExpr {
			c := &compiler{t: t, b: b, selector: true}
			e, err := c.compile(st.Funcs[i].Expr, TypeInvalid)
			if err != nil {
				return nil, err
			}
			if r.Funcs == nil {
				r.Funcs = make([]cql.SelectKind, len(st.Columns))
			}
			if r.exprs == nil {
				r.exprs = make([]*expr, len(st.Columns))
			}
			r.Columns = append(r.Columns, nil)
			r.Funcs[i], r.exprs[i] = cql.SelectExpr, e
			continue
		}
		c, err := column(t, x)
		if err != nil {
			return nil, err
		}
		r.Columns = append(r.Columns, c)
		if st.Funcs == nil {
			continue
		}
		if r.Funcs == nil {
			r.Funcs = make([]cql.SelectKind, len(st.Columns))
		}
		if st.Funcs[i].Kind == cql.SelectElement {
			if err := r.bindElement(i, c, st.Funcs[i].Element, b); err != nil {
				return nil, err
			}
			continue
		}
		k := st.Funcs[i].Kind
		if k != cql.SelectColumn && c.Kind != RegularColumn {
			return nil, fmt.Errorf("cannot use %s on %s column %s: primary key columns have no write time or TTL of their own", selectFuncName(k), c.Kind, cql.QuoteIdent(c.Name))
		}
		if k != cql.SelectColumn && c.Type.MultiCell() { // Cassandra's refusal
			return nil, fmt.Errorf("cannot use selection function %s on non-frozen collection %s", selectFuncName(k), cql.QuoteIdent(c.Name))
		}
		if k != cql.SelectColumn && c.Type == TypeCounter { // Cassandra's words
			return nil, fmt.Errorf("Cannot use selection function %s on counter column %s", strings.ToLower(selectFuncName(k)), c.Name)
		}
		r.Funcs[i] = k
	}
	var eqPrefix int
	if IsScan(t, st.Where) {
		r.Scan = true
		if indexed(t, st.Where) {
			if err := r.indexWhere(st, b); err != nil {
				return nil, err
			}
		} else if r.Tokens, r.Filters, err = scanWhere(t, st, b); err != nil {
			return nil, err
		}
	} else {
		if r.PartitionKeys, r.Clustering, r.Filters, eqPrefix, err = selectWhere(t, st, b); err != nil {
			return nil, err
		}
		if len(r.PartitionKeys) > 0 {
			r.PartitionKey = r.PartitionKeys[0]
		}
		if r.Reversed, err = orderBy(t, st.OrderBy, eqPrefix); err != nil {
			return nil, err
		}
		r.OrderBy = len(st.OrderBy) > 0
	}
	if err := r.bindShape(st, b, eqPrefix); err != nil {
		return nil, err
	}
	if st.Limit != nil {
		if r.Limit, err = b.limit(st.Limit); err != nil {
			return nil, err
		}
	}
	if r.Timeout, err = usingTimeout(st.Timeout); err != nil {
		return nil, err
	}
	return r, nil
}

// column looks up the column an identifier names.
func column(t *Table, x cql.Ident) (*Column, error) {
	c, ok := t.Column(x.Name)
	if !ok {
		return nil, fmt.Errorf("unknown column %s in table %s", cql.QuoteIdent(x.Name), t.QualifiedName())
	}
	return c, nil
}

func columnList(cols []Column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = cql.QuoteIdent(c.Name)
	}
	return strings.Join(names, ", ")
}

// checkKeyValue checks a value for a primary key column: not null, not
// too long, and a single-column partition key not empty.
func checkKeyValue(t *Table, c *Column, v []byte) error {
	switch {
	case v == nil:
		return fmt.Errorf("%s column %s cannot be NULL", c.Kind, cql.QuoteIdent(c.Name))
	case len(v) > maxKeyComponent:
		return fmt.Errorf("%s column %s: the value is %d bytes; the maximum is %d", c.Kind, cql.QuoteIdent(c.Name), len(v), maxKeyComponent)
	case len(v) == 0 && c.Kind == PartitionKeyColumn && len(t.PartitionKey) == 1:
		return fmt.Errorf("partition key column %s cannot be empty", cql.QuoteIdent(c.Name))
	}
	return nil
}

// where interprets the WHERE clause of a SELECT, UPDATE or DELETE on t.
// fullKey requires = on every primary key column.
func where(t *Table, rels []cql.Relation, stmt string, fullKey bool, b *binder) ([][]byte, ClusteringRange, error) {
	var cr ClusteringRange
	eq := make([][]byte, len(t.Columns))
	hasEq := make([]bool, len(t.Columns))
	lower := make(map[int]*Bound)
	upper := make(map[int]*Bound)
	for _, r := range rels {
		if r.Token != nil {
			return nil, cr, fmt.Errorf("token() restrictions are only supported in SELECT, not in %s", stmt)
		}
		if r.Op == cql.IN || r.Multi() {
			return nil, cr, fmt.Errorf("%s with IN or a multi-column relation is not supported: write each row's key with =", stmt)
		}
		if r.Op == cql.CONTAINS || r.Op == cql.CONTAINSKEY {
			return nil, cr, fmt.Errorf("%s restrictions are only supported in SELECT, not in %s", r.Op, stmt)
		}
		if r.Element != nil {
			return nil, cr, fmt.Errorf("restrictions on map entries are only supported in SELECT, not in %s", stmt)
		}
		c, err := column(t, r.Column)
		if err != nil {
			return nil, cr, err
		}
		name := cql.QuoteIdent(c.Name)
		if c.Kind == RegularColumn {
			return nil, cr, fmt.Errorf("cannot restrict regular column %s in WHERE: only primary key columns can be restricted", name)
		}
		v, ok, err := b.term(c, r.Value)
		if err != nil {
			return nil, cr, err
		}
		if ok { // not when the binder only checks
			if err := checkKeyValue(t, c, v); err != nil {
				return nil, cr, err
			}
		}
		restricted := hasEq[c.Index] || lower[c.Index] != nil || upper[c.Index] != nil
		switch {
		case r.Op == cql.EQ:
			if restricted {
				return nil, cr, fmt.Errorf("column %s is restricted more than once", name)
			}
			eq[c.Index], hasEq[c.Index] = v, true
		case c.Kind == PartitionKeyColumn:
			return nil, cr, fmt.Errorf("partition key column %s can only be restricted with =, not %s", name, r.Op)
		case r.Op == cql.GT || r.Op == cql.GE:
			if hasEq[c.Index] || lower[c.Index] != nil {
				return nil, cr, fmt.Errorf("column %s is restricted more than once (a lower bound is already given)", name)
			}
			lower[c.Index] = &Bound{Value: v, Inclusive: r.Op == cql.GE}
		case r.Op == cql.LT || r.Op == cql.LE:
			if hasEq[c.Index] || upper[c.Index] != nil {
				return nil, cr, fmt.Errorf("column %s is restricted more than once (an upper bound is already given)", name)
			}
			upper[c.Index] = &Bound{Value: v, Inclusive: r.Op == cql.LE}
		default:
			return nil, cr, fmt.Errorf("unsupported operator %s", r.Op)
		}
	}

	npk := len(t.PartitionKey)
	for _, c := range t.PartitionKey {
		if !hasEq[c.Index] {
			return nil, cr, fmt.Errorf("missing partition key column %s: %s needs = on every partition key column (%s)",
				cql.QuoteIdent(c.Name), stmt, columnList(t.PartitionKey))
		}
	}
	pk := eq[:npk:npk]

	// Clustering: = on a prefix, then at most one ranged column, then nothing.
	var gap, ranged *Column
	for i := range t.Clustering {
		c := &t.Clustering[i]
		isRange := lower[c.Index] != nil || upper[c.Index] != nil
		if !hasEq[c.Index] && !isRange {
			if gap == nil && ranged == nil {
				gap = c
			}
			continue
		}
		switch {
		case ranged != nil:
			return nil, cr, fmt.Errorf("clustering column %s cannot be restricted: the preceding clustering column %s is restricted by a range",
				cql.QuoteIdent(c.Name), cql.QuoteIdent(ranged.Name))
		case gap != nil:
			return nil, cr, fmt.Errorf("clustering column %s cannot be restricted: the preceding clustering column %s is not restricted by =",
				cql.QuoteIdent(c.Name), cql.QuoteIdent(gap.Name))
		case isRange:
			ranged = c
			cr.Lower, cr.Upper = lower[c.Index], upper[c.Index]
		default:
			cr.Prefix = append(cr.Prefix, eq[c.Index])
		}
	}
	if fullKey && !cr.IsRow(t) {
		c := t.Clustering[len(cr.Prefix)]
		return nil, cr, fmt.Errorf("missing clustering column %s: %s needs = on every primary key column (%s)",
			cql.QuoteIdent(c.Name), stmt, columnList(t.Columns[:npk+len(t.Clustering)]))
	}
	return pk, cr, nil
}

// orderBy interprets the ORDER BY of a SELECT on t whose first eq
// clustering columns are restricted by =, and reports whether it asks for
// the reverse of the table's clustering order. As in Cassandra, ORDER BY
// names clustering columns in primary key order, where a column restricted
// by = may be left out; each column's direction, compared with its
// CLUSTERING ORDER, must say the same thing: all as declared, or all
// reversed. (The partition key is always restricted by =, which ORDER BY
// needs.)
func orderBy(t *Table, order []cql.Ordering, eq int) (reversed bool, err error) {
	next := 0 // the clustering column the next ORDER BY column may be, or one after it restricted by =
	for i := range order {
		o := &order[i]
		c, err := column(t, o.Column)
		if err != nil {
			return false, err
		}
		if c.Kind != ClusteringColumn {
			if len(t.Clustering) == 0 {
				return false, fmt.Errorf("ORDER BY %s: table %s has no clustering columns to order by", cql.QuoteIdent(c.Name), t.QualifiedName())
			}
			return false, fmt.Errorf("ORDER BY %s: only clustering columns (%s) can be ordered by, not the %s column %s",
				cql.QuoteIdent(c.Name), columnList(t.Clustering), c.Kind, cql.QuoteIdent(c.Name))
		}
		pos := c.Index - len(t.PartitionKey)
		if pos < next {
			return false, fmt.Errorf("ORDER BY %s: columns must be given in clustering order (%s); %s comes before %s",
				orderingList(order), columnList(t.Clustering), cql.QuoteIdent(c.Name), cql.QuoteIdent(order[i-1].Column.Name))
		}
		for ; next < pos; next++ {
			if next >= eq {
				return false, fmt.Errorf("ORDER BY %s: clustering column %s, which comes before %s, must be in ORDER BY or restricted by =",
					orderingList(order), cql.QuoteIdent(t.Clustering[next].Name), cql.QuoteIdent(c.Name))
			}
		}
		next++
		rev := o.Descending != c.Descending
		if i == 0 {
			reversed = rev
		} else if rev != reversed {
			return false, fmt.Errorf("ORDER BY %s is neither the clustering order of table %s (%s) nor its reverse",
				orderingList(order), t.QualifiedName(), clusteringOrderList(t))
		}
	}
	return reversed, nil
}

// clusteringOrderList returns the clustering order of t: c1 ASC, c2 DESC.
func clusteringOrderList(t *Table) string {
	var b strings.Builder
	for i, c := range t.Clustering {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(cql.QuoteIdent(c.Name) + " " + direction(c.Descending))
	}
	return b.String()
}

func (b *binder) usingTimestamp(lit *cql.Literal) (int64, bool, error) {
	if lit == nil {
		return 0, false, nil
	}
	if lit.Kind == cql.LitBind {
		v, ok, err := b.value(lit, nil, "USING TIMESTAMP")
		switch {
		case err != nil || !ok:
			return 0, false, err
		case v == nil:
			return 0, false, fmt.Errorf("bind marker %d (USING TIMESTAMP) is null; leave it unset for the coordinator's timestamp", lit.Index)
		case len(v) != 8:
			return 0, false, fmt.Errorf("bind marker %d (USING TIMESTAMP bigint): %w", lit.Index, TypeBigInt.Check(v))
		}
		return int64(binary.BigEndian.Uint64(v)), true, nil
	}
	n, err := strconv.ParseInt(lit.Value, 10, 64)
	if err != nil || lit.Kind != cql.LitInteger {
		return 0, false, fmt.Errorf("USING TIMESTAMP %s is not a 64-bit integer", describeValue(lit))
	}
	return n, true, nil
}

// usingTTL returns the TTL of a write to table t with USING TTL lit (nil
// without one): as Cassandra 4.1's Attributes.getTimeToLive, no USING TTL or
// an unset marker means the table's default_time_to_live, 0 and a null
// marker mean none; a value outside [0, MaxTTL] is an error.
func (b *binder) usingTTL(lit *cql.Literal, t *Table) (int32, error) {
	if lit == nil {
		return t.DefaultTTL(), nil
	}
	var n int64
	if lit.Kind == cql.LitBind {
		v, ok, err := b.value(lit, nil, "USING TTL")
		switch {
		case err != nil:
			return 0, err
		case !ok:
			return t.DefaultTTL(), nil
		case v == nil:
			return 0, nil
		case len(v) != 4:
			return 0, fmt.Errorf("bind marker %d (USING TTL int): %w", lit.Index, TypeInt.Check(v))
		}
		n = int64(int32(binary.BigEndian.Uint32(v)))
	} else {
		var err error
		if n, err = strconv.ParseInt(lit.Value, 10, 64); err != nil || lit.Kind != cql.LitInteger {
			return 0, fmt.Errorf("USING TTL %s is not an integer", describeValue(lit))
		}
	}
	if n < 0 || n > MaxTTL {
		return 0, fmt.Errorf("USING TTL %d is out of range: want 0 (none) to %d seconds (20 years)", n, MaxTTL)
	}
	return int32(n), nil
}

func (b *binder) limit(lit *cql.Literal) (int, error) {
	if lit.Kind == cql.LitBind {
		v, ok, err := b.value(lit, nil, "LIMIT")
		switch {
		case err != nil || !ok:
			return 0, err
		case v == nil:
			return 0, fmt.Errorf("bind marker %d (LIMIT) is null; leave it unset for no limit", lit.Index)
		case len(v) != 4:
			return 0, fmt.Errorf("bind marker %d (LIMIT int): %w", lit.Index, TypeInt.Check(v))
		}
		n := int32(binary.BigEndian.Uint32(v))
		if n <= 0 {
			return 0, fmt.Errorf("bind marker %d: LIMIT must be positive, not %d", lit.Index, n)
		}
		return int(n), nil
	}
	n, err := strconv.ParseInt(lit.Value, 10, 64)
	switch {
	case lit.Kind != cql.LitInteger:
		return 0, fmt.Errorf("LIMIT %s is not an integer", describeValue(lit))
	case n <= 0 || strings.HasPrefix(lit.Value, "-"):
		return 0, fmt.Errorf("LIMIT must be positive, not %s", describeValue(lit))
	case err != nil || n > math.MaxInt32:
		return 0, fmt.Errorf("LIMIT %s is too large; the maximum is %d", describeValue(lit), math.MaxInt32)
	}
	return int(n), nil
}

// maxTimeout bounds USING TIMEOUT: longer than any request should wait, and
// far from overflowing a time.Duration.
const maxTimeout = 24 * time.Hour

// usingTimeout returns the duration of a USING TIMEOUT literal (0 for nil).
// Months and years have no fixed length and are refused, as are zero and
// durations beyond a day.
func usingTimeout(lit *cql.Literal) (time.Duration, error) {
	if lit == nil {
		return 0, nil
	}
	d, err := parseDuration(lit.Value)
	switch {
	case err != nil:
		return 0, fmt.Errorf("USING TIMEOUT %s: %w", lit.Value, err)
	case d <= 0:
		return 0, fmt.Errorf("USING TIMEOUT %s: the timeout must be positive", lit.Value)
	}
	return d, nil
}

// parseDuration converts a duration literal (cql.IsDuration) to a
// time.Duration, at most maxTimeout.
func parseDuration(lit string) (time.Duration, error) {
	if !cql.IsDuration(lit) {
		return 0, errors.New("not a duration")
	}
	var total time.Duration
	for i := 0; i < len(lit); {
		j := i
		for j < len(lit) && '0' <= lit[j] && lit[j] <= '9' {
			j++
		}
		k := j
		for k < len(lit) && !('0' <= lit[k] && lit[k] <= '9') {
			k++
		}
		n, err := strconv.ParseInt(lit[i:j], 10, 64)
		if err != nil || n > int64(maxTimeout) {
			return 0, fmt.Errorf("too long; the maximum is %v", maxTimeout)
		}
		var unit time.Duration
		switch strings.ToLower(lit[j:k]) {
		case "y", "mo":
			return 0, errors.New("months and years have no fixed length; use w, d, h, m, s, ms, us or ns")
		case "w":
			unit = 7 * 24 * time.Hour
		case "d":
			unit = 24 * time.Hour
		case "h":
			unit = time.Hour
		case "m":
			unit = time.Minute
		case "s":
			unit = time.Second
		case "ms":
			unit = time.Millisecond
		case "us":
			unit = time.Microsecond
		case "ns":
			unit = time.Nanosecond
		}
		if n > int64(maxTimeout/unit) {
			return 0, fmt.Errorf("too long; the maximum is %v", maxTimeout)
		}
		total += time.Duration(n) * unit
		if total > maxTimeout {
			return 0, fmt.Errorf("too long; the maximum is %v", maxTimeout)
		}
		i = k
	}
	return total, nil
}

// Batch is a validated BATCH, as plain data: its writes in statement order.
type Batch struct {
	Writes   []*Write
	Unlogged bool
	// Counter is set when the batch updates counters (then every write does, see counter.go,
	// and Unlogged is set: counter updates are never logged).
	Counter bool
	// Timestamp is the BATCH's USING TIMESTAMP when HasTimestamp (then no
	// write has its own); otherwise the coordinator assigns one timestamp to
	// every write without its own.
	Timestamp    int64
	HasTimestamp bool
	// Timeout is the BATCH's USING TIMEOUT duration; 0 without one.
	Timeout time.Duration
}

// BindBatch validates a BATCH against s, as BindWrite validates each of its
// statements; values binds the markers of the whole batch, numbered across
// it. A statement of a batch cannot have its own USING TIMEOUT (the batch
// is one request), nor its own USING TIMESTAMP when the batch has one.
func (s *Schema) BindBatch(st *cql.BatchStmt, keyspace string, values []BindValue) (*Batch, error) {
	return s.BindBatchAt(st, keyspace, values, time.Time{})
}

// BindBatchAt is BindBatch for a BATCH executed at now, the time its
// functions give; zero means time.Now.
func (s *Schema) BindBatchAt(st *cql.BatchStmt, keyspace string, values []BindValue, now time.Time) (*Batch, error) {
	b, err := newBinder(st, values)
	if err != nil {
		return nil, err
	}
	b.now = now
	return s.bindBatch(st, keyspace, &b)
}

func (s *Schema) bindBatch(st *cql.BatchStmt, keyspace string, b *binder) (*Batch, error) {
	bt := &Batch{Unlogged: st.Unlogged}
	var err error
	if bt.Timestamp, bt.HasTimestamp, err = b.usingTimestamp(st.Timestamp); err != nil {
		return nil, err
	}
	if bt.Timeout, err = usingTimeout(st.Timeout); err != nil {
		return nil, err
	}
	if len(st.Statements) == 0 {
		return nil, errors.New("BATCH has no statements")
	}
	bt.Writes = make([]*Write, len(st.Statements))
	for i, c := range st.Statements {
		ts, timeout := usingOf(c)
		switch {
		case timeout != nil:
			return nil, fmt.Errorf("statement %d of the BATCH (%s) has its own USING TIMEOUT; give it once, after BEGIN BATCH", i+1, StatementName(c))
		case ts != nil && st.Timestamp != nil:
			return nil, fmt.Errorf("statement %d of the BATCH (%s) has its own USING TIMESTAMP, and so has the BATCH: give one or the other", i+1, StatementName(c))
		}
		w, err := s.bindWrite(c, keyspace, b)
		if err != nil {
			return nil, fmt.Errorf("statement %d of the BATCH (%s): %w", i+1, StatementName(c), err)
		}
		if bt.HasTimestamp {
			w.Timestamp, w.HasTimestamp = bt.Timestamp, true
		}
		bt.Writes[i] = w
	}
	if err := checkCounterBatch(st, bt); err != nil {
		return nil, err
	}
	return bt, nil
}

// usingOf returns the USING TIMESTAMP and USING TIMEOUT literals of a write.
func usingOf(stmt cql.Statement) (ts, timeout *cql.Literal) {
	switch st := stmt.(type) {
	case *cql.InsertStmt:
		return st.Timestamp, st.Timeout
	case *cql.UpdateStmt:
		return st.Timestamp, st.Timeout
	case *cql.DeleteStmt:
		return st.Timestamp, st.Timeout
	}
	return nil, nil
}

// Variables validates a SELECT, INSERT, UPDATE, DELETE or BATCH against s
// (with keyspace as the current keyspace), as preparing it does, and
// describes its bind markers, one Variable per marker in marker order.
// pkIndexes holds, for each partition key column of the statement's table
// in key order, the index of the marker that binds it; it is nil when a
// literal gives part of the partition key, and for a BATCH. Other
// statements have no markers and no variables.
func (s *Schema) Variables(stmt cql.Statement, keyspace string) (vars []Variable, pkIndexes []int, err error) {
	b := &binder{check: true}
	var t *Table
	switch st := stmt.(type) {
	case *cql.SelectStmt:
		r, err := s.bindRead(st, keyspace, b)
		if err != nil {
			return nil, nil, err
		}
		t = r.Table
	case *cql.InsertStmt, *cql.UpdateStmt, *cql.DeleteStmt:
		w, err := s.bindWrite(st, keyspace, b)
		if err != nil {
			return nil, nil, err
		}
		t = w.Table
	case *cql.BatchStmt:
		if _, err := s.bindBatch(st, keyspace, b); err != nil {
			return nil, nil, err
		}
	default:
		if n := len(cql.BindMarkers(stmt)); n > 0 {
			return nil, nil, fmt.Errorf("%s cannot have bind markers (it has %d)", StatementName(stmt), n)
		}
		return nil, nil, nil
	}
	markers := cql.BindMarkers(stmt)
	if len(markers) == 0 {
		return nil, nil, nil
	}
	defer func() { // the markers that are functions' arguments
		for i, v := range b.args {
			if err == nil && i < len(vars) {
				vars[i] = v
				if n := markers[i].BindName(); n != "" {
					vars[i].Name = n
				}
			}
		}
	}()
	vars = make([]Variable, len(markers))
	for i, m := range markers {
		if m.Index != i {
			return nil, nil, fmt.Errorf("bind marker %d is numbered %d", i, m.Index)
		}
	}
	pkBound := make(map[int]int) // partition key column index → marker index
	set := func(lit *cql.Literal, t *Table, name string, typ Type) {
		if n := lit.BindName(); n != "" { // a named marker's variable has its name
			name = n
		}
		vars[lit.Index] = Variable{Keyspace: t.Keyspace, Table: t.Name, Name: name, Type: typ}
	}
	var visit func(stmt cql.Statement)
	visit = func(stmt cql.Statement) {
		var selectElements *cql.SelectStmt
		var table cql.TableName
		var terms []cql.Term
		var cols []cql.Ident
		var ts, ttl, lim *cql.Literal
		var rels []cql.Relation
		switch st := stmt.(type) {
		case *cql.SelectStmt:
			table, rels, lim = st.Table, st.Where, st.Limit
			if l := st.PerPartitionLimit; l != nil && l.Kind == cql.LitBind {
				tt, _ := s.lookupTable(table, keyspace)
				set(l, tt, "[per_partition_limit]", TypeInt)
			}
			selectElements = st
		case *cql.InsertStmt:
			table, cols, terms, ts, ttl = st.Table, st.Columns, st.Values, st.Timestamp, st.TTL
			if l, ok := st.JSON.(*cql.Literal); ok && l.Kind == cql.LitBind {
				tt, _ := s.lookupTable(table, keyspace)
				set(l, tt, "[json]", TypeText)
			}
		case *cql.UpdateStmt:
			table, rels, ts, ttl = st.Table, st.Where, st.Timestamp, st.TTL
		case *cql.DeleteStmt:
			table, rels, ts = st.Table, st.Where, st.Timestamp
		}
		tt, _ := s.lookupTable(table, keyspace) // the binder found it
		var elems []elementMarker
		if selectElements != nil {
			elems = selectionMarkers(tt, selectElements)
		}
		switch st := stmt.(type) {
		case *cql.UpdateStmt:
			for _, a := range st.Set {
				if a.Element == nil && a.Field == nil && a.Op == cql.ILLEGAL {
					cols, terms = append(cols, a.Column), append(terms, a.Value)
					continue
				}
				elems = append(elems, elementMarkers(tt, a)...)
			}
		case *cql.DeleteStmt:
			for i, e := range st.Elements {
				if e != nil {
					elems = append(elems, elementMarkers(tt, cql.Assignment{Column: st.Columns[i], Element: e})...)
				}
			}
		}
		for _, m := range elems {
			if lit, ok := m.term.(*cql.Literal); ok && lit.Kind == cql.LitBind {
				set(lit, tt, m.name, m.typ)
			} else {
				nestedMarkers(m.typ, m.col, m.term, func(lit *cql.Literal, name string, typ Type) { set(lit, tt, name, typ) })
			}
		}
		bind := func(x cql.Ident, v cql.Term, eq bool) {
			lit, ok := v.(*cql.Literal)
			if !ok || lit.Kind != cql.LitBind {
				if c, ok := tt.Column(x.Name); ok {
					nestedMarkers(c.Type, c.Name, v, func(lit *cql.Literal, name string, typ Type) { set(lit, tt, name, typ) })
				}
				return
			}
			c, _ := tt.Column(x.Name)
			set(lit, tt, c.Name, c.Type)
			if c.Kind == PartitionKeyColumn && eq {
				pkBound[c.Index] = lit.Index
			}
		}
		for i, x := range terms {
			bind(cols[i], x, true)
		}
		for _, r := range rels {
			if r.Token != nil { // token(k) > ?: the scan's bounds
				if lit, ok := r.Value.(*cql.Literal); ok && lit.Kind == cql.LitBind {
					set(lit, tt, tokenVariable, TypeBigInt)
				}
				continue
			}
			if relationVariables(tt, r, func(lit *cql.Literal, name string, typ Type) { set(lit, tt, name, typ) }) {
				continue
			}
			bind(r.Column, r.Value, r.Op == cql.EQ)
		}
		if ts != nil && ts.Kind == cql.LitBind {
			set(ts, tt, "[timestamp]", TypeBigInt)
		}
		if lim != nil && lim.Kind == cql.LitBind {
			set(lim, tt, "[limit]", TypeInt)
		}
		if ttl != nil && ttl.Kind == cql.LitBind {
			set(ttl, tt, "[ttl]", TypeInt)
		}
	}
	if bst, ok := stmt.(*cql.BatchStmt); ok {
		if bst.Timestamp != nil && bst.Timestamp.Kind == cql.LitBind {
			vars[bst.Timestamp.Index] = Variable{Name: "[timestamp]", Type: TypeBigInt}
			if n := bst.Timestamp.BindName(); n != "" {
				vars[bst.Timestamp.Index].Name = n
			}
		}
		for _, c := range bst.Statements {
			visit(c)
		}
		return vars, nil, nil
	}
	visit(stmt)
	conditionVariables(stmt, t, vars)
	for _, c := range t.PartitionKey {
		idx, ok := pkBound[c.Index]
		if !ok {
			return vars, nil, nil
		}
		pkIndexes = append(pkIndexes, idx)
	}
	return vars, pkIndexes, nil
}

// SelectColumns validates a SELECT as Variables does and returns the table
// it reads and the columns of its rows, in SELECT order.
func (s *Schema) SelectColumns(st *cql.SelectStmt, keyspace string) (*Table, []ResultColumn, error) {
	r, err := s.bindRead(st, keyspace, &binder{check: true})
	if err != nil {
		return nil, nil, err
	}
	return r.Table, r.ResultColumns(), nil
}

// ResultColumn is one column of a read's rows as a client sees it.
type ResultColumn struct {
	Name string
	Type Type
}

// ResultColumns returns the columns of r's rows, in SELECT order: a selected column's name
// and type, or for WRITETIME(c) "writetime(c)" of type bigint and for TTL(c) "ttl(c)" of type
// int, as Cassandra names them.
func (r *Read) ResultColumns() []ResultColumn {
	if r.JSON {
		return []ResultColumn{{Name: "[json]", Type: TypeText}}
	}
	return r.SelectedColumns()
}

// SelectedColumns is ResultColumns without SELECT JSON: the selected items' columns, which
// SELECT JSON renders as one object per row.
func (r *Read) SelectedColumns() []ResultColumn {
	out := make([]ResultColumn, len(r.Columns))
	for i, c := range r.Columns {
		switch {
		case r.Aggregates != nil && r.Aggregates[i] != nil:
			out[i] = ResultColumn{Name: r.aggNames[i], Type: r.Aggregates[i].Type}
		case c == nil:
			out[i] = ResultColumn{Name: r.exprs[i].name, Type: r.exprs[i].typ}
		default:
			out[i] = ResultColumn{Name: c.Name, Type: c.Type}
			if r.Funcs == nil {
				break
			}
			switch r.Funcs[i] {
			case cql.SelectElement:
				out[i] = ResultColumn{Name: r.elements[i].name, Type: r.elements[i].typ}
			case cql.SelectWritetime:
				out[i] = ResultColumn{Name: "writetime(" + c.Name + ")", Type: TypeBigInt}
			case cql.SelectTTL:
				out[i] = ResultColumn{Name: "ttl(" + c.Name + ")", Type: TypeInt}
			}
		}
		if r.Aliases != nil && r.Aliases[i] != "" {
			out[i].Name = r.Aliases[i]
		}
	}
	return out
}

func selectFuncName(k cql.SelectKind) string {
	if k == cql.SelectTTL {
		return "TTL()"
	}
	return "WRITETIME()"
}
