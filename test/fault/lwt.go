package fault

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/gocql/gocql"
)

// Lightweight transactions' kinds: CAS registers checked for linearizability with porcupine,
// and unique inserts raced by many clients. Their rows live in the shared table shape, one
// register (or one raced key) per row; a value 0 stands for "no row".

// lwtKind marks the kinds of lightweight transactions: their operations may time out under
// contention without anything being wrong, so the availability bound of the QUORUM kinds does
// not hold them (availability leaves them out).
type lwtKind interface{ lightweight() }

// casOp is one operation on register k: a SERIAL read, INSERT ... IF NOT EXISTS (old 0) or
// UPDATE ... IF v = old.
type casOp struct {
	t        table
	k        int64
	read     bool
	old, new int64
	seen     func(k, v int64) // the kind's note of the value observed
}

// casResult is what a casOp observed: the value read (0: no row), or whether the CAS applied
// and, when it did not, the current value the answer carried.
type casResult struct {
	applied bool
	value   int64
}

func (o casOp) IsRead() bool { return o.read }

func (o casOp) String() string {
	switch {
	case o.read:
		return "serial read " + o.t.row(o.k)
	case o.old == 0:
		return fmt.Sprintf("insert %s v=%d if not exists", o.t.row(o.k), o.new)
	}
	return fmt.Sprintf("update %s v=%d if v=%d", o.t.row(o.k), o.new, o.old)
}

func (o casOp) Apply(ctx context.Context, s *gocql.Session) (any, error) {
	p := int(o.k % parts)
	if o.read {
		var v int64
		err := s.Query(fmt.Sprintf("SELECT v FROM %s.%s WHERE p = ? AND k = ?", o.t.ks, o.t.name), p, o.k).
			Consistency(gocql.Serial).WithContext(ctx).Scan(&v)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			v, err = 0, nil
		case err != nil:
			return nil, err
		}
		o.note(v)
		return casResult{value: v}, nil
	}
	var q *gocql.Query
	if o.old == 0 {
		q = s.Query(fmt.Sprintf("INSERT INTO %s.%s (p, k, v) VALUES (?, ?, ?) IF NOT EXISTS", o.t.ks, o.t.name), p, o.k, o.new)
	} else {
		q = s.Query(fmt.Sprintf("UPDATE %s.%s SET v = ? WHERE p = ? AND k = ? IF v = ?", o.t.ks, o.t.name), o.new, p, o.k, o.old)
	}
	cur := map[string]any{}
	applied, err := q.Consistency(gocql.Quorum).SerialConsistency(gocql.Serial).WithContext(ctx).MapScanCAS(cur)
	if err != nil {
		return nil, err
	}
	r := casResult{applied: applied, value: o.new}
	if !applied {
		r.value, _ = cur["v"].(int64) // absent: no row
	}
	o.note(r.value)
	return r, nil
}

func (o casOp) note(v int64) {
	if o.seen != nil {
		o.seen(o.k, v)
	}
}

// CASRegisters is the linearizable register kind: a few rows, each read at SERIAL and changed
// by CAS (INSERT IF NOT EXISTS while a client believes the row absent, UPDATE IF v = what it
// last saw) to a value never written before. Check gives the histories, one per register, to
// porcupine: a history it finds not linearizable counts its register as stale.
type CASRegisters struct {
	t    table
	keys int
	next atomic.Int64
	mu   sync.Mutex
	last map[int64]int64 // register → the value last observed
	// CheckTimeout bounds porcupine's search per Check (0: a minute); a search cut short is
	// logged in the verdict's examples, not counted as a finding.
	CheckTimeout time.Duration
}

// NewCASRegisters returns the kind over table name of keyspace ks with keys registers.
func NewCASRegisters(ks, name string, keys int) *CASRegisters {
	return &CASRegisters{t: table{ks: ks, name: name, cl: gocql.Serial}, keys: keys, last: map[int64]int64{}}
}

func (k *CASRegisters) lightweight()     {}
func (k *CASRegisters) Name() string     { return "lwt-registers" }
func (k *CASRegisters) Schema() []string { return []string{k.t.schema()} }

func (k *CASRegisters) seen(key, v int64) {
	k.mu.Lock()
	k.last[key] = v
	k.mu.Unlock()
}

func (k *CASRegisters) Generate(rng *rand.Rand) Op {
	key := rng.Int64N(int64(k.keys))
	if rng.IntN(3) == 0 {
		return casOp{t: k.t, k: key, read: true, seen: k.seen}
	}
	k.mu.Lock()
	old := k.last[key]
	k.mu.Unlock()
	return casOp{t: k.t, k: key, old: old, new: k.next.Add(1), seen: k.seen}
}

// ReadBack reads every register at SERIAL, whatever cl: a plain read may miss a proposal
// accepted but not yet committed, which a later SERIAL read completes.
func (k *CASRegisters) ReadBack(ctx context.Context, s *gocql.Session, _ gocql.Consistency) (any, error) {
	out := map[int64]int64{}
	for key := range int64(k.keys) {
		r, err := casOp{t: k.t, k: key, read: true}.Apply(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("serial read back of %s: %w", k.t.row(key), err)
		}
		out[key] = r.(casResult).value
	}
	return out, nil
}

// regIn and regOut are porcupine's input and output of a register operation.
type regIn struct {
	key      int64
	read     bool
	old, new int64
}

type regOut struct {
	applied, unknown bool
	value            int64
}

// casModel is a register per key, starting absent (0).
var casModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int64][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(regIn).key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]int64, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(int64), input.(regIn), output.(regOut)
		switch {
		case in.read:
			return out.value == st, st
		case out.unknown: // returns at the end of time: it took effect where it applies, or never
			if st == in.old {
				return true, in.new
			}
			return true, st
		case out.applied:
			return st == in.old, in.new
		}
		return st != in.old && out.value == st, st
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regIn), output.(regOut)
		if in.read {
			return fmt.Sprintf("r%d serial read -> %d", in.key, out.value)
		}
		return fmt.Sprintf("r%d cas(%d->%d) -> applied=%v current=%d unknown=%v", in.key, in.old, in.new, out.applied, out.value, out.unknown)
	},
}

func (k *CASRegisters) Check(events []Event, finals []Final) Verdict {
	f := newFindings()
	var ops []porcupine.Operation
	writes, reads, applied, unknown := 0, 0, 0, 0
	for _, ev := range events {
		o := ev.Op.(casOp)
		in := regIn{key: o.k, read: o.read, old: o.old, new: o.new}
		op := porcupine.Operation{ClientId: ev.Node, Input: in, Call: int64(ev.Start), Return: int64(ev.End)}
		switch {
		case !o.read:
			writes++
			if ev.Err != nil { // a CAS that failed may or may not have taken effect
				op.Output, op.Return = regOut{unknown: true}, math.MaxInt64
				unknown++
				break
			}
			r := ev.Result.(casResult)
			if r.applied {
				applied++
			}
			op.Output = regOut{applied: r.applied, value: r.value}
		case ev.Err != nil:
			continue // a read that failed observed nothing
		default:
			reads++
			op.Output = regOut{value: ev.Result.(casResult).value}
		}
		ops = append(ops, op)
	}
	for _, fin := range finals {
		for key, v := range fin.Rows.(map[int64]int64) {
			ops = append(ops, porcupine.Operation{ClientId: -1 - fin.Node, Input: regIn{key: key, read: true},
				Output: regOut{value: v}, Call: int64(fin.At), Return: int64(fin.End)})
		}
	}
	timeout := k.CheckTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	res, _ := porcupine.CheckOperationsVerbose(casModel, ops, timeout)
	switch res {
	case porcupine.Illegal:
		bad := map[int64]bool{}
		for _, op := range ops {
			bad[op.Input.(regIn).key] = true
		}
		// Which register failed: check them one by one.
		for key := range bad {
			var one []porcupine.Operation
			for _, op := range ops {
				if op.Input.(regIn).key == key {
					one = append(one, op)
				}
			}
			if r := porcupine.CheckOperations(casModel, one); !r {
				f.add(f.stale, k.t.row(key), "porcupine: the history of %d operations is not linearizable", len(one))
			}
		}
	case porcupine.Unknown:
		f.examples = append(f.examples, fmt.Sprintf("porcupine gave up after %v: linearizability unknown", timeout))
	}
	v := f.verdict(k.Name(), writes, reads)
	v.Examples = append(v.Examples, fmt.Sprintf("porcupine: %s over %d operations (%d CAS applied, %d failed and may have applied)", res, len(ops), applied, unknown))
	return v
}

// Unique is the uniqueness kind: each key is raced by Racers attempts of INSERT ... IF NOT
// EXISTS with distinct values, generated one after the other (so that they run at once on the
// workload's workers) through random coordinators. At most one attempt may be applied; an
// attempt not applied must see an attempt's value; and once every attempt has returned, a
// SERIAL read shows exactly one attempt's row: the applied one, or, when none was, one that
// failed (timed out), or no row when every attempt failed.
type Unique struct {
	t      table
	racers int64
	next   atomic.Int64
}

// NewUnique returns the kind over table name of keyspace ks, racers attempts per key.
func NewUnique(ks, name string, racers int) *Unique {
	return &Unique{t: table{ks: ks, name: name, cl: gocql.Serial}, racers: int64(racers)}
}

func (k *Unique) lightweight()     {}
func (k *Unique) Name() string     { return "lwt-unique" }
func (k *Unique) Schema() []string { return []string{k.t.schema()} }

// Generate returns attempt n: of key n / racers, with value n + 1.
func (k *Unique) Generate(*rand.Rand) Op {
	n := k.next.Add(1) - 1
	return casOp{t: k.t, k: n / k.racers, new: n + 1}
}

// ReadBack reads every key raced so far at SERIAL (cl QUORUM) or at ALL.
func (k *Unique) ReadBack(ctx context.Context, s *gocql.Session, cl gocql.Consistency) (any, error) {
	if cl != gocql.Quorum {
		return readBack(ctx, k.t, s, cl)
	}
	out := map[int64]int64{}
	for key := range k.next.Load() / k.racers {
		r, err := casOp{t: k.t, k: key, read: true}.Apply(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("serial read back of %s: %w", k.t.row(key), err)
		}
		if v := r.(casResult).value; v != 0 {
			out[key] = v
		}
	}
	return out, nil
}

func (k *Unique) Check(events []Event, finals []Final) Verdict {
	f := newFindings()
	type race struct {
		applied  []int64        // values of the attempts applied
		failed   map[int64]bool // values of the attempts that failed
		seen     map[int64]bool // values the attempts not applied saw
		values   map[int64]bool // every attempt's value
		attempts int            // attempts recorded
		end      time.Duration  // when the last attempt returned
	}
	races := map[int64]*race{}
	for _, ev := range events {
		o := ev.Op.(casOp)
		r := races[o.k]
		if r == nil {
			r = &race{failed: map[int64]bool{}, seen: map[int64]bool{}, values: map[int64]bool{}}
			races[o.k] = r
		}
		r.attempts++
		r.values[o.new] = true
		r.end = max(r.end, ev.End)
		switch {
		case ev.Err != nil:
			r.failed[o.new] = true
		case ev.Result.(casResult).applied:
			r.applied = append(r.applied, o.new)
		default:
			r.seen[ev.Result.(casResult).value] = true
		}
	}
	writes, won, failed := 0, 0, 0
	for key, r := range races {
		writes += r.attempts
		won += len(r.applied)
		failed += len(r.failed)
		row := k.t.row(key)
		if len(r.applied) > 1 {
			f.add(f.unexpected, row, "%d of %d attempts applied: %v", len(r.applied), r.attempts, r.applied)
		}
		for v := range r.seen {
			if len(r.applied) == 1 && v != r.applied[0] || len(r.applied) == 0 && !r.failed[v] {
				f.add(f.unexpected, row, "an attempt not applied saw v=%d (applied %v)", v, r.applied)
			}
		}
	}
	reads := 0
	for _, fin := range finals {
		rows := fin.Rows.(map[int64]int64)
		for key, r := range races {
			if r.attempts < int(k.racers) || r.end >= fin.At {
				continue // the race had not ended when the read-back began
			}
			reads++
			v, present := rows[key]
			row := k.t.row(key)
			switch {
			case len(r.applied) == 1 && (!present || v != r.applied[0]):
				f.add(f.lost, row, "the read-back at %v through n%d shows %d (present %v); attempt v=%d was applied", fin.CL, fin.Node+1, v, present, r.applied[0])
			case len(r.applied) == 0 && present && !r.failed[v]:
				f.add(f.unexpected, row, "the read-back at %v through n%d shows v=%d: no attempt was applied, and that one did not fail", fin.CL, fin.Node+1, v)
			case len(r.applied) == 0 && !present && len(r.seen) > 0 && fin.CL == gocql.Quorum:
				f.add(f.lost, row, "the serial read-back through n%d shows no row, though attempts saw %v", fin.Node+1, keysOf(r.seen))
			}
		}
	}
	v := f.verdict(k.Name(), writes, reads)
	v.Examples = append(v.Examples, fmt.Sprintf("%d keys raced: %d attempts applied, %d failed; %d read-backs of ended races judged", len(races), won, failed, reads))
	return v
}

func keysOf(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
