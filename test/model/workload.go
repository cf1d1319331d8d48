package model

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cql"
)

// Features says which optional parts of the language the server parses; the workload uses a
// part only when it is on, so that it starts using it as soon as the server does.
type Features struct {
	// ClusteringOrder: CREATE TABLE ... WITH CLUSTERING ORDER BY (c DESC).
	ClusteringOrder bool
	// OrderBy: SELECT ... ORDER BY c DESC.
	OrderBy bool
}

// ProbeFeatures reports which optional features the server's parser accepts.
func ProbeFeatures() Features {
	_, errOrder := cql.ParseStatement("CREATE TABLE ks.t (k int, c int, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
	_, errBy := cql.ParseStatement("SELECT * FROM ks.t WHERE k = 1 ORDER BY c DESC")
	return Features{ClusteringOrder: errOrder == nil, OrderBy: errBy == nil}
}

func (f Features) String() string {
	onOff := map[bool]string{true: "ON", false: "OFF (the parser refuses it)"}
	return fmt.Sprintf("WITH CLUSTERING ORDER BY (c DESC) %s; SELECT ... ORDER BY %s", onOff[f.ClusteringOrder], onOff[f.OrderBy])
}

// Column is one column of a workload table.
type Column struct {
	Name string
	Type Type
	Desc bool // a clustering column in descending order
}

// Table is one workload table: its keyspace's replication factor and its columns by role.
type Table struct {
	Keyspace string
	Name     string
	// RF is the keyspace's replication factor; across data centers (Workload.SetDataCenters),
	// the replicas in each data center.
	RF int
	// DCs is the number of data centers the keyspace places RF replicas in (SetDataCenters); 0
	// for SimpleStrategy.
	DCs     int
	PK      []Column // partition key columns
	CK      []Column // clustering columns
	Regular []Column
	// Partitions are the partition keys the workload uses, few so that histories revisit them.
	Partitions [][]Val
	// Coll is the kind of the table's non-frozen collection column (collection.go), NoColl for
	// none.
	Coll CollKind
	// Static: the table has a static column s int (it has clustering columns), one value per
	// partition (see Op.SetStatic).
	Static bool
	// Counter: a counter table, its regular columns counters (Type BigInt, as they read),
	// incremented by UPDATE with non-negative deltas and checked by bounds (counter.go).
	Counter bool
	// ClientTimestamps: every write to the table carries USING TIMESTAMP, drawn from a few
	// low values, so the order of last-write-wins differs from the order of the history and
	// ties between different values are common.
	ClientTimestamps bool
}

// QName is the table's qualified name.
func (t *Table) QName() string { return t.Keyspace + "." + t.Name }

// CreateStatement is the table's CREATE TABLE.
func (t *Table) CreateStatement() string {
	var cols []string
	for _, c := range t.allColumns() {
		typ := c.Type.String()
		if t.Counter && slices.ContainsFunc(t.Regular, func(r Column) bool { return r.Name == c.Name }) {
			typ = "counter"
		}
		cols = append(cols, c.Name+" "+typ)
	}
	if t.Static {
		cols = append(cols, staticName+" int static")
	}
	if t.Coll != NoColl {
		cols = append(cols, collName+" "+collType(t.Coll))
	}
	pk := names(t.PK)
	if len(t.PK) > 1 {
		pk = "(" + pk + ")"
	}
	if len(t.CK) > 0 {
		pk += ", " + names(t.CK)
	}
	s := fmt.Sprintf("CREATE TABLE %s (%s, PRIMARY KEY (%s))", t.QName(), strings.Join(cols, ", "), pk)
	desc := false
	var order []string
	for _, c := range t.CK {
		dir := "ASC"
		if c.Desc {
			dir, desc = "DESC", true
		}
		order = append(order, c.Name+" "+dir)
	}
	if desc {
		s += " WITH CLUSTERING ORDER BY (" + strings.Join(order, ", ") + ")"
	}
	return s
}

func (t *Table) allColumns() []Column {
	return append(append(append([]Column{}, t.PK...), t.CK...), t.Regular...)
}

func names(cols []Column) string {
	var s []string
	for _, c := range cols {
		s = append(s, c.Name)
	}
	return strings.Join(s, ", ")
}

// Workload is a seeded generator of a cluster layout, a schema and a history of operations.
// Everything it generates is a function of the seed and the features alone, never of how
// operations turned out, so a seed replays the same history (the values of the high explicit
// timestamps follow the clock, see High).
type Workload struct {
	Seed     uint64
	Nodes    int // cluster size, 3 to 5
	Tables   []*Table
	Features Features
	// High is the base of the high explicit timestamps, in microseconds since the Unix epoch:
	// highAhead past the time NewWorkload ran. Every operation must end before it.
	High int64
	// Together, when set, says whether two partitions of a table are checked by the same
	// model (Pool's workers each keep their own): an IN reads only partitions checked
	// together. Nil: all are.
	Together func(t *Table, a, b []Val) bool

	dc *DataCenters // SetDataCenters
	// ahead holds the partitions (partKey) written with a high explicit timestamp so far: no
	// INSERT IF NOT EXISTS goes to them (anyOrCAS); cas those with an INSERT IF NOT EXISTS so
	// far, to which no write with a high explicit timestamp goes.
	ahead, cas map[string]bool
	rng        *rand.Rand
	seq        int
	tick       int // rotates column types so that every type is used
}

// shapes of tables: partition key columns, clustering columns, whether descending order is
// wanted (used only with Features.ClusteringOrder).
var shapes = []struct {
	pk, ck int
	desc   bool
}{
	{1, 0, false}, // no clustering column
	{1, 1, false},
	{1, 1, true},
	{1, 2, false},
	{1, 2, true},
	{2, 1, false}, // composite partition key
	{2, 0, false},
}

// NewWorkload returns the workload of seed: a cluster of 3 to 5 nodes, keyspaces at RF 1, 2 and
// 3, and three tables in each, covering every shape and every column type.
func NewWorkload(seed uint64, f Features) *Workload {
	w := &Workload{Seed: seed, Features: f, rng: rand.New(rand.NewPCG(seed, seed^0x6b766e6f6465))}
	w.High = time.Now().Add(highAhead).UnixMicro()
	w.Nodes = 3 + w.rng.IntN(3)
	perm := w.rng.Perm(len(shapes))
	slot := 0
	for rf := 1; rf <= 3; rf++ {
		ks := fmt.Sprintf("m_rf%d", rf)
		for i := range 3 {
			sh := shapes[perm[slot%len(shapes)]]
			slot++
			t := &Table{Keyspace: ks, Name: fmt.Sprintf("t%d", i), RF: rf, ClientTimestamps: w.rng.IntN(3) == 0}
			for j := range sh.pk {
				t.PK = append(t.PK, Column{Name: fmt.Sprintf("k%d", j), Type: Type(w.rng.IntN(int(numTypes)))})
			}
			for j := range sh.ck {
				c := Column{Name: fmt.Sprintf("c%d", j), Type: Type(w.rng.IntN(int(numTypes)))}
				if sh.desc && f.ClusteringOrder {
					c.Desc = j == 0 || w.rng.IntN(2) == 0
				}
				t.CK = append(t.CK, c)
			}
			for j := range 2 + w.rng.IntN(2) {
				t.Regular = append(t.Regular, Column{Name: fmt.Sprintf("r%d", j), Type: Type(w.tick % int(numTypes))})
				w.tick++
			}
			t.Coll = CollKind(w.rng.IntN(int(numCollKinds)))
			t.Static = len(t.CK) > 0 && w.rng.IntN(2) == 0
			// A handful of distinct partition keys.
			seen := map[string]bool{}
			for range 6 {
				var pk []Val
				for _, c := range t.PK {
					pk = append(pk, w.pick(c.Type))
				}
				if k := valsKey(pk); !seen[k] {
					seen[k] = true
					t.Partitions = append(t.Partitions, pk)
				}
			}
			w.Tables = append(w.Tables, t)
		}
		w.Tables = append(w.Tables, w.counterTable(ks))
	}
	return w
}

// counterTable returns keyspace ks's counter table: a partition key column, maybe a clustering
// column, and one or two counters.
func (w *Workload) counterTable(ks string) *Table {
	t := &Table{Keyspace: ks, Name: "counts", Counter: true}
	t.RF = int(ks[len(ks)-1] - '0')
	t.PK = []Column{{Name: "k0", Type: Type(w.rng.IntN(int(numTypes)))}}
	if w.rng.IntN(2) == 0 {
		t.CK = []Column{{Name: "c0", Type: Type(w.rng.IntN(int(numTypes)))}}
	}
	for j := range 1 + w.rng.IntN(2) {
		t.Regular = append(t.Regular, Column{Name: fmt.Sprintf("n%d", j), Type: BigInt})
	}
	seen := map[string]bool{}
	for range 4 {
		pk := []Val{w.pick(t.PK[0].Type)}
		if k := valsKey(pk); !seen[k] {
			seen[k] = true
			t.Partitions = append(t.Partitions, pk)
		}
	}
	return t
}

// staticName is the static column's name (Table.Static).
const staticName = "s"

// Types returns the CREATE TYPE statements of the user type of the CollUDT columns, one in each
// keyspace that has such a column.
func (w *Workload) Types() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range w.Tables {
		if t.Coll == CollUDT && !seen[t.Keyspace] {
			seen[t.Keyspace] = true
			out = append(out, fmt.Sprintf("CREATE TYPE %s.%s (%s int, %s int, %s int, %s int)", t.Keyspace, udtType, udtFields[0], udtFields[1], udtFields[2], udtFields[3]))
		}
	}
	return out
}

// Home is the index of the data center whose nodes coordinate partition pk (SetDataCenters);
// 0 without data centers.
func (w *Workload) Home(pk []Val) int {
	if w.dc == nil {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(valsKey(pk)))
	return int(h.Sum32() % uint32(len(w.dc.Names)))
}

// DataCenters is a cluster layout of several data centers for SetDataCenters.
type DataCenters struct {
	Names []string // the data centers, as the nodes' --dc name them
	Nodes [][]int  // the nodes of each data center (indexes into the cluster's nodes)
	RF    int      // replicas in each data center
}

// dcKeyspace is the keyspace of every table across data centers.
const dcKeyspace = "m_dc"

// SetDataCenters turns w into a workload across data centers, before its first operation: every
// table moves to one NetworkTopologyStrategy keyspace (m_dc) with dc.RF replicas in each data center;
// each partition has a home data center (by its key) whose nodes alone coordinate its
// operations, at LOCAL_ONE or LOCAL_QUORUM, so that a cut between data centers leaves each
// partition's history whole on its side. The model judges local levels against the replicas of
// one data center and the final reads (ONE, QUORUM, ALL) against all of them.
func (w *Workload) SetDataCenters(dc DataCenters) error {
	if len(dc.Names) < 2 || len(dc.Names) != len(dc.Nodes) || dc.RF < 1 {
		return fmt.Errorf("model: DataCenters %+v: want two or more named data centers, each with its nodes, and RF at least 1", dc)
	}
	nodes := 0
	for i, ns := range dc.Nodes {
		if len(ns) == 0 {
			return fmt.Errorf("model: data center %s has no nodes", dc.Names[i])
		}
		nodes += len(ns)
	}
	w.dc, w.Nodes = &dc, nodes
	for _, t := range w.Tables {
		// m_rf1.t0 becomes m_dc.m_rf1_t0: the tables of the three keyspaces share names.
		t.Keyspace, t.Name, t.RF, t.DCs = dcKeyspace, t.Keyspace+"_"+t.Name, dc.RF, len(dc.Names)
	}
	return nil
}

// Keyspaces returns the CREATE KEYSPACE statements.
func (w *Workload) Keyspaces() []string {
	if w.dc != nil {
		var rfs []string
		for _, name := range w.dc.Names {
			rfs = append(rfs, fmt.Sprintf("'%s': %d", name, w.dc.RF))
		}
		return []string{fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'NetworkTopologyStrategy', %s}", dcKeyspace, strings.Join(rfs, ", "))}
	}
	var out []string
	for rf := 1; rf <= 3; rf++ {
		out = append(out, fmt.Sprintf("CREATE KEYSPACE m_rf%d WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", rf, rf))
	}
	return out
}

func (w *Workload) pick(t Type) Val { d := domains[t]; return d[w.rng.IntN(len(d))] }

// OpKind is what an operation does.
type OpKind uint8

// The operation kinds.
const (
	Insert OpKind = iota
	Update
	DeleteCells
	DeleteRow
	DeleteRange
	DeletePartition
	Select
	// Scan is a SELECT of every row of the table (no WHERE), checked partition by partition
	// against the model, and for token order; it runs alone, between the other operations
	// (Pool.Run), since it reads every worker's partitions.
	Scan
)

var opKindNames = [...]string{"INSERT", "UPDATE", "DELETE cells", "DELETE row", "DELETE range", "DELETE partition", "SELECT", "SELECT scan"}

func (k OpKind) String() string { return opKindNames[k] }

// IsWrite reports whether k changes data.
func (k OpKind) IsWrite() bool { return k != Select && k != Scan }

// Bound is one end of a clustering range.
type Bound struct {
	Val       Val
	Inclusive bool
}

// Range selects rows of a partition: equality on a prefix of the clustering columns, then
// optional bounds on the next one. The zero Range is the whole partition.
type Range struct {
	Prefix       []Val
	Lower, Upper *Bound
}

// CellWrite is one cell an INSERT or UPDATE sets; a nil Val writes null.
type CellWrite struct {
	Col int // index in Table.Regular
	Val *Val
}

// Explicit write timestamps are placed outside the wall-clock window of a history, so the order
// of last-write-wins between them and server-assigned timestamps is certain: low ones (ties
// among them on purpose) lose to every server timestamp; high ones, Workload.High and a little
// above, win over every one. High is highAhead past the history's start: servers refuse
// timestamps too far ahead of their clock (an hour by default), and a history lasts minutes.
const (
	lowTimestampStep = 100
	highAhead        = 50 * time.Minute
)

// Op is one operation of a history, and once run, its outcome.
type Op struct {
	Seq   int
	Kind  OpKind
	Table *Table
	PK    []Val
	Row   []Val // the full clustering key of INSERT, UPDATE, DELETE cells and DELETE row
	Range Range // DELETE range and SELECT (Row set: a one-row SELECT)
	Cells []CellWrite
	Cols  []int // DELETE cells: the columns; SELECT: the regular columns selected
	// SetStatic: an INSERT or UPDATE writes Static (nil: null) to the static column. An UPDATE
	// with Row nil writes the static column alone (WHERE names the partition key only).
	SetStatic bool
	Static    *Val
	// DelStatic: a DELETE cells, with Row nil, deletes the static column.
	DelStatic bool
	// Coll is the operation on the table's collection column of an INSERT, UPDATE or DELETE
	// cells; nil for none. SelColl: a SELECT selects the collection column (last).
	Coll    *CollOp
	SelColl bool
	TS      int64 // USING TIMESTAMP, when HasTS
	HasTS   bool
	// TTL is an INSERT's or UPDATE's USING TTL in seconds, 0 for none. Only writes with a
	// server timestamp get one, so no tie at equal timestamps involves an expiring cell (whose
	// expiry the client knows only to within its request's time).
	TTL int32
	// INKeys are the partitions of a SELECT with IN on the partition key (PK is the first of
	// them): the cartesian product of each partition key column's IN values; nil otherwise.
	INKeys [][]Val
	// KeyFilter is a Scan's restriction of one partition key column (scanfilter.go); nil for
	// none.
	KeyFilter *KeyFilter
	Limit     int  // SELECT ... LIMIT, 0 for none
	Desc      bool // SELECT ... ORDER BY first clustering column DESC
	Order     bool // SELECT has an ORDER BY clause
	// OrderAll: the ORDER BY names every clustering column (each in the direction Desc implies
	// for it), not only the first.
	OrderAll bool
	Node     int // the coordinator, an index into the cluster's nodes
	// DC is the coordinator's data center, an index into DataCenters.Names (SetDataCenters); 0
	// without data centers.
	DC int
	CL client.Consistency
	// Any: a write at ANY (docs/cql.md, "Writes at ANY"), sent through the Executor (the gRPC
	// API has no ANY; through it the write runs at CL). CL is then ONE, which it counts as once
	// its hints have been replayed (Model.SettleAny); until then no read must see it.
	Any bool
	// IfNotExists: an INSERT IF NOT EXISTS (a Paxos round at SerialCL, committed at CL), sent
	// through the Executor (through the gRPC API it is a plain INSERT); its answer says whether
	// it applied (Outcome.NotApplied), which Model.CheckCAS checks.
	IfNotExists bool
	SerialCL    client.Consistency
	Stmt        string

	Outcome Outcome
	// hintOnly: a write at ANY sent while its coordinator saw every replica down (counted only).
	hintOnly bool
}

// Next returns the next operation of the history.
func (w *Workload) Next() *Op {
	r := w.rng
	t := w.Tables[r.IntN(len(w.Tables))]
	op := &Op{Seq: w.seq, Table: t, PK: t.Partitions[r.IntN(len(t.Partitions))], Node: r.IntN(w.Nodes)}
	w.seq++
	op.CL = []client.Consistency{client.One, client.Quorum, client.All}[r.IntN(3)]
	if w.dc != nil {
		op.DC = w.Home(op.PK)
		home := w.dc.Nodes[op.DC]
		op.Node = home[r.IntN(len(home))]
		op.CL = []client.Consistency{client.LocalOne, client.LocalQuorum}[r.IntN(2)]
	}
	row := func() []Val {
		ck := []Val{} // non-nil: a row, even of a table without clustering columns
		for _, c := range t.CK {
			ck = append(ck, w.pick(c.Type))
		}
		return ck
	}
	cells := func(min int) {
		for i := range t.Regular {
			if r.IntN(2) == 0 {
				continue
			}
			cw := CellWrite{Col: i}
			if r.IntN(8) != 0 {
				v := w.pick(t.Regular[i].Type)
				cw.Val = &v
			}
			op.Cells = append(op.Cells, cw)
		}
		if len(op.Cells) < min {
			i := r.IntN(len(t.Regular))
			v := w.pick(t.Regular[i].Type)
			op.Cells = []CellWrite{{Col: i, Val: &v}}
		}
	}
	staticVal := func() {
		op.SetStatic = true
		if r.IntN(8) != 0 {
			v := w.pick(Int)
			op.Static = &v
		}
	}
	if t.Counter {
		w.nextCounter(op, row)
		op.Stmt = op.statement()
		return op
	}
	switch p := r.IntN(100); {
	case p < 28:
		op.Kind, op.Row = Insert, row()
		cells(0)
		op.Coll = w.collOp(t, Insert)
		if t.Static && r.IntN(3) == 0 {
			staticVal()
		}
	case p < 45 && t.Static && r.IntN(4) == 0:
		op.Kind = Update // the static column alone
		staticVal()
	case p < 45:
		op.Kind, op.Row = Update, row()
		cells(1)
		op.Coll = w.collOp(t, Update)
		if t.Static && r.IntN(3) == 0 {
			staticVal()
		}
	case p < 51 && t.Static && r.IntN(4) == 0:
		op.Kind, op.DelStatic = DeleteCells, true
	case p < 51:
		op.Kind, op.Row = DeleteCells, row()
		for i := range t.Regular {
			if r.IntN(2) == 0 {
				op.Cols = append(op.Cols, i)
			}
		}
		op.Coll = w.collOp(t, DeleteCells)
		if len(op.Cols) == 0 && op.Coll == nil {
			op.Cols = []int{r.IntN(len(t.Regular))}
		}
	case p < 56:
		op.Kind, op.Row = DeleteRow, row()
	case p < 60 && len(t.CK) > 0:
		op.Kind, op.Range = DeleteRange, w.clusteringRange(t, true)
	case p < 62:
		op.Kind = DeletePartition
	case p < 63:
		op.Kind, op.PK = Scan, nil
		for i := range t.Regular {
			if r.IntN(4) != 0 {
				op.Cols = append(op.Cols, i)
			}
		}
		if len(t.CK) > 0 && r.IntN(3) == 0 {
			op.Range = w.clusteringRange(t, false) // filtered: scanfilter.go
		}
		op.KeyFilter = w.keyFilter(op)
	default:
		op.Kind = Select
		switch q := r.IntN(10); {
		case q < 3:
			op.Row = row()
		case q < 6 || len(t.CK) == 0:
		default:
			op.Range = w.clusteringRange(t, false)
		}
		if op.Row == nil && r.IntN(3) == 0 {
			op.Limit = 1 + r.IntN(4)
		}
		if op.Row == nil && len(t.CK) > 0 && w.Features.OrderBy && r.IntN(3) == 0 {
			op.Order, op.Desc, op.OrderAll = true, r.IntN(2) == 0, r.IntN(2) == 0
		}
		if !op.Order && op.Limit == 0 && len(t.Partitions) > 1 && r.IntN(4) == 0 {
			w.inKeys(op)
		}
		for i := range t.Regular {
			if r.IntN(4) != 0 {
				op.Cols = append(op.Cols, i)
			}
		}
		op.SelColl = t.Coll != NoColl && r.IntN(4) != 0
		// One read in five at SERIAL or LOCAL_SERIAL (a Paxos prepare, then QUORUM), chosen
		// from the sequence number so that the seeds' histories stay what they were; not
		// across data centers, whose reads stay in their home data center (the model does
		// not follow LOCAL_SERIAL's per-data-center linearizability).
		switch op.Seq % 10 {
		case 2:
			op.CL = client.Serial
		case 7:
			op.CL = client.LocalSerial
		}
		if w.dc != nil && (op.CL == client.Serial || op.CL == client.LocalSerial) {
			op.CL = client.LocalQuorum
		}
	}
	switch {
	case op.Kind.IsWrite() && t.ClientTimestamps:
		op.TS, op.HasTS = lowTimestampStep*(1+r.Int64N(12)), true
	case op.Kind.IsWrite():
		switch q := r.IntN(100); {
		case q < 8:
			op.TS, op.HasTS = lowTimestampStep*(1+r.Int64N(4)), true
		case q < 10:
			op.TS, op.HasTS = w.High+r.Int64N(4), true
			if w.cas[partKey(t, op.PK)] { // see anyOrCAS: a low one instead, the same draws
				op.TS -= w.High - lowTimestampStep
			}
		}
	}
	if (op.Kind == Insert || op.Kind == Update) && !op.HasTS && r.IntN(4) == 0 {
		op.TTL = int32(1 + r.IntN(3))
	}
	if op.Coll != nil && t.Coll == CollList {
		op.Coll.Base = listBase(op.Seq)
	}
	w.anyOrCAS(op)
	if op.HasTS && op.TS >= w.High {
		if w.ahead == nil {
			w.ahead = map[string]bool{}
		}
		w.ahead[partKey(t, op.PK)] = true
	}
	op.Stmt = op.statement()
	return op
}

// anyOrCAS makes some of the writes that go through the Executor (direct) writes at ANY or
// INSERT IF NOT EXISTS, chosen from the sequence number so that the seeds' histories stay what
// they were but for these: a direct write with Seq%6 == 3 goes at ANY; a direct INSERT with
// Seq%6 == 0 (also the first of a BATCH, which a conditional one leaves) is conditional, at
// SERIAL or (Seq%12 == 6) LOCAL_SERIAL, with no timestamp, TTL, static or collection value
// (Paxos assigns its timestamp). Not across data centers, nor on counter tables (which refuse
// both), nor on a partition written with a high explicit timestamp before: a conditional write
// is stamped above every timestamp its read returned (docs/consistency.md, "Mixing LWT and plain
// writes"), which the model does not know; nor does a high explicit timestamp go to a partition
// that had a conditional write before (next gives it a low one), which may run concurrently
// with the conditional write and be read by it.
func (w *Workload) anyOrCAS(op *Op) {
	if w.dc != nil || op.Table.Counter || !op.Kind.IsWrite() || !direct(op) {
		return
	}
	switch {
	case op.Seq%6 == 3:
		op.Any, op.CL = true, client.One
	case op.Kind == Insert && !w.ahead[partKey(op.Table, op.PK)]:
		op.IfNotExists, op.SerialCL = true, client.Serial
		if op.Seq%12 == 6 {
			op.SerialCL = client.LocalSerial
		}
		op.HasTS, op.TS, op.TTL, op.Coll, op.SetStatic, op.Static = false, 0, 0, nil, false, nil
		if w.cas == nil {
			w.cas = map[string]bool{}
		}
		w.cas[partKey(op.Table, op.PK)] = true
	}
}

// nextCounter makes op an operation on a counter table: an UPDATE incrementing one or both
// counters of a row by 0 to 9, or a SELECT of a row, the partition or (with IN) several; never
// with USING TIMESTAMP or TTL, which counters refuse, nor at SERIAL.
func (w *Workload) nextCounter(op *Op, row func() []Val) {
	r, t := w.rng, op.Table
	switch p := r.IntN(100); {
	case p < 55:
		op.Kind, op.Row = Update, row()
		for i := range t.Regular {
			if r.IntN(2) == 0 || i == len(t.Regular)-1 && len(op.Cells) == 0 {
				v := bigintVal(r.Int64N(10))
				op.Cells = append(op.Cells, CellWrite{Col: i, Val: &v})
			}
		}
	case p < 57:
		op.Kind, op.PK = Scan, nil
		for i := range t.Regular {
			op.Cols = append(op.Cols, i)
		}
	default:
		op.Kind = Select
		if len(t.CK) > 0 && r.IntN(2) == 0 {
			op.Row = row()
		}
		if op.Row == nil && len(t.Partitions) > 1 && r.IntN(4) == 0 {
			w.inKeys(op)
		}
		for i := range t.Regular {
			if r.IntN(3) != 0 || i == len(t.Regular)-1 && len(op.Cols) == 0 {
				op.Cols = append(op.Cols, i)
			}
		}
	}
}

// inKeys makes op a SELECT of 2 or 3 of its table's partitions with IN: each partition key
// column takes the values of the chosen partitions, and the read covers their product.
func (w *Workload) inKeys(op *Op) {
	t := op.Table
	n := 2 + w.rng.IntN(2)
	chosen := []([]Val){op.PK}
	together := func(pk []Val) bool { return w.Together == nil || w.Together(t, op.PK, pk) }
	for _, i := range w.rng.Perm(len(t.Partitions)) {
		if len(chosen) == n {
			break
		}
		if pk := t.Partitions[i]; valsKey(pk) != valsKey(op.PK) && together(pk) {
			chosen = append(chosen, pk)
		}
	}
	cols := make([][]Val, len(t.PK))
	for i := range t.PK {
		seen := map[string]bool{}
		for _, pk := range chosen {
			if k := valsKey(pk[i : i+1]); !seen[k] {
				seen[k] = true
				cols[i] = append(cols[i], pk[i])
			}
		}
	}
	keys := [][]Val{nil}
	for _, vs := range cols {
		var next [][]Val
		for _, k := range keys {
			for _, v := range vs {
				next = append(next, append(slices.Clip(k), v))
			}
		}
		keys = next
	}
	for _, k := range keys { // the product of a composite key may name other partitions
		if slices.ContainsFunc(t.Partitions, func(pk []Val) bool { return valsKey(pk) == valsKey(k) }) && !together(k) {
			return
		}
	}
	op.INKeys, op.PK = keys, keys[0]
}

// clusteringRange returns a random range of t's clustering keys: a prefix (for DELETE, never a
// full key, which would be a row) then maybe bounds on the next column.
func (w *Workload) clusteringRange(t *Table, forDelete bool) Range {
	r := w.rng
	n := r.IntN(len(t.CK) + 1)
	if forDelete && n == len(t.CK) {
		n--
	}
	var rg Range
	for i := range n {
		rg.Prefix = append(rg.Prefix, w.pick(t.CK[i].Type))
	}
	if n < len(t.CK) {
		typ := t.CK[n].Type
		if r.IntN(3) != 0 {
			rg.Lower = &Bound{w.pick(typ), r.IntN(2) == 0}
		}
		if r.IntN(3) != 0 {
			rg.Upper = &Bound{w.pick(typ), r.IntN(2) == 0}
		}
		if forDelete && n == 0 && rg.Lower == nil && rg.Upper == nil {
			rg.Lower = &Bound{w.pick(typ), true} // not the whole partition: that is DeletePartition
		}
	}
	return rg
}

// statement renders op as CQL.
func (op *Op) statement() string {
	t := op.Table
	if op.Kind == Scan {
		cols := append(append([]Column{}, t.PK...), t.CK...)
		for _, i := range op.Cols {
			cols = append(cols, t.Regular[i])
		}
		sel := names(cols)
		if t.Static {
			sel += ", " + staticName
		}
		return fmt.Sprintf("SELECT %s FROM %s%s", sel, t.QName(), op.scanFilter())
	}
	var where []string
	for i, c := range t.PK {
		if op.INKeys == nil {
			where = append(where, c.Name+" = "+op.PK[i].Lit)
			continue
		}
		var vs []string
		seen := map[string]bool{}
		for _, pk := range op.INKeys {
			if !seen[pk[i].Lit] {
				seen[pk[i].Lit] = true
				vs = append(vs, pk[i].Lit)
			}
		}
		where = append(where, c.Name+" IN ("+strings.Join(vs, ", ")+")")
	}
	if op.Row != nil {
		for i, c := range t.CK {
			where = append(where, c.Name+" = "+op.Row[i].Lit)
		}
	} else {
		for i, v := range op.Range.Prefix {
			where = append(where, t.CK[i].Name+" = "+v.Lit)
		}
		if n := len(op.Range.Prefix); n < len(t.CK) {
			if b := op.Range.Lower; b != nil {
				where = append(where, t.CK[n].Name+map[bool]string{true: " >= ", false: " > "}[b.Inclusive]+b.Val.Lit)
			}
			if b := op.Range.Upper; b != nil {
				where = append(where, t.CK[n].Name+map[bool]string{true: " <= ", false: " < "}[b.Inclusive]+b.Val.Lit)
			}
		}
	}
	w := strings.Join(where, " AND ")
	using := ""
	if op.HasTS {
		using = fmt.Sprintf(" USING TIMESTAMP %d", op.TS)
	}
	if op.TTL > 0 {
		if using == "" {
			using = fmt.Sprintf(" USING TTL %d", op.TTL)
		} else {
			using += fmt.Sprintf(" AND TTL %d", op.TTL)
		}
	}
	switch op.Kind {
	case Insert:
		cols := append(append([]Column{}, t.PK...), t.CK...)
		vals := append(append([]Val{}, op.PK...), op.Row...)
		var cs, vs []string
		for _, c := range cols {
			cs = append(cs, c.Name)
		}
		for _, v := range vals {
			vs = append(vs, v.Lit)
		}
		for _, cw := range op.Cells {
			cs = append(cs, t.Regular[cw.Col].Name)
			vs = append(vs, litOrNull(cw.Val))
		}
		if op.SetStatic {
			cs = append(cs, staticName)
			vs = append(vs, litOrNull(op.Static))
		}
		if c := op.Coll; c != nil {
			cs = append(cs, collName)
			vs = append(vs, strings.TrimPrefix(c.setClause(t.Coll), collName+" = "))
		}
		ine := ""
		if op.IfNotExists {
			ine = " IF NOT EXISTS"
		}
		return fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)%s%s", t.QName(), strings.Join(cs, ", "), strings.Join(vs, ", "), ine, using)
	case Update:
		var set []string
		for _, cw := range op.Cells {
			name := t.Regular[cw.Col].Name
			if t.Counter {
				set = append(set, name+" = "+name+" + "+cw.Val.Lit)
				continue
			}
			set = append(set, name+" = "+litOrNull(cw.Val))
		}
		if op.SetStatic {
			set = append(set, staticName+" = "+litOrNull(op.Static))
		}
		if op.Coll != nil {
			set = append(set, op.Coll.setClause(t.Coll))
		}
		return fmt.Sprintf("UPDATE %s%s SET %s WHERE %s", t.QName(), using, strings.Join(set, ", "), w)
	case DeleteCells:
		var cs []string
		for _, i := range op.Cols {
			cs = append(cs, t.Regular[i].Name)
		}
		if op.Coll != nil {
			cs = append(cs, op.Coll.deleteItem(t.Coll))
		}
		if op.DelStatic {
			cs = append(cs, staticName)
		}
		return fmt.Sprintf("DELETE %s FROM %s%s WHERE %s", strings.Join(cs, ", "), t.QName(), using, w)
	case DeleteRow, DeleteRange, DeletePartition:
		return fmt.Sprintf("DELETE FROM %s%s WHERE %s", t.QName(), using, w)
	}
	cols := append(append([]Column{}, t.PK...), t.CK...)
	for _, i := range op.Cols {
		cols = append(cols, t.Regular[i])
	}
	sel := names(cols)
	if t.Static {
		sel += ", " + staticName
	}
	if op.SelColl {
		sel += ", " + collName
	}
	s := fmt.Sprintf("SELECT %s FROM %s WHERE %s", sel, t.QName(), w)
	if op.Order {
		// Desc is the first column's direction; the others follow it, reversed from their
		// declared order exactly when the first is.
		reversed := op.Desc != t.CK[0].Desc
		n := 1
		if op.OrderAll {
			n = len(t.CK)
		}
		var by []string
		for _, c := range t.CK[:n] {
			by = append(by, c.Name+map[bool]string{true: " DESC", false: " ASC"}[c.Desc != reversed])
		}
		s += " ORDER BY " + strings.Join(by, ", ")
	}
	if op.Limit > 0 {
		s += fmt.Sprintf(" LIMIT %d", op.Limit)
	}
	return s
}

func litOrNull(v *Val) string {
	if v == nil {
		return "NULL"
	}
	return v.Lit
}

// valsKey is a map key for a tuple of values.
func valsKey(vs []Val) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "%d:%x;", len(v.Enc), v.Enc)
	}
	return b.String()
}
