package schema

import (
	"fmt"
	"math"
	"strconv"
	"strings"

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

// Cell is one cell a write sets or deletes.
type Cell struct {
	Column *Column
	Value  []byte // canonical encoding; nil deletes the cell
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
}

// Read is a validated SELECT, as plain data: one partition, a clustering
// range of it, the columns to return and a row limit.
type Read struct {
	Table        *Table
	PartitionKey [][]byte // in key order, as for Write
	Clustering   ClusteringRange
	// Columns are the selected columns in SELECT order (SELECT * gives
	// Table.Columns in order). A column may appear more than once.
	Columns []*Column
	Limit   int // the most rows to return; 0 means no limit
	// Reversed is set when ORDER BY asks for the reverse of the table's
	// clustering order: rows are returned, and Limit counts them, from the
	// last row of the range backwards.
	Reversed bool
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
	switch st := stmt.(type) {
	case *cql.InsertStmt:
		return s.prepareInsert(st, keyspace)
	case *cql.UpdateStmt:
		return s.prepareUpdate(st, keyspace)
	case *cql.DeleteStmt:
		return s.prepareDelete(st, keyspace)
	}
	return nil, fmt.Errorf("%s is not a write statement", StatementName(stmt))
}

func (s *Schema) prepareInsert(st *cql.InsertStmt, keyspace string) (*Write, error) {
	t, err := s.lookupTable(st.Table, keyspace)
	if err != nil {
		return nil, err
	}
	if len(st.Columns) != len(st.Values) {
		return nil, fmt.Errorf("INSERT names %d columns but gives %d values", len(st.Columns), len(st.Values))
	}
	w := &Write{Table: t, Kind: WriteInsert}
	if w.Timestamp, w.HasTimestamp, err = usingTimestamp(st.Timestamp); err != nil {
		return nil, err
	}
	values := make([][]byte, len(t.Columns))
	given := make([]bool, len(t.Columns))
	for i, x := range st.Columns {
		c, err := column(t, x)
		if err != nil {
			return nil, err
		}
		if given[c.Index] {
			return nil, fmt.Errorf("column %s is given twice", cql.QuoteIdent(c.Name))
		}
		given[c.Index] = true
		if values[c.Index], err = c.Value(st.Values[i]); err != nil {
			return nil, err
		}
	}
	for _, c := range t.Columns[:len(t.PartitionKey)+len(t.Clustering)] {
		if !given[c.Index] {
			return nil, fmt.Errorf("missing %s column %s: INSERT needs a value for every primary key column (%s)",
				c.Kind, cql.QuoteIdent(c.Name), columnList(t.Columns[:len(t.PartitionKey)+len(t.Clustering)]))
		}
		if err := checkKeyValue(t, &t.Columns[c.Index], values[c.Index]); err != nil {
			return nil, err
		}
	}
	w.PartitionKey = values[:len(t.PartitionKey):len(t.PartitionKey)]
	if len(t.Clustering) > 0 {
		w.Clustering.Prefix = values[len(t.PartitionKey) : len(t.PartitionKey)+len(t.Clustering)]
	}
	for _, c := range t.Regular {
		if given[c.Index] {
			w.Cells = append(w.Cells, Cell{Column: &t.Columns[c.Index], Value: values[c.Index]})
		}
	}
	return w, nil
}

func (s *Schema) prepareUpdate(st *cql.UpdateStmt, keyspace string) (*Write, error) {
	t, err := s.lookupTable(st.Table, keyspace)
	if err != nil {
		return nil, err
	}
	w := &Write{Table: t, Kind: WriteUpdate}
	if w.Timestamp, w.HasTimestamp, err = usingTimestamp(st.Timestamp); err != nil {
		return nil, err
	}
	values := make(map[int][]byte, len(st.Set))
	for _, a := range st.Set {
		c, err := column(t, a.Column)
		if err != nil {
			return nil, err
		}
		if c.Kind != RegularColumn {
			return nil, fmt.Errorf("cannot SET %s column %s: primary key columns identify the row; write the new row with INSERT", c.Kind, cql.QuoteIdent(c.Name))
		}
		if _, dup := values[c.Index]; dup {
			return nil, fmt.Errorf("column %s is assigned twice", cql.QuoteIdent(c.Name))
		}
		v, err := c.Value(a.Value)
		if err != nil {
			return nil, err
		}
		values[c.Index] = v
	}
	if w.PartitionKey, w.Clustering, err = where(t, st.Where, "UPDATE", true); err != nil {
		return nil, err
	}
	for _, c := range t.Regular {
		if v, ok := values[c.Index]; ok {
			w.Cells = append(w.Cells, Cell{Column: &t.Columns[c.Index], Value: v})
		}
	}
	return w, nil
}

func (s *Schema) prepareDelete(st *cql.DeleteStmt, keyspace string) (*Write, error) {
	t, err := s.lookupTable(st.Table, keyspace)
	if err != nil {
		return nil, err
	}
	w := &Write{Table: t, Kind: WriteDelete}
	if w.Timestamp, w.HasTimestamp, err = usingTimestamp(st.Timestamp); err != nil {
		return nil, err
	}
	named := make(map[int]bool, len(st.Columns))
	for _, x := range st.Columns {
		c, err := column(t, x)
		if err != nil {
			return nil, err
		}
		if c.Kind != RegularColumn {
			return nil, fmt.Errorf("cannot DELETE %s column %s: delete the row instead (DELETE FROM ... WHERE ...)", c.Kind, cql.QuoteIdent(c.Name))
		}
		if named[c.Index] {
			return nil, fmt.Errorf("column %s is named twice", cql.QuoteIdent(c.Name))
		}
		named[c.Index] = true
	}
	if w.PartitionKey, w.Clustering, err = where(t, st.Where, "DELETE", len(st.Columns) > 0); err != nil {
		return nil, err
	}
	for _, c := range t.Regular {
		if named[c.Index] {
			w.Cells = append(w.Cells, Cell{Column: &t.Columns[c.Index]})
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
	t, err := s.lookupTable(st.Table, keyspace)
	if err != nil {
		return nil, err
	}
	r := &Read{Table: t}
	if st.Star {
		r.Columns = make([]*Column, len(t.Columns))
		for i := range t.Columns {
			r.Columns[i] = &t.Columns[i]
		}
	}
	for _, x := range st.Columns {
		c, err := column(t, x)
		if err != nil {
			return nil, err
		}
		r.Columns = append(r.Columns, c)
	}
	if r.PartitionKey, r.Clustering, err = where(t, st.Where, "SELECT", false); err != nil {
		return nil, err
	}
	if r.Reversed, err = orderBy(t, st.OrderBy, len(r.Clustering.Prefix)); err != nil {
		return nil, err
	}
	if st.Limit != nil {
		if r.Limit, err = limit(st.Limit); err != nil {
			return nil, err
		}
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
func where(t *Table, rels []cql.Relation, stmt string, fullKey bool) ([][]byte, ClusteringRange, error) {
	var cr ClusteringRange
	eq := make([][]byte, len(t.Columns))
	hasEq := make([]bool, len(t.Columns))
	lower := make(map[int]*Bound)
	upper := make(map[int]*Bound)
	for _, r := range rels {
		c, err := column(t, r.Column)
		if err != nil {
			return nil, cr, err
		}
		name := cql.QuoteIdent(c.Name)
		if c.Kind == RegularColumn {
			return nil, cr, fmt.Errorf("cannot restrict regular column %s in WHERE: only primary key columns can be restricted", name)
		}
		v, err := c.Value(r.Value)
		if err != nil {
			return nil, cr, err
		}
		if err := checkKeyValue(t, c, v); err != nil {
			return nil, cr, err
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

func usingTimestamp(lit *cql.Literal) (int64, bool, error) {
	if lit == nil {
		return 0, false, nil
	}
	if lit.Kind == cql.LitBind {
		return 0, false, errBind
	}
	n, err := strconv.ParseInt(lit.Value, 10, 64)
	if err != nil || lit.Kind != cql.LitInteger {
		return 0, false, fmt.Errorf("USING TIMESTAMP %s is not a 64-bit integer", describeValue(lit))
	}
	return n, true, nil
}

func limit(lit *cql.Literal) (int, error) {
	if lit.Kind == cql.LitBind {
		return 0, errBind
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
