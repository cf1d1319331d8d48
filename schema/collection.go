package schema

import (
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
	return strings.HasPrefix(s, "list<") || strings.HasPrefix(s, "set<") || strings.HasPrefix(s, "map<")
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
const FormatCollections = 6

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
