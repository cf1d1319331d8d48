package schema

import (
	"fmt"
	"math"

	"github.com/kvnode/kvnode/cql"
)

// Defaults of Limits. A schema travels whole between nodes (a joining node pulls it, a node
// that disagrees pulls it again), so it must stay small enough to send in a gossip round: 4 MiB
// holds thousands of tables of dozens of columns. 1024 columns and 1024 tables per keyspace are
// far above what a data model needs, and far below what makes the schema unsendable (issue 18:
// seven tables of 290,000 columns made an 18 MB schema no new node could join with).
const (
	DefaultMaxColumnsPerTable   = 1024
	DefaultMaxTablesPerKeyspace = 1024
	DefaultMaxSchemaSize        = 4 << 20
)

// Limits bounds what DDL can grow. The zero value of a field means its default. The YAML tags
// are the keys of kvnode's configuration file.
type Limits struct {
	// MaxColumnsPerTable bounds the columns of one table (key columns included).
	MaxColumnsPerTable int `yaml:"max_columns_per_table"`
	// MaxTablesPerKeyspace bounds the live tables of one keyspace.
	MaxTablesPerKeyspace int `yaml:"max_tables_per_keyspace"`
	// MaxSchemaSize bounds the encoded schema, in bytes: every keyspace and table, and the
	// tombstones of dropped ones until they are garbage-collected (Schema.Purge, once every
	// node has seen the drop).
	MaxSchemaSize int `yaml:"max_schema_size"`
}

// EnsureDefaults replaces zero fields with their defaults and returns l.
func (l *Limits) EnsureDefaults() *Limits {
	if l.MaxColumnsPerTable == 0 {
		l.MaxColumnsPerTable = DefaultMaxColumnsPerTable
	}
	if l.MaxTablesPerKeyspace == 0 {
		l.MaxTablesPerKeyspace = DefaultMaxTablesPerKeyspace
	}
	if l.MaxSchemaSize == 0 {
		l.MaxSchemaSize = DefaultMaxSchemaSize
	}
	return l
}

// Validate reports whether l, after EnsureDefaults, holds usable limits: each 1 to
// math.MaxInt32. The error names the field and its configuration key.
func (l *Limits) Validate() error {
	for _, f := range []struct {
		field, key string
		v          int
	}{
		{"MaxColumnsPerTable", "max_columns_per_table", l.MaxColumnsPerTable},
		{"MaxTablesPerKeyspace", "max_tables_per_keyspace", l.MaxTablesPerKeyspace},
		{"MaxSchemaSize", "max_schema_size", l.MaxSchemaSize},
	} {
		if f.v < 1 || f.v > math.MaxInt32 {
			return fmt.Errorf("schema: Limits.%s (%s) is %d, want 1 to %d", f.field, f.key, f.v, math.MaxInt32)
		}
	}
	return nil
}

// Check reports whether the change from base to next, two states of keyspace ks (see
// Restrict), breaks a limit, in a cluster whose whole schema is whole (holding base's state of
// ks). Only growth is refused: a schema already over a limit (a limit lowered after the fact)
// may still shrink, and DDL that does not grow it works. The errors name the object, the
// limit and its configuration key, so that the client sees what to change.
func (l Limits) Check(ks string, base, next, whole *Schema) error {
	l.EnsureDefaults()
	if next == base {
		return nil
	}
	baseTables := base.Tables(ks)
	nextTables := next.Tables(ks)
	if n := len(nextTables); n > l.MaxTablesPerKeyspace && n > len(baseTables) {
		return fmt.Errorf("keyspace %s would have %d tables; the limit is %d tables per keyspace (max_tables_per_keyspace)",
			cql.QuoteIdent(ks), n, l.MaxTablesPerKeyspace)
	}
	for _, t := range nextTables {
		n := len(t.Columns)
		if n <= l.MaxColumnsPerTable {
			continue
		}
		if old, ok := base.Table(ks, t.Name); ok && old.Version == t.Version || ok && len(old.Columns) >= n {
			continue // not grown by this change
		}
		return fmt.Errorf("table %s has %d columns; the limit is %d columns per table (max_columns_per_table)",
			t.QualifiedName(), n, l.MaxColumnsPerTable)
	}
	size := len(whole.encoded) - len(base.encoded) + len(next.encoded)
	if size > l.MaxSchemaSize && len(next.encoded) > len(base.encoded) {
		return fmt.Errorf("the schema would be %d bytes; the limit is %d bytes (max_schema_size)", size, l.MaxSchemaSize)
	}
	return nil
}
