package schema

import (
	"fmt"

	"github.com/kvnode/kvnode/cql"
)

// FormatStatic is the data format version from which a release of kvnode stores static columns:
// it decodes a static column in a table's schema (the column's type byte carries descendingBit,
// which an older release refuses on a regular column) and keeps a partition's static row under
// its own storage key. Coordinators refuse a table with a static column while a member of an
// older format remains.
const FormatStatic = 11

// errStaticNoClustering is Cassandra's refusal of a static column in a table without
// clustering columns.
const errStaticNoClustering = "Static columns are only useful (and thus allowed) if the table has at least one clustering column"

// staticColumns marks the columns st declares STATIC among cols (built from st, with nck
// clustering columns), refusing as Cassandra does a static primary key column and a static
// column in a table without clustering columns.
func staticColumns(st *cql.CreateTableStmt, cols []Column, nck int) error {
	for _, d := range st.Columns {
		if !d.Static {
			continue
		}
		for i := range cols {
			if cols[i].Name != d.Name.Name {
				continue
			}
			if cols[i].Kind != RegularColumn {
				return fmt.Errorf("Static column %s cannot be part of the PRIMARY KEY", cql.QuoteIdent(d.Name.Name))
			}
			if nck == 0 {
				return fmt.Errorf("%s", errStaticNoClustering)
			}
			cols[i].Static = true
		}
	}
	return nil
}

// HasStatic reports whether t has a static column.
func (t *Table) HasStatic() bool {
	for _, c := range t.Regular {
		if c.Static {
			return true
		}
	}
	return false
}

// IsStatic reports whether t has a static column named name.
func (t *Table) IsStatic(name string) bool {
	c, ok := t.Column(name)
	return ok && c.Static
}

// StaticFormatFeatures returns the names of t's features that a release of a data format before
// FormatStatic cannot decode: its static columns.
func (t *Table) StaticFormatFeatures() []string {
	if t.dropped {
		return nil
	}
	var fs []string
	for _, c := range t.Regular {
		if c.Static {
			fs = append(fs, "static column "+cql.QuoteIdent(c.Name))
		}
	}
	return fs
}

// staticOnlyCells reports whether cols (column index → named) names at least one column of t
// and only static ones: a write that may leave out the clustering key, as Cassandra allows.
func staticOnlyCells(t *Table, cols map[int]bool) bool {
	if len(t.Clustering) == 0 {
		return false
	}
	n := 0
	for i, ok := range cols {
		if !ok {
			continue
		}
		if !t.Columns[i].Static {
			return false
		}
		n++
	}
	return n > 0 || len(cols) == 0
}

// elementCols returns the columns of a DELETE's element deletions as staticOnlyCells takes them.
func elementCols(elements map[int][]Cell) map[int]bool {
	m := make(map[int]bool, len(elements))
	for i := range elements {
		m[i] = true
	}
	return m
}

// staticOnlyRange checks the clustering range cr of an UPDATE or DELETE (stmt) of static
// columns only (staticOnly): none, which writes the partition's static row, or a whole row's
// key, as in Cassandra.
func staticOnlyRange(t *Table, staticOnly bool, cr ClusteringRange, stmt string) error {
	if !staticOnly || cr.IsRow(t) || (len(cr.Prefix) == 0 && cr.Lower == nil && cr.Upper == nil) {
		return nil
	}
	return fmt.Errorf("Invalid restrictions on clustering columns since the %s statement modifies only static columns", stmt)
}

// staticOnlyInsert reports whether an INSERT into t that gives the columns given (set: given
// a value other than unset) writes only the partition's static row: it gives no clustering
// column, and values of static columns only, at least one. It refuses, with Cassandra's
// message, an INSERT that gives some clustering columns but not all while setting only static
// columns.
func staticOnlyInsert(t *Table, given, set []bool) (bool, error) {
	if len(t.Clustering) == 0 {
		return false, nil
	}
	statics, regular := 0, 0
	for _, c := range t.Regular {
		if given[c.Index] {
			if c.Static {
				statics++
			} else {
				regular++
			}
		}
	}
	if statics == 0 || regular > 0 {
		return false, nil
	}
	clustering := 0
	for _, c := range t.Clustering {
		if given[c.Index] {
			clustering++
		}
	}
	switch clustering {
	case 0:
		return true, nil
	case len(t.Clustering):
		return false, nil
	}
	return false, fmt.Errorf("Invalid restrictions on clustering columns since the INSERT statement modifies only static columns")
}
