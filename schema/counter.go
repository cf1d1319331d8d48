package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/kvnode/kvnode/cql"
)

// Counter tables (Cassandra 4.1's semantics). A table whose regular columns are all of type
// counter is a counter table: its rows are written only by UPDATE ... SET c = c + n (or
// c = c - n) and deleted by DELETE; INSERT, USING TTL, USING TIMESTAMP and a
// default_time_to_live are refused, with Cassandra's messages. A Write of a counter table
// carries, for each counter it changes, a Cell whose Value is the increment as a bigint (the
// decrement negated), or nil for a DELETE of the column. The replica that leads the update
// adds it to its own shard (see package cell).

// FormatCounters is the data format version from which a release of kvnode stores counter
// cells and serves counter updates (the counter-update-to-leader exchange). A node of an older
// format refuses a schema with a counter column (it does not know the type), so coordinators
// refuse a counter table while such a member remains.
const FormatCounters = 10

// CountersFormatFeatures returns the names of t's features that a release of a data format
// before FormatCounters cannot serve: its counter columns, dropped ones included.
func (t *Table) CountersFormatFeatures() []string {
	if t.dropped {
		return nil
	}
	var fs []string
	for _, c := range t.Columns {
		if c.Type == TypeCounter {
			fs = append(fs, "counter column "+cql.QuoteIdent(c.Name))
		}
	}
	for _, c := range t.droppedCols {
		if c.Type == TypeCounter {
			fs = append(fs, "a record of dropped counter column "+cql.QuoteIdent(c.Name))
		}
	}
	return fs
}

// IsCounter reports whether t is a counter table: it has a counter column (then all its
// regular columns are counters).
func (t *Table) IsCounter() bool {
	for _, c := range t.Regular {
		if c.Type == TypeCounter {
			return true
		}
	}
	return false
}

// checkCounters refuses what Cassandra refuses of a counter table's definition: a counter in
// the primary key, counters beside other regular columns and a default_time_to_live. after
// names the statement for ALTER TABLE ADD's messages ("" for CREATE TABLE).
func (t *Table) checkCounters(alterAdd []string) error {
	counters, others := 0, ""
	for _, c := range t.Columns {
		switch {
		case c.Type == TypeCounter && c.Kind != RegularColumn:
			return fmt.Errorf("counter type is not supported for PRIMARY KEY column %s", cql.QuoteString(c.Name))
		case c.Type == TypeCounter:
			counters++
		case c.Kind == RegularColumn && others == "":
			others = c.Name
		}
	}
	if counters == 0 {
		return nil
	}
	if others != "" {
		if len(alterAdd) > 0 {
			for _, n := range alterAdd {
				c, _ := t.Column(n)
				if c == nil {
					continue
				}
				if c.Type == TypeCounter {
					return fmt.Errorf("Cannot have a counter column (%q) in a non counter table", n)
				}
				return fmt.Errorf("Cannot have a non counter column (%q) in a counter table", n)
			}
		}
		return errors.New("Cannot mix counter and non counter columns in the same table")
	}
	if t.defaultTTL != 0 {
		return errors.New("Cannot set default_time_to_live on a table with counters")
	}
	return nil
}

// errCounterTruncate refuses TRUNCATE of a counter table: a truncation shadows cells by
// timestamp, and a counter's merged cell carries its newest shard's timestamp, so the shards
// of before the truncation would come back with the next increment.
var errCounterTruncate = errors.New("TRUNCATE of a counter table is not supported: truncated counter shards would come back with the next increment; drop and create the table instead")

// errCounterInsert is Cassandra's refusal of INSERT into a counter table.
var errCounterInsert = errors.New("INSERT statements are not allowed on counter tables, use UPDATE instead")

// counterOp binds a (c = c + v or c = c - v) on counter column c: the cell's Value is the
// increment as a bigint; ok is false when v is an unset marker, which leaves the counter as it
// is (Cassandra's testCounterUpdatesWithUnset).
func (b *binder) counterOp(c *Column, a cql.Assignment) (cl Cell, ok bool, err error) {
	switch {
	case a.Element != nil || a.Field != nil:
		return Cell{}, false, fmt.Errorf("invalid operation (%s) for non collection column %s", opName(a), cql.QuoteIdent(c.Name))
	case a.Op == cql.ILLEGAL:
		return Cell{}, false, fmt.Errorf("Cannot set the value of counter column %s (counters can only be incremented/decremented, not set)", c.Name)
	case a.Prepend:
		return Cell{}, false, fmt.Errorf("invalid operation (%s) for non list column %s", opName(a), cql.QuoteIdent(c.Name))
	}
	v, ok, err := b.term(c, a.Value)
	switch {
	case err != nil:
		return Cell{}, false, err
	case !ok:
		return Cell{}, false, nil
	case v == nil && !b.check:
		return Cell{}, false, errors.New("Invalid null value for counter increment")
	case v == nil:
		return Cell{}, false, nil
	}
	if a.Op == cql.MINUS {
		n := int64(binary.BigEndian.Uint64(v))
		if n == math.MinInt64 {
			return Cell{}, false, fmt.Errorf("The negation of %d overflows supported counter precision (signed 8 bytes integer)", n)
		}
		v = EncodeBigInt(-n)
	}
	return Cell{Column: c, Value: v}, true, nil
}

// checkCounterWrite refuses what Cassandra refuses of a write to a counter table: USING TTL
// and USING TIMESTAMP (INSERT is refused before binding).
func checkCounterWrite(stmt cql.Statement, w *Write) error {
	if !w.Table.IsCounter() {
		return nil
	}
	var ttl *cql.Literal
	switch st := stmt.(type) {
	case *cql.UpdateStmt:
		ttl = st.TTL
	}
	ts, _ := usingOf(stmt)
	switch {
	case ttl != nil:
		return errors.New("Cannot provide custom TTL for counter updates")
	case ts != nil:
		return errors.New("Cannot provide custom timestamp for counter updates")
	}
	w.TTL = 0
	return nil
}

// checkCounterBatch refuses Cassandra's mixes of counter and other writes in a batch, and
// records whether bt updates counters; a batch of counters is never logged (Unlogged).
func checkCounterBatch(st *cql.BatchStmt, bt *Batch) error {
	counters, err := CheckCounterBatch(bt.Writes, st.Counter, st.Unlogged, st.Timestamp != nil)
	if err != nil {
		return err
	}
	bt.Counter = counters
	bt.Unlogged = bt.Unlogged || counters
	return nil
}

// CheckCounterBatch refuses what Cassandra refuses of a batch of writes (a COUNTER batch when
// counter, else an UNLOGGED one when unlogged, else a logged one; hasTimestamp when the batch
// gives USING TIMESTAMP) mixing counter updates and other writes, and reports whether the
// batch updates counters.
func CheckCounterBatch(writes []*Write, counter, unlogged, hasTimestamp bool) (bool, error) {
	counters, others := false, false
	for _, w := range writes {
		if w.Table.IsCounter() {
			counters = true
		} else {
			others = true
		}
	}
	switch {
	case counters && hasTimestamp:
		return false, errors.New("Cannot provide custom timestamp for a BATCH containing counters")
	case counter && others:
		return false, errors.New("Cannot include non-counter statement in a counter batch")
	case !counter && !unlogged && counters:
		return false, errors.New("Cannot include a counter statement in a logged batch")
	case counters && others:
		return false, errors.New("Counter and non-counter mutations cannot exist in the same batch")
	}
	return counters, nil
}

// addedNames returns the names of the columns ALTER TABLE ADD adds.
func addedNames(st *cql.AlterTableStmt) []string {
	var ns []string
	for _, c := range st.Add {
		ns = append(ns, c.Name.Name)
	}
	return ns
}

// noCounters refuses a counter inside a collection or tuple (type w of args), as Cassandra.
func noCounters(w string, args []*typeNode) error {
	for _, a := range args {
		if a.kind == NotParametric && a.scalar == TypeCounter {
			switch w {
			case "tuple":
				return errors.New("Counters are not allowed inside tuples")
			case "frozen":
				return errors.New("frozen<> is only allowed on collections, tuples and user-defined types, not on counter")
			}
			return fmt.Errorf("Counters are not allowed inside collections: %s<%s>", w, TypeCounter)
		}
	}
	return nil
}
