package fault

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// These tests feed each kind's Check hand-made histories: what it must report, and what it must
// let pass (concurrent and failed operations may go either way).

var errTimeout = errors.New("timeout")

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func ev(op Op, node, start, end int, result any, err error) Event {
	return Event{Op: op, Node: node, Start: ms(start), End: ms(end), Result: result, Err: err}
}

func final(node int, at int, rows map[int64]int64) Final {
	return Final{Node: node, CL: gocql.All, At: ms(at), End: ms(at + 10), Rows: rows}
}

type counts struct{ lost, resurrected, stale, unexpected int }

func got(v Verdict) counts { return counts{v.Lost, v.Resurrected, v.Stale, v.Unexpected} }

func TestInsertsCheck(t *testing.T) {
	k := NewInserts("ks", "t", gocql.Quorum, NewTimestamps())
	ins := func(key, v int64) Op { return writeOp{t: k.t, what: "insert", k: key, v: v, ts: v} }
	read := func(key int64) Op { return readOp{t: k.t, k: key} }
	for _, tc := range []struct {
		name   string
		events []Event
		finals []Final
		want   counts
	}{
		{"clean", []Event{
			ev(ins(1, 10), 0, 0, 5, nil, nil),
			ev(read(1), 1, 6, 8, rowValue{true, 10}, nil),
			ev(read(2), 1, 6, 8, rowValue{}, nil), // never written
		}, []Final{final(0, 100, map[int64]int64{1: 10})}, counts{}},
		{"a read concurrent with the insert may miss it", []Event{
			ev(ins(1, 10), 0, 0, 5, nil, nil),
			ev(read(1), 1, 4, 8, rowValue{}, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 10})}, counts{}},
		{"a failed insert may be missing, or present", []Event{
			ev(ins(1, 10), 0, 0, 5, nil, errTimeout),
			ev(ins(2, 20), 0, 0, 5, nil, errTimeout),
			ev(read(1), 1, 6, 8, rowValue{}, nil),
		}, []Final{final(0, 100, map[int64]int64{2: 20})}, counts{}},
		{"stale: a read after the acknowledgement misses the row", []Event{
			ev(ins(1, 10), 0, 0, 5, nil, nil),
			ev(read(1), 1, 6, 8, rowValue{}, nil),
			ev(read(1), 2, 7, 9, rowValue{}, nil), // the same row counts once
		}, []Final{final(0, 100, map[int64]int64{1: 10})}, counts{stale: 1}},
		{"lost: an acknowledged insert missing after the heal", []Event{
			ev(ins(1, 10), 0, 0, 5, nil, nil),
			ev(ins(2, 20), 0, 0, 5, nil, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 10}), final(1, 100, map[int64]int64{})}, counts{lost: 2}},
		{"a read-back may miss an insert acknowledged after it began", []Event{
			ev(ins(1, 10), 0, 95, 105, nil, nil),
		}, []Final{final(0, 100, map[int64]int64{})}, counts{}},
		{"unexpected: a value never written", []Event{
			ev(ins(1, 10), 0, 0, 5, nil, nil),
			ev(read(1), 1, 6, 8, rowValue{true, 11}, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 10, 3: 30})}, counts{unexpected: 2}},
	} {
		if g := got(k.Check(tc.events, tc.finals)); g != tc.want {
			t.Errorf("%s: Inserts.Check = %+v, want %+v", tc.name, g, tc.want)
		}
	}
}

func TestRegistersCheck(t *testing.T) {
	k := NewRegisters("ks", "t", gocql.Quorum, NewTimestamps(), 4)
	upd := func(key, ts int64) Op { return writeOp{t: k.t, what: "update", k: key, v: ts, ts: ts} }
	read := func(key int64) Op { return readOp{t: k.t, k: key} }
	for _, tc := range []struct {
		name   string
		events []Event
		finals []Final
		want   counts
	}{
		{"clean: the latest, or a concurrent newer write", []Event{
			ev(upd(1, 10), 0, 0, 5, nil, nil),
			ev(upd(1, 11), 1, 6, 20, nil, nil),
			ev(read(1), 1, 7, 8, rowValue{true, 10}, nil),
			ev(read(1), 2, 7, 8, rowValue{true, 11}, nil),
			ev(read(1), 2, 21, 22, rowValue{true, 11}, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 11})}, counts{}},
		{"a failed write may win", []Event{
			ev(upd(1, 10), 0, 0, 5, nil, nil),
			ev(upd(1, 12), 0, 6, 9, nil, errTimeout),
			ev(read(1), 1, 10, 11, rowValue{true, 12}, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 12})}, counts{}},
		{"stale: older than a write acknowledged before the read", []Event{
			ev(upd(1, 10), 0, 0, 5, nil, nil),
			ev(upd(1, 11), 0, 6, 9, nil, nil),
			ev(read(1), 1, 10, 11, rowValue{true, 10}, nil),
			ev(upd(2, 13), 0, 6, 9, nil, nil),
			ev(read(2), 1, 10, 11, rowValue{}, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 11, 2: 13})}, counts{stale: 2}},
		{"lost: the read-back holds an older write", []Event{
			ev(upd(1, 10), 0, 0, 5, nil, nil),
			ev(upd(1, 11), 0, 6, 9, nil, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 10})}, counts{lost: 1}},
		{"unexpected: a value never written", []Event{
			ev(upd(1, 10), 0, 0, 5, nil, nil),
			ev(read(1), 1, 6, 8, rowValue{true, 99}, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 10})}, counts{unexpected: 1}},
	} {
		if g := got(k.Check(tc.events, tc.finals)); g != tc.want {
			t.Errorf("%s: Registers.Check = %+v, want %+v", tc.name, g, tc.want)
		}
	}
}

func TestDeletesCheck(t *testing.T) {
	k := NewDeletes("ks", "t", gocql.Quorum, NewTimestamps())
	ins := func(key, v int64) Op { return writeOp{t: k.t, what: "insert", k: key, v: v, ts: v} }
	del := func(key, ts int64) Op { return writeOp{t: k.t, what: "delete", k: key, ts: ts} }
	read := func(key int64) Op { return readOp{t: k.t, k: key} }
	for _, tc := range []struct {
		name   string
		events []Event
		finals []Final
		want   counts
	}{
		{"clean", []Event{
			ev(ins(1, 10), 0, 0, 5, nil, nil),
			ev(read(1), 1, 6, 7, rowValue{true, 10}, nil),
			ev(del(1, 20), 2, 8, 12, nil, nil),
			ev(read(1), 1, 9, 10, rowValue{true, 10}, nil), // concurrent with the delete
			ev(read(1), 1, 13, 14, rowValue{}, nil),
			ev(ins(2, 30), 0, 0, 5, nil, nil),
		}, []Final{final(0, 100, map[int64]int64{2: 30})}, counts{}},
		{"a failed delete may or may not have removed the row", []Event{
			ev(ins(1, 10), 0, 0, 5, nil, nil),
			ev(ins(2, 11), 0, 0, 5, nil, nil),
			ev(del(1, 20), 2, 8, 12, nil, errTimeout),
			ev(del(2, 21), 2, 8, 12, nil, errTimeout),
			ev(read(1), 1, 13, 14, rowValue{true, 10}, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 10})}, counts{}},
		{"a read-back overlapping a delete may miss the row; one begun before the delete's acknowledgement may hold it", []Event{
			ev(ins(1, 10), 0, 0, 5, nil, nil),
			ev(del(1, 20), 2, 105, 120, nil, nil),
			ev(ins(2, 11), 0, 0, 5, nil, nil),
			ev(del(2, 21), 2, 90, 101, nil, nil),
		}, []Final{final(0, 100, map[int64]int64{2: 11})}, counts{}},
		{"resurrected: read after the delete was acknowledged", []Event{
			ev(ins(1, 10), 0, 0, 5, nil, nil),
			ev(del(1, 20), 2, 8, 12, nil, nil),
			ev(read(1), 1, 13, 14, rowValue{true, 10}, nil),
			ev(ins(2, 11), 0, 0, 5, nil, nil),
			ev(del(2, 21), 2, 8, 12, nil, nil),
		}, []Final{final(0, 100, map[int64]int64{2: 11})}, counts{resurrected: 2}},
		{"stale and lost: an acknowledged insert not read, no delete begun", []Event{
			ev(ins(1, 10), 0, 0, 5, nil, nil),
			ev(read(1), 1, 6, 7, rowValue{}, nil),
		}, []Final{final(0, 100, map[int64]int64{})}, counts{lost: 1, stale: 1}},
	} {
		if g := got(k.Check(tc.events, tc.finals)); g != tc.want {
			t.Errorf("%s: Deletes.Check = %+v, want %+v", tc.name, g, tc.want)
		}
	}
}

// TestDeletesGeneratesDeletesOnlyOfAcknowledgedInserts drives the kind's generator as the
// workload would, acknowledging every other insert: deletes pick only acknowledged rows, each
// once, with a timestamp newer than the insert's.
func TestDeletesGeneratesDeletesOnlyOfAcknowledgedInserts(t *testing.T) {
	k := NewDeletes("ks", "t", gocql.Quorum, NewTimestamps())
	rng := newTestRand()
	insertTS := map[int64]int64{}
	acked := map[int64]bool{}
	deleted := map[int64]bool{}
	for i := range 2000 {
		op := k.Generate(rng)
		w, ok := op.(writeOp)
		if !ok {
			continue
		}
		switch w.what {
		case "insert":
			insertTS[w.k] = w.ts
			var err error
			if i%2 == 0 {
				err = errTimeout
			} else {
				acked[w.k] = true
			}
			w.onDone(err)
		case "delete":
			if !acked[w.k] {
				t.Fatalf("delete of %s, whose insert was not acknowledged", w.t.row(w.k))
			}
			if deleted[w.k] {
				t.Fatalf("second delete of %s", w.t.row(w.k))
			}
			if w.ts <= insertTS[w.k] {
				t.Fatalf("delete of %s at ts %d, not after its insert's %d", w.t.row(w.k), w.ts, insertTS[w.k])
			}
			deleted[w.k] = true
		}
	}
	if len(deleted) == 0 {
		t.Fatal("2000 generated operations held no delete")
	}
}

func newTestRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

func TestCollectionsCheck(t *testing.T) {
	k := NewCollections("ks", "t", gocql.Quorum, NewTimestamps(), 2)
	add := func(key, e int64) Op { return collWrite{t: k.t, k: key, e: e, ts: e} }
	rm := func(key, e, ts int64) Op { return collWrite{t: k.t, remove: true, k: key, e: e, ts: ts} }
	read := func(key int64) Op { return collRead{t: k.t, k: key} }
	val := func(set, list []int64) collValue {
		v := collValue{S: set, L: list, M: map[int64]int64{}}
		for _, e := range set {
			v.M[e] = e
		}
		return v
	}
	fin := func(at int, rows map[int64]collValue) Final {
		return Final{Node: 0, CL: gocql.All, At: ms(at), End: ms(at + 10), Rows: rows}
	}
	for _, tc := range []struct {
		name   string
		events []Event
		finals []Final
		want   counts
	}{
		{"clean", []Event{
			ev(add(1, 10), 0, 0, 5, nil, nil),
			ev(add(1, 11), 0, 1, 5, nil, nil),
			ev(rm(1, 10, 20), 1, 6, 8, nil, nil),
			ev(read(1), 1, 9, 12, val([]int64{11}, []int64{10, 11}), nil),
		}, []Final{fin(100, map[int64]collValue{1: val([]int64{11}, []int64{10, 11})})}, counts{}},
		{"a failed addition may be missing or present, a concurrent removal either way", []Event{
			ev(add(1, 10), 0, 0, 5, nil, errTimeout),
			ev(add(1, 11), 0, 1, 5, nil, nil),
			ev(rm(1, 11, 20), 1, 6, 30, nil, errTimeout),
			ev(read(1), 1, 9, 12, val([]int64{10}, []int64{10, 11}), nil),
		}, []Final{fin(100, map[int64]collValue{1: val(nil, []int64{11})})}, counts{}},
		{"stale: an acknowledged element missing from a later read", []Event{
			ev(add(1, 10), 0, 0, 5, nil, nil),
			ev(read(1), 1, 6, 8, val(nil, []int64{10}), nil),
		}, []Final{fin(100, map[int64]collValue{1: val([]int64{10}, []int64{10})})}, counts{stale: 1}},
		{"lost: a list element missing after the heal", []Event{
			ev(add(1, 10), 0, 0, 5, nil, nil),
			ev(add(1, 11), 0, 0, 5, nil, nil),
		}, []Final{fin(100, map[int64]collValue{1: val([]int64{10, 11}, []int64{11})})}, counts{lost: 1}},
		{"resurrected: a removed element read again", []Event{
			ev(add(1, 10), 0, 0, 5, nil, nil),
			ev(rm(1, 10, 20), 1, 6, 8, nil, nil),
			ev(read(1), 1, 9, 12, val([]int64{10}, []int64{10}), nil),
		}, nil, counts{resurrected: 1}},
		{"unexpected: a list out of order, an element never written", []Event{
			ev(add(0, 10), 0, 0, 5, nil, nil),
			ev(add(0, 11), 0, 0, 5, nil, nil),
			ev(read(0), 1, 9, 12, val([]int64{10, 11}, []int64{11, 10}), nil),
			ev(read(1), 1, 9, 12, val([]int64{12}, nil), nil),
		}, nil, counts{unexpected: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if g := got(k.Check(tc.events, tc.finals)); g != tc.want {
				t.Errorf("got %+v, want %+v", g, tc.want)
			}
		})
	}
}

func TestCountersCheck(t *testing.T) {
	k := NewCounters("ks", "t", gocql.Quorum, 2)
	inc := func(key, by int64) Op { return incOp{t: k.t, k: key, by: by} }
	read := func(key int64) Op { return readOp{t: k.t, k: key} }
	for _, tc := range []struct {
		name   string
		events []Event
		finals []Final
		want   counts
	}{
		{"clean: a timed-out increment counted or not, a concurrent one either way", []Event{
			ev(inc(1, 5), 0, 0, 5, nil, nil),
			ev(inc(1, 7), 0, 1, 5, nil, errTimeout),
			ev(inc(1, 2), 0, 7, 15, nil, nil),
			ev(read(1), 1, 6, 8, rowValue{true, 5}, nil),
			ev(read(1), 1, 6, 8, rowValue{true, 14}, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 7})}, counts{}},
		{"stale: an acknowledged increment missing from a later read", []Event{
			ev(inc(1, 5), 0, 0, 5, nil, nil),
			ev(read(1), 1, 6, 8, rowValue{}, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 5})}, counts{stale: 1}},
		{"lost: an acknowledged increment missing after the heal", []Event{
			ev(inc(1, 5), 0, 0, 5, nil, nil),
			ev(inc(1, 3), 0, 0, 5, nil, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 5})}, counts{lost: 1}},
		{"unexpected: an increment counted twice", []Event{
			ev(inc(1, 5), 0, 0, 5, nil, errTimeout),
			ev(read(1), 1, 6, 8, rowValue{true, 10}, nil),
		}, []Final{final(0, 100, map[int64]int64{1: 5})}, counts{unexpected: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if g := got(k.Check(tc.events, tc.finals)); g != tc.want {
				t.Errorf("got %+v, want %+v", g, tc.want)
			}
		})
	}
}
