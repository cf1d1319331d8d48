package coordinator_test

import (
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

// TestUrgentDeltasOfAYoungFastPartition: a read at ONE decided on the coordinator's own counter
// leaves two replicas uncounted; their deltas are urgent exactly while the counter is in its
// onset's first second and counts faster than the limit, since until they arrive each replica
// judges the partition on its own share (docs/accuracy.md, the onset in a cluster).
func TestUrgentDeltasOfAYoungFastPartition(t *testing.T) {
	stamp := time.Unix(1_700_000_000, 300_000_000)
	for _, tc := range []struct {
		name  string
		count uint32
		born  time.Time
		rej   bool
		want  bool
	}{
		{"60 in 10 ms", 60, stamp.Add(-10 * time.Millisecond), false, true},
		{"60 in 10 ms, rejected", 60, stamp.Add(-10 * time.Millisecond), true, true},
		{"60 in 900 ms: a rate under the limit", 60, stamp.Add(-900 * time.Millisecond), false, false},
		{"9 at once: noise", 9, stamp, false, false},
		{"past the first second", 150, stamp.Add(-1500 * time.Millisecond), false, false},
		{"above twice the limit", 500, stamp.Add(-10 * time.Millisecond), false, false},
		{"not in an onset", 150, time.Time{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := coordinator.NewRequest(coordinator.Params{
				Op: coordinator.OpRead, Consistency: coordinator.One, Self: "n1",
				Replicas: []coordinator.Replica{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}},
				Limit:    100, Draw: 0.5, Stamp: stamp, Deadline: stamp.Add(2 * time.Second),
			})
			if err != nil {
				t.Fatal(err)
			}
			if !req.Start(stamp).LocalCheck {
				t.Fatal("no local check asked for")
			}
			st := req.OnLocalCheck(coordinator.CheckResult{Admitted: !tc.rej, Count: tc.count, Born: tc.born})
			for _, s := range st.Sends {
				st = req.OnResponse(coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusOK})
			}
			if st.Outcome == nil {
				t.Fatal("the request did not finish")
			}
			if len(st.Unaccounted) != 2 {
				t.Fatalf("Unaccounted = %v, want the two other replicas", st.Unaccounted)
			}
			if st.Urgent != tc.want || req.Urgent() != tc.want {
				t.Errorf("Step.Urgent = %v, Request.Urgent() = %v, want %v", st.Urgent, req.Urgent(), tc.want)
			}
		})
	}
}
