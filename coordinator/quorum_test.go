package coordinator

import (
	"strings"
	"testing"
)

func TestParseConsistency(t *testing.T) {
	tests := []struct {
		in   string
		want Consistency
	}{
		{"ONE", One},
		{"one", One},
		{"LOCAL_ONE", LocalOne},
		{"local_one", LocalOne},
		{"QUORUM", Quorum},
		{"Quorum", Quorum},
		{"LOCAL_QUORUM", LocalQuorum},
		{"ALL", All},
		{"all", All},
		{"TWO", Two},
		{"three", Three},
		{"EACH_QUORUM", EachQuorum},
	}
	for _, tt := range tests {
		got, err := ParseConsistency(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseConsistency(%q) = %v, %v; want %v, nil", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", " one", "local-one", "ANY", "SERIAL"} {
		got, err := ParseConsistency(in)
		if err == nil {
			t.Errorf("ParseConsistency(%q) = %v, nil; want an error", in, got)
			continue
		}
		if !strings.Contains(err.Error(), "LOCAL_QUORUM") {
			t.Errorf("ParseConsistency(%q) error %q does not list the valid levels", in, err)
		}
	}
}

func TestConsistencyString(t *testing.T) {
	for _, c := range []Consistency{One, Quorum, All, Two, Three, LocalOne, LocalQuorum, EachQuorum} {
		back, err := ParseConsistency(c.String())
		if err != nil || back != c {
			t.Errorf("ParseConsistency(%v.String()) = %v, %v; want %v", c, back, err, c)
		}
	}
	if s := Consistency(0).String(); s != "Consistency(0)" {
		t.Errorf("Consistency(0).String() = %q, want Consistency(0)", s)
	}
	if Consistency(0).Valid() || (EachQuorum + 1).Valid() {
		t.Errorf("Consistency(0) and Consistency(%d) are valid, want invalid", EachQuorum+1)
	}
}

func TestBlockFor(t *testing.T) {
	tests := []struct {
		cl   Consistency
		rf   int
		want int
	}{
		{One, 1, 1},
		{One, 3, 1},
		{One, 0, 1},
		{Quorum, 1, 1},
		{Quorum, 2, 2},
		{Quorum, 3, 2},
		{Quorum, 4, 3},
		{Quorum, 5, 3},
		{Quorum, 6, 4},
		{Quorum, 0, 1},
		{All, 1, 1},
		{All, 3, 3},
		{All, 5, 5},
		{All, 0, 1},
		{Consistency(0), 3, 3},
	}
	for _, tt := range tests {
		if got := BlockFor(tt.cl, tt.rf); got != tt.want {
			t.Errorf("BlockFor(%v, rf=%d) = %d, want %d", tt.cl, tt.rf, got, tt.want)
		}
	}
}

func TestTallyResult(t *testing.T) {
	tests := []struct {
		name     string
		tally    Tally
		required int
		want     QuorumResult
	}{
		{"nothing answered yet", Tally{Contacted: 3}, 2, QuorumPending},
		{"one of two required OKs", Tally{Contacted: 3, OK: 1}, 2, QuorumPending},
		{"two OKs reach QUORUM of 3", Tally{Contacted: 3, OK: 2}, 2, QuorumReached},
		{"one rejection and two OKs still reach QUORUM", Tally{Contacted: 3, OK: 2, Rejected: 1}, 2, QuorumReached},
		{"one rejection leaves QUORUM possible", Tally{Contacted: 3, Rejected: 1}, 2, QuorumPending},
		{"two rejections make QUORUM of 3 unreachable", Tally{Contacted: 3, Rejected: 2}, 2, QuorumRejected},
		{"two rejections with an OK are still rejected", Tally{Contacted: 3, OK: 1, Rejected: 2}, 2, QuorumRejected},
		{"two failures lose QUORUM of 3", Tally{Contacted: 3, Failed: 2}, 2, QuorumLost},
		{"a rejection and a failure lose QUORUM (rejections alone would not)", Tally{Contacted: 3, Rejected: 1, Failed: 1}, 2, QuorumLost},
		{"ONE survives two rejections", Tally{Contacted: 3, Rejected: 2}, 1, QuorumPending},
		{"ONE is rejected by all three", Tally{Contacted: 3, Rejected: 3}, 1, QuorumRejected},
		{"ONE with two rejections and a failure is lost", Tally{Contacted: 3, Rejected: 2, Failed: 1}, 1, QuorumLost},
		{"ONE is reached by a single OK", Tally{Contacted: 3, OK: 1}, 1, QuorumReached},
		{"ALL is rejected by one rejection", Tally{Contacted: 3, OK: 2, Rejected: 1}, 3, QuorumRejected},
		{"ALL is lost by one failure", Tally{Contacted: 3, OK: 2, Failed: 1}, 3, QuorumLost},
		{"ALL is reached by all OKs", Tally{Contacted: 3, OK: 3}, 3, QuorumReached},
		{"a read that contacted two of three loses QUORUM to one rejection", Tally{Contacted: 2, Rejected: 1}, 2, QuorumRejected},
		{"too few contacted is lost, not rejected", Tally{Contacted: 1}, 2, QuorumLost},
	}
	for _, tt := range tests {
		if got := tt.tally.Result(tt.required); got != tt.want {
			t.Errorf("%s: %+v.Result(required=%d) = %v, want %v", tt.name, tt.tally, tt.required, got, tt.want)
		}
	}
}

// TestTallyResultExhaustive checks every tally of up to five contacted replicas against the
// rule in words: success wins once reached; the level stays pending while the outstanding
// replicas could still reach it; an unreachable level is blamed on rate limiting exactly when it
// would stay unreachable even if every failed replica had succeeded (and some replica rejected:
// contacting too few replicas is not rate limiting).
func TestTallyResultExhaustive(t *testing.T) {
	for contacted := 1; contacted <= 5; contacted++ {
		for required := 1; required <= contacted+1; required++ {
			for ok := 0; ok <= contacted; ok++ {
				for rej := 0; ok+rej <= contacted; rej++ {
					for failed := 0; ok+rej+failed <= contacted; failed++ {
						tl := Tally{Contacted: contacted, OK: ok, Rejected: rej, Failed: failed}
						outstanding := contacted - ok - rej - failed
						var want QuorumResult
						switch {
						case ok >= required:
							want = QuorumReached
						case ok+outstanding >= required:
							want = QuorumPending
						case rej > 0 && ok+failed+outstanding < required:
							want = QuorumRejected
						default:
							want = QuorumLost
						}
						if got := tl.Result(required); got != want {
							t.Errorf("%+v.Result(required=%d) = %v, want %v", tl, required, got, want)
						}
					}
				}
			}
		}
	}
}
