package fault

import (
	"errors"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// lwtEvent is an event of a CAS operation from start to end (milliseconds).
func lwtEvent(op casOp, node int, start, end int, res casResult, err error) Event {
	ev := Event{Op: op, Node: node, Start: time.Duration(start) * time.Millisecond, End: time.Duration(end) * time.Millisecond, Err: err}
	if err == nil {
		ev.Result = res
	}
	return ev
}

// TestCASRegistersCheck: porcupine accepts a linearizable history (a timed-out CAS that took
// effect, a concurrent read) and reports the register whose history shows a stale SERIAL read
// (what a proposer that skips the read or the completion of an accepted proposal produces).
func TestCASRegistersCheck(t *testing.T) {
	k := NewCASRegisters("ks", "r", 2)
	ins := casOp{t: k.t, k: 0, old: 0, new: 1}
	upd := casOp{t: k.t, k: 0, old: 1, new: 2}
	read := casOp{t: k.t, k: 0, read: true}
	other := casOp{t: k.t, k: 1, old: 0, new: 3}
	good := []Event{
		lwtEvent(ins, 0, 0, 10, casResult{applied: true, value: 1}, nil),
		lwtEvent(upd, 1, 20, 30, casResult{}, errors.New("write timeout")), // took effect, as the read shows
		lwtEvent(read, 2, 40, 50, casResult{value: 2}, nil),
		lwtEvent(other, 2, 0, 5, casResult{applied: false, value: 0}, errors.New("unavailable")),
	}
	finals := []Final{{Node: 0, CL: gocql.Quorum, At: 60 * time.Millisecond, End: 70 * time.Millisecond, Rows: map[int64]int64{0: 2, 1: 0}}}
	if v := k.Check(good, finals); !v.Clean() || v.Writes != 3 || v.Reads != 1 {
		t.Fatalf("a linearizable history: %+v", v)
	}
	stale := append(good[:len(good):len(good)],
		lwtEvent(read, 0, 55, 58, casResult{value: 1}, nil)) // after the read of 2 returned
	if v := k.Check(stale, finals); v.Stale != 1 {
		t.Fatalf("a stale SERIAL read: %+v, want register 0 reported stale", v)
	}
	lost := []Event{
		lwtEvent(ins, 0, 0, 10, casResult{applied: true, value: 1}, nil),
		lwtEvent(casOp{t: k.t, k: 0, old: 0, new: 7}, 1, 20, 30, casResult{applied: true, value: 7}, nil), // applied on a stale read
	}
	if v := k.Check(lost, nil); v.Stale != 1 {
		t.Fatalf("a CAS applied against a value overwritten before it began: %+v, want register 0 reported", v)
	}
}

// TestUniqueCheck: two applied attempts of one key, and a read-back showing an attempt that
// returned not applied, are reported; one applied attempt read back is clean.
func TestUniqueCheck(t *testing.T) {
	k := NewUnique("ks", "u", 3)
	at := func(n int64) casOp { return casOp{t: k.t, k: 0, new: n} }
	clean := []Event{
		lwtEvent(at(1), 0, 0, 10, casResult{value: 2}, nil),
		lwtEvent(at(2), 1, 0, 10, casResult{applied: true, value: 2}, nil),
		lwtEvent(at(3), 2, 0, 10, casResult{}, errors.New("write timeout")),
	}
	fin := func(v int64) []Final {
		return []Final{{Node: 0, CL: gocql.Quorum, At: 20 * time.Millisecond, End: 30 * time.Millisecond, Rows: map[int64]int64{0: v}}}
	}
	if v := k.Check(clean, fin(2)); !v.Clean() || v.Reads != 1 {
		t.Fatalf("one applied attempt: %+v", v)
	}
	if v := k.Check(clean, fin(1)); v.Lost != 1 {
		t.Fatalf("a read-back of an attempt not applied: %+v, want it reported", v)
	}
	two := []Event{clean[1], lwtEvent(at(1), 0, 0, 10, casResult{applied: true, value: 1}, nil), clean[2]}
	if v := k.Check(two, fin(2)); v.Unexpected != 1 {
		t.Fatalf("two applied attempts: %+v, want the key reported", v)
	}
	timedOut := []Event{
		lwtEvent(at(1), 0, 0, 10, casResult{value: 3}, nil),
		lwtEvent(at(2), 1, 0, 10, casResult{value: 3}, nil),
		clean[2],
	}
	if v := k.Check(timedOut, fin(3)); !v.Clean() {
		t.Fatalf("no attempt applied, the timed-out one's row read back: %+v", v)
	}
}
