package coordinator

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// ClusteredRow is one row of a partition: its full clustering key (one component per
// clustering column; the empty key for a table without clustering columns) and its cells.
type ClusteredRow struct {
	Clustering [][]byte
	Row        cell.Row
}

// Bound is one end of a range tombstone: a clustering prefix, included or not. The empty prefix
// is the start or the end of the partition. Start and end are in the table's clustering order (a
// DESC column's larger values come first).
type Bound struct {
	Prefix    [][]byte
	Inclusive bool
}

// RangeTombstone deletes the rows of a partition from Start to End at Timestamp.
type RangeTombstone struct {
	Start, End Bound
	Timestamp  int64
}

// Page is one page of a replica's answer to a read of one partition.
type Page struct {
	// Rows are in the read's order (see Merger), tombstone-only rows included.
	Rows []ClusteredRow
	// PartitionDeletion is the replica's partition tombstone, or cell.NoTimestamp.
	PartitionDeletion int64
	// RangeTombstones are the range tombstones over the rows the replica scanned.
	RangeTombstones []RangeTombstone
	// StoppedAfter is the clustering key after which the replica stopped early, at its page
	// size (Stopped); it is at or after the page's last row in the read's order.
	StoppedAfter [][]byte
	Stopped      bool
	// Tombstones is how many tombstones the replica scanned, over all its pages so far.
	Tombstones uint32
	// Static is the replica's static row (a table with static columns), nil without one. The
	// Merger ignores it: the caller reconciles static rows (shell's static.go).
	Static *cell.Row
}

// NextPage is a replica whose next page the merge needs: the rows after After, at most Limit
// live ones (0 for all), with Tombstones the count the replica scanned so far.
type NextPage struct {
	From       NodeID
	After      [][]byte
	Limit      int
	Tombstones uint32
}

// RepairSet is what one replica lacks of a reconciled read: rows (only the cells, markers and
// deletions it lacks), range tombstones, and whether it lacks the partition tombstone.
type RepairSet struct {
	Rows              []ClusteredRow
	RangeTombstones   []RangeTombstone
	PartitionDeletion bool
	// Static holds the cells of the partition's static row the replica lacks, nil for none;
	// the Merger leaves it to the caller, which reconciles static rows.
	Static *cell.Row
}

// Reconciled is the result of reconciling the answers of several replicas.
type Reconciled struct {
	// Rows are the live rows, purged (no marker, cell or deletion that a deletion shadows), in
	// the read's order.
	Rows []ClusteredRow
	// PartitionDeletion is the newest partition tombstone any replica returned.
	PartitionDeletion int64
	// Repairs holds, per stale replica, what it lacks.
	Repairs map[NodeID]*RepairSet
	// Tombstones is the most tombstones one replica scanned for the read.
	Tombstones uint32
	// Full, with Merger.KeepFull, holds everything the merge reconciled, live or not: what a
	// replica that did not answer needs to hold the result, as a repair. Nil without KeepFull.
	Full *RepairSet
}

// rangeTomb is a range tombstone a replica returned, checked.
type rangeTomb struct {
	RangeTombstone                // checked: non-nil components, an empty prefix inclusive
	key            string         // identifies the tombstone (bounds and timestamp) among the answers
	orig           RangeTombstone // as the replica returned it, for the repairs
}

// version is one replica's answer so far: the rows of its last page, and what its earlier pages
// said about the rest.
type version struct {
	from    NodeID
	partDel int64
	rows    []ClusteredRow // of the last page, as the replica returned them
	next    int            // merge cursor
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

// Merger reconciles the answers of a partition's replicas, page by page, with the
// last-write-wins rules of package cell, and works out what each replica lacks (cell.Missing).
//
// It goes in the read's order: the table's clustering order, or its reverse for a reversed read
// (whose answers are in reverse order too). A replica's answer cannot be trusted past the point
// where it stopped (it may hold a newer tombstone for what follows), so when the merge gets there
// and still needs rows, Merge returns the replicas whose next page it needs; the caller fetches
// them, adds them with Add, and calls Merge again.
type Merger struct {
	t       *schema.Table
	order   readOrder // the order of the answers and the merge
	limit   int       // live rows; 0 means no limit
	now     int64     // seconds since the Unix epoch: expiring cells at or before it are dead
	vs      []version
	partDel int64
	rts     []rangeTomb // every range tombstone any replica returned
	rtIndex map[string]int
	// active indexes the range tombstones of rts that may cover the rows still to merge: the
	// merge goes in clustering order, so one that ends before a merged row is dropped for good.
	active  []int
	rows    []ClusteredRow
	repairs map[NodeID]*RepairSet
	full    *RepairSet // set by KeepFull: every merged row, live or not

	versions []cell.Row // of the current key, one per replica (EmptyRow if absent)
}

// NewMerger returns a merger of the answers to a read of table t for limit live rows (0 for all
// of them), in the reverse of the clustering order if reversed. now (seconds since the Unix
// epoch, the coordinator's clock) decides which expiring cells and markers are still live; the
// merge itself (and so what each replica lacks) does not depend on it.
func NewMerger(t *schema.Table, limit int, reversed bool, now int64) *Merger {
	return &Merger{t: t, order: readOrder{t, reversed}, limit: limit, now: now, partDel: cell.NoTimestamp}
}

// KeepFull makes the merger keep every row it merges, live or not, for Reconciled.Full: a
// repair of the whole result for a replica that did not answer (the coordinator's fallback when
// a stale replica refuses its repair). Call it before the first Merge. It costs a slice of the
// merged rows, which share their cells with the result.
func (m *Merger) KeepFull() {
	if m.full == nil {
		m.full = &RepairSet{}
	}
}

// remaining is how many more live rows the read needs, 0 for all of them.
func (m *Merger) remaining() int {
	if m.limit == 0 {
		return 0
	}
	return m.limit - len(m.rows)
}

// Add adds p, the first page of replica from or the one after its last, to the merge; limit is
// the limit the request for it carried. It checks the answer: rows in the read's order and after
// the replica's previous page, well-formed keys, cells and range tombstones. The merger owns p's
// rows from then on: it checks them in place (normalising keys and sorting cells).
func (m *Merger) Add(from NodeID, p Page, limit int) error {
	t := m.t
	vi := -1
	for i := range m.vs {
		if m.vs[i].from == from {
			vi = i
		}
	}
	if vi < 0 {
		m.vs = append(m.vs, version{from: from, partDel: cell.NoTimestamp, rts: make(map[string]bool)})
		vi = len(m.vs) - 1
	}
	v := &m.vs[vi]
	prevCut, resumed := v.cut, v.hasCut
	v.partDel = max(v.partDel, p.PartitionDeletion)
	m.partDel = max(m.partDel, v.partDel)
	rows := p.Rows[:0] // checked in place: row i is written back to index i
	live := 0
	for i, pr := range p.Rows {
		row, err := checkRow(t, pr)
		if err != nil {
			return fmt.Errorf("coordinator: replica %s returned a malformed row %d of table %s: %w", from, i, t.QualifiedName(), err)
		}
		if n := len(rows); n > 0 && m.order.compare(rows[n-1].Clustering, row.Clustering) >= 0 {
			return fmt.Errorf("coordinator: replica %s returned rows of table %s out of clustering order", from, t.QualifiedName())
		}
		if resumed && len(rows) == 0 && m.order.compare(prevCut, row.Clustering) >= 0 {
			return fmt.Errorf("coordinator: replica %s returned a page of table %s that does not start after the previous one", from, t.QualifiedName())
		}
		rows = append(rows, row)
		if row.Row.Live(m.now, v.partDel) {
			live++
		}
	}
	v.rows, v.next = rows, 0
	v.cut, v.hasCut = nil, false
	switch {
	case p.Stopped:
		if len(rows) == 0 {
			return fmt.Errorf("coordinator: replica %s stopped a read of table %s early without returning a row", from, t.QualifiedName())
		}
		cut, err := checkKey(t, p.StoppedAfter)
		if err != nil {
			return fmt.Errorf("coordinator: replica %s stopped a read of table %s after a malformed key: %w", from, t.QualifiedName(), err)
		}
		if m.order.compare(cut, rows[len(rows)-1].Clustering) < 0 {
			return fmt.Errorf("coordinator: replica %s stopped a read of table %s before its last row", from, t.QualifiedName())
		}
		v.cut, v.hasCut = cut, true
	case limit > 0 && live >= limit:
		v.cut, v.hasCut = rows[len(rows)-1].Clustering, true
	}
	v.tombstones = uint32(min(uint64(v.tombstones)+uint64(p.Tombstones), math.MaxUint32))
	for i, prt := range p.RangeTombstones {
		rt, err := checkRangeTomb(t, prt)
		if err != nil {
			return fmt.Errorf("coordinator: replica %s returned a malformed range tombstone %d of table %s: %w", from, i, t.QualifiedName(), err)
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

// Merge merges rows until it has the limit, or every answer is used up, or it needs the next
// page of the replicas it returns: their answers are used up and they stopped early, so the rows
// after theirs, which may come before any other replica's next row in the read's order, are
// unknown.
func (m *Merger) Merge() []NextPage {
	var need []NextPage
	for m.limit == 0 || len(m.rows) < m.limit {
		for i := range m.vs {
			if v := &m.vs[i]; v.next >= len(v.rows) && v.hasCut {
				need = append(need, NextPage{From: v.from, After: v.cut, Limit: m.remaining(), Tombstones: v.tombstones})
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
				if k := v.rows[v.next].Clustering; !found || m.order.compare(k, key) < 0 {
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
			if v.next < len(v.rows) && m.order.compare(v.rows[v.next].Clustering, key) == 0 {
				have = v.rows[v.next].Row
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
				rs.Rows = append(rs.Rows, ClusteredRow{Clustering: key, Row: miss})
			}
		}
		if m.full != nil && !merged.IsEmpty() {
			m.full.Rows = append(m.full.Rows, ClusteredRow{Clustering: key, Row: merged})
		}
		if merged.Live(m.now, del) {
			m.rows = append(m.rows, ClusteredRow{Clustering: key, Row: merged})
		}
	}
	return nil
}

// coverAt returns the timestamp of the newest range tombstone over the row with clustering
// key key, or cell.NoTimestamp. Keys must come in the read's order.
func (m *Merger) coverAt(key [][]byte) int64 {
	ts := cell.NoTimestamp
	kept := m.active[:0]
	for _, i := range m.active {
		rt := &m.rts[i]
		started, notEnded := afterStart(m.t, rt.Start, key), beforeEnd(m.t, rt.End, key)
		if m.order.reversed && !started || !m.order.reversed && !notEnded {
			continue // it is behind key in the read's order, and behind every key after it
		}
		kept = append(kept, i)
		if rt.Timestamp > ts && started && notEnded {
			ts = rt.Timestamp
		}
	}
	m.active = kept
	return ts
}

// Result returns the merged rows and what each replica lacks: besides the rows the merge found
// stale, the partition tombstone and the range tombstones (newer than it) that other replicas
// returned over rows it scanned. Call it once Merge needs no more pages.
func (m *Merger) Result() Reconciled {
	var tombstones uint32
	for i := range m.vs {
		v := &m.vs[i]
		tombstones = max(tombstones, v.tombstones)
		if v.partDel < m.partDel {
			m.repairSet(v.from).PartitionDeletion = true
		}
		for j := range m.rts {
			rt := &m.rts[j]
			if rt.Timestamp <= m.partDel || v.rts[rt.key] {
				continue
			}
			// A replica that stopped early scanned up to its cut, in the read's order: one that
			// starts (ends, reversed) past the cut is beyond where the replica looked.
			if v.hasCut && (m.order.reversed && !beforeEnd(m.t, rt.End, v.cut) || !m.order.reversed && !afterStart(m.t, rt.Start, v.cut)) {
				continue
			}
			rs := m.repairSet(v.from)
			rs.RangeTombstones = append(rs.RangeTombstones, rt.orig)
		}
	}
	if m.full != nil {
		m.full.PartitionDeletion = m.partDel != cell.NoTimestamp
		m.full.RangeTombstones = m.full.RangeTombstones[:0]
		for j := range m.rts {
			if rt := &m.rts[j]; rt.Timestamp > m.partDel {
				m.full.RangeTombstones = append(m.full.RangeTombstones, rt.orig)
			}
		}
	}
	return Reconciled{Rows: m.rows, PartitionDeletion: m.partDel, Repairs: m.repairs, Tombstones: tombstones, Full: m.full}
}

func (m *Merger) repairSet(id NodeID) *RepairSet {
	if m.repairs == nil {
		m.repairs = make(map[NodeID]*RepairSet)
	}
	rs := m.repairs[id]
	if rs == nil {
		rs = &RepairSet{}
		m.repairs[id] = rs
	}
	return rs
}

// checkRow checks a replica's row: its clustering key's encoding (it is compared with the
// table's types) and its cells, which it sorts by column. The key it returns always has one
// non-nil component per clustering column, and a live cell's value is never nil, whatever
// transport the row came over (on the wire an empty value and an absent one look alike).
func checkRow(t *schema.Table, r ClusteredRow) (ClusteredRow, error) {
	key, err := checkKey(t, r.Clustering)
	if err != nil {
		return ClusteredRow{}, err
	}
	row := r.Row
	if row.Marker != cell.NoTimestamp {
		if err := cell.CheckExpiry(row.MarkerCell()); err != nil {
			return ClusteredRow{}, fmt.Errorf("row marker: %w", err)
		}
	} else if row.MarkerTTL != 0 || row.MarkerExpires != 0 {
		return ClusteredRow{}, fmt.Errorf("no row marker, but a marker ttl %d, expires %d", row.MarkerTTL, row.MarkerExpires)
	}
	for i := range row.Columns {
		c := &row.Columns[i]
		if !c.Tombstone {
			c.Value = nonNil(c.Value)
		}
		if err := cell.CheckExpiry(c.Cell); err != nil {
			return ClusteredRow{}, fmt.Errorf("column %s: %w", cql.QuoteIdent(c.Name), err)
		}
	}
	if !slices.IsSortedFunc(row.Columns, cell.CompareColumns) {
		slices.SortFunc(row.Columns, cell.CompareColumns)
	}
	for i := 1; i < len(row.Columns); i++ {
		if cell.CompareColumns(row.Columns[i], row.Columns[i-1]) == 0 {
			return ClusteredRow{}, fmt.Errorf("column %s appears twice", cql.QuoteIdent(row.Columns[i].Name))
		}
	}
	if err := checkCollections(&row); err != nil {
		return ClusteredRow{}, err
	}
	return ClusteredRow{Clustering: key, Row: row}, nil
}

// checkKey checks a full clustering key from a replica and returns it with non-nil components.
func checkKey(t *schema.Table, comps [][]byte) ([][]byte, error) {
	if len(comps) != len(t.Clustering) {
		return nil, fmt.Errorf("%d clustering components, want %d", len(comps), len(t.Clustering))
	}
	key := make([][]byte, len(comps))
	for i, c := range comps {
		if err := t.Clustering[i].Check(nonNil(c)); err != nil {
			return nil, fmt.Errorf("clustering column %s: %w", cql.QuoteIdent(t.Clustering[i].Name), err)
		}
		key[i] = nonNil(c)
	}
	return key, nil
}

// checkRangeTomb checks a range tombstone from a replica and keys it.
func checkRangeTomb(t *schema.Table, in RangeTombstone) (rangeTomb, error) {
	rt := rangeTomb{RangeTombstone: RangeTombstone{Timestamp: in.Timestamp}, orig: in}
	var key []byte
	key = binary.BigEndian.AppendUint64(key, uint64(rt.Timestamp))
	for _, x := range []struct {
		what string
		in   Bound
		out  *Bound
	}{{"start", in.Start, &rt.Start}, {"end", in.End, &rt.End}} {
		prefix := x.in.Prefix
		if len(prefix) > len(t.Clustering) {
			return rangeTomb{}, fmt.Errorf("%s bound has %d clustering components, want at most %d", x.what, len(prefix), len(t.Clustering))
		}
		x.out.Prefix = make([][]byte, len(prefix))
		for i, c := range prefix {
			if err := t.Clustering[i].Check(nonNil(c)); err != nil {
				return rangeTomb{}, fmt.Errorf("%s bound: clustering column %s: %w", x.what, cql.QuoteIdent(t.Clustering[i].Name), err)
			}
			x.out.Prefix[i] = nonNil(c)
		}
		x.out.Inclusive = x.in.Inclusive || len(prefix) == 0
		key = binary.AppendUvarint(key, uint64(len(prefix)))
		for _, c := range x.out.Prefix {
			key = binary.AppendUvarint(key, uint64(len(c)))
			key = append(key, c...)
		}
		if x.out.Inclusive {
			key = append(key, 1)
		} else {
			key = append(key, 0)
		}
	}
	rt.key = string(key)
	return rt, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// readOrder is the order in which a read returns the rows of table t: its clustering order, or
// the reverse of it for a reversed read (SELECT ... ORDER BY the other way).
type readOrder struct {
	t        *schema.Table
	reversed bool
}

// compare orders two full clustering keys of t as the read returns them (see
// schema.Table.CompareClustering, the order replicas store rows in).
func (o readOrder) compare(a, b [][]byte) int {
	if o.reversed {
		a, b = b, a
	}
	return o.t.CompareClustering(a, b)
}

// afterStart reports whether the row with clustering key key is at or after start bound b.
func afterStart(t *schema.Table, b Bound, key [][]byte) bool {
	if len(b.Prefix) == 0 {
		return true
	}
	c := t.CompareClustering(key[:len(b.Prefix)], b.Prefix)
	return c > 0 || (c == 0 && b.Inclusive)
}

// beforeEnd reports whether the row with clustering key key is at or before end bound b.
func beforeEnd(t *schema.Table, b Bound, key [][]byte) bool {
	if len(b.Prefix) == 0 {
		return true
	}
	c := t.CompareClustering(key[:len(b.Prefix)], b.Prefix)
	return c < 0 || (c == 0 && b.Inclusive)
}

// checkCollections sorts row's collection tombstones by column and refuses a column with two.
func checkCollections(row *cell.Row) error {
	cmp := func(a, b cell.ColumnDeletion) int { return strings.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(row.Collections, cmp) {
		slices.SortFunc(row.Collections, cmp)
	}
	for i := 1; i < len(row.Collections); i++ {
		if row.Collections[i].Name == row.Collections[i-1].Name {
			return fmt.Errorf("column %s has two collection tombstones", cql.QuoteIdent(row.Collections[i].Name))
		}
	}
	return nil
}
