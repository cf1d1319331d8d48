package schema

import (
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/cql"
)

// scanFilter interprets a relation of a scan's WHERE clause on a primary key, regular or static
// column (ALLOW FILTERING) as a RowFilter the coordinator checks on each row it reads. Every
// such restriction filters a scan, even = on the first clustering column (the scan reads whole
// partitions), so Cassandra asks for ALLOW FILTERING for each: allow is the statement's. A
// partition key column is filtered like a clustering column (=, IN, slices: the restrictions
// that do not name whole partition keys, IsScan), unless onToken says token(...) restricts the
// key too.
func scanFilter(t *Table, r cql.Relation, allow, onToken bool, b *binder) (RowFilter, error) {
	if r.Multi() {
		if !allow {
			return RowFilter{}, errors.New(errNeedsFiltering)
		}
		return multiRelation(t, r, b)
	}
	c, err := column(t, r.Column)
	if err != nil {
		return RowFilter{}, err
	}
	name := cql.QuoteIdent(c.Name)
	key := c.Kind == PartitionKeyColumn || c.Kind == ClusteringColumn
	switch {
	case c.Kind == PartitionKeyColumn && onToken:
		return RowFilter{}, fmt.Errorf("partition key column %s cannot be restricted by both a normal relation and a token relation", name)
	case key && (r.Op == cql.CONTAINS || r.Op == cql.CONTAINSKEY || r.Element != nil):
		return RowFilter{}, fmt.Errorf("%s on the primary key column %s is not supported", map[bool]string{true: "an entry restriction", false: r.Op.String()}[r.Element != nil], name)
	case !allow:
		return RowFilter{}, errors.New(errNeedsFiltering)
	case r.Op == cql.IN && c.Kind == RegularColumn:
		return RowFilter{}, fmt.Errorf("IN predicates on non-primary-key columns (%s) is not yet supported", name)
	case r.Op == cql.IN:
		vals, err := inValues(t, c, r, b)
		if err != nil {
			return RowFilter{}, err
		}
		f := RowFilter{Columns: []*Column{c}, Op: cql.IN, Values: make([][][]byte, len(vals))}
		for i, v := range vals {
			f.Values[i] = [][]byte{v}
		}
		return f, nil
	}
	switch r.Op {
	case cql.EQ, cql.LT, cql.LE, cql.GT, cql.GE:
	default:
		return RowFilter{}, fmt.Errorf("unsupported restriction %s on column %s", r.Op, name)
	}
	v, ok, err := b.term(c, r.Value)
	if err != nil {
		return RowFilter{}, err
	}
	switch {
	case !ok && !b.check:
		return RowFilter{}, fmt.Errorf("invalid unset value for column %s", c.Name)
	case ok && v == nil:
		return RowFilter{}, fmt.Errorf("invalid null value in condition for column %s", name)
	case ok && key:
		if err := checkKeyValue(t, c, v); err != nil {
			return RowFilter{}, err
		}
	}
	return RowFilter{Columns: []*Column{c}, Op: r.Op, Values: [][][]byte{{v}}}, nil
}

// scanBounds records which restrictions a scan's filters put on each single column, to refuse
// a column restricted twice (= or IN with anything, or two lower or two upper bounds) as a read
// of one partition does.
type scanBounds map[*Column][3]bool // equal, lower, upper

func (sb scanBounds) add(f RowFilter) error {
	if len(f.Columns) != 1 {
		return nil
	}
	c := f.Columns[0]
	had := sb[c]
	name := cql.QuoteIdent(c.Name)
	switch f.Op {
	case cql.EQ, cql.IN:
		if had[0] || had[1] || had[2] {
			return fmt.Errorf("column %s is restricted more than once", name)
		}
		had[0] = true
	case cql.GT, cql.GE:
		if had[0] || had[1] {
			return fmt.Errorf("column %s is restricted more than once (a lower bound is already given)", name)
		}
		had[1] = true
	default:
		if had[0] || had[2] {
			return fmt.Errorf("column %s is restricted more than once (an upper bound is already given)", name)
		}
		had[2] = true
	}
	sb[c] = had
	return nil
}

// distinctFilters reports whether the filters of a SELECT DISTINCT are all on partition key
// and static columns, the only ones Cassandra lets DISTINCT filter on (their value is the
// partition's).
func distinctFilters(fs []RowFilter) bool {
	for _, f := range fs {
		for _, c := range f.Columns {
			if !c.Static && c.Kind != PartitionKeyColumn {
				return false
			}
		}
	}
	return true
}
