package shell

import (
	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// This file is the one place where the reconciliation of reads (coordinator.Merger) meets the
// replica protocol: a replica's ReadResponse becomes a coordinator.Page on the way in, and what
// a stale replica lacks (coordinator.RepairSet) becomes a replicapb.Mutation on the way out.
// The conversions are structural; the merger checks what replicas returned.

// pageOf converts a replica's answer to a read to the page the merger takes.
func pageOf(resp *replicapb.ReadResponse) coordinator.Page {
	p := coordinator.Page{PartitionDeletion: cell.NoTimestamp, Tombstones: resp.GetTombstones()}
	if resp.PartitionDeletion != nil {
		p.PartitionDeletion = *resp.PartitionDeletion
	}
	if len(resp.Rows) > 0 {
		p.Rows = make([]coordinator.ClusteredRow, len(resp.Rows))
		for i, pr := range resp.Rows {
			p.Rows[i] = rowOf(pr)
		}
	}
	if len(resp.RangeTombstones) > 0 {
		p.RangeTombstones = make([]coordinator.RangeTombstone, len(resp.RangeTombstones))
		for i, rt := range resp.RangeTombstones {
			p.RangeTombstones[i] = coordinator.RangeTombstone{
				Start:     coordinator.Bound{Prefix: rt.GetStart().GetPrefix(), Inclusive: rt.GetStart().GetInclusive()},
				End:       coordinator.Bound{Prefix: rt.GetEnd().GetPrefix(), Inclusive: rt.GetEnd().GetInclusive()},
				Timestamp: rt.GetTimestamp(),
			}
		}
	}
	if resp.StoppedAfter != nil {
		p.StoppedAfter, p.Stopped = resp.StoppedAfter.GetComponents(), true
	}
	if resp.StaticRow != nil {
		p.Static = staticOf(resp.StaticRow) // static.go
	}
	return p
}

// rowOf converts a replica's row. A tombstone cell's value, which means nothing, is dropped.
func rowOf(pr *replicapb.Row) coordinator.ClusteredRow {
	row := cell.EmptyRow()
	if pr.Marker != nil {
		row.Marker, row.MarkerTTL, row.MarkerExpires = *pr.Marker, pr.GetMarkerTtl(), pr.GetMarkerExpires()
	}
	if pr.Deletion != nil {
		row.Deletion = *pr.Deletion
	}
	if len(pr.Cells) > 0 {
		row.Columns = make([]cell.Column, len(pr.Cells))
		for i, c := range pr.Cells {
			col := cell.Column{Name: c.GetColumn(), Path: c.Path, Cell: cell.Cell{Timestamp: c.GetTimestamp(), Tombstone: c.GetTombstone(), TTL: c.GetTtl(), Expires: c.GetExpires(), Counter: c.GetCounter()}}
			if !col.Tombstone {
				col.Value = c.GetValue()
			}
			row.Columns[i] = col
		}
	}
	for _, d := range pr.Collections {
		row.Collections = append(row.Collections, cell.ColumnDeletion{Name: d.GetColumn(), Timestamp: d.GetTimestamp()})
	}
	return coordinator.ClusteredRow{Clustering: pr.Clustering, Row: row}
}

// rowPB converts a row (what a replica lacks of one) to a mutation row.
func rowPB(r coordinator.ClusteredRow) *replicapb.Row {
	miss := r.Row
	pr := &replicapb.Row{Clustering: r.Clustering}
	if miss.Marker != cell.NoTimestamp {
		m := miss.Marker
		pr.Marker, pr.MarkerTtl, pr.MarkerExpires = &m, miss.MarkerTTL, miss.MarkerExpires
	}
	if miss.Deletion != cell.NoTimestamp {
		d := miss.Deletion
		pr.Deletion = &d
	}
	if len(miss.Columns) > 0 {
		cells := make([]replicapb.Cell, len(miss.Columns))
		pr.Cells = make([]*replicapb.Cell, len(miss.Columns))
		for i, c := range miss.Columns {
			cells[i].Column, cells[i].Timestamp, cells[i].Tombstone = c.Name, c.Timestamp, c.Tombstone
			cells[i].Ttl, cells[i].Expires, cells[i].Path = c.TTL, c.Expires, c.Path
			cells[i].Counter = c.Counter
			if !c.Tombstone {
				cells[i].Value = c.Value
			}
			pr.Cells[i] = &cells[i]
		}
	}
	for _, d := range miss.Collections {
		pr.Collections = append(pr.Collections, &replicapb.CollectionDeletion{Column: d.Name, Timestamp: d.Timestamp})
	}
	return pr
}

// rangeTombstonePB converts a range tombstone to the replica protocol's.
func rangeTombstonePB(rt coordinator.RangeTombstone) *replicapb.RangeTombstone {
	return &replicapb.RangeTombstone{
		Start:     &replicapb.ClusteringBound{Prefix: rt.Start.Prefix, Inclusive: rt.Start.Inclusive},
		End:       &replicapb.ClusteringBound{Prefix: rt.End.Prefix, Inclusive: rt.End.Inclusive},
		Timestamp: rt.Timestamp,
	}
}

// repairMutation converts what a stale replica lacks of partition pk (token) of table t to the
// mutation that repairs it; partitionDeletion is the read's newest partition tombstone.
func repairMutation(t *schema.Table, pk [][]byte, token int64, rs *coordinator.RepairSet, partitionDeletion int64) *replicapb.Mutation {
	m := &replicapb.Mutation{TableId: uint64(t.ID), PartitionKey: pk, Token: token}
	if len(rs.Rows) > 0 {
		m.Rows = make([]*replicapb.Row, len(rs.Rows))
		for i, r := range rs.Rows {
			m.Rows[i] = rowPB(r)
		}
	}
	if len(rs.RangeTombstones) > 0 {
		m.RangeTombstones = make([]*replicapb.RangeTombstone, len(rs.RangeTombstones))
		for i, rt := range rs.RangeTombstones {
			m.RangeTombstones[i] = rangeTombstonePB(rt)
		}
	}
	if rs.PartitionDeletion {
		pd := partitionDeletion
		m.PartitionDeletion = &pd
	}
	if rs.Static != nil {
		m.StaticRow = rowPB(coordinator.ClusteredRow{Row: *rs.Static})
	}
	return m
}
