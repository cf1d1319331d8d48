package schema

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// insertJSON reads the value of INSERT JSON into values, given and set (see prepareInsert):
// columns the object leaves out are null, or with DEFAULT UNSET left as they are. While the
// binder only checks, a marker's object is unknown: every column counts as given.
func (b *binder) insertJSON(t *Table, st *cql.InsertStmt, values [][]byte, given, set []bool) error {
	lit, ok := st.JSON.(*cql.Literal)
	if !ok {
		return fmt.Errorf("INSERT JSON needs a string or a bind marker")
	}
	text := lit.Value
	switch lit.Kind {
	case cql.LitString:
	case cql.LitBind:
		v, ok, err := b.value(lit, nil, "INSERT JSON")
		if err != nil {
			return err
		}
		if !ok {
			if !b.check {
				return fmt.Errorf("bind marker %d (INSERT JSON) is unset", lit.Index)
			}
			for i := range given {
				given[i] = true
			}
			return nil
		}
		if v == nil {
			return fmt.Errorf("got null for INSERT JSON values")
		}
		text = string(v)
	default:
		return fmt.Errorf("INSERT JSON needs a string, not %s", describeValue(lit))
	}
	if err := insertJSON(t, text, values, given, set); err != nil {
		return err
	}
	if !st.DefaultUnset {
		for _, c := range t.Regular {
			if !given[c.Index] {
				values[c.Index], given[c.Index], set[c.Index] = nil, true, true
			}
		}
	}
	return nil
}

// RowFilter is a restriction of a SELECT checked on each row by the coordinator: on a regular
// column (ALLOW FILTERING), on clustering columns the replicas' range cannot express (IN, a
// tuple of columns, a column after a gap or a range), one column or a tuple of them. A row
// whose value is null for one of its columns never matches.
type RowFilter struct {
	Columns []*Column
	Op      cql.Token // EQ, LT, LE, GT, GE or IN
	// Values holds one tuple of values (one per column) for EQ and the ranges, each tuple of
	// the list for IN.
	Values [][][]byte
	// Element is set for m[key] = value on a map column: the key (Values holds the value).
	Element []byte
}

// Match reports whether the row whose column values value gives matches f.
func (f *RowFilter) Match(value func(c *Column) []byte) bool {
	row := make([][]byte, len(f.Columns))
	for i, c := range f.Columns {
		if row[i] = value(c); row[i] == nil {
			return false
		}
	}
	cmp := func(t [][]byte) int {
		for i, c := range f.Columns {
			if d := c.Type.Compare(row[i], t[i]); d != 0 {
				return d
			}
		}
		return 0
	}
	switch {
	case f.Element != nil:
		return entryMatch(f.Columns[0], row[0], f.Element, f.Values[0][0])
	}
	switch f.Op {
	case cql.CONTAINS, cql.CONTAINSKEY:
		return containsMatch(f.Columns[0], row[0], f.Values[0][0], f.Op == cql.CONTAINSKEY)
	case cql.IN:
		return slices.ContainsFunc(f.Values, func(t [][]byte) bool { return cmp(t) == 0 })
	case cql.EQ:
		return cmp(f.Values[0]) == 0
	case cql.LT:
		return cmp(f.Values[0]) < 0
	case cql.LE:
		return cmp(f.Values[0]) <= 0
	case cql.GT:
		return cmp(f.Values[0]) > 0
	case cql.GE:
		return cmp(f.Values[0]) >= 0
	}
	return false
}

// errNeedsFiltering is Cassandra's refusal of a restriction that needs ALLOW FILTERING.
const errNeedsFiltering = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"

// restriction is what the relations of a SELECT say about one column.
type restriction struct {
	in     [][]byte // = (one value) or IN: the values, sorted and without duplicates for keys
	isIn   bool
	lower  *Bound
	upper  *Bound
	multi  bool // restricted by a relation on a tuple of columns
	others int  // relations on the column
}

// selectWhere interprets the WHERE clause of a SELECT on t: the partition keys it reads (the
// cartesian product of the partition key columns' = and IN values, in the order of the IN
// lists), the clustering range the replicas read, and the filters the coordinator checks on
// each row. eqPrefix is how many clustering columns are restricted by a single =.
func selectWhere(t *Table, st *cql.SelectStmt, b *binder) (pks [][][]byte, cr ClusteringRange, filters []RowFilter, eqPrefix int, err error) {
	rs := make([]restriction, len(t.Columns))
	var multis []RowFilter
	var regular []cql.Relation // the relations on regular columns, the filters
	for _, r := range st.Where {
		if r.Multi() {
			f, err := multiRelation(t, r, b)
			if err != nil {
				return nil, cr, nil, 0, err
			}
			for _, c := range f.Columns {
				rs[c.Index].multi = true
			}
			multis = append(multis, f)
			continue
		}
		c, err := column(t, r.Column)
		if err != nil {
			return nil, cr, nil, 0, err
		}
		name := cql.QuoteIdent(c.Name)
		x := &rs[c.Index]
		if c.Kind == RegularColumn {
			if r.Op == cql.IN {
				return nil, cr, nil, 0, fmt.Errorf("IN predicates on non-primary-key columns (%s) is not yet supported", name)
			}
			f, _, err := regularFilter(c, r, b)
			if err != nil {
				return nil, cr, nil, 0, err
			}
			filters, regular = append(filters, f), append(regular, r)
			continue
		}
		if r.Op == cql.CONTAINS || r.Op == cql.CONTAINSKEY || r.Element != nil {
			return nil, cr, nil, 0, fmt.Errorf("%s on the primary key column %s is not supported", map[bool]string{true: "an entry restriction", false: r.Op.String()}[r.Element != nil], name)
		}
		restricted := x.in != nil || x.isIn || x.lower != nil || x.upper != nil
		switch r.Op {
		case cql.EQ, cql.IN:
			if restricted {
				return nil, cr, nil, 0, fmt.Errorf("column %s is restricted more than once", name)
			}
			vals, err := inValues(t, c, r, b)
			if err != nil {
				return nil, cr, nil, 0, err
			}
			x.in, x.isIn = vals, true
		default:
			if c.Kind == PartitionKeyColumn {
				return nil, cr, nil, 0, fmt.Errorf("partition key column %s can only be restricted with = or IN, not %s", name, r.Op)
			}
			v, ok, err := b.term(c, r.Value)
			if err != nil {
				return nil, cr, nil, 0, err
			}
			if ok {
				if err := checkKeyValue(t, c, v); err != nil {
					return nil, cr, nil, 0, err
				}
			}
			bd := &Bound{Value: v, Inclusive: r.Op == cql.GE || r.Op == cql.LE}
			if r.Op == cql.GT || r.Op == cql.GE {
				if x.isIn || x.lower != nil {
					return nil, cr, nil, 0, fmt.Errorf("column %s is restricted more than once (a lower bound is already given)", name)
				}
				x.lower = bd
			} else {
				if x.isIn || x.upper != nil {
					return nil, cr, nil, 0, fmt.Errorf("column %s is restricted more than once (an upper bound is already given)", name)
				}
				x.upper = bd
			}
		}
	}
	if len(filters) > 0 && !st.AllowFiltering && !indexServes(t, regular) {
		return nil, cr, nil, 0, fmt.Errorf("%s", errNeedsFiltering)
	}

	// The partition keys: the cartesian product.
	product := 1
	for _, c := range t.PartitionKey {
		x := rs[c.Index]
		if !x.isIn {
			return nil, cr, nil, 0, fmt.Errorf("missing partition key column %s: SELECT needs = or IN on every partition key column (%s)",
				cql.QuoteIdent(c.Name), columnList(t.PartitionKey))
		}
		product *= len(x.in)
	}
	switch {
	case b.check:
	case product == 1: // the common read of one partition
		pk := make([][]byte, len(t.PartitionKey))
		for i, c := range t.PartitionKey {
			pk[i] = rs[c.Index].in[0]
		}
		pks = [][][]byte{pk}
	default:
		pks = [][][]byte{nil}
		for _, c := range t.PartitionKey {
			next := make([][][]byte, 0, len(pks)*len(rs[c.Index].in))
			for _, pk := range pks {
				for _, v := range rs[c.Index].in {
					next = append(next, append(slices.Clip(pk), v))
				}
			}
			pks = next
		}
	}

	// Clustering: = on a prefix, then at most one IN, range or tuple relation the replicas
	// narrow to, then what the coordinator filters.
	npk := len(t.PartitionKey)
	coarse := true // the replicas' range still narrows on the next column
	var gap, ranged *Column
	for i := range t.Clustering {
		c := &t.Clustering[i]
		x := rs[c.Index]
		if x.multi {
			if gap != nil && !st.AllowFiltering {
				return nil, cr, nil, 0, fmt.Errorf("clustering column %s cannot be restricted: the preceding clustering column %s is not restricted by =",
					cql.QuoteIdent(c.Name), cql.QuoteIdent(gap.Name))
			}
			coarse = false
			continue
		}
		isRange := x.lower != nil || x.upper != nil
		if !x.isIn && !isRange {
			if gap == nil && ranged == nil {
				gap = c
			}
			coarse = false
			continue
		}
		needsFilter := ranged != nil || gap != nil
		switch {
		case needsFilter && !st.AllowFiltering && ranged != nil:
			return nil, cr, nil, 0, fmt.Errorf("clustering column %s cannot be restricted: the preceding clustering column %s is restricted by a range",
				cql.QuoteIdent(c.Name), cql.QuoteIdent(ranged.Name))
		case needsFilter && !st.AllowFiltering:
			return nil, cr, nil, 0, fmt.Errorf("clustering column %s cannot be restricted: the preceding clustering column %s is not restricted by =",
				cql.QuoteIdent(c.Name), cql.QuoteIdent(gap.Name))
		}
		if isRange {
			ranged = c
		}
		one := x.isIn && len(x.in) == 1
		if coarse && one {
			cr.Prefix = append(cr.Prefix, x.in[0])
			eqPrefix = len(cr.Prefix)
			continue
		}
		if coarse && !b.check {
			if x.isIn && len(x.in) > 0 {
				lo, hi := x.in[0], x.in[len(x.in)-1] // sorted by the column's type
				cr.Lower, cr.Upper = &Bound{Value: lo, Inclusive: true}, &Bound{Value: hi, Inclusive: true}
			} else if isRange {
				cr.Lower, cr.Upper = x.lower, x.upper
			}
		}
		if coarse && isRange && !x.isIn {
			coarse = false
			continue // the range is exact: nothing to filter
		}
		coarse = false
		if x.isIn {
			vals := make([][][]byte, len(x.in))
			for k, v := range x.in {
				vals[k] = [][]byte{v}
			}
			filters = append(filters, RowFilter{Columns: []*Column{c}, Op: cql.IN, Values: vals})
		}
		if x.lower != nil {
			filters = append(filters, RowFilter{Columns: []*Column{c}, Op: boundOp(x.lower, true), Values: [][][]byte{{x.lower.Value}}})
		}
		if x.upper != nil {
			filters = append(filters, RowFilter{Columns: []*Column{c}, Op: boundOp(x.upper, false), Values: [][][]byte{{x.upper.Value}}})
		}
	}
	_ = npk
	for _, f := range multis {
		first := f.Columns[0].Index - npk
		if len(cr.Prefix) == first && cr.Lower == nil && cr.Upper == nil && !b.check && len(f.Values) > 0 {
			// Narrow the replicas' range on the tuple's first column.
			lo, hi := f.Values[0][0], f.Values[0][0]
			for _, v := range f.Values[1:] {
				if f.Columns[0].Type.Compare(v[0], lo) < 0 {
					lo = v[0]
				}
				if f.Columns[0].Type.Compare(v[0], hi) > 0 {
					hi = v[0]
				}
			}
			switch f.Op {
			case cql.EQ, cql.IN:
				cr.Lower, cr.Upper = &Bound{Value: lo, Inclusive: true}, &Bound{Value: hi, Inclusive: true}
			case cql.GT, cql.GE:
				cr.Lower = &Bound{Value: lo, Inclusive: true}
			case cql.LT, cql.LE:
				cr.Upper = &Bound{Value: hi, Inclusive: true}
			}
		}
		filters = append(filters, f)
	}
	return pks, cr, filters, eqPrefix, nil
}

func boundOp(b *Bound, lower bool) cql.Token {
	switch {
	case lower && b.Inclusive:
		return cql.GE
	case lower:
		return cql.GT
	case b.Inclusive:
		return cql.LE
	}
	return cql.LT
}

// inValues returns the values of an = or IN relation on primary key column c, checked,
// sorted in c's type's order and without duplicates (as Cassandra's IN reads each key once).
func inValues(t *Table, c *Column, r cql.Relation, b *binder) ([][]byte, error) {
	var vals [][]byte
	add := func(v []byte, ok bool) error {
		if !ok {
			return nil
		}
		if err := checkKeyValue(t, c, v); err != nil {
			return err
		}
		vals = append(vals, v)
		return nil
	}
	switch {
	case r.Op == cql.EQ:
		v, ok, err := b.term(c, r.Value)
		if err != nil {
			return nil, err
		}
		if err := add(v, ok); err != nil {
			return nil, err
		}
	case r.Value != nil: // IN ?
		lc := &Column{Name: "in(" + c.Name + ")", Kind: RegularColumn, Type: Type("frozen<list<" + string(c.Type) + ">>")}
		v, ok, err := b.term(lc, r.Value)
		if err != nil || !ok {
			return nil, err
		}
		if v == nil {
			return nil, fmt.Errorf("invalid null value for IN restriction on column %s", cql.QuoteIdent(c.Name))
		}
		elems, err := listElements(v)
		if err != nil {
			return nil, fmt.Errorf("bind marker %s: %w", lc.Name, err)
		}
		for _, e := range elems {
			if err := add(e, true); err != nil {
				return nil, err
			}
		}
	default:
		for _, x := range r.Values {
			v, ok, err := b.term(c, x)
			if err != nil {
				return nil, err
			}
			if err := add(v, ok); err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(vals, c.Type.Compare)
	return slices.CompactFunc(vals, func(a, b []byte) bool { return bytes.Equal(a, b) }), nil
}

// listElements splits a list's value: [int n] then n times [int length][bytes].
func listElements(v []byte) ([][]byte, error) {
	if len(v) < 4 {
		return nil, fmt.Errorf("truncated list")
	}
	n := int(int32(binary.BigEndian.Uint32(v)))
	v = v[4:]
	if n < 0 || n > len(v)/4 {
		return nil, fmt.Errorf("list of %d elements in %d bytes", n, len(v))
	}
	out := make([][]byte, n)
	for i := range out {
		e, rest, err := paramElement(v)
		if err != nil {
			return nil, err
		}
		out[i], v = e, rest
	}
	if len(v) > 0 {
		return nil, fmt.Errorf("%d bytes after the list's last element", len(v))
	}
	return out, nil
}

// multiRelation interprets a relation on a tuple of clustering columns, (a, b) op value, as
// a filter; the replicas' range narrows on its first column (selectWhere).
func multiRelation(t *Table, r cql.Relation, b *binder) (RowFilter, error) {
	f := RowFilter{Op: r.Op}
	names := make([]string, len(r.Columns))
	types := make([]string, len(r.Columns))
	for i, x := range r.Columns {
		c, err := column(t, x)
		if err != nil {
			return f, err
		}
		if c.Kind != ClusteringColumn {
			return f, fmt.Errorf("multi-column relations can only be applied to clustering columns but was applied to: %s", cql.QuoteIdent(c.Name))
		}
		if i > 0 && c.Index != f.Columns[i-1].Index+1 {
			return f, fmt.Errorf("clustering columns must appear in the PRIMARY KEY order in multi-column relations: %s", tupleNames(r.Columns))
		}
		f.Columns = append(f.Columns, c)
		names[i], types[i] = c.Name, string(c.Type)
	}
	tc := &Column{Name: "(" + strings.Join(names, ",") + ")", Kind: RegularColumn, Type: Type("frozen<tuple<" + strings.Join(types, ", ") + ">>")}
	split := func(v []byte) ([][]byte, error) {
		out := make([][]byte, len(f.Columns))
		for i, c := range f.Columns {
			e, rest, err := paramElement(v)
			if err != nil {
				return nil, err
			}
			if err := checkKeyValue(t, c, e); err != nil {
				return nil, err
			}
			out[i], v = e, rest
		}
		return out, nil
	}
	one := func(x cql.Term, c *Column) error {
		v, ok, err := b.term(c, x)
		if err != nil || !ok {
			return err
		}
		if v == nil {
			return fmt.Errorf("invalid null value in condition for columns %s", tc.Name)
		}
		tv, err := split(v)
		if err != nil {
			return fmt.Errorf("columns %s: %w", tc.Name, err)
		}
		f.Values = append(f.Values, tv)
		return nil
	}
	switch {
	case r.Op != cql.IN:
		return f, one(r.Value, tc)
	case r.Value != nil: // IN ?
		lc := &Column{Name: "in" + tc.Name, Kind: RegularColumn, Type: Type("frozen<list<" + string(tc.Type) + ">>")}
		v, ok, err := b.term(lc, r.Value)
		if err != nil || !ok {
			return f, err
		}
		if v == nil {
			return f, fmt.Errorf("invalid null value for IN restriction on columns %s", tc.Name)
		}
		elems, err := listElements(v)
		if err != nil {
			return f, fmt.Errorf("bind marker %s: %w", lc.Name, err)
		}
		for _, e := range elems {
			tv, err := split(e)
			if err != nil {
				return f, fmt.Errorf("columns %s: %w", tc.Name, err)
			}
			f.Values = append(f.Values, tv)
		}
	default:
		for _, x := range r.Values {
			if err := one(x, tc); err != nil {
				return f, err
			}
		}
	}
	return f, nil
}

func tupleNames(xs []cql.Ident) string {
	names := make([]string, len(xs))
	for i, x := range xs {
		names[i] = cql.QuoteIdent(x.Name)
	}
	return "(" + strings.Join(names, ", ") + ")"
}

// relationVariables describes the bind markers of a relation with IN or on a tuple of
// columns of table t, calling set for each; it returns false for other relations.
func relationVariables(t *Table, r cql.Relation, set func(lit *cql.Literal, name string, typ Type)) bool {
	if r.Element != nil {
		if c, ok := t.Column(r.Column.Name); ok {
			if kind, elems := c.Type.Frozen().Params(); kind == ParamMap {
				for i, x := range []cql.Term{r.Element, r.Value} {
					name := []string{"key(", "value("}[i] + c.Name + ")"
					if lit, ok := x.(*cql.Literal); ok && lit.Kind == cql.LitBind {
						set(lit, name, elems[i])
					} else {
						nestedMarkers(elems[i], name, x, set)
					}
				}
			}
		}
		return true
	}
	if (r.Op == cql.CONTAINS || r.Op == cql.CONTAINSKEY) && !r.Multi() {
		if c, ok := t.Column(r.Column.Name); ok {
			if typ, err := containsType(c, r.Op == cql.CONTAINSKEY); err == nil {
				if lit, ok := r.Value.(*cql.Literal); ok && lit.Kind == cql.LitBind {
					set(lit, c.Name, typ)
				} else {
					nestedMarkers(typ, c.Name, r.Value, set)
				}
			}
		}
		return true
	}
	if r.Op != cql.IN && !r.Multi() {
		return false
	}
	name, typ := "", TypeInvalid
	if r.Multi() {
		names := make([]string, len(r.Columns))
		types := make([]string, len(r.Columns))
		for i, x := range r.Columns {
			c, _ := t.Column(x.Name)
			if c == nil {
				return true
			}
			names[i], types[i] = c.Name, string(c.Type)
		}
		name, typ = "("+strings.Join(names, ",")+")", Type("frozen<tuple<"+strings.Join(types, ", ")+">>")
	} else {
		c, _ := t.Column(r.Column.Name)
		if c == nil {
			return true
		}
		name, typ = c.Name, c.Type
	}
	elem := func(x cql.Term) {
		lit, ok := x.(*cql.Literal)
		if ok && lit.Kind == cql.LitBind {
			set(lit, name, typ)
			return
		}
		nestedMarkers(typ, name, x, set)
	}
	switch {
	case r.Op == cql.IN && r.Value != nil:
		if lit, ok := r.Value.(*cql.Literal); ok && lit.Kind == cql.LitBind {
			set(lit, "in("+strings.Trim(name, "()")+")", Type("frozen<list<"+string(typ)+">>"))
		}
	case r.Op == cql.IN:
		for _, x := range r.Values {
			elem(x)
		}
	default:
		elem(r.Value)
	}
	return true
}

// Shape is what a SELECT asks beyond one partition's rows: the partitions of IN, the rows'
// filters, aggregates and groups, aliases, DISTINCT and PER PARTITION LIMIT. The coordinator
// applies it to a stream of rows, whatever read produced them.
type Shape struct {
	// PartitionKeys are the partitions the read reads, the cartesian product of the
	// partition key's = and IN values (each key once); nil when the binder only checks.
	PartitionKeys [][][]byte
	// InPartitions is set when IN restricts a partition key column.
	InPartitions bool
	// Filters are checked on each row read; a row matching all of them is returned.
	Filters []RowFilter
	// Aggregates is nil without aggregates; else it has one entry per selected item, nil
	// for an item that is not an aggregate (which takes the value of the group's first row).
	Aggregates []*Aggregate
	aggNames   []string
	// Aliases is nil without AS; else it has one entry per item, "" without an alias.
	Aliases []string
	// GroupBy is the number of primary key columns (partition key first) GROUP BY groups
	// the rows by; 0 without GROUP BY.
	GroupBy int
	// PerPartitionLimit is the most rows returned of each partition; 0 means no limit.
	PerPartitionLimit int
	// Distinct is SELECT DISTINCT: one row per partition, of partition key columns.
	Distinct bool
	// OrderBy is set when the SELECT has ORDER BY.
	OrderBy bool
	// JSON is SELECT JSON: each row one text column "[json]" (ResultColumns), an object of the
	// selected columns (SelectedColumns; RowJSON).
	JSON bool
}

// Aggregated reports whether the read's rows are folded into groups (aggregates or GROUP BY).
func (s *Shape) Aggregated() bool { return s.Aggregates != nil || s.GroupBy > 0 }

// bindAggregate binds item i of the SELECT list, the aggregate f.
func (r *Read) bindAggregate(i int, f cql.SelectFunc, b *binder) error {
	n := len(r.Columns) + 1
	if r.Funcs == nil {
		r.Funcs = make([]cql.SelectKind, 0, n)
	}
	for len(r.Funcs) < i {
		r.Funcs = append(r.Funcs, cql.SelectColumn)
	}
	for len(r.Aggregates) < i {
		r.Aggregates = append(r.Aggregates, nil)
		r.aggNames = append(r.aggNames, "")
	}
	for len(r.exprs) < i {
		r.exprs = append(r.exprs, nil)
	}
	a := &Aggregate{Name: f.Aggregate}
	name := "count"
	if f.Expr == nil {
		a.Star, a.Type = true, TypeBigInt
	} else {
		c := &compiler{t: r.Table, b: b, selector: true}
		e, err := c.compile(f.Expr, TypeInvalid)
		if err != nil {
			return err
		}
		if a.Type, err = aggregateResultType(a.Name, e.typ); err != nil {
			return err
		}
		a.arg = e
		name = "system." + a.Name + "(" + e.name + ")"
	}
	r.Columns = append(r.Columns, nil)
	r.Funcs = append(r.Funcs[:i], cql.SelectAggregate)
	r.Aggregates = append(r.Aggregates[:i], a)
	r.aggNames = append(r.aggNames[:i], name)
	r.exprs = append(r.exprs[:i], nil)
	return nil
}

// bindShape binds the rest of a SELECT's shape: aliases, DISTINCT, GROUP BY, PER PARTITION
// LIMIT, and pads the per-item slices to the list's length.
func (r *Read) bindShape(st *cql.SelectStmt, b *binder, eqPrefix int) error {
	t := r.Table
	n := len(r.Columns)
	if r.Aggregates != nil {
		for len(r.Aggregates) < n {
			r.Aggregates = append(r.Aggregates, nil)
			r.aggNames = append(r.aggNames, "")
		}
		for len(r.Funcs) < n {
			r.Funcs = append(r.Funcs, cql.SelectColumn)
		}
		for len(r.exprs) < n {
			r.exprs = append(r.exprs, nil)
		}
	}
	r.JSON = st.JSON
	if st.Aliases != nil {
		r.Aliases = make([]string, n)
		for i, a := range st.Aliases {
			r.Aliases[i] = a.Name
		}
	}
	for _, rel := range st.Where {
		if !rel.Multi() && rel.Op == cql.IN {
			if c, ok := t.Column(rel.Column.Name); ok && c.Kind == PartitionKeyColumn {
				r.InPartitions = true
			}
		}
	}
	if st.Distinct {
		r.Distinct = true
		if r.Aggregates != nil {
			return fmt.Errorf("aggregate functions are not supported with SELECT DISTINCT")
		}
		seen := make(map[int]bool)
		for i, c := range r.Columns {
			if c == nil || c.Kind != PartitionKeyColumn && !c.Static || r.Funcs != nil && r.Funcs[i] != cql.SelectColumn {
				what := "a function call"
				if c != nil {
					what = cql.QuoteIdent(c.Name)
				}
				return fmt.Errorf("SELECT DISTINCT queries must only request partition key columns and/or static columns (not %s)", what)
			}
			seen[c.Index] = true
		}
		for _, c := range t.PartitionKey {
			if !seen[c.Index] {
				return fmt.Errorf("SELECT DISTINCT queries must request all the partition key columns (missing %s)", cql.QuoteIdent(c.Name))
			}
		}
		if len(r.Clustering.Prefix) > 0 || r.Clustering.Lower != nil || r.Clustering.Upper != nil || !distinctFilters(r.Filters) {
			return fmt.Errorf("SELECT DISTINCT with WHERE clause only supports restriction by partition key and/or static columns")
		}
		if st.PerPartitionLimit != nil {
			return fmt.Errorf("PER PARTITION LIMIT is not allowed with SELECT DISTINCT queries")
		}
	}
	if st.PerPartitionLimit != nil {
		l, err := b.limit(st.PerPartitionLimit)
		if err != nil {
			return fmt.Errorf("PER PARTITION %w", err)
		}
		r.PerPartitionLimit = l
	}
	if len(st.GroupBy) > 0 {
		npk := len(t.PartitionKey)
		next := 0
		for _, x := range st.GroupBy {
			c, err := column(t, x)
			if err != nil {
				return err
			}
			if c.Kind == RegularColumn {
				return fmt.Errorf("group by is currently only supported on the columns of the PRIMARY KEY, got %s", cql.QuoteIdent(c.Name))
			}
			for next < c.Index && next >= npk && next-npk < eqPrefix {
				next++ // a clustering column restricted by = may be left out
			}
			if c.Index != next {
				return fmt.Errorf("group by currently only support groups of columns following their declared order in the PRIMARY KEY")
			}
			next++
		}
		if next < npk {
			return fmt.Errorf("group by is not supported on only a part of the partition key")
		}
		r.GroupBy = next
		if r.Distinct {
			return fmt.Errorf("grouping on clustering columns is not allowed for SELECT DISTINCT queries")
		}
	}
	return nil
}

// EvalAt is Eval for a row of partition pk (which token(...) selectors read).
func (r *Read) EvalAt(i int, pk [][]byte, cell func(c *Column, kind cql.SelectKind) []byte) ([]byte, error) {
	v, err := r.exprs[i].eval(r.binder, cell, func() int64 { return tokenOf(pk) })
	if err == nil && v != nil {
		err = r.exprs[i].typ.Check(v)
	}
	if err != nil {
		return nil, fmt.Errorf("selector %s: %w", r.exprs[i].name, err)
	}
	return v, nil
}

// AggregateArg returns the value of the argument of item i, an aggregate other than
// COUNT(*), in a row of partition pk (cell as for Eval).
func (r *Read) AggregateArg(i int, pk [][]byte, cell func(c *Column, kind cql.SelectKind) []byte) ([]byte, error) {
	a := r.Aggregates[i]
	v, err := a.arg.eval(r.binder, cell, func() int64 { return tokenOf(pk) })
	if err == nil && v != nil {
		err = a.arg.typ.Check(v)
	}
	if err != nil {
		return nil, fmt.Errorf("selector %s: %w", r.aggNames[i], err)
	}
	return v, nil
}

// RowJSON renders one row of r's selected values (in SelectedColumns order) as SELECT JSON's
// object: each column's name (as a CQL identifier, quoted when it needs to be) and JSON value.
func (r *Read) RowJSON(cols []ResultColumn, row [][]byte) ([]byte, error) {
	b := []byte{'{'}
	for i, c := range cols {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendJSONString(b, jsonKey(c.Name))
		b = append(b, ": "...)
		var err error
		if b, err = appendJSON(b, c.Type, row[i]); err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
	}
	return append(b, '}'), nil
}

// jsonKey is a result column's name as SELECT JSON keys it: a column's name quoted when CQL
// needs it ("\"Name\""), a function's as it is.
func jsonKey(name string) string {
	if strings.ContainsAny(name, "()[]") {
		return name
	}
	return cql.QuoteIdent(name)
}
