package coordinator_test

import (
	"fmt"
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

// This drives one limited QUORUM write through a coordinator that is itself a replica, the way
// the shell or test/sim does: run the local check it asks for, deliver the sends, feed the answers
// back, tick the clock, and stop at the step that carries the outcome.
func Example() {
	now := time.Unix(1_700_000_000, 0)
	req, err := coordinator.NewRequest(coordinator.Params{
		Op:          coordinator.OpWrite,
		Consistency: coordinator.Quorum,
		Self:        "n1",
		Replicas:    []coordinator.Replica{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}},
		Limit:       50,
		Draw:        0.42, // drawn by the shell, e.g. rand.Float64()
		Deadline:    now.Add(2 * time.Second),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	step := req.Start(now)
	if step.LocalCheck {
		// The shell calls its own replica's limiter here; this one admits.
		step = req.OnLocalCheck(coordinator.CheckResult{Admitted: true, Count: 12})
	}
	for _, s := range step.Sends {
		fmt.Printf("send #%d to %s (%v)\n", s.Seq, s.To, s.Mode)
	}
	// Two replicas answer; the second answer reaches QUORUM. The third replica is slow: its
	// answer, if it ever comes, is ignored.
	for _, s := range step.Sends[:2] {
		step = req.OnResponse(coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusOK})
		if step.Outcome != nil {
			fmt.Printf("outcome %T, error %v\n", step.Outcome, step.Outcome.Err("ks", "tbl"))
		}
	}
	fmt.Println("tick after the outcome:", req.Tick(now.Add(5*time.Second)).Outcome)
	// Output:
	// send #1 to n1 (none)
	// send #2 to n2 (account-only)
	// send #3 to n3 (account-only)
	// outcome coordinator.Success, error <nil>
	// tick after the outcome: <nil>
}

// A coordinator that is not a replica lets the replicas enforce; two rejections at QUORUM end
// the request with the rate-limit error.
func Example_rejectedByReplicas() {
	now := time.Unix(1_700_000_000, 0)
	req, _ := coordinator.NewRequest(coordinator.Params{
		Op:          coordinator.OpRead,
		Consistency: coordinator.Quorum,
		Self:        "c1",
		Replicas:    []coordinator.Replica{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}},
		Limit:       100,
		Draw:        0.9,
		Deadline:    now.Add(2 * time.Second),
	})
	for _, s := range req.Start(now).Sends {
		req.OnResponse(coordinator.Response{
			Seq: s.Seq, From: s.To, Status: coordinator.StatusRateLimited,
			Count: 420, RetryAfter: 1500 * time.Millisecond,
		})
	}
	fmt.Println(req.Outcome().Err("ks", "hot"))
	fmt.Println("unaccounted:", req.Unaccounted())
	// Output:
	// rate limit exceeded for reads on ks.hot (limit 100/s), rejected by replicas; retry after 1.5s
	// unaccounted: [n3]
}
