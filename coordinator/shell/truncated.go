package shell

import (
	"slices"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/schema"
)

// hideShadowed removes from a replica's page what the coordinator's schema says is gone: data
// of the table written at or before its TRUNCATE, and cells of a column written at or before
// its drop. A replica that has not yet installed the schema change still returns them; without
// this the coordinator would show them and read repair would copy them back. Rows stay (empty
// ones are not live), so the page's paging position is unchanged.
func hideShadowed(t *schema.Table, p *coordinator.Page) {
	if !t.HasShadows() {
		return
	}
	if p.PartitionDeletion != cell.NoTimestamp && t.Shadowed("", p.PartitionDeletion) {
		p.PartitionDeletion = cell.NoTimestamp
	}
	p.RangeTombstones = slices.DeleteFunc(p.RangeTombstones, func(rt coordinator.RangeTombstone) bool { return t.Shadowed("", rt.Timestamp) })
	for i := range p.Rows {
		r := &p.Rows[i].Row
		if r.Marker != cell.NoTimestamp && t.Shadowed("", r.Marker) {
			r.Marker = cell.NoTimestamp
		}
		if r.Deletion != cell.NoTimestamp && t.Shadowed("", r.Deletion) {
			r.Deletion = cell.NoTimestamp
		}
		r.Columns = slices.DeleteFunc(r.Columns, func(c cell.Column) bool { return t.Shadowed(c.Name, c.Timestamp) })
	}
}
