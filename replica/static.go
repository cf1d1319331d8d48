package replica

import (
	"bytes"

	"github.com/cockroachdb/pebble/v2"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// kindStatic is the kind of the keys of a partition's static row (data format 11): the
// partition prefix, kindStatic, then a row entry as for kindRow (key.go) with no clustering
// key. It sorts after the partition tombstone and before range tombstones and rows, so a read
// of the partition meets the static row first; range tombstones never cover it, only the
// partition tombstone does, as in Cassandra.
const kindStatic byte = 0x14

// withStaticRow returns m's rows followed by its static row when it has one: Apply writes the
// row at index len(m.Rows) under kindStatic.
func withStaticRow(m *replicapb.Mutation) []*replicapb.Row {
	if m.StaticRow == nil {
		return m.Rows
	}
	return append(m.Rows[:len(m.Rows):len(m.Rows)], m.StaticRow)
}

// checkStaticRow checks a mutation's static row: no clustering key, marker or row tombstone,
// and cells of static columns only (or of dropped columns, which Apply skips).
func checkStaticRow(t *schema.Table, row *replicapb.Row) error {
	if !t.HasStatic() {
		return badRequest(t, "a static row for a table without static columns")
	}
	if len(row.Clustering) > 0 || row.Marker != nil || row.Deletion != nil {
		return badRequest(t, "the static row has a clustering key, a marker or a row tombstone; it holds cells only")
	}
	notStatic := func(name string) bool {
		c, ok := t.Column(name)
		return ok && !c.Static
	}
	for _, c := range row.Cells {
		if c != nil && notStatic(c.Column) {
			return badRequest(t, "the static row writes column %q, which is not static", c.Column)
		}
	}
	for _, d := range row.Collections {
		if notStatic(d.GetColumn()) {
			return badRequest(t, "the static row writes column %q, which is not static", d.GetColumn())
		}
	}
	return nil
}

// readStatic reads the static row of the partition whose keys start with prefix through it
// (its bounds must cover the static keys), for the read r (with its partition tombstone set)
// of a table with static columns. It returns nil when the partition has no static cells that
// survive the partition tombstone. Its tombstones count once, on the read's first page.
func (s *Store) readStatic(it *pebble.Iterator, r *rowReader, prefix []byte) (*replicapb.Row, error) {
	start := append(prefix[:len(prefix):len(prefix)], kindStatic)
	end := prefixEnd(start)
	sr := rowReader{t: r.t, req: &replicapb.ReadRequest{Columns: r.req.Columns}, resp: &replicapb.ReadResponse{},
		rowsStart: len(start), shadows: r.shadows, now: r.now, partDel: r.partDel, static: true}
	valid := it.SeekGE(start)
	for ; valid && bytes.Compare(it.Key(), end) < 0; valid = it.Next() {
		if _, err := sr.add(it); err != nil {
			return nil, err
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if _, err := sr.flush(); err != nil {
		return nil, err
	}
	if len(sr.resp.Rows) == 0 {
		return nil, nil
	}
	row := sr.resp.Rows[0]
	row.Clustering = nil
	if r.req.After == nil {
		var dead uint32
		for _, c := range row.Cells {
			if c.Tombstone {
				dead++
			}
		}
		if dead > 0 {
			if err := r.tc.add(dead); err != nil {
				return nil, err
			}
		}
	}
	return row, nil
}

// staticLive reports whether the static row row has a live cell at now (seconds).
func staticLive(row *replicapb.Row, now int64) bool {
	if row == nil {
		return false
	}
	for _, c := range row.Cells {
		if !c.Tombstone && (c.Expires == 0 || c.Expires > now) {
			return true
		}
	}
	return false
}

// staticSize is the approximate size of a range read page's static row, 0 without one.
func staticSize(page *replicapb.ReadResponse) uint64 {
	if page.StaticRow == nil {
		return 0
	}
	return uint64(rowSize(page.StaticRow))
}
