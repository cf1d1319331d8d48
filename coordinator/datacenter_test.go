package coordinator

import (
	"slices"
	"testing"
	"time"
)

// twoDCs returns three replicas in the coordinator's data center (l1, l2, l3) and three in
// another (r1, r2, r3), interleaved in ring order.
func twoDCs() []Replica {
	return []Replica{{ID: "l1"}, {ID: "r1", DC: 1}, {ID: "l2"}, {ID: "r2", DC: 1}, {ID: "l3"}, {ID: "r3", DC: 1}}
}

func sentTo(s Step) []NodeID {
	var ids []NodeID
	for _, x := range s.Sends {
		ids = append(ids, x.To)
	}
	return ids
}

// answer feeds the request an answer of status st from each of ids, in order, and returns the
// last step.
func answer(t *testing.T, r *Request, start Step, st Status, ids ...NodeID) Step {
	t.Helper()
	var last Step
	for _, id := range ids {
		seq := 0
		for _, s := range start.Sends {
			if s.To == id {
				seq = s.Seq
			}
		}
		if seq == 0 {
			t.Fatalf("no send to %s in %v", id, sentTo(start))
		}
		resp := Response{Seq: seq, From: id, Status: st}
		if st == StatusFailed {
			resp.Err = errTest
		}
		last = r.OnResponse(resp)
	}
	return last
}

type testErr string

func (e testErr) Error() string { return string(e) }

const errTest = testErr("replica failed")

// TestLocalQuorumCountsTheLocalDataCenter: a write at LOCAL_QUORUM goes to all six replicas of
// two data centers and succeeds on two local acknowledgements, whatever the other data center
// answers; the other data center's acknowledgements alone never reach it, nor do its failures
// lose it; with two local replicas down it is Unavailable though the remote three are up.
func TestLocalQuorumCountsTheLocalDataCenter(t *testing.T) {
	p := Params{Op: OpWrite, Consistency: LocalQuorum, Replicas: twoDCs(), PerDC: true}
	r, err := NewRequest(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Required() != 2 {
		t.Fatalf("LOCAL_QUORUM of 3 local replicas requires %d, want 2", r.Required())
	}
	start := r.Start(time.Time{})
	if got := sentTo(start); len(got) != 6 {
		t.Fatalf("a LOCAL_QUORUM write went to %v, want every replica", got)
	}
	if s := answer(t, r, start, StatusOK, "r1", "r2", "r3"); s.Outcome != nil {
		t.Fatalf("three remote acknowledgements finished the write: %v", s.Outcome)
	}
	answer(t, r, start, StatusFailed, "l3")
	if s := answer(t, r, start, StatusOK, "l1", "l2"); s.Outcome == nil {
		t.Fatal("two local acknowledgements did not finish the write")
	} else if _, ok := s.Outcome.(Success); !ok {
		t.Fatalf("outcome %v, want success", s.Outcome)
	}

	down := twoDCs()
	down[0].Down, down[2].Down = true, true
	r, _ = NewRequest(Params{Op: OpWrite, Consistency: LocalQuorum, Replicas: down, PerDC: true})
	if un, ok := r.Start(time.Time{}).Outcome.(Unavailable); !ok || un.Live != 1 || un.Required != 2 {
		t.Errorf("LOCAL_QUORUM with one live local replica: %v, want Unavailable (1 live of 2)", r.Outcome())
	}
	// Under SimpleStrategy LOCAL_QUORUM is a quorum of all six replicas, from the local ones.
	r, _ = NewRequest(Params{Op: OpWrite, Consistency: LocalQuorum, Replicas: twoDCs()})
	if un, ok := r.Start(time.Time{}).Outcome.(Unavailable); !ok || un.Required != 4 {
		t.Errorf("LOCAL_QUORUM of a SimpleStrategy keyspace with 3 local replicas of 6: %v, want Unavailable (4 required)", r.Outcome())
	}
}

// TestEachQuorumNeedsEveryDataCenter: EACH_QUORUM needs a quorum in each data center: three
// local and one remote acknowledgement are not enough, a second remote one is; two remote
// failures lose it. It is refused for a keyspace not placed per data center.
func TestEachQuorumNeedsEveryDataCenter(t *testing.T) {
	r, err := NewRequest(Params{Op: OpWrite, Consistency: EachQuorum, Replicas: twoDCs(), PerDC: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Required() != 4 {
		t.Fatalf("EACH_QUORUM over 3+3 requires %d, want 4", r.Required())
	}
	start := r.Start(time.Time{})
	if s := answer(t, r, start, StatusOK, "l1", "l2", "l3", "r1"); s.Outcome != nil {
		t.Fatalf("one remote acknowledgement finished an EACH_QUORUM write: %v", s.Outcome)
	}
	if _, ok := answer(t, r, start, StatusOK, "r3").Outcome.(Success); !ok {
		t.Fatalf("two acknowledgements in each data center: %v, want success", r.Outcome())
	}

	r, _ = NewRequest(Params{Op: OpWrite, Consistency: EachQuorum, Replicas: twoDCs(), PerDC: true})
	start = r.Start(time.Time{})
	answer(t, r, start, StatusOK, "l1", "l2", "l3")
	if f, ok := answer(t, r, start, StatusFailed, "r1", "r2").Outcome.(Failed); !ok || f.Required != 4 {
		t.Errorf("two remote failures: %v, want Failed", r.Outcome())
	}
	if _, err := NewRequest(Params{Op: OpWrite, Consistency: EachQuorum, Replicas: twoDCs()}); err == nil {
		t.Error("EACH_QUORUM of a keyspace not placed per data center was accepted")
	}
}

// TestLocalReadsStayLocal: a read at LOCAL_ONE asks one local replica, and a failure moves it
// to another local one, never to the other data center; a limited read's unaccounted replicas
// include the remote ones (propagation counts it for them, so the read limit is global).
func TestLocalReadsStayLocal(t *testing.T) {
	p := Params{Op: OpRead, Consistency: LocalOne, Replicas: twoDCs(), PerDC: true,
		Limit: 10, Draw: 0.5, Stamp: time.Unix(100, 0)}
	r, _ := NewRequest(p)
	start := r.Start(time.Time{})
	if got := sentTo(start); !slices.Equal(got, []NodeID{"l1"}) {
		t.Fatalf("LOCAL_ONE read went to %v, want l1", got)
	}
	next := answer(t, r, start, StatusFailed, "l1")
	if got := sentTo(next); !slices.Equal(got, []NodeID{"l2"}) {
		t.Fatalf("after l1 failed the read went to %v, want l2", got)
	}
	final := answer(t, r, next, StatusOK, "l2")
	if _, ok := final.Outcome.(Success); !ok {
		t.Fatalf("outcome %v, want success", final.Outcome)
	}
	if got := final.Unaccounted; !slices.Equal(got, []NodeID{"r1", "r2", "l3", "r3"}) {
		t.Errorf("unaccounted %v, want l3 and the remote replicas", got)
	}
}

// TestRemoteReplicasNeverDecide: with replicas in the coordinator's data center, a limited
// write reaches the others in account-only mode (they never reject it); with none there,
// every replica enforces, since someone must decide.
func TestRemoteReplicasNeverDecide(t *testing.T) {
	p := Params{Op: OpWrite, Consistency: Quorum, Replicas: twoDCs(), PerDC: true, Limit: 10, Draw: 0.5, Stamp: time.Unix(100, 0)}
	r, _ := NewRequest(p)
	for _, s := range r.Start(time.Time{}).Sends {
		want := ModeAccountAndEnforce
		if s.To[0] == 'r' {
			want = ModeAccountOnly
		}
		if s.Mode != want {
			t.Errorf("send to %s in mode %v, want %v", s.To, s.Mode, want)
		}
	}
	remote := []Replica{{ID: "r1", DC: 1}, {ID: "r2", DC: 1}}
	p.Replicas = remote
	r, _ = NewRequest(p)
	for _, s := range r.Start(time.Time{}).Sends {
		if s.Mode != ModeAccountAndEnforce {
			t.Errorf("with no local replica, send to %s in mode %v, want account-and-enforce", s.To, s.Mode)
		}
	}
}

// TestTwoAndThree: TWO and THREE need that many acknowledgements of any data center.
func TestTwoAndThree(t *testing.T) {
	for cl, want := range map[Consistency]int{Two: 2, Three: 3} {
		r, _ := NewRequest(Params{Op: OpRead, Consistency: cl, Replicas: twoDCs(), PerDC: true})
		if r.Required() != want || len(r.Start(time.Time{}).Sends) != want {
			t.Errorf("%v requires %d, want %d and as many replicas asked", cl, r.Required(), want)
		}
	}
}
