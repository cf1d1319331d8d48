package cell

import "strings"

// Column is a cell with the name of its column.
type Column struct {
	Name string
	Cell
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
	// Columns holds at most one cell per column, sorted by Name. Cell
	// tombstones are kept: a reconciler needs them to beat older values.
	Columns []Column
}

// EmptyRow returns a row with no marker, no deletion and no cells.
func EmptyRow() Row { return Row{Marker: NoTimestamp, Deletion: NoTimestamp} }

// IsEmpty reports whether r carries nothing: no marker, no deletion, no cell.
func (r Row) IsEmpty() bool {
	return r.Marker == NoTimestamp && r.Deletion == NoTimestamp && len(r.Columns) == 0
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
	if len(a.Columns)+len(b.Columns) == 0 {
		return out
	}
	cols := make([]Column, 0, max(len(a.Columns), len(b.Columns)))
	i, j := 0, 0
	for i < len(a.Columns) && j < len(b.Columns) {
		switch c := strings.Compare(a.Columns[i].Name, b.Columns[j].Name); {
		case c < 0:
			cols = append(cols, a.Columns[i])
			i++
		case c > 0:
			cols = append(cols, b.Columns[j])
			j++
		default:
			cols = append(cols, Column{Name: a.Columns[i].Name, Cell: Merge(a.Columns[i].Cell, b.Columns[j].Cell)})
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
// the partition was never deleted), and a row deletion the partition
// deletion already covers. Live cells, unshadowed cell tombstones and the
// newest deletion remain, which is what a reconciler needs. Purge does not
// modify r; it allocates only when it drops a cell.
func (r Row) Purge(partitionDeletion int64) Row {
	if r.Deletion <= partitionDeletion {
		r.Deletion = NoTimestamp
	}
	del := max(r.Deletion, partitionDeletion)
	if r.Marker <= del {
		r.setMarker(Cell{Timestamp: NoTimestamp})
	}
	for i, c := range r.Columns {
		if !c.ShadowedBy(del) {
			continue
		}
		kept := make([]Column, i, len(r.Columns)-1)
		copy(kept, r.Columns[:i])
		for _, c := range r.Columns[i+1:] {
			if !c.ShadowedBy(del) {
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
		if c.Live(now, del) {
			return true
		}
	}
	return false
}

// Missing returns what a replica holding have lacks of want: the marker and
// deletion if want's are newer, and every cell of want that wins over have's
// version of its column. Merging the result into have yields a row that
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
	j := 0
	for _, w := range want.Columns {
		for j < len(have.Columns) && have.Columns[j].Name < w.Name {
			j++
		}
		if j < len(have.Columns) && have.Columns[j].Name == w.Name && !Wins(w.Cell, have.Columns[j].Cell) {
			continue
		}
		out.Columns = append(out.Columns, w)
	}
	return out
}
