package fault

import (
	"testing"

	"github.com/gocql/gocql"
)

func TestExpiringCheck(t *testing.T) {
	k := NewExpiring("ks", "t", gocql.Quorum, NewTimestamps(), 4, 1)
	put := func(key, ts int64, ttl int) Op { return ttlWriteOp{t: k.t, k: key, v: ts, ts: ts, ttl: ttl} }
	read := func(key int64) Op { return readOp{t: k.t, k: key} }
	for _, tc := range []struct {
		name   string
		events []Event
		finals []Final
		want   counts
	}{
		{"clean: live before the expiry, gone after, either within the slack", []Event{
			ev(put(1, 10, 1), 0, 0, 5, nil, nil),
			ev(read(1), 1, 100, 110, rowValue{true, 10}, nil),
			ev(read(1), 1, 2000, 2010, rowValue{true, 10}, nil),
			ev(read(1), 1, 2500, 2510, rowValue{}, nil),
			ev(read(1), 2, 4000, 4010, rowValue{}, nil),
			ev(put(2, 20, 0), 0, 0, 5, nil, nil),
			ev(read(2), 2, 4000, 4010, rowValue{true, 20}, nil),
		}, []Final{final(0, 5000, map[int64]int64{2: 20})}, counts{}},
		{"an expired value is read", []Event{
			ev(put(1, 10, 1), 0, 0, 5, nil, nil),
			ev(read(1), 1, 4000, 4010, rowValue{true, 10}, nil),
		}, []Final{final(0, 5000, map[int64]int64{1: 10})}, counts{resurrected: 1}},
		{"an older value comes back from under an expired write", []Event{
			ev(put(1, 10, 0), 0, 0, 5, nil, nil),
			ev(put(1, 11, 1), 0, 6, 9, nil, nil),
			ev(read(1), 1, 4000, 4010, rowValue{true, 10}, nil),
		}, []Final{final(0, 5000, map[int64]int64{1: 10})}, counts{resurrected: 1}},
		{"a newer expiring write that failed may hide an older value", []Event{
			ev(put(1, 10, 0), 0, 0, 5, nil, nil),
			ev(put(1, 11, 1), 0, 6, 9, nil, errTimeout),
			ev(read(1), 1, 4000, 4010, rowValue{}, nil),
		}, []Final{final(0, 5000, map[int64]int64{})}, counts{}},
		{"an expiring write that failed may land late and be read after its TTL from its start", []Event{
			ev(put(1, 10, 1), 0, 0, 5, nil, errTimeout),
			ev(read(1), 1, 4000, 4010, rowValue{true, 10}, nil),
		}, []Final{final(0, 5000, map[int64]int64{})}, counts{}},
		{"lost: a write without TTL is not found", []Event{
			ev(put(1, 10, 0), 0, 0, 5, nil, nil),
			ev(read(1), 1, 4000, 4010, rowValue{}, nil),
		}, []Final{final(0, 5000, map[int64]int64{})}, counts{lost: 1}},
		{"stale and unexpected", []Event{
			ev(put(1, 10, 0), 0, 0, 5, nil, nil),
			ev(put(1, 11, 0), 0, 6, 9, nil, nil),
			ev(read(1), 1, 10, 20, rowValue{true, 10}, nil),
			ev(read(2), 1, 10, 20, rowValue{true, 99}, nil),
		}, []Final{final(0, 5000, map[int64]int64{1: 11})}, counts{stale: 1, unexpected: 1}},
	} {
		if g := got(k.Check(tc.events, tc.finals)); g != tc.want {
			t.Errorf("%s: Expiring.Check = %+v, want %+v", tc.name, g, tc.want)
		}
	}
}
