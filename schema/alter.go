package schema

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// Schema evolution: ALTER TABLE ADD, DROP and RENAME, and TRUNCATE. Cells are stored by
// column name (replica/key.go), so none of them rewrites data: ADD and RENAME change the
// schema only, DROP records when the column was dropped, and TRUNCATE when the table was
// truncated. Readers ignore what those records shadow (Table.Shadowed) and the replicas
// purge it.

// PosError is a schema error about one part of a statement, at that part's position.
type PosError struct {
	Pos cql.Pos
	Err error
}

// Error reads "line:col: what is wrong".
func (e *PosError) Error() string { return e.Pos.String() + ": " + e.Err.Error() }

// Unwrap returns the error without its position.
func (e *PosError) Unwrap() error { return e.Err }

func posErrorf(pos cql.Pos, format string, args ...any) error {
	return &PosError{Pos: pos, Err: fmt.Errorf(format, args...)}
}

// DroppedColumn records a dropped regular column, as Cassandra's
// system_schema.dropped_columns does: its cells written at or before At stay
// invisible, also after a column of that name is added again.
type DroppedColumn struct {
	Name string
	Type Type
	At   int64 // the drop's timestamp, in microseconds (a write timestamp)
}

// noTimestamp is the "never" of TruncatedAt and DroppedColumn.At: below every write timestamp.
const noTimestamp = math.MinInt64

// DroppedColumns returns the table's dropped column records, sorted by name.
func (t *Table) DroppedColumns() []DroppedColumn { return t.droppedCols }

// TruncatedAt returns the timestamp of the table's last TRUNCATE (microseconds, a write
// timestamp) and true, or false if it was never truncated. Data written at or before it is
// gone.
func (t *Table) TruncatedAt() (int64, bool) { return t.truncatedAt, t.truncatedSet }

// Shadowed reports whether a write of the regular column (or, with column "", of the row
// marker, a row or range tombstone or a partition deletion) at write timestamp ts is hidden
// by the table's TRUNCATE or by a drop of that column. It is cheap when the table was never
// truncated and has no dropped column.
func (t *Table) Shadowed(column string, ts int64) bool {
	if t.truncatedSet && ts <= t.truncatedAt {
		return true
	}
	if column == "" || len(t.droppedCols) == 0 {
		return false
	}
	if d, ok := t.droppedColumn(column); ok && ts <= d.At {
		return true
	}
	return false
}

// HasShadows reports whether Shadowed can return true for any write.
func (t *Table) HasShadows() bool { return t.truncatedSet || len(t.droppedCols) > 0 }

// DroppedColumn returns the record of the dropped column name, if it was ever dropped.
func (t *Table) DroppedColumn(name string) (DroppedColumn, bool) { return t.droppedColumn(name) }

func (t *Table) droppedColumn(name string) (DroppedColumn, bool) {
	i, ok := slices.BinarySearchFunc(t.droppedCols, name, func(d DroppedColumn, n string) int {
		switch {
		case d.Name < n:
			return -1
		case d.Name > n:
			return 1
		}
		return 0
	})
	if !ok {
		return DroppedColumn{}, false
	}
	return t.droppedCols[i], true
}

// alterColumns applies ALTER TABLE ADD, DROP or RENAME to a copy of t (nt), at version v.
// It leaves nt as it is when IF [NOT] EXISTS skipped every column.
func (nt *Table) alterColumns(st *cql.AlterTableStmt, v Version, udts map[string]*UserType) error {
	switch st.Action {
	case cql.AlterAdd:
		return nt.addColumns(st, udts)
	case cql.AlterDrop:
		at := v.Timestamp
		if st.Timestamp != nil {
			n, err := strconv.ParseInt(st.Timestamp.Value, 10, 64)
			if err != nil || n == noTimestamp {
				return posErrorf(st.Timestamp.Pos(), "USING TIMESTAMP %s is not a valid timestamp", st.Timestamp.Value)
			}
			at = n
		}
		return nt.dropColumns(st, at)
	case cql.AlterRename:
		return nt.renameColumns(st)
	}
	return fmt.Errorf("unknown ALTER TABLE action %d", st.Action)
}

func (nt *Table) addColumns(st *cql.AlterTableStmt, udts map[string]*UserType) error {
	cols := slices.Clone(nt.Columns)
	for _, c := range st.Add {
		name := c.Name.Name
		if name == "" {
			return posErrorf(c.Name.Pos(), "a column name is empty")
		}
		if slices.ContainsFunc(cols, func(o Column) bool { return o.Name == name }) {
			if st.IfColumn {
				continue
			}
			return posErrorf(c.Name.Pos(), "Column with name %s already exists", cql.QuoteString(name))
		}
		typ, err := lookupTypeIn(c.Type.Name, nt.Keyspace, udts)
		if err != nil {
			return &PosError{Pos: c.Type.Pos(), Err: fmt.Errorf("column %s: %w", cql.QuoteIdent(name), err)}
		}
		if d, ok := nt.droppedColumn(name); ok && d.Type == TypeCounter { // Cassandra's words
			return posErrorf(c.Name.Pos(), "Cannot re-add previously dropped counter column %s", name)
		}
		if d, ok := nt.droppedColumn(name); ok && d.Type != typ {
			return posErrorf(c.Type.Pos(), "Cannot re-add previously dropped column %s of type %s, incompatible with previous type %s",
				cql.QuoteString(name), typ, d.Type)
		}
		if c.Static && len(nt.Clustering) == 0 {
			return posErrorf(c.Name.Pos(), "%s", errStaticNoClustering)
		}
		cols = append(cols, Column{Name: name, Type: typ, Kind: RegularColumn, Static: c.Static})
	}
	nt.rebuildColumns(cols)
	return nil
}

func (nt *Table) dropColumns(st *cql.AlterTableStmt, at int64) error {
	cols := slices.Clone(nt.Columns)
	dropped := slices.Clone(nt.droppedCols)
	for _, x := range st.Drop {
		i := slices.IndexFunc(cols, func(o Column) bool { return o.Name == x.Name })
		if i < 0 {
			if st.IfColumn {
				continue
			}
			return posErrorf(x.Pos(), "Column %s was not found in table %s", cql.QuoteIdent(x.Name), nt.QualifiedName())
		}
		c := cols[i]
		if c.Kind != RegularColumn {
			return posErrorf(x.Pos(), "Cannot drop PRIMARY KEY column %s", cql.QuoteIdent(x.Name))
		}
		if deps := nt.indexDependents(c.Name); len(deps) > 0 {
			return posErrorf(x.Pos(), "Cannot drop column %s because it has dependent secondary indexes (%s)", cql.QuoteIdent(x.Name), strings.Join(deps, ", "))
		}
		cols = slices.Delete(cols, i, i+1)
		d := DroppedColumn{Name: c.Name, Type: c.Type, At: at}
		if j := slices.IndexFunc(dropped, func(o DroppedColumn) bool { return o.Name == c.Name }); j >= 0 {
			// As Cassandra: the record of the latest drop replaces an earlier one.
			d.At = max(d.At, dropped[j].At)
			dropped[j] = d
		} else {
			dropped = append(dropped, d)
		}
	}
	slices.SortFunc(dropped, func(a, b DroppedColumn) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	nt.droppedCols = dropped
	nt.rebuildColumns(cols)
	return nil
}

func (nt *Table) renameColumns(st *cql.AlterTableStmt) error {
	cols := slices.Clone(nt.Columns)
	for _, r := range st.Rename {
		i := slices.IndexFunc(cols, func(o Column) bool { return o.Name == r.From.Name })
		if i < 0 {
			if st.IfColumn {
				continue
			}
			return posErrorf(r.From.Pos(), "Column %s was not found in table %s", cql.QuoteIdent(r.From.Name), nt.QualifiedName())
		}
		if cols[i].Kind == RegularColumn {
			return posErrorf(r.From.Pos(), "Cannot rename non PRIMARY KEY column %s", cql.QuoteIdent(r.From.Name))
		}
		if r.To.Name == "" {
			return posErrorf(r.To.Pos(), "a column name is empty")
		}
		if slices.ContainsFunc(cols, func(o Column) bool { return o.Name == r.To.Name }) {
			return posErrorf(r.To.Pos(), "Cannot rename column %s to %s in table %s; another column with that name already exists",
				cql.QuoteIdent(r.From.Name), cql.QuoteIdent(r.To.Name), nt.QualifiedName())
		}
		cols[i].Name = r.To.Name
	}
	nt.rebuildColumns(cols)
	return nil
}

// rebuildColumns sets the table's columns from cols, in canonical order: the key columns
// as they are, the regular ones sorted by name.
func (nt *Table) rebuildColumns(cols []Column) {
	npk, nck := len(nt.PartitionKey), len(nt.Clustering)
	slices.SortStableFunc(cols[npk+nck:], func(a, b Column) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	for i := range cols {
		cols[i].Index = i
	}
	nt.setColumns(cols, npk, nck)
}

// truncate returns the table after TRUNCATE at version v: the data written at or before
// v.Timestamp is gone.
func (t *Table) truncate(v Version) *Table {
	nt := *t
	nt.truncatedAt, nt.truncatedSet = v.Timestamp, true
	nt.Version = v
	return &nt
}

// evolutionBit, in a table's flags byte, says that the table's dropped columns and last
// TRUNCATE follow its other options (see appendEvolution).
const evolutionBit = 0x10

func (t *Table) hasEvolution() bool { return t.truncatedSet || len(t.droppedCols) > 0 }

// appendEvolution appends, after a table's other options: a byte 1 and the signed varint
// timestamp of its last TRUNCATE, or a byte 0; the count of dropped column records, then per
// record in name order its name, type byte and signed varint drop timestamp. A table that was
// never truncated and has no dropped column encodes as before, without the flag.
func appendEvolution(b []byte, t *Table) []byte {
	if t.truncatedSet {
		b = append(b, 1)
		b = binary.AppendVarint(b, t.truncatedAt)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(t.droppedCols)))
	for _, d := range t.droppedCols {
		b = appendString(b, d.Name)
		b = appendType(b, d.Type, 0)
		b = binary.AppendVarint(b, d.At)
	}
	return b
}

func decodeEvolution(d *decoder, t *Table) error {
	switch d.byte() {
	case 0:
	case 1:
		t.truncatedAt, t.truncatedSet = d.varint(), true
	default:
		d.fail("table %q.%q: bad truncation flag", t.Keyspace, t.Name)
	}
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		c := DroppedColumn{Name: d.string()}
		code := d.byte()
		c.Type = d.typeOf(code)
		c.At = d.varint()
		if d.err != nil {
			break
		}
		if c.Name == "" || !c.Type.Valid() || (i > 0 && t.droppedCols[i-1].Name >= c.Name) {
			return fmt.Errorf("table %q.%q: bad dropped column %q of type %d", t.Keyspace, t.Name, c.Name, code)
		}
		t.droppedCols = append(t.droppedCols, c)
	}
	return d.err
}
