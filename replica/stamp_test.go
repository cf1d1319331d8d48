package replica

import (
	"context"
	"testing"
	"time"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// stamped returns an ACCOUNT_AND_ENFORCE limiter with draw 0.99 (which rejects above 2L)
// stamped with the coordinator's time at (the zero time: unstamped).
func stamped(mode replicapb.Limiter_Mode, at time.Time) *replicapb.Limiter {
	lim := &replicapb.Limiter{Mode: mode, Draw: 0.99}
	if !at.IsZero() {
		lim.StampUnixNanos = at.UnixNano()
	}
	return lim
}

// TestReplicasAgreeOnTheCoordinatorsStamp runs the same operations through two replicas whose
// clocks are 600 ms apart, across a second boundary of one of them: accounted on the
// coordinator's stamp, their counters (the counts their rejections carry) agree; accounted on
// their own clocks, as before stamps, they do not.
func TestReplicasAgreeOnTheCoordinatorsStamp(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	coordinator := base.Add(900 * time.Millisecond)
	for _, withStamps := range []bool{true, false} {
		a, clockA := testService(t, 0, 2)
		b, clockB := testService(t, 0, 2)
		clockA.t = base.Add(700 * time.Millisecond)  // 200 ms behind the coordinator
		clockB.t = base.Add(1300 * time.Millisecond) // 400 ms ahead, past the boundary
		stamp := func(d time.Duration) time.Time {
			if !withStamps {
				return time.Time{}
			}
			return coordinator.Add(d)
		}
		ctx := context.Background()
		for i := range 10 {
			for _, svc := range []*Service{a, b} {
				if _, err := svc.Mutate(ctx, mutateReq(stamped(replicapb.Limiter_ACCOUNT_ONLY, stamp(0)), int32(i))); err != nil {
					t.Fatal(err)
				}
			}
		}
		// 300 ms later: the coordinator's clock has passed a boundary, A's has not, B's passed
		// one before the operations came.
		clockA.t, clockB.t = clockA.t.Add(300*time.Millisecond), clockB.t.Add(300*time.Millisecond)
		ra, err := a.Mutate(ctx, mutateReq(stamped(replicapb.Limiter_ACCOUNT_AND_ENFORCE, stamp(300*time.Millisecond)), 100))
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.Mutate(ctx, mutateReq(stamped(replicapb.Limiter_ACCOUNT_AND_ENFORCE, stamp(300*time.Millisecond)), 100))
		if err != nil {
			t.Fatal(err)
		}
		ca, cb := ra.GetRateLimited().GetCount(), rb.GetRateLimited().GetCount()
		switch {
		case withStamps && (ra.Status != replicapb.Status_STATUS_RATE_LIMITED || ra.Status != rb.Status || ca != cb || ca != 10/2+1):
			t.Errorf("stamped: replicas answered %v (count %d) and %v (count %d), want both rate limited with count 6 (10 halved once, plus one)",
				ra.Status, ca, rb.Status, cb)
		case !withStamps && ra.Status == rb.Status && ca == cb:
			t.Errorf("unstamped: replicas 600 ms apart both answered %v with count %d; the test wants them to disagree without stamps", ra.Status, ca)
		}
		if n := a.metrics.clamped.Load() + b.metrics.clamped.Load(); n != 0 {
			t.Errorf("stamps within 400 ms of the replicas' clocks were clamped %d times, want 0", n)
		}
	}
}

// TestWildStampsAreClamped checks that a coordinator with a wild clock can neither empty a
// counter (a stamp an hour ahead) nor freeze it (an hour behind): the replica accounts at its
// own clock ± MaxStampSkew and counts the clamp.
func TestWildStampsAreClamped(t *testing.T) {
	svc, clock := testService(t, 0, 2)
	ctx := context.Background()
	for i := range 16 {
		if _, err := svc.Mutate(ctx, mutateReq(stamped(replicapb.Limiter_ACCOUNT_ONLY, clock.t), int32(i))); err != nil {
			t.Fatal(err)
		}
	}
	// An hour ahead: clamped to 2 s ahead, two halvings (16 → 4, plus one), not 3,600.
	resp, err := svc.Mutate(ctx, mutateReq(stamped(replicapb.Limiter_ACCOUNT_AND_ENFORCE, clock.t.Add(time.Hour)), 100))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != replicapb.Status_STATUS_RATE_LIMITED || resp.GetRateLimited().GetCount() != 5 {
		t.Errorf("a write stamped an hour ahead answered %v, want rate limited with count 5 (16 halved twice, plus one): the stamp clamped to 2 s ahead", resp)
	}
	// An hour behind: clamped to 2 s behind, which the counter counts without decaying.
	resp, err = svc.Mutate(ctx, mutateReq(stamped(replicapb.Limiter_ACCOUNT_AND_ENFORCE, clock.t.Add(-time.Hour)), 101))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetRateLimited().GetCount() != 6 {
		t.Errorf("a write stamped an hour behind answered %v, want rate limited with count 6", resp)
	}
	if n := svc.metrics.clamped.Load(); n != 2 {
		t.Errorf("kvnode_limiter_clamped_stamps_total = %d after two wild stamps, want 2", n)
	}
	// Delta batches are stamped and clamped alike.
	if _, err := svc.AccountDelta(ctx, &replicapb.AccountDeltaRequest{
		StampUnixNanos: clock.t.Add(-time.Hour).UnixNano(),
		Deltas:         []*replicapb.AccountDelta{{TableId: uint64(testTableID), Token: mutateReq(nil, 0).Mutation.Token, Op: replicapb.Op_OP_WRITE, Count: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	if n := svc.metrics.clamped.Load(); n != 3 {
		t.Errorf("kvnode_limiter_clamped_stamps_total = %d after a delta batch stamped an hour behind, want 3", n)
	}
}
