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
