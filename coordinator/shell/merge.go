package shell

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// reconciled is the result of reconciling the answers of several replicas.
type reconciled struct {
	rows []readRow
	// complete is false when rows are fewer than the limit but a replica stopped early: more
	// rows may exist, and the merge needs that replica's next page.
	complete bool
	// partitionDeletion is the newest partition tombstone any replica returned.
	partitionDeletion int64
	// repairs holds, per stale replica, what it lacks: rows, range tombstones, and whether it
	// lacks the partition tombstone.
	repairs map[coordinator.NodeID]*repairSet
}

// repairSet is what one replica lacks.
type repairSet struct {
	rows              []*replicapb.Row
	rangeTombstones   []*replicapb.RangeTombstone
	partitionDeletion bool
}

// bound is one end of a range tombstone: a clustering prefix, included or not. The empty
// prefix is the start or the end of the partition. Start and end are in the table's clustering
// order (a DESC column's larger values come first).
type bound struct {
	prefix    [][]byte
	inclusive bool
}

// rangeTomb is a range tombstone a replica returned, decoded and checked.
type rangeTomb struct {
	start, end bound
	ts         int64
	key        string // identifies the tombstone (bounds and timestamp) among the answers
	pb         *replicapb.RangeTombstone
}

// version is one replica's answer so far, decoded: the rows of its last page, and what its
// earlier pages said about the rest.
type version struct {
	from    coordinator.NodeID
	partDel int64
	rows    []readRow // of the last page, as the replica returned them, tombstone-only rows included
	next    int       // merge cursor
	// cut is the clustering key of the replica's last row when it stopped early, at the limit
	// or the page size (hasCut); rows after it are unknown to this replica's answer. A table
	// without clustering columns has the empty key, so a key's presence is never told by its
	// being nil.
	cut    [][]byte
	hasCut bool
	// rts holds the keys of the range tombstones the replica returned, over all its pages.
	rts map[string]bool
	// tombstones is how many tombstones the replica scanned, over all its pages.
	tombstones uint32
}

// merger reconciles the answers of a partition's replicas, page by page, with the
// last-write-wins rules of package cell, and works out what each replica lacks (cell.Missing).
type merger struct {
	t       *schema.Table
	order   readOrder // the order of the answers and the merge
	limit   int       // live rows; 0 means no limit
	vs      []version
	partDel int64
	rts     []rangeTomb // every range tombstone any replica returned
	rtIndex map[string]int
	// active indexes the range tombstones of rts that may cover the rows still to merge: the
	// merge goes in clustering order, so one that ends before a merged row is dropped for good.
	active  []int
	rows    []readRow
	repairs map[coordinator.NodeID]*repairSet

	versions []cell.Row // of the current key, one per replica (EmptyRow if absent)
}

func newMerger(t *schema.Table, limit int, reversed bool) *merger {
	return &merger{t: t, order: readOrder{t, reversed}, limit: limit, partDel: cell.NoTimestamp}
}

// reconcile merges the replicas' answers (one page each) as far as they go and returns at most
// limit live rows (all if limit is 0), in clustering order, or in its reverse for a reversed read
// (whose answers are in reverse order too); complete is false when a replica's next page is
// needed.
func reconcile(t *schema.Table, resps []coordinator.Response, limit int, reversed bool) (reconciled, error) {
	m := newMerger(t, limit, reversed)
	for _, r := range resps {
		if err := m.add(r, limit); err != nil {
			return reconciled{}, err
		}
	}
	need := m.merge()
	rec := m.result()
	rec.complete = len(need) == 0
	return rec, nil
}

// remaining is how many more live rows the read needs, 0 for all of them.
func (m *merger) remaining() int {
	if m.limit == 0 {
		return 0
	}
	return m.limit - len(m.rows)
}

// add adds r, a replica's first page or the one after its last, to the merge; limit is the
// limit the request for it carried. It checks the answer: rows in clustering order and after
// the replica's previous page, well-formed keys and range tombstones.
func (m *merger) add(r coordinator.Response, limit int) error {
	resp, ok := r.Payload.(*replicapb.ReadResponse)
	if !ok {
		return fmt.Errorf("coordinator: read from replica %s returned no data", r.From)
	}
	t := m.t
	vi := -1
	for i := range m.vs {
		if m.vs[i].from == r.From {
			vi = i
		}
	}
	if vi < 0 {
		m.vs = append(m.vs, version{from: r.From, partDel: cell.NoTimestamp, rts: make(map[string]bool)})
		vi = len(m.vs) - 1
	}
	v := &m.vs[vi]
	prevCut, resumed := v.cut, v.hasCut
	if resp.PartitionDeletion != nil {
		v.partDel = max(v.partDel, *resp.PartitionDeletion)
	}
	m.partDel = max(m.partDel, v.partDel)
	rows := make([]readRow, 0, len(resp.Rows))
	live := 0
	for i, pr := range resp.Rows {
		row, err := decodeRow(t, pr)
		if err != nil {
			return fmt.Errorf("coordinator: replica %s returned a malformed row %d of table %s: %w", r.From, i, t.QualifiedName(), err)
		}
		if n := len(rows); n > 0 && m.order.compare(rows[n-1].clustering, row.clustering) >= 0 {
			return fmt.Errorf("coordinator: replica %s returned rows of table %s out of clustering order", r.From, t.QualifiedName())
		}
		if resumed && len(rows) == 0 && m.order.compare(prevCut, row.clustering) >= 0 {
			return fmt.Errorf("coordinator: replica %s returned a page of table %s that does not start after the previous one", r.From, t.QualifiedName())
		}
		rows = append(rows, row)
		if row.row.Live(v.partDel) {
			live++
		}
	}
	v.rows, v.next = rows, 0
	v.cut, v.hasCut = nil, false
	switch {
	case resp.StoppedAfter != nil:
		if len(rows) == 0 {
			return fmt.Errorf("coordinator: replica %s stopped a read of table %s early without returning a row", r.From, t.QualifiedName())
		}
		cut, err := decodeKey(t, resp.StoppedAfter.GetComponents())
		if err != nil {
			return fmt.Errorf("coordinator: replica %s stopped a read of table %s after a malformed key: %w", r.From, t.QualifiedName(), err)
		}
		if m.order.compare(cut, rows[len(rows)-1].clustering) < 0 {
			return fmt.Errorf("coordinator: replica %s stopped a read of table %s before its last row", r.From, t.QualifiedName())
		}
		v.cut, v.hasCut = cut, true
	case limit > 0 && live >= limit:
		v.cut, v.hasCut = rows[len(rows)-1].clustering, true
	}
	v.tombstones = uint32(min(uint64(v.tombstones)+uint64(resp.Tombstones), math.MaxUint32))
	for i, pb := range resp.RangeTombstones {
		rt, err := decodeRangeTomb(t, pb)
		if err != nil {
			return fmt.Errorf("coordinator: replica %s returned a malformed range tombstone %d of table %s: %w", r.From, i, t.QualifiedName(), err)
		}
		v.rts[rt.key] = true
		if _, ok := m.rtIndex[rt.key]; !ok {
			if m.rtIndex == nil {
				m.rtIndex = make(map[string]int)
			}
			m.rtIndex[rt.key] = len(m.rts)
			m.active = append(m.active, len(m.rts))
			m.rts = append(m.rts, rt)
		}
	}
	return nil
}

// merge merges rows until it has the limit, or every answer is used up, or it needs the next
// page of the replicas it returns (indexes into m.vs): their answers are used up and they
// stopped early, so the rows after theirs, which may come before any other replica's next row
// in the read's order, are unknown.
func (m *merger) merge() (need []int) {
	for m.limit == 0 || len(m.rows) < m.limit {
		for i := range m.vs {
			if v := &m.vs[i]; v.next >= len(v.rows) && v.hasCut {
				need = append(need, i)
			}
		}
		if len(need) > 0 {
			return need
		}
		// The first clustering key (in the read's order) at the head of any answer.
		var (
			key   [][]byte
			found bool
		)
		for i := range m.vs {
			v := &m.vs[i]
			if v.next < len(v.rows) {
				if k := v.rows[v.next].clustering; !found || m.order.compare(k, key) < 0 {
					key, found = k, true
				}
			}
		}
		if !found {
			return nil
		}
		m.versions = m.versions[:0]
		merged := cell.EmptyRow()
		for i := range m.vs {
			v := &m.vs[i]
			have := cell.EmptyRow()
			if v.next < len(v.rows) && m.order.compare(v.rows[v.next].clustering, key) == 0 {
				have = v.rows[v.next].row
				v.next++
			}
			m.versions = append(m.versions, have)
			merged = cell.MergeRows(merged, have)
		}
		del := max(m.partDel, m.coverAt(key))
		merged = merged.Purge(del)
		for i, have := range m.versions {
			if miss := cell.Missing(merged, have); !miss.IsEmpty() {
				rs := m.repairSet(m.vs[i].from)
				rs.rows = append(rs.rows, repairRow(key, miss))
			}
		}
		if merged.Live(del) {
			m.rows = append(m.rows, readRow{clustering: key, row: merged})
		}
	}
	return nil
}

// coverAt returns the timestamp of the newest range tombstone over the row with clustering
// key key, or cell.NoTimestamp. Keys must come in the read's order.
func (m *merger) coverAt(key [][]byte) int64 {
	ts := cell.NoTimestamp
	kept := m.active[:0]
	for _, i := range m.active {
		rt := &m.rts[i]
		started, notEnded := afterStart(m.t, rt.start, key), beforeEnd(m.t, rt.end, key)
		if m.order.reversed && !started || !m.order.reversed && !notEnded {
			continue // it is behind key in the read's order, and behind every key after it
		}
		kept = append(kept, i)
		if rt.ts > ts && started && notEnded {
			ts = rt.ts
		}
	}
	m.active = kept
	return ts
}

// result returns the merged rows and what each replica lacks: besides the rows the merge
// found stale, the partition tombstone and the range tombstones (newer than it) that other
// replicas returned over rows it scanned.
func (m *merger) result() reconciled {
	for i := range m.vs {
		v := &m.vs[i]
		if v.partDel < m.partDel {
			m.repairSet(v.from).partitionDeletion = true
		}
		for j := range m.rts {
			rt := &m.rts[j]
			if rt.ts <= m.partDel || v.rts[rt.key] {
				continue
			}
			// A replica that stopped early scanned up to its cut, in the read's order: one that
			// starts (ends, reversed) past the cut is beyond where the replica looked.
			if v.hasCut && (m.order.reversed && !beforeEnd(m.t, rt.end, v.cut) || !m.order.reversed && !afterStart(m.t, rt.start, v.cut)) {
				continue
			}
			rs := m.repairSet(v.from)
			rs.rangeTombstones = append(rs.rangeTombstones, rt.pb)
		}
	}
	return reconciled{rows: m.rows, complete: true, partitionDeletion: m.partDel, repairs: m.repairs}
}

func (m *merger) repairSet(id coordinator.NodeID) *repairSet {
	if m.repairs == nil {
		m.repairs = make(map[coordinator.NodeID]*repairSet)
	}
	rs := m.repairs[id]
	if rs == nil {
		rs = &repairSet{}
		m.repairs[id] = rs
	}
	return rs
}

// decodeKey checks a full clustering key from a replica and returns it with non-nil
// components.
func decodeKey(t *schema.Table, comps [][]byte) ([][]byte, error) {
	if len(comps) != len(t.Clustering) {
		return nil, fmt.Errorf("%d clustering components, want %d", len(comps), len(t.Clustering))
	}
	key := make([][]byte, len(comps))
	for i, c := range comps {
		if err := t.Clustering[i].Type.Check(nonNil(c)); err != nil {
			return nil, fmt.Errorf("clustering column %s: %w", cql.QuoteIdent(t.Clustering[i].Name), err)
		}
		key[i] = nonNil(c)
	}
	return key, nil
}

// decodeRangeTomb checks a range tombstone from a replica.
func decodeRangeTomb(t *schema.Table, pb *replicapb.RangeTombstone) (rangeTomb, error) {
	rt := rangeTomb{ts: pb.GetTimestamp(), pb: pb}
	var key []byte
	key = binary.BigEndian.AppendUint64(key, uint64(rt.ts))
	for _, x := range []struct {
		what string
		in   *replicapb.ClusteringBound
		out  *bound
	}{{"start", pb.GetStart(), &rt.start}, {"end", pb.GetEnd(), &rt.end}} {
		prefix := x.in.GetPrefix()
		if len(prefix) > len(t.Clustering) {
			return rangeTomb{}, fmt.Errorf("%s bound has %d clustering components, want at most %d", x.what, len(prefix), len(t.Clustering))
		}
		x.out.prefix = make([][]byte, len(prefix))
		for i, c := range prefix {
			if err := t.Clustering[i].Type.Check(nonNil(c)); err != nil {
				return rangeTomb{}, fmt.Errorf("%s bound: clustering column %s: %w", x.what, cql.QuoteIdent(t.Clustering[i].Name), err)
			}
			x.out.prefix[i] = nonNil(c)
		}
		x.out.inclusive = x.in.GetInclusive() || len(prefix) == 0
		key = binary.AppendUvarint(key, uint64(len(prefix)))
		for _, c := range x.out.prefix {
			key = binary.AppendUvarint(key, uint64(len(c)))
			key = append(key, c...)
		}
		if x.out.inclusive {
			key = append(key, 1)
		} else {
			key = append(key, 0)
		}
	}
	rt.key = string(key)
	return rt, nil
}

// comparePrefix compares the first len(prefix) components of the full clustering key key with
// prefix, in the table's clustering order (DESC columns reversed).
func comparePrefix(t *schema.Table, key, prefix [][]byte) int {
	return t.CompareClustering(key[:len(prefix)], prefix)
}

// afterStart reports whether the row with clustering key key is at or after start bound b.
func afterStart(t *schema.Table, b bound, key [][]byte) bool {
	if len(b.prefix) == 0 {
		return true
	}
	c := comparePrefix(t, key, b.prefix)
	return c > 0 || (c == 0 && b.inclusive)
}

// beforeEnd reports whether the row with clustering key key is at or before end bound b.
func beforeEnd(t *schema.Table, b bound, key [][]byte) bool {
	if len(b.prefix) == 0 {
		return true
	}
	c := comparePrefix(t, key, b.prefix)
	return c < 0 || (c == 0 && b.inclusive)
}
