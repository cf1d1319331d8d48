package schema

import (
	"fmt"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// OptionGCGrace is the name of the table option that sets how long tombstones are kept.
const OptionGCGrace = "gc_grace_seconds"

// DefaultGCGraceSeconds is a table's gc_grace_seconds when no statement set it: Cassandra's
// default, 10 days.
const DefaultGCGraceSeconds = 864000

// MaxGCGraceSeconds is the largest gc_grace_seconds accepted.
const MaxGCGraceSeconds = 1<<31 - 1

// GCGraceSeconds returns the table's gc_grace_seconds: how long, at least, a tombstone of the
// table is kept after it was written. Replicas purge a tombstone only once it is older than this
// AND a repair of all the table's ranges ran after it was written (docs/operations.md), so that
// every replica holds it before any forgets it and the deleted data never comes back.
func (t *Table) GCGraceSeconds() uint32 {
	if !t.gcGraceSet {
		return DefaultGCGraceSeconds
	}
	return t.gcGrace
}

// setGCGrace sets the table's gc_grace_seconds, keeping the default unset so that a table
// encodes alike however its default was reached.
func (t *Table) setGCGrace(seconds uint32) {
	t.gcGrace, t.gcGraceSet = seconds, seconds != DefaultGCGraceSeconds
	if !t.gcGraceSet {
		t.gcGrace = 0
	}
}

// gcGraceOption applies the gc_grace_seconds option among opts, if any (tableOptions checks the
// other options and repeated ones). ALTER TABLE without it keeps the table's value.
func (t *Table) gcGraceOption(opts []cql.Option) error {
	for _, o := range opts {
		if o.Name.Name != OptionGCGrace {
			continue
		}
		n, err := ParseGCGrace(o.Value)
		if err != nil {
			return err
		}
		t.setGCGrace(n)
	}
	return nil
}

// ParseGCGrace interprets the value of the gc_grace_seconds option: an integer from 0 to
// 2147483647, written as a number (3600) or as a string of digits ('3600'). Anything else
// (a negative number, a float, trailing characters, a map, a value too large) is an error that
// names the option and the value.
func ParseGCGrace(v cql.Term) (uint32, error) {
	if lit, ok := v.(*cql.Literal); ok && (lit.Kind == cql.LitInteger || lit.Kind == cql.LitString) {
		s := strings.TrimPrefix(lit.Value, "+")
		if s != "" && strings.Trim(s, "0") == "" {
			return 0, nil // zero is allowed: tombstones are purged at the first chance after a repair
		}
	}
	n, err := positiveInt(v, MaxGCGraceSeconds, "gc_grace_seconds is a whole number of seconds, 0 or more")
	if err != nil {
		return 0, fmt.Errorf("%s = %w", OptionGCGrace, err)
	}
	return uint32(n), nil
}
