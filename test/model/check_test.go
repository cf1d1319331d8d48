package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/client"
)

// These tests check the reference model itself on hand-written histories, so that a bug in the
// model cannot hide a bug in the server (too lenient) or fail correct runs (too strict).

// checkTable is m_rf3.t (k int, c int, r0 int, r1 text, PRIMARY KEY (k, c)), or with desc, c
// in descending order.
func checkTable(rf int, desc bool) *Table {
	return &Table{Keyspace: "m", Name: "t", RF: rf,
		PK:         []Column{{Name: "k", Type: Int}},
		CK:         []Column{{Name: "c", Type: Int, Desc: desc}},
		Regular:    []Column{{Name: "r0", Type: Int}, {Name: "r1", Type: Text}},
		Partitions: [][]Val{{intVal(0)}},
	}
}

// history builds operations on one table's first partition, numbering them in order.
type history struct {
	t   *Table
	m   *Model
	seq int
	now int64
}

// testHigh is the high explicit timestamp of the tests' histories.
const testHigh = 1_800_000_000_000_000

func newHistory(t *Table) *history {
	return &history{t: t, m: NewModel(testHigh), now: 1_700_000_000_000_000}
}

// write records a write at cl with outcome err (nil: acknowledged); ts 0 means a server timestamp.
func (h *history) write(op *Op, cl client.Consistency, ts int64, err error) *Op {
	op.Seq, op.Table, op.PK, op.CL = h.seq, h.t, h.t.Partitions[0], cl
	h.seq++
	if ts != 0 {
		op.TS, op.HasTS = ts, true
	}
	h.now += 1000
	op.Outcome = Outcome{Sent: true, Err: err, Lo: h.now, Hi: h.now + 500}
	op.Stmt = op.statement()
	h.m.Record(op)
	return op
}

// read checks a SELECT of every regular column at cl that returned rows (c, r0, r1 as Go
// values, nil for null) and returns the problems found.
func (h *history) read(op *Op, cl client.Consistency, rows ...[]any) []string {
	op.Seq, op.Kind, op.Table, op.PK, op.CL = h.seq, Select, h.t, h.t.Partitions[0], cl
	h.seq++
	op.Cols = []int{0, 1}
	for _, r := range rows {
		op.Outcome.Rows = append(op.Outcome.Rows, append([]any{int32(0)}, r...))
	}
	op.Outcome.Sent = true
	problems, _ := h.m.Check(op)
	return problems
}

func row(c int32, r0 any, r1 any) []any { return []any{c, r0, r1} }

func ins(c int32, r0 int32) *Op {
	v := intVal(r0)
	return &Op{Kind: Insert, Row: []Val{intVal(c)}, Cells: []CellWrite{{Col: 0, Val: &v}}}
}

func TestModelReadYourWritesOnlyWhenWPlusRExceedsRF(t *testing.T) {
	h := newHistory(checkTable(3, false))
	h.write(ins(0, 3), client.Quorum, 0, nil)
	h.write(ins(0, 0), client.One, 0, nil) // newer, but only one replica is sure to have it
	tests := []struct {
		cl    client.Consistency
		rows  [][]any
		valid bool
	}{
		{client.One, [][]any{row(0, int32(3), nil)}, true},    // 1 + 1 ≤ 3: the older value may be read
		{client.One, [][]any{row(0, int32(0), nil)}, true},    // or the newer one
		{client.One, nil, true},                               // 2 + 1 ≤ 3: even nothing
		{client.Quorum, nil, false},                           // 2 + 2 > 3: not nothing
		{client.Quorum, [][]any{row(0, int32(3), nil)}, true}, // 1 + 2 ≤ 3
		{client.All, [][]any{row(0, int32(3), nil)}, false},   // 1 + 3 > 3: ALL must see the newer write
		{client.All, [][]any{row(0, int32(0), nil)}, true},
		{client.All, [][]any{row(0, int32(-7), nil)}, false},                  // a value nobody wrote
		{client.All, [][]any{row(0, int32(0), "a")}, false},                   // a cell nobody wrote
		{client.All, [][]any{row(0, int32(0), nil), row(3, nil, nil)}, false}, // a row nobody wrote
	}
	for _, tt := range tests {
		problems := h.read(&Op{}, tt.cl, tt.rows...)
		if (len(problems) == 0) != tt.valid {
			t.Errorf("read at %v returning %v: problems %q, want valid = %v", tt.cl, tt.rows, problems, tt.valid)
		}
	}
}

func TestModelDeletedRowIsNotResurrected(t *testing.T) {
	h := newHistory(checkTable(2, false))
	h.write(ins(0, 3), client.All, 0, nil)
	h.write(&Op{Kind: DeleteRow, Row: []Val{intVal(0)}}, client.One, 0, nil)
	if p := h.read(&Op{}, client.Quorum, row(0, int32(3), nil)); len(p) == 0 {
		t.Errorf("a QUORUM read at RF 2 returning a row deleted at ONE was accepted")
	}
	if p := h.read(&Op{}, client.One, row(0, int32(3), nil)); len(p) != 0 {
		t.Errorf("a ONE read at RF 2 returning a row deleted at ONE was refused (one replica may lack the delete): %q", p)
	}
	// A later write at a lower timestamp stays deleted; a high one brings the row back.
	h.write(ins(0, 0), client.All, 300, nil)
	if p := h.read(&Op{}, client.All); len(p) != 0 {
		t.Errorf("an insert below the deletion's timestamp: %q, want the row still absent", p)
	}
	h.write(ins(0, 0), client.All, testHigh, nil)
	if p := h.read(&Op{}, client.All, row(0, int32(0), nil)); len(p) != 0 {
		t.Errorf("an insert above the deletion's timestamp: %q, want the row back", p)
	}
}

func TestModelUncertainWrites(t *testing.T) {
	timeout := &client.TimeoutError{Message: "write timeout"}
	h := newHistory(checkTable(3, false))
	h.write(ins(0, 3), client.All, 0, nil)
	h.write(ins(0, 0), client.All, 0, timeout)
	for _, r0 := range []int32{3, 0} {
		if p := h.read(&Op{}, client.All, row(0, r0, nil)); len(p) != 0 {
			t.Errorf("after a timed-out write of 0 over 3, reading %d: %q, want it allowed", r0, p)
		}
	}
	// A write refused as unavailable was never sent.
	h.write(ins(3, 3), client.All, 0, &client.UnavailableError{Message: "unavailable"})
	if p := h.read(&Op{}, client.All, row(0, int32(3), nil), row(3, int32(3), nil)); len(p) == 0 {
		t.Errorf("a row only an unavailable write wrote was accepted")
	}
	// A later acknowledged write wins over a timed-out one the server answered...
	h.write(ins(0, -7), client.All, 0, nil)
	if p := h.read(&Op{}, client.One, row(0, int32(0), nil)); len(p) == 0 {
		t.Errorf("a timed-out write read over a later acknowledged one was accepted")
	}
	// ...but not over one the client gave up on: the server may have stamped it later.
	h.write(ins(3, 0), client.All, 0, nil)
	h.write(ins(3, 3), client.All, 0, errors.New("context deadline exceeded"))
	h.write(ins(3, -7), client.All, 0, nil)
	if p := h.read(&Op{}, client.All, row(0, int32(-7), nil), row(3, int32(3), nil)); len(p) != 0 {
		t.Errorf("a write the client gave up on, read over a later one: %q, want it allowed", p)
	}
}

func TestModelTiesFollowPackageCell(t *testing.T) {
	h := newHistory(checkTable(1, false))
	h.write(ins(0, 3), client.One, 200, nil)
	h.write(ins(0, -7), client.One, 200, nil) // same timestamp: the bytewise greater encoding wins
	if p := h.read(&Op{}, client.One, row(0, int32(-7), nil)); len(p) != 0 {
		t.Errorf("tie between 3 and -7 (0xfffffff9): %q, want -7", p)
	}
	h.write(&Op{Kind: DeleteCells, Row: []Val{intVal(0)}, Cols: []int{0}}, client.One, 200, nil) // a tombstone wins a tie
	if p := h.read(&Op{}, client.One, row(0, nil, nil)); len(p) != 0 {
		t.Errorf("tie between a value and a tombstone: %q, want null", p)
	}
}

func TestModelRangeDeleteEitherImplementation(t *testing.T) {
	h := newHistory(checkTable(1, false))
	h.write(ins(0, 3), client.One, 0, nil)
	h.write(&Op{Kind: DeleteRange, Range: Range{Lower: &Bound{intVal(0), true}}}, client.One, 0, nil)
	if p := h.read(&Op{}, client.One, row(0, int32(3), nil)); len(p) == 0 {
		t.Errorf("a row inside an acknowledged range delete was accepted")
	}
	// A row written later below the delete's timestamp: a true range tombstone hides it, row
	// tombstones for the rows found do not; both are allowed.
	h.write(ins(3, 0), client.One, 100, nil)
	for _, rows := range [][][]any{nil, {row(3, int32(0), nil)}} {
		if p := h.read(&Op{}, client.One, rows...); len(p) != 0 {
			t.Errorf("after a range delete and a write below it, reading %v: %q, want it allowed", rows, p)
		}
	}
}

func TestModelOrderAndLimit(t *testing.T) {
	for _, desc := range []bool{false, true} {
		h := newHistory(checkTable(1, desc))
		for _, c := range []int32{-7, 0, 3} {
			h.write(ins(c, c), client.One, 0, nil)
		}
		asc := [][]any{row(-7, int32(-7), nil), row(0, int32(0), nil), row(3, int32(3), nil)}
		want := asc
		if desc {
			want = [][]any{asc[2], asc[1], asc[0]}
		}
		if p := h.read(&Op{}, client.One, want...); len(p) != 0 {
			t.Errorf("desc=%v: rows in the table's order: %q", desc, p)
		}
		if p := h.read(&Op{}, client.One, want[1], want[0], want[2]); !strings.Contains(strings.Join(p, "\n"), "out of order") {
			t.Errorf("desc=%v: rows out of order: problems %q, want one saying so", desc, p)
		}
		if p := h.read(&Op{Limit: 2}, client.One, want[:2]...); len(p) != 0 {
			t.Errorf("desc=%v: LIMIT 2 returning the first two rows: %q", desc, p)
		}
		if p := h.read(&Op{Limit: 2}, client.One, want[0], want[2]); len(p) == 0 {
			t.Errorf("desc=%v: LIMIT 2 skipping the second row was accepted", desc)
		}
		// ORDER BY against the table's order reverses it.
		rev := [][]any{want[2], want[1], want[0]}
		if p := h.read(&Op{Order: true, Desc: !desc}, client.One, rev...); len(p) != 0 {
			t.Errorf("desc=%v: ORDER BY c %v: %q", desc, map[bool]string{true: "DESC", false: "ASC"}[!desc], p)
		}
		if p := h.read(&Op{Order: true, Desc: !desc, Limit: 1}, client.One, want[0]); len(p) == 0 {
			t.Errorf("desc=%v: reversed LIMIT 1 returning the table's first row was accepted", desc)
		}
	}
}

// TestModelChecksInReads checks the model of a SELECT with IN: the rows of each partition
// together, partitions in token order, none missing, none from elsewhere.
func TestModelChecksInReads(t *testing.T) {
	tbl := checkTable(3, false)
	tbl.Partitions = [][]Val{{intVal(0)}, {intVal(1)}}
	h := newHistory(tbl)
	h.write(ins(0, 50), client.All, 0, nil)
	w := ins(3, 60)
	w.Seq, w.Table, w.PK, w.CL = h.seq, tbl, tbl.Partitions[1], client.All
	w.Outcome = Outcome{Sent: true, Lo: h.now + 1000, Hi: h.now + 1500}
	w.Stmt = w.statement()
	h.m.Record(w)
	h.now += 2000
	k0 := []any{int32(0), int32(0), int32(50), nil}
	k1 := []any{int32(1), int32(3), int32(60), nil}
	read := func(rows ...[]any) []string {
		op := &Op{Seq: h.seq, Kind: Select, Table: tbl, PK: tbl.Partitions[0], INKeys: tbl.Partitions, CL: client.All, Cols: []int{0, 1}}
		h.seq++
		op.Outcome = Outcome{Sent: true, Lo: h.now, Hi: h.now + 10, Rows: rows}
		p, _ := h.m.Check(op)
		return p
	}
	// Murmur3: token(int 1) < token(int 0).
	if p := read(k1, k0); len(p) != 0 {
		t.Errorf("rows in token order: %q", p)
	}
	if p := read(k0, k1); len(p) == 0 || !strings.Contains(strings.Join(p, "; "), "out of token order") {
		t.Errorf("rows out of token order: %q, want a problem", p)
	}
	if p := read(k1); len(p) == 0 || !strings.Contains(strings.Join(p, "; "), "missing") {
		t.Errorf("a partition missing: %q, want a problem", p)
	}
	if p := read(k1, k0, []any{int32(2), int32(0), int32(1), nil}); len(p) == 0 || !strings.Contains(strings.Join(p, "; "), "does not name") {
		t.Errorf("a row of another partition: %q, want a problem", p)
	}
}

// TestDefiniteAcrossDataCenters checks which acknowledged writes a read must see when a keyspace
// has 2 replicas in each of 2 data centers.
func TestDefiniteAcrossDataCenters(t *testing.T) {
	tb := &Table{RF: 2, DCs: 2}
	for _, tc := range []struct {
		w, r client.Consistency
		want bool
	}{
		{client.LocalQuorum, client.LocalQuorum, true},
		{client.LocalOne, client.LocalQuorum, true},
		{client.LocalOne, client.LocalOne, false},
		{client.LocalQuorum, client.Quorum, true}, // 2 of 4 written, 3 of 4 read
		{client.LocalOne, client.Quorum, false},   // 1 + 3 = 4 replicas
		{client.LocalOne, client.All, true},
		{client.LocalQuorum, client.One, false},
		{client.Quorum, client.LocalQuorum, true}, // 3 of 4: at least 1 in each data center
		{client.Quorum, client.LocalOne, false},   // 3 of 4 may leave one replica of the reader's out
		{client.Quorum, client.Quorum, true},
		{client.One, client.All, true},
	} {
		if got := definite(tb, tc.w, tc.r); got != tc.want {
			t.Errorf("a write at %v, a read at %v: definite = %v, want %v", tc.w, tc.r, got, tc.want)
		}
	}
	if !definite(&Table{RF: 3}, client.Quorum, client.Quorum) || definite(&Table{RF: 3}, client.One, client.Quorum) {
		t.Error("SimpleStrategy RF 3: QUORUM/QUORUM must be definite and ONE/QUORUM not")
	}
	// A scan goes through a node of either data center: a local read in the other data center
	// than a local write's need not see it; a QUORUM write's it must, from any data center.
	w := &Op{Table: tb, CL: client.LocalQuorum, DC: 0}
	if definiteFor(w, &Op{Table: tb, CL: client.LocalQuorum, DC: 1}) || !definiteFor(w, &Op{Table: tb, CL: client.LocalQuorum, DC: 0}) {
		t.Error("LOCAL_QUORUM write and read: definite must hold in the same data center only")
	}
	if !definiteFor(&Op{Table: tb, CL: client.Quorum}, &Op{Table: tb, CL: client.LocalQuorum, DC: 1}) {
		t.Error("a QUORUM write read at LOCAL_QUORUM in another data center: want definite")
	}
}

// TestModelAnyWriteUncertainUntilHintsReplayed: an acknowledged write at ANY may be missed by
// any read until its hints are replayed (it may live in a coordinator's hints alone); then a
// read at ALL that misses it has lost it (an injected lost ANY write is caught).
func TestModelAnyWriteUncertainUntilHintsReplayed(t *testing.T) {
	h := newHistory(checkTable(1, false))
	w := ins(0, 7)
	w.Any = true
	h.write(w, client.One, 0, nil)
	for _, cl := range []client.Consistency{client.One, client.All, client.Serial} {
		if p := h.read(&Op{}, cl); p != nil {
			t.Errorf("a read at %v missing an ANY write before its hints were replayed: %v; want it allowed", cl, p)
		}
		if p := h.read(&Op{}, cl, row(0, int32(7), nil)); p != nil {
			t.Errorf("a read at %v seeing an ANY write: %v; want it allowed", cl, p)
		}
	}
	if n := h.m.SettleAny(); n != 1 {
		t.Fatalf("SettleAny marked %d writes, want 1", n)
	}
	if p := h.read(&Op{}, client.All); p == nil {
		t.Error("a read at ALL after the hints were replayed misses the ANY write (lost), and the model allows it")
	}
	if p := h.read(&Op{}, client.All, row(0, int32(7), nil)); p != nil {
		t.Errorf("a read at ALL after the hints were replayed sees the ANY write: %v", p)
	}
	// Overwritten by a later write: only the later one must show.
	h.write(ins(0, 8), client.All, 0, nil)
	if p := h.read(&Op{}, client.All, row(0, int32(8), nil)); p != nil {
		t.Errorf("a read at ALL of the newer value over a replayed ANY write: %v", p)
	}
	// A failed (timed out) ANY write is never required.
	h2 := newHistory(checkTable(1, false))
	w2 := ins(0, 7)
	w2.Any = true
	h2.write(w2, client.One, 0, &client.TimeoutError{})
	h2.m.SettleAny()
	if p := h2.read(&Op{}, client.All); p != nil {
		t.Errorf("a read at ALL missing a timed-out ANY write: %v; want it allowed", p)
	}
}

// cas records an INSERT IF NOT EXISTS of row c at serial level cl, committed at QUORUM, that
// answered applied, after checking that answer with Model.CheckCAS; it returns the problems.
func (h *history) cas(c int32, r0 int32, cl client.Consistency, applied bool) []string {
	op := ins(c, r0)
	op.IfNotExists, op.SerialCL = true, cl
	op.Seq, op.Table, op.PK, op.CL = h.seq, h.t, h.t.Partitions[0], client.Quorum
	h.seq++
	h.now += 1000
	op.Outcome = Outcome{Sent: true, Lo: h.now, Hi: h.now + 500, NotApplied: !applied}
	op.Stmt = op.statement()
	problems := h.m.CheckCAS(op)
	h.m.Record(op)
	return problems
}

// TestModelCASAppliedAtMostOnce: INSERT IF NOT EXISTS applies at most once per row unless the
// row is deleted in between (an injected double-applied INSERT IF NOT EXISTS is caught), is
// refused only when the row may exist, and a SERIAL read sees every applied one before it.
func TestModelCASAppliedAtMostOnce(t *testing.T) {
	h := newHistory(checkTable(3, false))
	if p := h.cas(0, 1, client.Serial, true); p != nil {
		t.Fatalf("the first INSERT IF NOT EXISTS applied: %v", p)
	}
	if p := h.cas(0, 2, client.LocalSerial, true); p == nil {
		t.Error("a second INSERT IF NOT EXISTS of the same row applied, and the model allows it")
	}
	if p := h.cas(0, 2, client.Serial, false); p != nil {
		t.Errorf("a second INSERT IF NOT EXISTS not applied: %v", p)
	}
	if p := h.read(&Op{}, client.Serial); p == nil {
		t.Error("a SERIAL read misses an applied INSERT IF NOT EXISTS, and the model allows it")
	}
	if p := h.cas(1, 1, client.Serial, false); p == nil {
		t.Error("an INSERT IF NOT EXISTS of a row nobody wrote was not applied, and the model allows it")
	}
	h.write(&Op{Kind: DeleteRow, Row: []Val{intVal(0)}}, client.Quorum, 0, nil)
	if p := h.cas(0, 3, client.Serial, true); p != nil {
		t.Errorf("INSERT IF NOT EXISTS after the row's deletion applied: %v", p)
	}
	// A plain write at ONE may or may not be seen by the Paxos read.
	h.write(ins(2, 1), client.One, 0, nil)
	if p := h.cas(2, 2, client.Serial, true); p != nil {
		t.Errorf("INSERT IF NOT EXISTS over a row written at ONE applied: %v", p)
	}
}
