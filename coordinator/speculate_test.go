package coordinator

import (
	"fmt"
	"testing"
	"time"
)

// TestSpeculativeReadIsCountedOncePerReplica plays reads that speculate on every limiter path
// and counts, per replica, what the limiter counts: the coordinator's local check, each Send in
// a counting mode, and each Unaccounted replica (which propagation counts). Every replica must
// count the read exactly once, however many replicas the read was sent to.
func TestSpeculativeReadIsCountedOncePerReplica(t *testing.T) {
	replicas := []Replica{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}, {ID: "n4"}, {ID: "n5"}}
	for _, tt := range []struct {
		path    string
		self    NodeID
		learned bool
	}{
		{"coordinator-local", "n2", false},
		{"replicas", "c", false},
		{"learned", "c", true},
	} {
		for _, spec := range []Speculation{SpeculateDelayed, SpeculateAlways} {
			for _, cl := range []Consistency{One, Quorum} {
				name := fmt.Sprintf("%s/%v/%v", tt.path, spec, cl)
				t.Run(name, func(t *testing.T) {
					t0 := time.Unix(1_700_000_000, 0)
					req, err := NewRequest(Params{
						Op: OpRead, Consistency: cl, Self: tt.self, Replicas: replicas, Limit: 10, Draw: 0.5,
						Stamp: t0, Learned: tt.learned, Speculation: spec,
					})
					if err != nil {
						t.Fatal(err)
					}
					counts := map[NodeID]int{}
					st := req.Start(t0)
					if st.LocalCheck {
						if !tt.learned {
							counts[tt.self]++ // the coordinator's own counter
						}
						st = req.OnLocalCheck(CheckResult{Admitted: true, Count: 1})
					}
					sends := st.Sends
					st = req.Speculate()
					sends = append(sends, st.Sends...)
					// ALWAYS asks one more; Speculate one more per missing answer, as far as
					// there are spares: at QUORUM of five, three are missing and two spare.
					wantSpec := 1
					if spec == SpeculateDelayed && cl == Quorum {
						wantSpec = 2
					}
					if req.Speculative() != wantSpec {
						t.Errorf("%d speculative reads, want %d", req.Speculative(), wantSpec)
					}
					if spec == SpeculateDelayed && len(st.Sends) != req.Speculative() {
						t.Errorf("Speculate sent %d, Speculative() = %d", len(st.Sends), req.Speculative())
					}
					if want := req.Required() + req.Speculative(); len(sends) != want {
						t.Errorf("sent to %d replicas, want the %d the level needs plus %d speculative", len(sends), req.Required(), req.Speculative())
					}
					sent := map[NodeID]bool{}
					for _, s := range sends {
						if sent[s.To] {
							t.Errorf("the read went to %s twice", s.To)
						}
						sent[s.To] = true
						wantMode := ModeAccountAndEnforce
						switch {
						case s.To == tt.self && !tt.learned:
							wantMode = ModeNone
						case tt.self != "c":
							wantMode = ModeAccountOnly
						}
						wantDraw, wantStamp := 0.0, t0
						switch wantMode {
						case ModeAccountAndEnforce:
							wantDraw = 0.5
						case ModeNone:
							wantStamp = time.Time{}
						}
						if s.Mode != wantMode || s.Draw != wantDraw || !s.Stamp.Equal(wantStamp) {
							t.Errorf("send %+v, want mode %v, draw %v, stamp %v", s, wantMode, wantDraw, wantStamp)
						}
						if s.Mode != ModeNone {
							counts[s.To]++
						}
					}
					var last Step
					for _, s := range sends {
						if st := req.OnResponse(Response{Seq: s.Seq, From: s.To, Status: StatusOK}); st.Outcome != nil {
							last = st
						}
					}
					if _, ok := last.Outcome.(Success); !ok {
						t.Fatalf("outcome %v, want success", last.Outcome)
					}
					for _, id := range last.Unaccounted {
						if sent[id] {
							t.Errorf("%s was sent the read and is unaccounted too: propagation would count it twice", id)
						}
						counts[id]++
					}
					for _, r := range replicas {
						if counts[r.ID] != 1 {
							t.Errorf("replica %s counts the read %d times, want once (sent %v, unaccounted %v)", r.ID, counts[r.ID], sends, last.Unaccounted)
						}
					}
				})
			}
		}
	}
}
