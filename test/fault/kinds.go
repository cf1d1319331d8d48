package fault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"
)

// The kinds below share one table shape, (p int, k bigint, v bigint, PRIMARY KEY (p, k)):
// row k lives in partition k mod parts, so a read-back is a few partition reads however many
// rows were written, and every write carries USING TIMESTAMP from a shared Timestamps.

// parts is the number of partitions each table's rows are spread over.
const parts = 8

// table is one table of a kind and how its operations reach it.
type table struct {
	ks, name string
	cl       gocql.Consistency // every operation's consistency level
}

func (t table) schema() string {
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s (p int, k bigint, v bigint, PRIMARY KEY (p, k))", t.ks, t.name)
}

func (t table) row(k int64) string { return fmt.Sprintf("%s[%d]", t.name, k) }

// kindName is the kind's name in reports: its family, and the consistency level when it is not
// QUORUM.
func kindName(family string, cl gocql.Consistency) string {
	if cl == gocql.Quorum {
		return family
	}
	return family + "@" + cl.String()
}

// writeOp writes row k: an insert of v, an update of v, or a delete; always at timestamp ts.
type writeOp struct {
	t      table
	what   string // "insert", "update" or "delete"
	k, v   int64
	ts     int64
	onDone func(error) // the kind's bookkeeping, if any
}

func (o writeOp) IsRead() bool { return false }

func (o writeOp) String() string {
	return fmt.Sprintf("%s %s v=%d ts=%d", o.what, o.t.row(o.k), o.v, o.ts)
}

func (o writeOp) Apply(ctx context.Context, s *gocql.Session) (any, error) {
	var stmt string
	var args []any
	p := int(o.k % parts)
	switch o.what {
	case "insert":
		stmt = fmt.Sprintf("INSERT INTO %s.%s (p, k, v) VALUES (?, ?, ?) USING TIMESTAMP ?", o.t.ks, o.t.name)
		args = []any{p, o.k, o.v, o.ts}
	case "update":
		stmt = fmt.Sprintf("UPDATE %s.%s USING TIMESTAMP ? SET v = ? WHERE p = ? AND k = ?", o.t.ks, o.t.name)
		args = []any{o.ts, o.v, p, o.k}
	case "delete":
		stmt = fmt.Sprintf("DELETE FROM %s.%s USING TIMESTAMP ? WHERE p = ? AND k = ?", o.t.ks, o.t.name)
		args = []any{o.ts, p, o.k}
	default:
		return nil, fmt.Errorf("fault: unknown write %q", o.what)
	}
	err := s.Query(stmt, args...).Consistency(o.t.cl).WithContext(ctx).Exec()
	if o.onDone != nil {
		o.onDone(err)
	}
	return nil, err
}

// readOp reads row k; its result is a rowValue.
type readOp struct {
	t table
	k int64
}

// rowValue is what a read of one row returned.
type rowValue struct {
	Found bool
	V     int64
}

func (o readOp) IsRead() bool   { return true }
func (o readOp) String() string { return "read " + o.t.row(o.k) }

func (o readOp) Apply(ctx context.Context, s *gocql.Session) (any, error) {
	var v int64
	err := s.Query(fmt.Sprintf("SELECT v FROM %s.%s WHERE p = ? AND k = ?", o.t.ks, o.t.name), int(o.k%parts), o.k).
		Consistency(o.t.cl).WithContext(ctx).Scan(&v)
	switch {
	case errors.Is(err, gocql.ErrNotFound):
		return rowValue{}, nil
	case err != nil:
		return nil, err
	}
	return rowValue{Found: true, V: v}, nil
}

// readBack reads every row of t through s at cl: row key → value.
func readBack(ctx context.Context, t table, s *gocql.Session, cl gocql.Consistency) (map[int64]int64, error) {
	rows := map[int64]int64{}
	for p := range parts {
		iter := s.Query(fmt.Sprintf("SELECT k, v FROM %s.%s WHERE p = ?", t.ks, t.name), p).
			Consistency(cl).WithContext(ctx).PageSize(1000).Iter()
		var k, v int64
		for iter.Scan(&k, &v) {
			rows[k] = v
		}
		if err := iter.Close(); err != nil {
			return nil, fmt.Errorf("read back %s.%s partition %d at %v: %w", t.ks, t.name, p, cl, err)
		}
	}
	return rows, nil
}

// recentKeys remembers the last keys a kind touched, for reads that look where staleness shows.
type recentKeys struct {
	mu   sync.Mutex
	keys []int64
	next int
}

func (r *recentKeys) add(k int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.keys) < 64 {
		r.keys = append(r.keys, k)
		return
	}
	r.keys[r.next] = k
	r.next = (r.next + 1) % len(r.keys)
}

func (r *recentKeys) pick(rng *rand.Rand) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.keys) == 0 {
		return 0, false
	}
	return r.keys[rng.IntN(len(r.keys))], true
}

// Inserts is the unique-insert kind: every insert writes a row never written before (its value
// is its timestamp); reads look for recent and older rows. Each acknowledged insert must be
// seen by every read that starts after its acknowledgement.
type Inserts struct {
	t      table
	ts     *Timestamps
	last   atomic.Int64 // the highest key generated
	recent recentKeys
}

// NewInserts returns the kind over table name of keyspace ks, every operation at cl.
func NewInserts(ks, name string, cl gocql.Consistency, ts *Timestamps) *Inserts {
	return &Inserts{t: table{ks: ks, name: name, cl: cl}, ts: ts}
}

func (k *Inserts) Name() string     { return kindName("inserts", k.t.cl) }
func (k *Inserts) Schema() []string { return []string{k.t.schema()} }

func (k *Inserts) Generate(rng *rand.Rand) Op {
	if rng.IntN(2) == 0 || k.last.Load() == 0 {
		key := k.last.Add(1)
		k.recent.add(key)
		ts := k.ts.Next()
		return writeOp{t: k.t, what: "insert", k: key, v: ts, ts: ts}
	}
	if key, ok := k.recent.pick(rng); ok && rng.IntN(2) == 0 {
		return readOp{t: k.t, k: key}
	}
	return readOp{t: k.t, k: 1 + rng.Int64N(k.last.Load())}
}

func (k *Inserts) ReadBack(ctx context.Context, s *gocql.Session, cl gocql.Consistency) (any, error) {
	return readBack(ctx, k.t, s, cl)
}

func (k *Inserts) Check(events []Event, finals []Final) Verdict {
	f := newFindings()
	written := map[int64]int64{}       // key → value of its insert, acknowledged or not
	acked := map[int64]time.Duration{} // key → when its insert was acknowledged
	writes, reads := 0, 0
	for _, ev := range events {
		if w, ok := ev.Op.(writeOp); ok {
			writes++
			written[w.k] = w.v
			if ev.Err == nil {
				acked[w.k] = ev.End
			}
		}
	}
	for _, ev := range events {
		r, ok := ev.Op.(readOp)
		if !ok || ev.Err != nil {
			continue
		}
		reads++
		got := ev.Result.(rowValue)
		at, isAcked := acked[r.k]
		switch {
		case got.Found && written[r.k] != got.V:
			f.add(f.unexpected, k.t.row(r.k), "read through n%d returned v=%d, never written", ev.Node+1, got.V)
		case !got.Found && isAcked && at < ev.Start:
			f.add(f.stale, k.t.row(r.k), "read through n%d at %v found nothing; its insert was acknowledged at %v", ev.Node+1, ev.Start, at)
		}
	}
	for _, fin := range finals {
		rows := fin.Rows.(map[int64]int64)
		for key, at := range acked {
			if _, ok := rows[key]; !ok && at < fin.At {
				f.add(f.lost, k.t.row(key), "missing from the read-back at %v through n%d; its insert was acknowledged at %v", fin.CL, fin.Node+1, at)
			}
		}
		for key, v := range rows {
			if w, ok := written[key]; !ok || w != v {
				f.add(f.unexpected, k.t.row(key), "the read-back at %v through n%d returned v=%d, never written", fin.CL, fin.Node+1, v)
			}
		}
	}
	return f.verdict(k.Name(), writes, reads)
}

// Registers is the last-write-wins register kind: a few rows, each updated over and over with
// a growing timestamp (its value is its timestamp). A read must return the latest write
// acknowledged before it began, or a later one; after the faults heal, every row holds at
// least its latest acknowledged write.
type Registers struct {
	t    table
	ts   *Timestamps
	keys int
}

// NewRegisters returns the kind over table name of keyspace ks with keys registers, every
// operation at cl.
func NewRegisters(ks, name string, cl gocql.Consistency, ts *Timestamps, keys int) *Registers {
	return &Registers{t: table{ks: ks, name: name, cl: cl}, ts: ts, keys: keys}
}

func (k *Registers) Name() string     { return kindName("registers", k.t.cl) }
func (k *Registers) Schema() []string { return []string{k.t.schema()} }

func (k *Registers) Generate(rng *rand.Rand) Op {
	key := rng.Int64N(int64(k.keys))
	if rng.IntN(2) == 0 {
		ts := k.ts.Next()
		return writeOp{t: k.t, what: "update", k: key, v: ts, ts: ts}
	}
	return readOp{t: k.t, k: key}
}

func (k *Registers) ReadBack(ctx context.Context, s *gocql.Session, cl gocql.Consistency) (any, error) {
	return readBack(ctx, k.t, s, cl)
}

// ackedWrite is an acknowledged register write: its timestamp and when it was acknowledged.
type ackedWrite struct {
	ts int64
	at time.Duration
}

func (k *Registers) Check(events []Event, finals []Final) Verdict {
	f := newFindings()
	written := map[int64]map[int64]bool{} // key → timestamps written, acknowledged or not
	acked := map[int64][]ackedWrite{}
	writes, reads := 0, 0
	for _, ev := range events {
		if w, ok := ev.Op.(writeOp); ok {
			writes++
			if written[w.k] == nil {
				written[w.k] = map[int64]bool{}
			}
			written[w.k][w.v] = true
			if ev.Err == nil {
				acked[w.k] = append(acked[w.k], ackedWrite{ts: w.ts, at: ev.End})
			}
		}
	}
	// latest returns the newest timestamp among key's writes acknowledged before t.
	latest := func(key int64, before time.Duration) (int64, time.Duration) {
		var ts int64
		var at time.Duration
		for _, w := range acked[key] {
			if w.at < before && w.ts > ts {
				ts, at = w.ts, w.at
			}
		}
		return ts, at
	}
	for _, ev := range events {
		r, ok := ev.Op.(readOp)
		if !ok || ev.Err != nil {
			continue
		}
		reads++
		got := ev.Result.(rowValue)
		if got.Found && !written[r.k][got.V] {
			f.add(f.unexpected, k.t.row(r.k), "read through n%d returned v=%d, never written", ev.Node+1, got.V)
			continue
		}
		if want, at := latest(r.k, ev.Start); want != 0 && (!got.Found || got.V < want) {
			f.add(f.stale, k.t.row(r.k), "read through n%d at %v returned %v, older than ts=%d acknowledged at %v", ev.Node+1, ev.Start, got, want, at)
		}
	}
	for _, fin := range finals {
		rows := fin.Rows.(map[int64]int64)
		for key := range acked {
			want, at := latest(key, fin.At)
			if v, ok := rows[key]; want != 0 && (!ok || v < want) {
				f.add(f.lost, k.t.row(key), "the read-back at %v through n%d returned %d (present %v), older than ts=%d acknowledged at %v", fin.CL, fin.Node+1, v, ok, want, at)
			}
		}
		for key, v := range rows {
			if !written[key][v] {
				f.add(f.unexpected, k.t.row(key), "the read-back at %v through n%d returned v=%d, never written", fin.CL, fin.Node+1, v)
			}
		}
	}
	return f.verdict(k.Name(), writes, reads)
}

// Deletes is the delete kind: rows are inserted, then deleted once their insert was
// acknowledged, and read before and after. A row whose delete was acknowledged must never be
// read again; a row inserted and not yet deleted must be read.
type Deletes struct {
	t       table
	ts      *Timestamps
	last    atomic.Int64
	mu      sync.Mutex
	live    []int64 // rows whose insert was acknowledged and which no delete was generated for
	recent  recentKeys
	deleted recentKeys
}

// NewDeletes returns the kind over table name of keyspace ks, every operation at cl.
func NewDeletes(ks, name string, cl gocql.Consistency, ts *Timestamps) *Deletes {
	return &Deletes{t: table{ks: ks, name: name, cl: cl}, ts: ts}
}

func (k *Deletes) Name() string     { return kindName("deletes", k.t.cl) }
func (k *Deletes) Schema() []string { return []string{k.t.schema()} }

func (k *Deletes) Generate(rng *rand.Rand) Op {
	switch x := rng.IntN(10); {
	case x < 4:
		key := k.last.Add(1)
		k.recent.add(key)
		ts := k.ts.Next()
		return writeOp{t: k.t, what: "insert", k: key, v: ts, ts: ts, onDone: func(err error) {
			if err == nil {
				k.mu.Lock()
				k.live = append(k.live, key)
				k.mu.Unlock()
			}
		}}
	case x < 7:
		k.mu.Lock()
		if n := len(k.live); n > 0 {
			i := rng.IntN(n)
			key := k.live[i]
			k.live[i] = k.live[n-1]
			k.live = k.live[:n-1]
			k.mu.Unlock()
			k.deleted.add(key)
			return writeOp{t: k.t, what: "delete", k: key, ts: k.ts.Next()}
		}
		k.mu.Unlock()
	}
	if rng.IntN(2) == 0 {
		if key, ok := k.deleted.pick(rng); ok {
			return readOp{t: k.t, k: key}
		}
	}
	if key, ok := k.recent.pick(rng); ok {
		return readOp{t: k.t, k: key}
	}
	return readOp{t: k.t, k: 1}
}

func (k *Deletes) ReadBack(ctx context.Context, s *gocql.Session, cl gocql.Consistency) (any, error) {
	return readBack(ctx, k.t, s, cl)
}

// span is when an operation ran and whether it was acknowledged.
type span struct {
	start, end time.Duration
	ok         bool
	v          int64
}

func (k *Deletes) Check(events []Event, finals []Final) Verdict {
	f := newFindings()
	inserts, deletes := map[int64]span{}, map[int64]span{}
	writes, reads := 0, 0
	for _, ev := range events {
		if w, ok := ev.Op.(writeOp); ok {
			writes++
			s := span{start: ev.Start, end: ev.End, ok: ev.Err == nil, v: w.v}
			if w.what == "delete" {
				deletes[w.k] = s
			} else {
				inserts[w.k] = s
			}
		}
	}
	for _, ev := range events {
		r, ok := ev.Op.(readOp)
		if !ok || ev.Err != nil {
			continue
		}
		reads++
		got := ev.Result.(rowValue)
		ins, inserted := inserts[r.k]
		del, deleteTried := deletes[r.k]
		switch {
		case got.Found && (!inserted || ins.v != got.V):
			f.add(f.unexpected, k.t.row(r.k), "read through n%d returned v=%d, never written", ev.Node+1, got.V)
		case got.Found && deleteTried && del.ok && del.end < ev.Start:
			f.add(f.resurrected, k.t.row(r.k), "read through n%d at %v returned the row; its delete was acknowledged at %v", ev.Node+1, ev.Start, del.end)
		case !got.Found && inserted && ins.ok && ins.end < ev.Start && (!deleteTried || del.start > ev.End):
			f.add(f.stale, k.t.row(r.k), "read through n%d at %v found nothing; its insert was acknowledged at %v and no delete had begun", ev.Node+1, ev.Start, ins.end)
		}
	}
	for _, fin := range finals {
		rows := fin.Rows.(map[int64]int64)
		for key, ins := range inserts {
			del, deleteTried := deletes[key]
			_, present := rows[key]
			switch {
			case present && deleteTried && del.ok && del.end < fin.At:
				f.add(f.resurrected, k.t.row(key), "in the read-back at %v through n%d; its delete was acknowledged at %v", fin.CL, fin.Node+1, del.end)
			case !present && ins.ok && ins.end < fin.At && (!deleteTried || del.start > fin.End):
				f.add(f.lost, k.t.row(key), "missing from the read-back at %v through n%d; its insert was acknowledged at %v", fin.CL, fin.Node+1, ins.end)
			}
		}
		for key, v := range rows {
			if ins, ok := inserts[key]; !ok || ins.v != v {
				f.add(f.unexpected, k.t.row(key), "the read-back at %v through n%d returned v=%d, never written", fin.CL, fin.Node+1, v)
			}
		}
	}
	return f.verdict(k.Name(), writes, reads)
}
