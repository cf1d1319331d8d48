package fault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gocql/gocql"
)

// Collections is the kind of non-frozen collections: a few rows, each with a set<bigint>, a
// map<bigint, bigint> and a list<bigint>. An addition writes one new element e (its timestamp,
// from the shared Timestamps) to all three, without reading (s = s + {e}, m = m + {e: e},
// l = l + [e], USING TIMESTAMP e); a removal takes an element whose addition was acknowledged
// out of the set and the map (s = s - {e}, m = m - {e}, at a later timestamp); lists are only
// appended to. Element by element it holds what Inserts and Deletes hold of rows:
//
//   - every element read was written, a map's value is its key, a list has no element twice
//     and lists them in the order of their timestamps (their cell paths start with them);
//   - an element whose addition was acknowledged before a read began is read, unless its
//     removal began before the read ended (stale during the workload, lost in a read-back);
//   - an element whose removal was acknowledged before a read began is not read (resurrected).
type Collections struct {
	t    table
	ts   *Timestamps
	keys int

	mu   sync.Mutex
	live []collElem // elements whose addition was acknowledged and no removal generated
}

// collElem is one element of a row's collections.
type collElem struct{ k, e int64 }

// NewCollections returns the kind over table name of keyspace ks with keys rows, every
// operation at cl.
func NewCollections(ks, name string, cl gocql.Consistency, ts *Timestamps, keys int) *Collections {
	return &Collections{t: table{ks: ks, name: name, cl: cl}, ts: ts, keys: keys}
}

func (k *Collections) Name() string { return kindName("collections", k.t.cl) }

func (k *Collections) Schema() []string {
	return []string{fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s (p int, k bigint, s set<bigint>, m map<bigint, bigint>, l list<bigint>, PRIMARY KEY (p, k))", k.t.ks, k.t.name)}
}

// collWrite adds element e to row k's set, map and list, or (remove) takes it out of the set
// and the map, at timestamp ts.
type collWrite struct {
	t      table
	remove bool
	k, e   int64
	ts     int64
	onDone func(error)
}

func (o collWrite) IsRead() bool { return false }

func (o collWrite) String() string {
	what := "add"
	if o.remove {
		what = "remove"
	}
	return fmt.Sprintf("%s %d %s ts=%d", what, o.e, o.t.row(o.k), o.ts)
}

func (o collWrite) Apply(ctx context.Context, s *gocql.Session) (any, error) {
	var q *gocql.Query
	p := int(o.k % parts)
	if o.remove {
		q = s.Query(fmt.Sprintf("UPDATE %s.%s USING TIMESTAMP ? SET s = s - ?, m = m - ? WHERE p = ? AND k = ?", o.t.ks, o.t.name),
			o.ts, []int64{o.e}, []int64{o.e}, p, o.k)
	} else {
		q = s.Query(fmt.Sprintf("UPDATE %s.%s USING TIMESTAMP ? SET s = s + ?, m = m + ?, l = l + ? WHERE p = ? AND k = ?", o.t.ks, o.t.name),
			o.ts, []int64{o.e}, map[int64]int64{o.e: o.e}, []int64{o.e}, p, o.k)
	}
	err := q.Consistency(o.t.cl).WithContext(ctx).Exec()
	if o.onDone != nil {
		o.onDone(err)
	}
	return nil, err
}

// collValue is what a read of one row's collections returned (all empty: no row).
type collValue struct {
	S, L []int64
	M    map[int64]int64
}

// collRead reads row k's collections; its result is a collValue.
type collRead struct {
	t table
	k int64
}

func (o collRead) IsRead() bool   { return true }
func (o collRead) String() string { return "read " + o.t.row(o.k) }

func (o collRead) Apply(ctx context.Context, s *gocql.Session) (any, error) {
	var v collValue
	err := s.Query(fmt.Sprintf("SELECT s, m, l FROM %s.%s WHERE p = ? AND k = ?", o.t.ks, o.t.name), int(o.k%parts), o.k).
		Consistency(o.t.cl).WithContext(ctx).Scan(&v.S, &v.M, &v.L)
	if err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return nil, err
	}
	return v, nil
}

func (k *Collections) Generate(rng *rand.Rand) Op {
	key := rng.Int64N(int64(k.keys))
	switch x := rng.IntN(10); {
	case x < 4:
		e := k.ts.Next()
		return collWrite{t: k.t, k: key, e: e, ts: e, onDone: func(err error) {
			if err == nil {
				k.mu.Lock()
				k.live = append(k.live, collElem{key, e})
				k.mu.Unlock()
			}
		}}
	case x < 6:
		k.mu.Lock()
		if n := len(k.live); n > 0 {
			i := rng.IntN(n)
			el := k.live[i]
			k.live[i] = k.live[n-1]
			k.live = k.live[:n-1]
			k.mu.Unlock()
			return collWrite{t: k.t, remove: true, k: el.k, e: el.e, ts: k.ts.Next()}
		}
		k.mu.Unlock()
	}
	return collRead{t: k.t, k: key}
}

func (k *Collections) ReadBack(ctx context.Context, s *gocql.Session, cl gocql.Consistency) (any, error) {
	rows := map[int64]collValue{}
	for p := range parts {
		iter := s.Query(fmt.Sprintf("SELECT k, s, m, l FROM %s.%s WHERE p = ?", k.t.ks, k.t.name), p).
			Consistency(cl).WithContext(ctx).PageSize(1000).Iter()
		var key int64
		var v collValue
		for iter.Scan(&key, &v.S, &v.M, &v.L) {
			rows[key] = v
			v = collValue{}
		}
		if err := iter.Close(); err != nil {
			return nil, fmt.Errorf("read back %s.%s partition %d at %v: %w", k.t.ks, k.t.name, p, cl, err)
		}
	}
	return rows, nil
}

func (k *Collections) Check(events []Event, finals []Final) Verdict {
	f := newFindings()
	adds, removes := map[collElem]span{}, map[collElem]span{}
	writes, reads := 0, 0
	for _, ev := range events {
		if w, ok := ev.Op.(collWrite); ok {
			writes++
			s := span{start: ev.Start, end: ev.End, ok: ev.Err == nil}
			if w.remove {
				removes[collElem{w.k, w.e}] = s
			} else {
				adds[collElem{w.k, w.e}] = s
			}
		}
	}
	// judge checks what a read of row key between start and end returned; missing and
	// resurrected elements go to the sets given.
	judge := func(key int64, v collValue, start, end time.Duration, via string, missing map[string]bool) {
		row := k.t.row(key)
		present := func(what string, els []int64) map[int64]bool {
			seen := map[int64]bool{}
			for i, e := range els {
				if _, ok := adds[collElem{key, e}]; !ok {
					f.add(f.unexpected, row, "%s returned %s element %d, never written", via, what, e)
				}
				if seen[e] {
					f.add(f.unexpected, row, "%s returned %s element %d twice", via, what, e)
				}
				if what == "list" && i > 0 && els[i-1] > e {
					f.add(f.unexpected, row, "%s returned list element %d after %d: out of the order of their timestamps", via, e, els[i-1])
				}
				seen[e] = true
			}
			return seen
		}
		inSet, inList := present("set", v.S), present("list", v.L)
		var mapKeys []int64
		for e, val := range v.M {
			mapKeys = append(mapKeys, e)
			if val != e {
				f.add(f.unexpected, row, "%s returned map value %d for key %d, never written", via, val, e)
			}
		}
		inMap := present("map", mapKeys)
		for el, add := range adds {
			if el.k != key {
				continue
			}
			rm, removeTried := removes[el]
			if !add.ok || add.end >= start {
				continue // not acknowledged before the read began: either way
			}
			if !inList[el.e] {
				f.add(missing, row, "%s lacks list element %d, acknowledged at %v", via, el.e, add.end)
			}
			gone := removeTried && rm.start <= end
			for what, in := range map[string]map[int64]bool{"set": inSet, "map": inMap} {
				switch {
				case !in[el.e] && !gone:
					f.add(missing, row, "%s lacks %s element %d, acknowledged at %v and no removal begun", via, what, el.e, add.end)
				case in[el.e] && removeTried && rm.ok && rm.end < start:
					f.add(f.resurrected, row, "%s returned %s element %d, whose removal was acknowledged at %v", via, what, el.e, rm.end)
				}
			}
		}
	}
	for _, ev := range events {
		r, ok := ev.Op.(collRead)
		if !ok || ev.Err != nil {
			continue
		}
		reads++
		judge(r.k, ev.Result.(collValue), ev.Start, ev.End, fmt.Sprintf("a read through n%d at %v", ev.Node+1, ev.Start), f.stale)
	}
	for _, fin := range finals {
		rows := fin.Rows.(map[int64]collValue)
		for key := range int64(k.keys) {
			judge(key, rows[key], fin.At, fin.End, fmt.Sprintf("the read-back at %v through n%d", fin.CL, fin.Node+1), f.lost)
		}
		for key := range rows {
			if key < 0 || key >= int64(k.keys) {
				f.add(f.unexpected, k.t.row(key), "the read-back at %v through n%d returned a row never written", fin.CL, fin.Node+1)
			}
		}
	}
	return f.verdict(k.Name(), writes, reads)
}

// Counters is the counter kind: a few counters, incremented by 0 to 9 (never decremented) and
// read at the kind's level. A counter has no timestamps, and an increment that failed may or may
// not have been applied (a retry would count it twice), so a read is checked by bounds: at least
// the sum of the increments acknowledged before it began (less: stale during the workload, lost
// in a read-back), at most the sum of all the increments begun before it ended (more:
// unexpected, an increment counted twice or invented).
type Counters struct {
	t    table
	keys int
}

// NewCounters returns the kind over counter table name of keyspace ks with keys counters,
// every operation at cl.
func NewCounters(ks, name string, cl gocql.Consistency, keys int) *Counters {
	return &Counters{t: table{ks: ks, name: name, cl: cl}, keys: keys}
}

func (k *Counters) Name() string { return kindName("counters", k.t.cl) }

func (k *Counters) Schema() []string {
	return []string{fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s (p int, k bigint, v counter, PRIMARY KEY (p, k))", k.t.ks, k.t.name)}
}

// incOp increments counter k by by.
type incOp struct {
	t     table
	k, by int64
}

func (o incOp) IsRead() bool   { return false }
func (o incOp) String() string { return fmt.Sprintf("increment %s by %d", o.t.row(o.k), o.by) }

func (o incOp) Apply(ctx context.Context, s *gocql.Session) (any, error) {
	return nil, s.Query(fmt.Sprintf("UPDATE %s.%s SET v = v + ? WHERE p = ? AND k = ?", o.t.ks, o.t.name), o.by, int(o.k%parts), o.k).
		Consistency(o.t.cl).WithContext(ctx).Exec()
}

func (k *Counters) Generate(rng *rand.Rand) Op {
	key := rng.Int64N(int64(k.keys))
	if rng.IntN(2) == 0 {
		return incOp{t: k.t, k: key, by: rng.Int64N(10)}
	}
	return readOp{t: k.t, k: key}
}

// ReadBack reads every counter (column v reads as a bigint, as readOp and readBack read it).
func (k *Counters) ReadBack(ctx context.Context, s *gocql.Session, cl gocql.Consistency) (any, error) {
	return readBack(ctx, k.t, s, cl)
}

func (k *Counters) Check(events []Event, finals []Final) Verdict {
	f := newFindings()
	type inc struct {
		start, end time.Duration
		by         int64
		ok         bool
	}
	incs := map[int64][]inc{}
	writes, reads := 0, 0
	for _, ev := range events {
		if w, ok := ev.Op.(incOp); ok {
			writes++
			incs[w.k] = append(incs[w.k], inc{ev.Start, ev.End, w.by, ev.Err == nil})
		}
	}
	judge := func(key, v int64, start, end time.Duration, via string, low map[string]bool) {
		var lo, hi int64
		for _, in := range incs[key] {
			if in.ok && in.end < start {
				lo += in.by
			}
			if in.start < end {
				hi += in.by
			}
		}
		switch {
		case v < lo:
			f.add(low, k.t.row(key), "%s returned %d; the increments acknowledged before it began sum to %d", via, v, lo)
		case v > hi:
			f.add(f.unexpected, k.t.row(key), "%s returned %d; all the increments begun before it ended sum to %d", via, v, hi)
		}
	}
	for _, ev := range events {
		r, ok := ev.Op.(readOp)
		if !ok || ev.Err != nil {
			continue
		}
		reads++
		judge(r.k, ev.Result.(rowValue).V, ev.Start, ev.End, fmt.Sprintf("a read through n%d at %v", ev.Node+1, ev.Start), f.stale)
	}
	for _, fin := range finals {
		rows := fin.Rows.(map[int64]int64)
		for key := range int64(k.keys) {
			judge(key, rows[key], fin.At, fin.End, fmt.Sprintf("the read-back at %v through n%d", fin.CL, fin.Node+1), f.lost)
		}
		for key := range rows {
			if key < 0 || key >= int64(k.keys) {
				f.add(f.unexpected, k.t.row(key), "the read-back at %v through n%d returned a counter never incremented", fin.CL, fin.Node+1)
			}
		}
	}
	return f.verdict(k.Name(), writes, reads)
}
