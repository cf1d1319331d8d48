package coordinator

import (
	"testing"
	"time"
)

func TestNextBallotMicros(t *testing.T) {
	for _, tc := range []struct{ now, last, seen, want int64 }{
		{100, 0, 0, 100},    // the clock
		{100, 100, 0, 101},  // above the last ballot, when the clock stands still
		{100, 50, 200, 201}, // above the highest ballot a replica answered with
		{90, 120, 0, 121},   // the clock stepped back
	} {
		if got := NextBallotMicros(tc.now, tc.last, tc.seen); got != tc.want {
			t.Errorf("NextBallotMicros(%d, %d, %d) = %d, want %d", tc.now, tc.last, tc.seen, got, tc.want)
		}
	}
}

func TestBallotCompare(t *testing.T) {
	a, b, c := Ballot{10, "n1"}, Ballot{10, "n2"}, Ballot{11, "n0"}
	if a.Compare(b) >= 0 || b.Compare(c) >= 0 || c.Compare(a) <= 0 || a.Compare(a) != 0 || (Ballot{}).Compare(a) >= 0 {
		t.Error("ballots do not order by micros, then node, with the zero ballot lowest")
	}
}

func TestInProgress(t *testing.T) {
	b := func(n int64) Ballot { return Ballot{n, "n"} }
	for _, tc := range []struct {
		name     string
		promises []Promise
		want     int
	}{
		{"nothing accepted", []Promise{{From: "a"}, {From: "b"}}, -1},
		{"accepted and committed", []Promise{{From: "a", Accepted: b(5), Committed: b(5)}, {From: "b", Committed: b(5)}}, -1},
		{"accepted above every commit", []Promise{{From: "a", Accepted: b(7), Committed: b(5)}, {From: "b", Committed: b(5)}}, 0},
		{"superseded by a newer commit elsewhere", []Promise{{From: "a", Accepted: b(7), Committed: b(5)}, {From: "b", Committed: b(8)}}, -1},
		{"the newest of two", []Promise{{From: "a", Accepted: b(7)}, {From: "b", Accepted: b(9)}, {From: "c", Accepted: b(8)}}, 1},
	} {
		i, ok := InProgress(tc.promises)
		if i != tc.want || ok != (tc.want >= 0) {
			t.Errorf("%s: InProgress = %d, %v; want %d", tc.name, i, ok, tc.want)
		}
	}
}

func TestContentionWait(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		attempt  int
		p50, p95 time.Duration
		u1, u2   float64
		lo, hi   time.Duration // the wait's bounds
	}{
		// Nothing known of latencies: uniform over [0, 10 ms) at first.
		{1, 0, 0, 0, 0, 0, 0},
		{1, 0, 0, 0.5, 0, 5 * ms, 5 * ms},
		// At least two thirds of the median, at most the ceiling p95·1.8.
		{1, 9 * ms, 20 * ms, 0, 0, 5940 * time.Microsecond, 5940 * time.Microsecond},
		{1, 9 * ms, 20 * ms, 0.999, 0, 35 * ms, 36 * ms},
		// The ceiling grows 1.8× per attempt up to 100 ms, and later buckets are likelier.
		{3, 9 * ms, 20 * ms, 0.999, 0.999, 5940 * time.Microsecond, 38 * ms},
		{3, 9 * ms, 20 * ms, 0, 0, 100 * ms, 100 * ms},
		{30, 9 * ms, 20 * ms, 0.5, 0.5, 5940 * time.Microsecond, 100 * ms},
		// A median above the ceiling: the range keeps its delta below 100 ms.
		{1, 300 * ms, 400 * ms, 0, 0, 0, 100 * ms},
		{2, 300 * ms, 400 * ms, 0.999, 0.999, 0, 100 * ms},
	} {
		got := ContentionWait(tc.attempt, tc.p50, tc.p95, tc.u1, tc.u2)
		if got < tc.lo || got > tc.hi {
			t.Errorf("ContentionWait(attempt=%d, p50=%v, p95=%v, u=%v,%v) = %v, want within [%v, %v]", tc.attempt, tc.p50, tc.p95, tc.u1, tc.u2, got, tc.lo, tc.hi)
		}
	}
	// Over many draws a losing proposer waits longer the more it lost, never past 100 ms.
	mean := func(attempt int) time.Duration {
		var sum time.Duration
		for i := range 100 {
			for j := range 10 {
				d := ContentionWait(attempt, 5*ms, 10*ms, float64(i)/100, float64(j)/10)
				if d < 0 || d > 100*ms {
					t.Fatalf("ContentionWait(%d, 5ms, 10ms, %v, %v) = %v, want within [0, 100ms]", attempt, float64(i)/100, float64(j)/10, d)
				}
				sum += d
			}
		}
		return sum / 1000
	}
	if m1, m4 := mean(1), mean(4); m4 <= m1 {
		t.Errorf("mean wait after 4 lost rounds %v, after 1 %v: want it to grow", m4, m1)
	}
}
