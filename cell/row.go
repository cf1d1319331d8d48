package cell

import (
	"bytes"
	"strings"
)

// Column is a cell with the name of its column and, for an element of a
// non-frozen collection, the element's path.
type Column struct {
	Name string
	// Path is nil for the one cell of a simple column (every column but a
	// non-frozen collection). For an element of a non-frozen collection it
	// is non-nil (possibly empty): a set's element, a map's key, or a
	// list's ordering key, as bytes whose order is the column's own order
	// only for a list (see schema). Each element is a cell of its own,
	// reconciled last-write-wins by itself (Cassandra's cell-per-element
	// storage).
	Path []byte
	Cell
}

// CompareColumns orders cells in a row: by column name, then a simple cell
// before every element, then elements by path bytes.
func CompareColumns(a, b Column) int {
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	if (a.Path == nil) != (b.Path == nil) {
		if a.Path == nil {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.Path, b.Path)
}

// ColumnDeletion is a collection tombstone: it deletes the elements of
// non-frozen collection column Name written at or before Timestamp
// (Cassandra's complex deletion). A DELETE of the column writes one, and
// so does an assignment of a whole value, at its timestamp − 1, so that
// the new elements survive it.
type ColumnDeletion struct {
	Name      string
	Timestamp int64
}

// Row is the reconcilable state of one row: everything but its clustering
// key, which callers keep beside it.
type Row struct {
	// Marker is the timestamp of the row marker INSERT writes, or
	// NoTimestamp if the row has none.
	Marker int64
	// MarkerTTL and MarkerExpires are the marker's time to live and expiry
	// (see Cell), written by INSERT ... USING TTL; 0 for a marker that does
	// not expire or no marker. An expired marker still reconciles (it beats
	// older markers) but no longer keeps the row alive.
	MarkerTTL     int32
	MarkerExpires int64
	// Deletion is the timestamp of the row tombstone, or NoTimestamp.
	Deletion int64
	// Columns holds at most one cell per column and path, sorted by
	// CompareColumns. Cell tombstones are kept: a reconciler needs them to
	// beat older values.
	Columns []Column
	// Collections holds the collection tombstones of the row's non-frozen
	// collection columns, at most one per column, sorted by Name.
	Collections []ColumnDeletion
}

// EmptyRow returns a row with no marker, no deletion and no cells.
func EmptyRow() Row { return Row{Marker: NoTimestamp, Deletion: NoTimestamp} }

// IsEmpty reports whether r carries nothing: no marker, no deletion, no cell.
func (r Row) IsEmpty() bool {
	return r.Marker == NoTimestamp && r.Deletion == NoTimestamp && len(r.Columns) == 0 && len(r.Collections) == 0
}

// CollectionDeletion returns the timestamp of column name's collection
// tombstone, or NoTimestamp.
func (r Row) CollectionDeletion(name string) int64 {
	for _, d := range r.Collections {
		if d.Name == name {
			return d.Timestamp
		}
	}
	return NoTimestamp
}

// deletedAt returns the timestamp at or before which c is deleted, given
// the row's own and the partition's deletion del: del, or for an element the
// newer of del and its column's collection tombstone.
func (r Row) deletedAt(c Column, del int64) int64 {
	if c.Path == nil || len(r.Collections) == 0 {
		return del
	}
	return max(del, r.CollectionDeletion(c.Name))
}

// mergeDeletions merges two sorted lists of collection tombstones, keeping
// the newer per column.
func mergeDeletions(a, b []ColumnDeletion) []ColumnDeletion {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := make([]ColumnDeletion, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := strings.Compare(a[i].Name, b[j].Name); {
		case c < 0:
			out = append(out, a[i])
			i++
		case c > 0:
			out = append(out, b[j])
			j++
		default:
			out = append(out, ColumnDeletion{Name: a[i].Name, Timestamp: max(a[i].Timestamp, b[j].Timestamp)})
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// MarkerCell returns r's marker as a value-less cell, which reconciles by
// the cell rule: the newer marker wins, at equal timestamps an expiring one
// beats one that does not expire and the later expiry wins (Cassandra's
// LivenessInfo.supersedes).
func (r Row) MarkerCell() Cell {
	return Cell{Timestamp: r.Marker, TTL: r.MarkerTTL, Expires: r.MarkerExpires}
}

func (r *Row) setMarker(c Cell) {
	r.Marker, r.MarkerTTL, r.MarkerExpires = c.Timestamp, c.TTL, c.Expires
}

// MergeRows reconciles two versions of the same row: the newer marker, the
// newer deletion and, per column, the winning cell. Like Merge it is
// commutative and associative. The result has a new Columns slice (nil if
// both are empty); its cells share their values with the arguments.
func MergeRows(a, b Row) Row {
	out := Row{Deletion: max(a.Deletion, b.Deletion)}
	out.setMarker(Merge(a.MarkerCell(), b.MarkerCell()))
	out.Collections = mergeDeletions(a.Collections, b.Collections)
	if len(a.Columns)+len(b.Columns) == 0 {
		return out
	}
	cols := make([]Column, 0, max(len(a.Columns), len(b.Columns)))
	i, j := 0, 0
	for i < len(a.Columns) && j < len(b.Columns) {
		switch c := CompareColumns(a.Columns[i], b.Columns[j]); {
		case c < 0:
			cols = append(cols, a.Columns[i])
			i++
		case c > 0:
			cols = append(cols, b.Columns[j])
			j++
		default:
			cols = append(cols, Column{Name: a.Columns[i].Name, Path: a.Columns[i].Path, Cell: Merge(a.Columns[i].Cell, b.Columns[j].Cell)})
			i++
			j++
		}
	}
	cols = append(cols, a.Columns[i:]...)
	cols = append(cols, b.Columns[j:]...)
	out.Columns = cols
	return out
}

// Purge drops what deletions shadow: the marker and cells written at or
// before the row's own deletion or partitionDeletion (pass NoTimestamp if
// the partition was never deleted), elements written at or before their
// collection tombstone, and a row or collection deletion an outer deletion
// already covers. Live cells, unshadowed cell tombstones and the newest
// deletions remain, which is what a reconciler needs. Purge does not modify
// r; it allocates only when it drops a cell or a collection tombstone.
func (r Row) Purge(partitionDeletion int64) Row {
	if r.Deletion <= partitionDeletion {
		r.Deletion = NoTimestamp
	}
	del := max(r.Deletion, partitionDeletion)
	if r.Marker <= del {
		r.setMarker(Cell{Timestamp: NoTimestamp})
	}
	for i, d := range r.Collections {
		if d.Timestamp > del {
			continue
		}
		kept := make([]ColumnDeletion, i, len(r.Collections)-1)
		copy(kept, r.Collections[:i])
		for _, d := range r.Collections[i+1:] {
			if d.Timestamp > del {
				kept = append(kept, d)
			}
		}
		r.Collections = kept
		break
	}
	if len(r.Collections) == 0 {
		r.Collections = nil
	}
	for i, c := range r.Columns {
		if !c.ShadowedBy(r.deletedAt(c, del)) {
			continue
		}
		kept := make([]Column, i, len(r.Columns)-1)
		copy(kept, r.Columns[:i])
		for _, c := range r.Columns[i+1:] {
			if !c.ShadowedBy(r.deletedAt(c, del)) {
				kept = append(kept, c)
			}
		}
		r.Columns = kept
		break
	}
	if len(r.Columns) == 0 {
		r.Columns = nil
	}
	return r
}

// Live reports whether the row exists at now (seconds since the Unix
// epoch): it has an unexpired marker or a cell holding an unexpired value
// that neither its own deletion nor partitionDeletion shadows.
func (r Row) Live(now, partitionDeletion int64) bool {
	del := max(r.Deletion, partitionDeletion)
	if r.Marker > del && !r.MarkerCell().Expired(now) {
		return true
	}
	for _, c := range r.Columns {
		if c.Live(now, r.deletedAt(c, del)) {
			return true
		}
	}
	return false
}

// Missing returns what a replica holding have lacks of want: the marker and
// deletion if want's are newer, every collection tombstone of want newer
// than have's, and every cell of want that wins over have's version of its
// column (or element). Merging the result into have yields a row that
// reconciles to want, so the coordinator sends it as read repair; an empty
// result (IsEmpty) means have is up to date.
func Missing(want, have Row) Row {
	out := EmptyRow()
	if Wins(want.MarkerCell(), have.MarkerCell()) {
		out.setMarker(want.MarkerCell())
	}
	if want.Deletion > have.Deletion {
		out.Deletion = want.Deletion
	}
	for _, d := range want.Collections {
		if d.Timestamp > have.CollectionDeletion(d.Name) {
			out.Collections = append(out.Collections, d)
		}
	}
	j := 0
	for _, w := range want.Columns {
		for j < len(have.Columns) && CompareColumns(have.Columns[j], w) < 0 {
			j++
		}
		if j < len(have.Columns) && CompareColumns(have.Columns[j], w) == 0 && !Wins(w.Cell, have.Columns[j].Cell) {
			continue
		}
		out.Columns = append(out.Columns, w)
	}
	return out
}
