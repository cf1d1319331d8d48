package coordinator

import (
	"testing"
	"time"
)

// BenchmarkRequest measures one whole request through the state machine (no I/O), the cost
// test/sim pays per simulated operation.
func BenchmarkRequest(b *testing.B) {
	replicas := []Replica{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}}
	now := time.Unix(1_700_000_000, 0)
	cases := []struct {
		name string
		p    Params
	}{
		{"write-quorum-local-check", Params{Op: OpWrite, Consistency: Quorum, Self: "n1", Replicas: replicas, Limit: 50, Draw: 0.5, Deadline: now.Add(time.Second)}},
		{"write-quorum-enforce", Params{Op: OpWrite, Consistency: Quorum, Self: "c", Replicas: replicas, Limit: 50, Draw: 0.5, Deadline: now.Add(time.Second)}},
		{"read-one-enforce", Params{Op: OpRead, Consistency: One, Self: "c", Replicas: replicas, Limit: 50, Draw: 0.5, Deadline: now.Add(time.Second)}},
		{"read-quorum-unlimited", Params{Op: OpRead, Consistency: Quorum, Self: "c", Replicas: replicas, Deadline: now.Add(time.Second)}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, err := NewRequest(c.p)
				if err != nil {
					b.Fatal(err)
				}
				step := req.Start(now)
				if step.LocalCheck {
					step = req.OnLocalCheck(CheckResult{Admitted: true})
				}
				for _, s := range step.Sends {
					req.OnResponse(Response{Seq: s.Seq, From: s.To, Status: StatusOK})
				}
				if !req.Done() {
					b.Fatal("request not done after every replica answered")
				}
			}
		})
	}
}
