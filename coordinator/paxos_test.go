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

func TestContentionBackoff(t *testing.T) {
	if d := ContentionBackoff(1, 0); d <= 0 || d > 2*time.Millisecond {
		t.Errorf("first backoff with draw 0 = %v, want a fraction of a millisecond", d)
	}
	if lo, hi := ContentionBackoff(3, 0.99), ContentionBackoff(1, 0.99); lo <= hi {
		t.Errorf("backoff does not grow: attempt 3 %v, attempt 1 %v", lo, hi)
	}
	if d := ContentionBackoff(50, 0.99); d > 101*time.Millisecond {
		t.Errorf("backoff after 50 attempts = %v, want at most about 100ms", d)
	}
}
