package schema

import (
	"fmt"
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
