package shell

import (
	"slices"
	"strings"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// splitStatic moves the cells and collection tombstones of t's static columns out of m's one
// row into m's static row (data format 11), and drops the row when nothing of it remains or
// when its clustering key is not whole (an INSERT, UPDATE or DELETE of static columns that
// restricts the partition key only).
func splitStatic(m *replicapb.Mutation, t *schema.Table) {
	if len(m.Rows) != 1 {
		return
	}
	row := m.Rows[0]
	var st *replicapb.Row
	static := func() *replicapb.Row {
		if st == nil {
			st = &replicapb.Row{}
		}
		return st
	}
	cells := row.Cells[:0]
	for _, c := range row.Cells {
		if t.IsStatic(c.Column) {
			static().Cells = append(static().Cells, c)
		} else {
			cells = append(cells, c)
		}
	}
	row.Cells = cells
	dels := row.Collections[:0]
	for _, d := range row.Collections {
		if t.IsStatic(d.Column) {
			static().Collections = append(static().Collections, d)
		} else {
			dels = append(dels, d)
		}
	}
	row.Collections = dels
	if st == nil {
		return
	}
	m.StaticRow = st
	partial := len(row.Clustering) < len(t.Clustering)
	empty := len(row.Cells) == 0 && len(row.Collections) == 0 && row.Marker == nil && row.Deletion == nil
	if partial || empty {
		m.Rows = nil
	}
}

// mergeStaticRows returns the static row that writes the cells of a and b (one partition's
// writes in a batch): the replica reconciles two versions of one cell by their timestamps.
func mergeStaticRows(a, b *replicapb.Row) *replicapb.Row {
	switch {
	case b == nil:
		return a
	case a == nil:
		return b
	}
	return &replicapb.Row{Cells: append(a.Cells[:len(a.Cells):len(a.Cells)], b.Cells...),
		Collections: append(a.Collections[:len(a.Collections):len(a.Collections)], b.Collections...)}
}

// staticOf converts a replica's static row to the merger's page field.
func staticOf(pr *replicapb.Row) *cell.Row {
	row := rowOf(pr).Row
	if !slices.IsSortedFunc(row.Columns, cell.CompareColumns) {
		slices.SortFunc(row.Columns, cell.CompareColumns)
	}
	return &row
}

// replicaStatic is one replica's static row of a read (nil: it holds none).
type replicaStatic struct {
	from   coordinator.NodeID
	static *cell.Row
}

// staticsOfResponses returns the static rows of the replicas' answers to a read's first page
// (every page carries the static row, so the first suffices).
func staticsOfResponses(resps []coordinator.Response) []replicaStatic {
	out := make([]replicaStatic, 0, len(resps))
	for _, r := range resps {
		var st *cell.Row
		if resp, ok := r.Payload.(*replicapb.ReadResponse); ok && resp.StaticRow != nil {
			st = staticOf(resp.StaticRow)
		}
		out = append(out, replicaStatic{from: r.From, static: st})
	}
	return out
}

// reconcileStatic reconciles the replicas' static rows of a read of a partition of table t
// whose other parts rec holds: last write wins per cell, under the partition tombstone. It
// adds to rec.Repairs what each replica lacks of the result (as read repair sends it), and to
// rec.Full the whole static row, and returns the result; nil when no replica holds a static
// cell.
func reconcileStatic(t *schema.Table, statics []replicaStatic, rec *coordinator.Reconciled) *cell.Row {
	if !t.HasStatic() {
		return nil
	}
	merged, any := cell.EmptyRow(), false
	for _, s := range statics {
		if s.static != nil {
			merged, any = cell.MergeRows(merged, *s.static), true
		}
	}
	if !any {
		return nil
	}
	merged = merged.Purge(rec.PartitionDeletion)
	if merged.IsEmpty() {
		return nil
	}
	for _, s := range statics {
		have := cell.EmptyRow()
		if s.static != nil {
			have = *s.static
		}
		miss := cell.Missing(merged, have)
		if miss.IsEmpty() {
			continue
		}
		if rec.Repairs == nil {
			rec.Repairs = make(map[coordinator.NodeID]*coordinator.RepairSet)
		}
		rs := rec.Repairs[s.from]
		if rs == nil {
			rs = &coordinator.RepairSet{}
			rec.Repairs[s.from] = rs
		}
		rs.Static = &miss
	}
	if rec.Full != nil {
		rec.Full.Static = &merged
	}
	return &merged
}

// withStatic returns rows, the live rows of a read of a partition of table t, each with the
// cells of static (the partition's reconciled static row; nil for none) added. With no rows
// and whole (the read asks for the whole partition from its start, as Cassandra's
// queriesFullPartitions), a static row with a live cell is returned as one row whose
// clustering columns (nil components: null) and regular columns are null, as Cassandra
// returns a partition that holds only static values.
func withStatic(t *schema.Table, rows []coordinator.ClusteredRow, static *cell.Row, whole bool, now int64) []coordinator.ClusteredRow {
	if static == nil || len(static.Columns) == 0 {
		return rows
	}
	if len(rows) == 0 {
		if !whole || !static.Live(now, cell.NoTimestamp) {
			return rows
		}
		row := cell.EmptyRow()
		row.Columns, row.Collections = static.Columns, static.Collections
		return []coordinator.ClusteredRow{{Clustering: make([][]byte, len(t.Clustering)), Row: row}}
	}
	out := make([]coordinator.ClusteredRow, len(rows))
	for i, r := range rows {
		row := r.Row
		row.Columns = make([]cell.Column, 0, len(r.Row.Columns)+len(static.Columns))
		row.Columns = append(append(row.Columns, r.Row.Columns...), static.Columns...)
		slices.SortFunc(row.Columns, cell.CompareColumns)
		if len(static.Collections) > 0 {
			row.Collections = append(slices.Clip(r.Row.Collections), static.Collections...)
			slices.SortFunc(row.Collections, func(a, b cell.ColumnDeletion) int { return strings.Compare(a.Name, b.Name) })
		}
		out[i] = coordinator.ClusteredRow{Clustering: r.Clustering, Row: row}
	}
	return out
}

// staticOnlyRow reports whether row is the row withStatic makes of a partition that holds only
// static values: its clustering components are nil (a replica's never are).
func staticOnlyRow(row coordinator.ClusteredRow) bool {
	return len(row.Clustering) > 0 && row.Clustering[0] == nil
}

// wholePartition reports whether spec reads its partition from the start with no clustering
// restriction: such a read returns a partition holding only static values as one row.
func wholePartition(spec readSpec) bool {
	c := spec.clustering
	return spec.after == nil && len(c.Prefix) == 0 && c.Lower == nil && c.Upper == nil
}

// staticsOfPages returns the static rows of the replicas' pages of one partition of a scan.
func staticsOfPages(part coordinator.PartitionPages) []replicaStatic {
	out := make([]replicaStatic, len(part.Pages))
	for i, p := range part.Pages {
		out[i] = replicaStatic{from: p.From, static: p.Page.Static}
	}
	return out
}

// scanPosAfter returns where a scan's next page continues after row of partition part: after
// its clustering key, or after the partition when row is a partition's static values alone
// (the partition has no other row).
func scanPosAfter(part coordinator.PartitionPages, row coordinator.ClusteredRow) scanPos {
	if staticOnlyRow(row) {
		return scanPos{Token: part.Token, Key: part.Key}
	}
	return scanPos{Token: part.Token, Key: part.Key, After: row.Clustering}
}

// readStatic reconciles the static rows of the replicas' answers resps to a read of a partition
// of t (see reconcileStatic); nil, without looking, for a table without static columns.
func readStatic(t *schema.Table, resps []coordinator.Response, rec *coordinator.Reconciled) *cell.Row {
	if !t.HasStatic() {
		return nil
	}
	return reconcileStatic(t, staticsOfResponses(resps), rec)
}

// scanStatic is readStatic for the replicas' pages of one partition of a scan.
func scanStatic(t *schema.Table, part coordinator.PartitionPages, rec *coordinator.Reconciled) *cell.Row {
	if !t.HasStatic() {
		return nil
	}
	return reconcileStatic(t, staticsOfPages(part), rec)
}
