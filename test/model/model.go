package model

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/partitioner"
)

// Outcome is how an operation turned out.
type Outcome struct {
	// Sent is false when the coordinator was down, so the operation was never sent.
	Sent bool
	// Err is the error the client returned, nil for success.
	Err error
	// Lo and Hi are the wall clock in microseconds just before the request was sent and just
	// after its answer arrived: a server-assigned write timestamp lies between them.
	Lo, Hi int64
	// Rows is a SELECT's result.
	Rows [][]any
	// NotApplied: a conditional write (Op.IfNotExists) answered [applied] = false, so it
	// wrote nothing.
	NotApplied bool
	// HintsReplayed: a write at ANY (Op.Any) whose hints have all been delivered, every node
	// up (Model.SettleAny): from then on it counts as a write at ONE.
	HintsReplayed bool
}

// applied says whether a write took effect, as far as the client can know.
type applied uint8

const (
	notApplied applied = iota // never sent, or refused as unavailable (nothing is sent then)
	acked                     // acknowledged at its consistency level
	// maybeApplied: it failed after it may have reached replicas (a timeout, a replica error).
	// The server answered, so its timestamp lies within [Lo, Hi].
	maybeApplied
	// maybeLate: it failed without an answer from the server (the client gave up, the
	// connection broke), so the server may still have assigned its timestamp after Hi.
	maybeLate
)

func (op *Op) applied() applied {
	o := op.Outcome
	if !o.Sent {
		return notApplied
	}
	if o.Err == nil {
		if o.NotApplied {
			return notApplied
		}
		return acked
	}
	var un *client.UnavailableError
	if errors.As(o.Err, &un) {
		return notApplied
	}
	var to *client.TimeoutError
	var rl *client.RateLimitError
	if errors.As(o.Err, &to) || errors.As(o.Err, &rl) {
		return maybeApplied
	}
	return maybeLate
}

// timestamp is the write timestamp the model orders op by: its USING TIMESTAMP, or the wall
// clock before it was sent. Operations run one at a time, so their [Lo, Hi] intervals are
// disjoint and ordered, and ordering server timestamps by Lo is exact.
func (op *Op) timestamp() int64 {
	if op.HasTS {
		return op.TS
	}
	return op.Outcome.Lo
}

// blockFor is how many replicas of rf a consistency level waits for (rf: the replicas in the
// coordinator's data center for a LOCAL_* level).
func blockFor(cl client.Consistency, rf int) int {
	switch cl {
	case client.One, client.LocalOne:
		return 1
	case client.Quorum, client.LocalQuorum, client.Serial, client.LocalSerial: // a SERIAL read reads at QUORUM after its prepare
		return rf/2 + 1
	}
	return rf
}

// local reports whether cl counts the replicas of the coordinator's data center alone.
func local(cl client.Consistency) bool { return cl == client.LocalOne || cl == client.LocalQuorum }

// definite reports whether a read at cl must see a write acknowledged at w of table t: the
// replicas that acknowledged the one and answered the other must overlap. Across data centers
// (t.DCs > 1) both at local levels count the replicas of one data center (a partition's
// operations all go through its home data center); a local write against a read of the whole
// ring counts the write's acknowledgements among all the replicas; a write of the whole ring
// against a local read counts only the acknowledgements that must have come from the read's
// data center.
func definite(t *Table, w, cl client.Consistency) bool {
	rf := t.RF
	if t.DCs <= 1 || local(w) == local(cl) && local(w) {
		return blockFor(w, rf)+blockFor(cl, rf) > rf
	}
	all := rf * t.DCs
	switch {
	case local(w):
		return blockFor(w, rf)+blockFor(cl, all) > all
	case local(cl):
		return blockFor(w, all)-(all-rf)+blockFor(cl, rf) > rf
	}
	return blockFor(w, all)+blockFor(cl, all) > all
}

// definiteFor reports whether read must see write w, acknowledged: definite, and across data
// centers not a local write and a local read coordinated in different data centers (a scan
// goes through a node of any data center; the others through their partition's home).
//
// A write at ANY is never definite until its hints have been replayed (it may live in a
// coordinator's hints alone), then it counts as a write at ONE. An applied conditional write is
// definite for a SERIAL read whatever its commit level: its proposal was accepted by a quorum,
// which the read's Paxos prepare meets (and completes).
func definiteFor(w, read *Op) bool {
	if w.Any && !w.Outcome.HintsReplayed {
		return false
	}
	if w.IfNotExists && (read.CL == client.Serial || read.CL == client.LocalSerial) {
		return true
	}
	if local(w.CL) && local(read.CL) && w.DC != read.DC {
		return false
	}
	return definite(w.Table, w.CL, read.CL)
}

// Model is the reference: the writes that may have been applied, per partition, in history
// order. It answers what a read may return by last-write-wins over them.
type Model struct {
	parts map[string][]*Op
	high  int64 // no server timestamp reaches it (see Workload.High)
}

// NewModel returns an empty model of a history whose server timestamps all lie below high.
func NewModel(high int64) *Model { return &Model{parts: map[string][]*Op{}, high: high} }

func partKey(t *Table, pk []Val) string { return t.QName() + "/" + valsKey(pk) }

// Record adds a write that ran (whatever its outcome) to the model.
func (m *Model) Record(op *Op) {
	if !op.Kind.IsWrite() || op.applied() == notApplied {
		return
	}
	k := partKey(op.Table, op.PK)
	m.parts[k] = append(m.parts[k], op)
}

// SettleAny marks every acknowledged write at ANY of the model as delivered (Outcome.HintsReplayed):
// call it once every node is up and no node holds a hint. It returns how many it marked.
func (m *Model) SettleAny() int {
	n := 0
	for _, ops := range m.parts {
		for _, op := range ops {
			if op.Any && op.applied() == acked && !op.Outcome.HintsReplayed {
				op.Outcome.HintsReplayed = true
				n++
			}
		}
	}
	return n
}

// History returns the operations recorded for op's partition.
func (m *Model) History(t *Table, pk []Val) []*Op { return m.parts[partKey(t, pk)] }

// entry is one version of one component of a row (its marker or one regular cell): a value
// (a marker's is empty) or a tombstone, with the write it came from.
type entry struct {
	ts       int64
	late     bool // the timestamp may be anything from ts up (see maybeLate)
	tomb     bool
	val      []byte
	definite bool // the read must see it: acknowledged and W + R > RF
	// maybeExpired: a value written with a TTL that the read may find expired (within the
	// clocks' skew of its expiry): it may then be a tombstone at its timestamp.
	maybeExpired bool
	op           *Op
}

// ttlSkew bounds, in seconds, how far apart the clocks that decide an expiry may be (the
// coordinator's that set it, those of the replicas and coordinator that read it) and absorbs
// their rounding to whole seconds: a cell is indeterminate within its expiry ± ttlSkew.
const ttlSkew = 1

// expiry says whether op's TTL has run out for a read that ran within the wall-clock interval
// [lo, hi] (microseconds): expired for certain, or maybe (within the skew of the expiry, whose
// exact second the client does not know: the coordinator set it somewhere in op's interval, or
// after it for a write the server may have handled late).
func (op *Op) expiry(lo, hi int64) (expired, maybe bool) {
	if op.TTL == 0 {
		return false, false
	}
	sec := func(us int64) int64 { return us / 1e6 }
	earliest := sec(op.Outcome.Lo) + int64(op.TTL) - ttlSkew
	if sec(hi) < earliest {
		return false, false
	}
	if op.applied() == maybeLate {
		return false, true
	}
	latest := sec(op.Outcome.Hi) + int64(op.TTL) + ttlSkew
	if sec(lo) >= latest {
		return true, false
	}
	return false, true
}

// wins orders two versions as package cell does: the higher timestamp, then a tombstone over a
// value, then the bytewise greater value.
func wins(a, b *entry) bool {
	if b == nil {
		return true
	}
	if a.ts != b.ts {
		return a.ts > b.ts
	}
	if a.tomb != b.tomb {
		return a.tomb
	}
	return bytes.Compare(a.val, b.val) > 0
}

// mayWin reports whether version a may win over b: like wins, but a late version may carry any
// timestamp from a.ts up to the wall clock, so it beats every one below high.
func mayWin(a, b *entry, high int64) bool {
	if a.late && b != nil && b.ts < high {
		return true
	}
	return wins(a, b)
}

// options are the versions a read may see as a component's winner; nil stands for "none".
type options []*entry

func (o options) mayBeLive() bool {
	for _, e := range o {
		if e != nil && !e.tomb {
			return true
		}
	}
	return false
}

func (o options) mayBeDead() bool {
	for _, e := range o {
		if e == nil || e.tomb {
			return true
		}
	}
	return false
}

// accepts reports whether a read may return v (nil: null) for the component.
func (o options) accepts(v []byte) bool {
	for _, e := range o {
		switch {
		case e == nil || e.tomb:
			if v == nil {
				return true
			}
		case v != nil && bytes.Equal(e.val, v):
			return true
		}
	}
	return false
}

func (o options) String(t Type, marker bool) string {
	var s []string
	for _, e := range o {
		switch {
		case e == nil:
			s = append(s, "nothing")
		case e.tomb:
			s = append(s, fmt.Sprintf("deleted@%d by #%d", e.ts, e.op.Seq))
		case marker:
			s = append(s, fmt.Sprintf("present@%d by #%d", e.ts, e.op.Seq))
		default:
			s = append(s, fmt.Sprintf("%s@%d by #%d", formatEnc(t, e.val), e.ts, e.op.Seq))
		}
	}
	return strings.Join(s, " or ")
}

// component returns what a read at cl may see of one component of row ck in the partition whose
// writes are ops: col is a regular column's index, or -1 for the row marker.
//
// The definite writes reconcile to one version (or none), which the read must see unless
// another write it may or may not see wins over it: the options are that version and every
// such write. A range DELETE is definite for a component only when no write of it at a timestamp
// at or below the delete's could land after the delete did (issued later, or failed): the
// server may implement it as a true range tombstone or as row tombstones for the rows it found,
// which differ exactly there.
//
// A write with a TTL that the read finds expired is a tombstone at its timestamp; one it may find
// expired (see Op.expiry) may be either. read is the SELECT (its Outcome's interval).
func component(ops []*Op, ck []Val, col int, read *Op, high int64) options {
	var es []*entry
	for _, op := range ops {
		e := entry{ts: op.timestamp(), op: op}
		if col == staticCol {
			if !staticEntry(op, &e) {
				continue
			}
		} else {
			switch op.Kind {
			case Insert, Update:
				if !rowEqual(op.Row, ck) {
					continue
				}
				if col < -1 {
					if !elementEntry(op, -2-col, &e) {
						continue
					}
				} else if col < 0 {
					if op.Kind != Insert {
						continue
					}
					e.val = []byte{}
				} else {
					i := slices.IndexFunc(op.Cells, func(c CellWrite) bool { return c.Col == col })
					if i < 0 {
						continue
					}
					if v := op.Cells[i].Val; v != nil {
						e.val = v.Enc
					} else {
						e.tomb = true
					}
				}
			case DeleteCells:
				if col < -1 && rowEqual(op.Row, ck) && elementEntry(op, -2-col, &e) {
					break
				}
				if col < 0 || !rowEqual(op.Row, ck) || !slices.Contains(op.Cols, col) {
					continue
				}
				e.tomb = true
			case DeleteRow:
				if !rowEqual(op.Row, ck) {
					continue
				}
				e.tomb = true
			case DeleteRange:
				if !op.Table.inRange(op.Range, ck) {
					continue
				}
				e.tomb = true
			case DeletePartition:
				e.tomb = true
			default:
				continue
			}
		}
		if !e.tomb {
			switch expired, maybe := op.expiry(read.Outcome.Lo, read.Outcome.Hi); {
			case expired:
				e.tomb, e.val = true, nil
			case maybe:
				e.maybeExpired = true
			}
		}
		switch op.applied() {
		case acked:
			e.definite = definiteFor(op, read)
		case maybeLate:
			e.late = !op.HasTS
		}
		es = append(es, &e)
	}
	for _, rd := range es {
		if rd.op.Kind != DeleteRange || !rd.definite {
			continue
		}
		for _, e := range es {
			if e != rd && e.ts <= rd.ts && (e.op.Seq > rd.op.Seq || e.op.applied() != acked) {
				rd.definite = false
				break
			}
		}
	}
	var base *entry
	for _, e := range es {
		if e.definite && wins(e, base) {
			base = e
		}
	}
	opts := options{base}
	expire := func(e *entry) {
		if e != nil && e.maybeExpired {
			opts = append(opts, &entry{ts: e.ts, late: e.late, tomb: true, op: e.op})
		}
	}
	expire(base)
	for _, e := range es {
		if !e.definite && mayWin(e, base, high) {
			opts = append(opts, e)
			expire(e)
		}
	}
	return opts
}

// staticCol is the component of the static column (component ignores the row then).
const staticCol = math.MinInt32

// staticEntry sets e to what op writes of its partition's static column, and reports whether op
// writes it at all: only the partition deletion deletes it besides its own writes, never a row
// or range deletion.
func staticEntry(op *Op, e *entry) bool {
	switch {
	case (op.Kind == Insert || op.Kind == Update) && op.SetStatic:
		if op.Static == nil {
			e.tomb = true
		} else {
			e.val = op.Static.Enc
		}
	case op.Kind == DeleteCells && op.DelStatic, op.Kind == DeletePartition:
		e.tomb = true
	default:
		return false
	}
	return true
}

func rowEqual(a, b []Val) bool {
	return slices.EqualFunc(a, b, func(x, y Val) bool { return bytes.Equal(x.Enc, y.Enc) })
}

// inRange reports whether clustering key ck lies in rg.
func (t *Table) inRange(rg Range, ck []Val) bool {
	for i, v := range rg.Prefix {
		if !bytes.Equal(v.Enc, ck[i].Enc) {
			return false
		}
	}
	n := len(rg.Prefix)
	if n == len(t.CK) {
		return true
	}
	typ := t.CK[n].Type
	if b := rg.Lower; b != nil {
		c := compareVals(typ, ck[n].Enc, b.Val.Enc)
		if c < 0 || c == 0 && !b.Inclusive {
			return false
		}
	}
	if b := rg.Upper; b != nil {
		c := compareVals(typ, ck[n].Enc, b.Val.Enc)
		if c > 0 || c == 0 && !b.Inclusive {
			return false
		}
	}
	return true
}

// compareRows orders two clustering keys as the table stores them (each column ASC or DESC).
func (t *Table) compareRows(a, b []Val) int {
	for i, c := range t.CK {
		r := compareVals(c.Type, a[i].Enc, b[i].Enc)
		if c.Desc {
			r = -r
		}
		if r != 0 {
			return r
		}
	}
	return 0
}

// allRows returns every clustering key the workload can write in t, in t's order.
func (t *Table) allRows() [][]Val {
	rows := [][]Val{{}}
	for _, c := range t.CK {
		var next [][]Val
		for _, r := range rows {
			for _, v := range domains[c.Type] {
				next = append(next, append(slices.Clone(r), v))
			}
		}
		rows = next
	}
	slices.SortFunc(rows, t.compareRows)
	return rows
}

// rowState is what a read may see of one row.
type rowState struct {
	ck     []Val
	marker options
	cols   []options // per regular column
	elems  []options // per element of the collection column (collKeys), if the table has one
	list   []*listElem
}

// comps returns the options of every component but the marker.
func (s *rowState) comps() []options {
	out := slices.Concat(s.cols, s.elems)
	for _, e := range s.list {
		out = append(out, e.opts)
	}
	return out
}

func (s *rowState) mayExist() bool {
	if s.marker.mayBeLive() {
		return true
	}
	for _, c := range s.comps() {
		if c.mayBeLive() {
			return true
		}
	}
	return false
}

func (s *rowState) mayBeAbsent() bool {
	if !s.marker.mayBeDead() {
		return false
	}
	for _, c := range s.comps() {
		if !c.mayBeDead() {
			return false
		}
	}
	return true
}

func (s *rowState) determined() bool {
	if len(s.marker) != 1 {
		return false
	}
	for _, c := range s.comps() {
		if len(c) != 1 {
			return false
		}
	}
	return true
}

func (s *rowState) describe(t *Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "row marker: %s", s.marker.String(0, true))
	for i, c := range s.cols {
		fmt.Fprintf(&b, "; %s: %s", t.Regular[i].Name, c.String(t.Regular[i].Type, false))
	}
	for i, c := range s.elems {
		fmt.Fprintf(&b, "; %s element %d: %s", collName, collKeys[i], c.String(Int, t.Coll == CollSet))
	}
	for _, e := range s.list {
		fmt.Fprintf(&b, "; %s element %d (of #%d): %s", collName, e.key, e.op.Seq, e.opts.String(Int, false))
	}
	return b.String()
}

// rowState returns what read may see of row ck, of a partition whose writes are ops.
func (m *Model) rowState(ops []*Op, read *Op, ck []Val) *rowState {
	t := read.Table
	s := &rowState{ck: ck, marker: component(ops, ck, -1, read, m.high)}
	for i := range t.Regular {
		s.cols = append(s.cols, component(ops, ck, i, read, m.high))
	}
	switch t.Coll {
	case NoColl:
	case CollList:
		s.list = listElems(ops, ck, read, m.high)
	default:
		for i := range collKeys {
			s.elems = append(s.elems, component(ops, ck, elementCol(i), read, m.high))
		}
	}
	return s
}

// CheckCAS checks the [applied] answer of a conditional write op (INSERT IF NOT EXISTS), before
// Record: it read its row at its serial level, linearized among the partition's writes, so it
// may apply only if the model allows the row to be absent then, and may refuse only if the
// model allows the row to exist. It returns the problems (nil if none).
func (m *Model) CheckCAS(op *Op) []string {
	if !op.IfNotExists || !op.Outcome.Sent || op.Outcome.Err != nil {
		return nil // a failed one may or may not have applied
	}
	read := &Op{Seq: op.Seq, Kind: Select, Table: op.Table, PK: op.PK, Row: op.Row, CL: op.SerialCL, Node: op.Node, Outcome: op.Outcome}
	s := m.rowState(m.History(op.Table, op.PK), read, op.Row)
	switch {
	case !op.Outcome.NotApplied && !s.mayBeAbsent():
		return []string{fmt.Sprintf("INSERT IF NOT EXISTS applied at %v, but row %s exists for certain (%s)", op.SerialCL, formatRow(op.Table, op.Row), s.describe(op.Table))}
	case op.Outcome.NotApplied && !s.mayExist():
		return []string{fmt.Sprintf("INSERT IF NOT EXISTS not applied at %v, but row %s cannot exist (%s)", op.SerialCL, formatRow(op.Table, op.Row), s.describe(op.Table))}
	}
	return nil
}

// Check compares the result of a successful SELECT with what the model allows and returns a
// description of every discrepancy (nil if none), and whether the model determined the result
// exactly (a single possible answer for every row the read covers).
func (m *Model) Check(read *Op) (problems []string, determined bool) {
	if read.INKeys != nil {
		return m.checkIn(read)
	}
	if read.Table.Counter {
		return m.checkCounters(read)
	}
	t := read.Table
	ops := m.History(t, read.PK)
	rg := read.Range
	if read.Row != nil {
		rg = Range{Prefix: read.Row}
	}
	// The expected order: the table's, reversed by ORDER BY against the first column's order.
	order := t.compareRows
	if read.Order && read.Desc != t.CK[0].Desc {
		order = func(a, b []Val) int { return t.compareRows(b, a) }
	}
	states := map[string]*rowState{}
	var candidates []*rowState
	determined = true
	for _, ck := range t.allRows() {
		if !t.inRange(rg, ck) {
			continue
		}
		s := m.rowState(ops, read, ck)
		determined = determined && s.determined()
		states[valsKey(ck)] = s
		candidates = append(candidates, s)
	}
	slices.SortFunc(candidates, func(a, b *rowState) int { return order(a.ck, b.ck) })
	var static options
	if t.Static {
		static = component(ops, nil, staticCol, read, m.high)
		determined = determined && len(static) == 1
	}
	wholePartition := read.Row == nil && len(rg.Prefix) == 0 && rg.Lower == nil && rg.Upper == nil

	npk, nck := len(t.PK), len(t.CK)
	want := npk + nck + len(read.Cols)
	if t.Static {
		want++
	}
	if read.SelColl {
		want++
	}
	if read.Limit > 0 && len(read.Outcome.Rows) > read.Limit {
		problems = append(problems, fmt.Sprintf("%d rows returned, more than LIMIT %d", len(read.Outcome.Rows), read.Limit))
	}
	returned := map[string]bool{}
	var prev []Val
	for ri, row := range read.Outcome.Rows {
		if len(row) != want {
			problems = append(problems, fmt.Sprintf("row %d has %d values, want %d", ri, len(row), want))
			continue
		}
		enc := make([][]byte, len(row))
		bad := false
		cols := append(append(append([]Column{}, t.PK...), t.CK...), pick(t.Regular, read.Cols)...)
		for i, v := range row[:len(cols)] {
			var err error
			if enc[i], err = encodeResult(cols[i].Type, v); err != nil {
				problems = append(problems, fmt.Sprintf("row %d column %s: %v", ri, cols[i].Name, err))
				bad = true
			}
		}
		if bad {
			continue
		}
		if t.Static && nck > 0 && !slices.ContainsFunc(row[npk:npk+nck], func(v any) bool { return v != nil }) {
			problems = append(problems, checkStaticRow(t, read, row, static, wholePartition, len(read.Outcome.Rows), ri)...)
			continue
		}
		ck, rowName, keyProblems := rowKey(t, read, enc, ri)
		problems = append(problems, keyProblems...)
		s := states[valsKey(ck)]
		switch {
		case s == nil && t.inRange(rg, ck):
			problems = append(problems, rowName+": a row nobody wrote")
			continue
		case s == nil:
			problems = append(problems, rowName+": outside the range the SELECT asked for")
			continue
		case returned[valsKey(ck)]:
			problems = append(problems, rowName+": returned twice")
			continue
		}
		returned[valsKey(ck)] = true
		if prev != nil && order(prev, ck) >= 0 {
			problems = append(problems, fmt.Sprintf("%s comes after (%s): out of order", rowName, formatRow(t, prev)))
		}
		prev = ck
		if !s.mayExist() {
			problems = append(problems, fmt.Sprintf("%s is returned but cannot exist: %s", rowName, s.describe(t)))
		}
		if read.SelColl {
			problems = append(problems, checkCollection(t, s, row[len(row)-1], rowName)...)
		}
		if t.Static {
			problems = append(problems, checkStatic(static, row[len(cols)], rowName)...)
		}
		for j, ci := range read.Cols {
			v := enc[npk+nck+j]
			if !s.cols[ci].accepts(v) {
				c := t.Regular[ci]
				problems = append(problems, fmt.Sprintf("%s has %s = %s, want %s", rowName, c.Name, formatEnc(c.Type, v), s.cols[ci].String(c.Type, false)))
			}
		}
	}
	complete := read.Limit == 0 || len(read.Outcome.Rows) < read.Limit
	for _, s := range candidates {
		if returned[valsKey(s.ck)] || s.mayBeAbsent() {
			continue
		}
		if complete || prev != nil && order(s.ck, prev) < 0 {
			problems = append(problems, fmt.Sprintf("row (%s) is missing; it must exist: %s", formatRow(t, s.ck), s.describe(t)))
		}
	}
	if t.Static && wholePartition && len(read.Outcome.Rows) == 0 && !static.mayBeDead() {
		problems = append(problems, fmt.Sprintf("the partition's static row is missing: no row is returned, and %s must be live: %s", staticName, static.String(Int, false)))
	}
	return problems, determined
}

// checkStatic adds the problems of a row's static value v against the static column's options.
func checkStatic(static options, v any, rowName string) []string {
	enc, err := encodeResult(Int, v)
	if err != nil {
		return []string{fmt.Sprintf("%s column %s: %v", rowName, staticName, err)}
	}
	if !static.accepts(enc) {
		return []string{fmt.Sprintf("%s has %s = %s, want %s", rowName, staticName, formatEnc(Int, enc), static.String(Int, false))}
	}
	return nil
}

// checkStaticRow checks row ri of n, whose clustering columns are all null: the row of a
// partition that has static values and no row, which a read returns alone, and only when it
// asks for whole partitions.
func checkStaticRow(t *Table, read *Op, row []any, static options, wholePartition bool, n, ri int) []string {
	name := fmt.Sprintf("row %d (static values alone)", ri)
	var problems []string
	if !wholePartition {
		problems = append(problems, name+": returned by a read that restricts the clustering columns")
	}
	if n > 1 {
		problems = append(problems, fmt.Sprintf("%s: returned beside %d other rows; it stands for a partition without rows", name, n-1))
	}
	npk, nck := len(t.PK), len(t.CK)
	for i, v := range row[npk+nck : npk+nck+len(read.Cols)] {
		if v != nil {
			problems = append(problems, fmt.Sprintf("%s has %s = %v, want null", name, t.Regular[read.Cols[i]].Name, v))
		}
	}
	if read.SelColl && row[len(row)-1] != nil {
		problems = append(problems, fmt.Sprintf("%s has %s = %v, want null", name, collName, row[len(row)-1]))
	}
	sv := row[npk+nck+len(read.Cols)]
	if sv == nil {
		problems = append(problems, name+" has "+staticName+" null: a partition without rows nor static values is not returned")
	}
	return append(problems, checkStatic(static, sv, name)...)
}

func pick(cols []Column, idx []int) []Column {
	var out []Column
	for _, i := range idx {
		out = append(out, cols[i])
	}
	return out
}

func formatRow(t *Table, ck []Val) string {
	if len(ck) == 0 {
		return "the partition's only row"
	}
	var s []string
	for i, v := range ck {
		s = append(s, t.CK[i].Name+" = "+v.Lit)
	}
	return strings.Join(s, ", ")
}

// checkIn checks a SELECT with IN on the partition key: its rows come partition by partition,
// in token order, each partition's rows once and as a read of that partition alone may return
// them.
func (m *Model) checkIn(read *Op) (problems []string, determined bool) {
	t := read.Table
	npk := len(t.PK)
	keys := slices.Clone(read.INKeys)
	token := func(pk []Val) int64 {
		enc := make([][]byte, len(pk))
		for i, v := range pk {
			enc[i] = v.Enc
		}
		return partitioner.Token(partitioner.AppendKey(nil, enc))
	}
	slices.SortStableFunc(keys, func(a, b []Val) int { return cmp.Compare(token(a), token(b)) })
	index := map[string]int{}
	for i, pk := range keys {
		index[valsKey(pk)] = i
	}
	rows := make([][][]any, len(keys))
	last := -1
	for ri, row := range read.Outcome.Rows {
		if len(row) < npk {
			problems = append(problems, fmt.Sprintf("row %d has %d values", ri, len(row)))
			continue
		}
		pk := make([]Val, npk)
		for i := range npk {
			enc, err := encodeResult(t.PK[i].Type, row[i])
			if err != nil {
				problems = append(problems, fmt.Sprintf("row %d column %s: %v", ri, t.PK[i].Name, err))
				continue
			}
			pk[i] = Val{Lit: formatEnc(t.PK[i].Type, enc), Enc: enc}
		}
		k, ok := index[valsKey(pk)]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("row %d is of partition %s, which the IN does not name", ri, valsKey(pk)))
			continue
		case k < last:
			problems = append(problems, fmt.Sprintf("row %d is of partition %d in token order, after partition %d: out of token order", ri, k, last))
		case k > last && len(rows[k]) > 0:
			problems = append(problems, fmt.Sprintf("row %d: the rows of partition %d are not together", ri, k))
		}
		last = max(last, k)
		rows[k] = append(rows[k], row)
	}
	determined = true
	for i, pk := range keys {
		one := *read
		one.INKeys, one.PK = nil, pk
		one.Outcome.Rows = rows[i]
		p, d := m.Check(&one)
		for _, x := range p {
			problems = append(problems, fmt.Sprintf("partition %d in token order: %s", i, x))
		}
		determined = determined && d
	}
	return problems, determined
}

// rowKey checks the partition key of result row ri of read, its key columns encoded in enc,
// against the partition read, and returns the row's clustering key and its name for messages.
func rowKey(t *Table, read *Op, enc [][]byte, ri int) (ck []Val, name string, problems []string) {
	npk, nck := len(t.PK), len(t.CK)
	for i := range npk {
		if !bytes.Equal(enc[i], read.PK[i].Enc) {
			problems = append(problems, fmt.Sprintf("row %d has partition key %s = %s, want %s", ri, t.PK[i].Name, formatEnc(t.PK[i].Type, enc[i]), read.PK[i].Lit))
		}
	}
	ck = make([]Val, nck)
	for i := range nck {
		ck[i] = Val{Lit: formatEnc(t.CK[i].Type, enc[npk+i]), Enc: enc[npk+i]}
	}
	return ck, fmt.Sprintf("row %d (%s)", ri, formatRow(t, ck)), problems
}
