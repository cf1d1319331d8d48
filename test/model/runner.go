package model

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/partitioner"
)

// Target is the cluster a Runner sends operations to.
type Target interface {
	// Client returns a client connected to node i, or nil while the node is down.
	Client(i int) *client.Client
}

// Stats counts what a Runner did.
type Stats struct {
	Ops, Writes, Acked, WritesFailed, NotSent int
	Reads, ReadsFailed                        int
	// ReadsChecked counts successful reads compared with the model; ReadsDetermined those for
	// which the model allowed exactly one answer (every row and cell certain).
	ReadsChecked, ReadsDetermined int
	// INChecked counts the reads checked clean that read several partitions with IN.
	INChecked int
	// Prepared counts operations sent through an ExecutorTarget's Executor, prepared with bound
	// values (reads paged).
	Prepared int
	// Batches counts BATCHes of two writes (each also counted in Writes and Prepared).
	Batches int
	// Errors counts failed operations by kind of error: unavailable, timeout, rate limited or
	// other.
	Errors map[string]int
	// ErrorSamples holds the first error of each kind.
	ErrorSamples map[string]string
	// Features counts the operations by feature (collections, static columns, counters, writes at
	// ANY, INSERT IF NOT EXISTS, SERIAL reads, index operations): writes by what they do ("list
	// append", "counter increment"), reads by what they checked ("list read").
	Features map[string]int
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) {
	s.Ops += o.Ops
	s.Writes += o.Writes
	s.Acked += o.Acked
	s.WritesFailed += o.WritesFailed
	s.NotSent += o.NotSent
	s.Reads += o.Reads
	s.ReadsFailed += o.ReadsFailed
	s.ReadsChecked += o.ReadsChecked
	s.INChecked += o.INChecked
	s.ReadsDetermined += o.ReadsDetermined
	s.Prepared += o.Prepared
	s.Batches += o.Batches
	for k, n := range o.Errors {
		if s.Errors == nil {
			s.Errors = map[string]int{}
		}
		s.Errors[k] += n
	}
	for k, n := range o.Features {
		if s.Features == nil {
			s.Features = map[string]int{}
		}
		s.Features[k] += n
	}
	for k, e := range o.ErrorSamples {
		if s.ErrorSamples == nil {
			s.ErrorSamples = map[string]string{}
		}
		if _, ok := s.ErrorSamples[k]; !ok {
			s.ErrorSamples[k] = e
		}
	}
}

// errorKind names the kind of a failed operation's error, for Stats.Errors: the gRPC client's
// errors and the Executor's (operations sent to it directly) alike.
func errorKind(err error) string {
	var (
		un  *client.UnavailableError
		to  *client.TimeoutError
		rl  *client.RateLimitError
		dun *coordinator.UnavailableError
		dto *coordinator.TimeoutError
		drl *coordinator.RateLimitError
	)
	switch {
	case errors.As(err, &un), errors.As(err, &dun):
		return "unavailable"
	case errors.As(err, &to), errors.As(err, &dto):
		return "timeout"
	case errors.As(err, &rl), errors.As(err, &drl):
		return "rate limited"
	}
	return "other"
}

func (s Stats) String() string {
	var errs []string
	for _, k := range slices.Sorted(maps.Keys(s.Errors)) {
		errs = append(errs, fmt.Sprintf("%s %d", k, s.Errors[k]))
	}
	var feats []string
	for _, k := range slices.Sorted(maps.Keys(s.Features)) {
		feats = append(feats, fmt.Sprintf("%s %d", k, s.Features[k]))
	}
	return fmt.Sprintf("%d operations (%d writes: %d acknowledged, %d failed; %d reads: %d checked clean, %d of them fully determined by the model, %d of several partitions (IN), %d failed; %d not sent, their coordinator down; %d prepared with bound values, reads paged; %d batches of two writes; failures: %s; by feature (collections, static columns, counters, ANY, IF NOT EXISTS, SERIAL, indexes): %s)",
		s.Ops, s.Writes, s.Acked, s.WritesFailed, s.Reads, s.ReadsChecked, s.ReadsDetermined, s.INChecked, s.ReadsFailed, s.NotSent, s.Prepared, s.Batches, strings.Join(errs, ", "), strings.Join(feats, ", "))
}

// Runner runs a workload's operations one at a time, records writes in the model and checks
// every successful read against it.
type Runner struct {
	W     *Workload
	M     *Model
	Stats Stats
	// OpTimeout bounds one operation on the client side. Default 30 s, well above the server's
	// own timeouts, so that a failure is normally the server's answer.
	OpTimeout time.Duration
	// Replay is the command that replays the history, for failure messages. Default: the seed
	// flag alone.
	Replay string
	// ModelOf returns the model that holds the history of partition pk of t, for a scan, which
	// reads every partition; nil means M (Pool sets it to the partition's worker's model).
	ModelOf func(t *Table, pk []Val) *Model

	lastHi int64
}

// NewRunner returns a runner of w with an empty model.
func NewRunner(w *Workload) *Runner { return &Runner{W: w, M: NewModel(w.High)} }

// Setup creates the workload's keyspaces and tables through c, one statement at a time.
func (r *Runner) Setup(ctx context.Context, c *client.Client) error {
	stmts := append(r.W.Keyspaces(), r.W.Types()...)
	for _, t := range r.W.Tables {
		stmts = append(stmts, t.CreateStatement())
	}
	for _, s := range stmts {
		if _, err := c.Execute(ctx, client.All, s); err != nil {
			return fmt.Errorf("model: seed %d: setup %s: %w", r.W.Seed, s, err)
		}
	}
	return nil
}

// Step runs the workload's next operation.
func (r *Runner) Step(ctx context.Context, target Target) error {
	return r.Run(ctx, r.W.Next(), target)
}

// Run runs op through its coordinator, records it and, for a read, checks it. The error is a
// *Violation when the server's answer breaks the model, and any other error when the run cannot
// go on (a statement the server calls invalid, the clock stepping back).
//
// A partner, when given, is another write of the same worker to another partition: when op goes
// through the Executor (direct) and batched says so, the two go out as one BATCH; otherwise the
// partner runs on its own after op.
func (r *Runner) Run(ctx context.Context, op *Op, target Target, partner ...*Op) error {
	err := r.run(ctx, op, target, &partner)
	if err != nil {
		return err
	}
	for _, o := range partner { // not batched after all: each on its own, in order
		if err := r.run(ctx, o, target, nil); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) run(ctx context.Context, op *Op, target Target, partnerp *[]*Op) error {
	var partner []*Op
	if partnerp != nil {
		partner = *partnerp
	}
	r.Stats.Ops++
	c := target.Client(op.Node)
	if op.Kind.IsWrite() {
		r.Stats.Writes++
	} else {
		r.Stats.Reads++
	}
	if c == nil {
		r.Stats.NotSent++
		return nil
	}
	timeout := r.OpTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	octx, cancel := context.WithTimeout(ctx, timeout)
	op.Outcome.Sent = true
	op.Outcome.Lo = time.Now().UnixMicro()
	var rows [][]any
	var err error
	et, isDirect := target.(ExecutorTarget)
	var e *shell.Executor
	if isDirect && direct(op) {
		e = et.Executor(op.Node)
	}
	if (op.Any || op.IfNotExists) && e == nil {
		// The gRPC API has no ANY, and the model reads [applied] through the Executor only:
		// the write runs plain, at its CL.
		op.Any, op.IfNotExists = false, false
		op.Stmt = op.statement()
	}
	if op.Any {
		if at, ok := target.(ReplicasTarget); ok && at.ReplicasDown(op) {
			op.hintOnly = true
		}
	}
	if op.SelColl && op.Table.Coll == CollUDT && e == nil {
		// The gRPC API refuses user type values: only a read through the Executor selects them.
		op.SelColl = false
		op.Stmt = op.statement()
	}
	for _, f := range op.features() {
		if r.Stats.Features == nil {
			r.Stats.Features = map[string]int{}
		}
		r.Stats.Features[f]++
	}
	var partners []*Op // the other writes of op's BATCH
	if e != nil {
		r.Stats.Prepared++
		if _, logged := batched(op); len(partner) > 0 && op.Kind.IsWrite() {
			partners = partner
			*partnerp = nil
			for _, o := range partners {
				o.Node, o.CL, o.Any = op.Node, op.CL, op.Any
			}
			r.Stats.Ops += len(partners)
			r.Stats.Writes += len(partners)
			r.Stats.Prepared += len(partners)
			r.Stats.Batches++
			err = runBatch(octx, e, append([]*Op{op}, partners...), logged)
		} else {
			var short int
			rows, short, err = runPrepared(octx, e, op)
			for range short {
				r.count(shortPagesFeature)
			}
		}
	} else {
		var res *client.Result
		if res, err = c.Execute(octx, op.CL, op.Stmt); err == nil {
			rows = res.Rows
		}
	}
	op.Outcome.Hi = time.Now().UnixMicro()
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	op.Outcome.Err = err
	if err != nil {
		if r.Stats.Errors == nil {
			r.Stats.Errors = map[string]int{}
		}
		k := errorKind(err)
		r.Stats.Errors[k]++
		if r.Stats.ErrorSamples == nil {
			r.Stats.ErrorSamples = map[string]string{}
		}
		if _, ok := r.Stats.ErrorSamples[k]; !ok {
			r.Stats.ErrorSamples[k] = fmt.Sprintf("#%d %s: %v", op.Seq, op.Stmt, err)
		}
	}
	// Lo equal to the last Hi is fine: a server timestamp lies strictly inside its operation's
	// interval, which spans at least a network round trip.
	if op.Outcome.Lo < r.lastHi {
		return fmt.Errorf("model: seed %d: the wall clock stepped back (operation #%d started at %d µs, the one before ended at %d µs); the model orders server timestamps by the wall clock", r.W.Seed, op.Seq, op.Outcome.Lo, r.lastHi)
	}
	r.lastHi = op.Outcome.Hi
	if op.Outcome.Hi >= r.W.High {
		return fmt.Errorf("model: seed %d: operation #%d ended at %d µs, past the high explicit timestamps (%d µs): a history must end within %v of its start", r.W.Seed, op.Seq, op.Outcome.Hi, r.W.High, highAhead)
	}
	var inv *client.InvalidError
	var dinv *coordinator.InvalidError
	if errors.As(err, &inv) || errors.As(err, &dinv) {
		return fmt.Errorf("model: seed %d: operation #%d %s: the server calls it invalid: %w", r.W.Seed, op.Seq, op.Stmt, err)
	}
	if op.Kind.IsWrite() {
		if op.IfNotExists && err == nil {
			if len(rows) == 0 || len(rows[0]) == 0 {
				return fmt.Errorf("model: seed %d: operation #%d %s: no [applied] column in its answer", r.W.Seed, op.Seq, op.Stmt)
			}
			ok, isBool := rows[0][0].(bool)
			if !isBool {
				return fmt.Errorf("model: seed %d: operation #%d %s: [applied] is %T %v, want a boolean", r.W.Seed, op.Seq, op.Stmt, rows[0][0], rows[0][0])
			}
			op.Outcome.NotApplied = !ok
			r.count(map[bool]string{true: "INSERT IF NOT EXISTS applied", false: "INSERT IF NOT EXISTS not applied"}[ok])
			if problems := r.M.CheckCAS(op); len(problems) > 0 {
				return r.violation(op, problems, r.M.History(op.Table, op.PK))
			}
		}
		if op.Any && err == nil {
			r.count("ANY write acknowledged")
			if op.hintOnly {
				r.count("ANY write acknowledged with every replica down (hints only)")
			}
		}
		for _, w := range append([]*Op{op}, partners...) {
			if w != op {
				w.Outcome = op.Outcome // one request: sent, answered and failed together
			}
			if err == nil {
				r.Stats.Acked++
			} else {
				r.Stats.WritesFailed++
			}
			r.M.Record(w)
		}
		return nil
	}
	if err != nil {
		r.Stats.ReadsFailed++
		return nil
	}
	op.Outcome.Rows = rows
	var problems []string
	var determined bool
	var history []*Op
	if op.Kind == Scan {
		problems, determined, history = r.checkScan(op)
	} else {
		problems, determined = r.M.Check(op)
		history = r.M.History(op.Table, op.PK)
	}
	if len(problems) > 0 {
		return r.violation(op, problems, history)
	}
	if op.CL == client.Serial || op.CL == client.LocalSerial {
		r.count(op.CL.String() + " read checked")
	}
	r.Stats.ReadsChecked++
	if op.INKeys != nil {
		r.Stats.INChecked++
	}
	if determined {
		r.Stats.ReadsDetermined++
	}
	return nil
}

// violation is the Violation of op, whose answer the model does not allow.
func (r *Runner) violation(op *Op, problems []string, history []*Op) *Violation {
	replay := r.Replay
	if replay == "" {
		replay = fmt.Sprintf("-model.seed %d", r.W.Seed)
	}
	return &Violation{Seed: r.W.Seed, High: r.W.High, Read: op, Problems: problems, History: history, Replay: replay}
}

// shortPagesFeature counts, in Stats.Features, the pages of scans that ended short with a
// paging state (shell.Options.ScanPageTime) and were resumed from it.
const shortPagesFeature = "scan short page"

// count adds one to Stats.Features[what].
func (r *Runner) count(what string) {
	if r.Stats.Features == nil {
		r.Stats.Features = map[string]int{}
	}
	r.Stats.Features[what]++
}

// ReplicasTarget is a Target that can tell whether every replica of op's partition is down as
// its coordinator sees it, so that a write at ANY can only be hinted (counted in Stats.Features).
type ReplicasTarget interface {
	ReplicasDown(op *Op) bool
}

// FinalReads returns one SELECT of every column of every partition of every table through
// every node at cl: together, every write the model knows is read back through every node.
func (w *Workload) FinalReads(cl client.Consistency) []*Op {
	var out []*Op
	for _, t := range w.Tables {
		for _, pk := range t.Partitions {
			for n := range w.Nodes {
				op := &Op{Seq: w.seq, Kind: Select, Table: t, PK: pk, Node: n, CL: cl}
				w.seq++
				for i := range t.Regular {
					op.Cols = append(op.Cols, i)
				}
				op.SelColl = t.Coll != NoColl
				op.Stmt = op.statement()
				out = append(out, op)
			}
		}
	}
	return out
}

// FinalScans returns a scan of every column of every table through every node at cl.
func (w *Workload) FinalScans(cl client.Consistency) []*Op {
	var out []*Op
	for _, t := range w.Tables {
		for n := range w.Nodes {
			op := &Op{Seq: w.seq, Kind: Scan, Table: t, Node: n, CL: cl}
			w.seq++
			for i := range t.Regular {
				op.Cols = append(op.Cols, i)
			}
			op.Stmt = op.statement()
			out = append(out, op)
		}
	}
	return out
}

// checkScan checks a scan's rows: partitions in token order, each partition's rows together,
// and each partition's rows as the model allows a SELECT of the whole partition at the scan's
// time and consistency level (a partition the scan does not return must be allowed to be
// empty). It returns the problems, whether every partition's result was determined, and the
// history of the first partition with a problem.
func (r *Runner) checkScan(op *Op) (problems []string, determined bool, history []*Op) {
	t := op.Table
	npk := len(t.PK)
	byKey := map[string][][]any{}
	var order []string
	var prevToken int64
	for ri, row := range op.Outcome.Rows {
		if len(row) < npk {
			return []string{fmt.Sprintf("row %d has %d values, want at least %d", ri, len(row), npk)}, false, nil
		}
		enc := make([][]byte, npk)
		for i := range npk {
			var err error
			if enc[i], err = encodeResult(t.PK[i].Type, row[i]); err != nil {
				return []string{fmt.Sprintf("row %d partition key column %s: %v", ri, t.PK[i].Name, err)}, false, nil
			}
		}
		key := fmt.Sprintf("%x", enc)
		if _, seen := byKey[key]; !seen {
			token := partitioner.Token(partitioner.AppendKey(nil, enc))
			if len(order) > 0 && token < prevToken {
				problems = append(problems, fmt.Sprintf("row %d: partition %v (token %d) comes after token %d: out of token order", ri, row[:npk], token, prevToken))
			}
			prevToken = token
			order = append(order, key)
		} else if order[len(order)-1] != key {
			problems = append(problems, fmt.Sprintf("row %d: partition %v returned in two runs", ri, row[:npk]))
		}
		byKey[key] = append(byKey[key], row)
	}
	known := map[string]bool{}
	determined = true
	for _, pk := range t.Partitions {
		enc := make([][]byte, len(pk))
		for i, v := range pk {
			enc[i] = v.Enc
		}
		key := fmt.Sprintf("%x", enc)
		known[key] = true
		m := r.M
		if r.ModelOf != nil {
			m = r.ModelOf(t, pk)
		}
		if op.KeyFilter != nil && !op.KeyFilter.match(t, pk) {
			if rows := byKey[key]; len(rows) > 0 {
				problems = append(problems, fmt.Sprintf("partition %s: %d rows returned, though the scan's restriction of %s excludes it", valsKey(pk), len(rows), t.PK[op.KeyFilter.Col].Name))
			}
			continue
		}
		sub := *op
		sub.Kind, sub.PK = Select, pk
		sub.Outcome.Rows = byKey[key]
		ps, det := m.Check(&sub)
		determined = determined && det
		for _, p := range ps {
			problems = append(problems, fmt.Sprintf("partition %s: %s", valsKey(pk), p))
		}
		if len(ps) > 0 && history == nil {
			history = m.History(t, pk)
		}
	}
	for _, key := range order {
		if !known[key] {
			problems = append(problems, fmt.Sprintf("partition %v: a partition nobody wrote", byKey[key][0][:npk]))
		}
	}
	return problems, determined, history
}

// Violation is a read whose answer the model does not allow.
type Violation struct {
	Seed uint64
	// High is the workload's Workload.High, which the history's explicit timestamps use.
	High     int64
	Read     *Op
	Problems []string
	// History is every write of the read's partition the model knows, in order.
	History []*Op
	// Replay is the command that replays the history.
	Replay string
}

func (v *Violation) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "model: seed %d: operation #%d through node %d at %v:\n  %s\n  returned %d rows: %v\n", v.Seed, v.Read.Seq, v.Read.Node+1, v.Read.CL, v.Read.Stmt, len(v.Read.Outcome.Rows), v.Read.Outcome.Rows)
	for _, p := range v.Problems {
		fmt.Fprintf(&b, "  - %s\n", p)
	}
	fmt.Fprintf(&b, "the partition's writes (RF %d), in order:\n", v.Read.Table.RF)
	for _, op := range v.History {
		fmt.Fprintf(&b, "  %s\n", op.Describe())
	}
	fmt.Fprintf(&b, "replay with: %s", v.Replay)
	return b.String()
}

// Describe formats op and its outcome on one line.
func (op *Op) Describe() string {
	o := op.Outcome
	var out string
	switch {
	case !o.Sent:
		out = "not sent (coordinator down)"
	case o.Err != nil:
		out = "FAILED: " + o.Err.Error()
	case op.Kind == Select || op.Kind == Scan:
		out = fmt.Sprintf("%d rows %v", len(o.Rows), o.Rows)
	default:
		out = "ok"
	}
	ts := ""
	if op.Kind.IsWrite() {
		ts = fmt.Sprintf(" ts %d", op.timestamp())
	}
	cl := op.CL.String()
	switch {
	case op.Any:
		cl = "ANY"
	case op.IfNotExists:
		cl += "/" + op.SerialCL.String()
	}
	if op.Outcome.NotApplied {
		out = "not applied"
	}
	return fmt.Sprintf("#%d node %d %s%s: %s → %s", op.Seq, op.Node+1, cl, ts, op.Stmt, out)
}

// features names what op does to collections, static columns and counters, for Stats.Features.
func (op *Op) features() []string {
	t := op.Table
	var out []string
	if !op.Kind.IsWrite() {
		switch {
		case t.Counter:
			out = append(out, "counter read")
		case op.Kind == Scan && op.KeyFilter != nil:
			out = append(out, "scan filtered on the partition key")
		case op.Kind == Scan:
		case op.SelColl:
			out = append(out, []string{CollSet: "set read", CollMap: "map read", CollList: "list read", CollUDT: "user type read"}[t.Coll])
		}
		if t.Static {
			out = append(out, "static read")
		}
		return out
	}
	if t.Counter {
		return []string{"counter increment"}
	}
	if c := op.Coll; c != nil {
		kind := []string{CollSet: "set", CollMap: "map", CollList: "list", CollUDT: "user type"}[t.Coll]
		what := []string{CollAssign: "assignment", CollAdd: "addition", CollRemove: "removal", CollPut: "element write", CollDelete: "deletion", CollPrepend: "prepend"}[c.Kind]
		switch {
		case t.Coll == CollList && c.Kind == CollAdd:
			what = "append"
		case t.Coll == CollUDT && c.Kind == CollPut:
			what = "field write"
		case c.Kind == CollDelete && c.Keys != nil:
			what = "element deletion"
		}
		out = append(out, kind+" "+what)
	}
	if op.SetStatic {
		out = append(out, "static write")
	}
	if op.DelStatic {
		out = append(out, "static deletion")
	}
	return out
}
