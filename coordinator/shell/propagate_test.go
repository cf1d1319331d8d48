package shell

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
)

type recordedDelta struct {
	to  coordinator.NodeID
	req *replicapb.AccountDeltaRequest
}

// deltaRecorder is a DeltaSender that records what it is sent.
type deltaRecorder struct {
	mu   sync.Mutex
	got  []recordedDelta
	sent chan struct{}
}

func (d *deltaRecorder) AccountDelta(_ context.Context, to coordinator.NodeID, req *replicapb.AccountDeltaRequest) (*replicapb.AccountDeltaResponse, error) {
	d.mu.Lock()
	d.got = append(d.got, recordedDelta{to, req})
	d.mu.Unlock()
	if d.sent != nil {
		d.sent <- struct{}{}
	}
	return &replicapb.AccountDeltaResponse{Status: replicapb.Status_STATUS_OK}, nil
}

func TestPropagatorCoalescesPerReplicaAndSkipsDownReplicas(t *testing.T) {
	rec := &deltaRecorder{}
	live := func(id coordinator.NodeID) bool { return id != "n3" }
	// An interval far beyond the test's life: flushes happen only when the test calls flush.
	clock := time.Unix(1_700_000_000, 123_456_789)
	p := newPropagator(rec, live, time.Hour, func() time.Time { return clock }, slog.New(slog.DiscardHandler))
	defer p.close()

	for i := 0; i < 5; i++ {
		p.add([]coordinator.NodeID{"n2", "n3"}, 7, 42, coordinator.OpWrite)
	}
	p.add([]coordinator.NodeID{"n2"}, 7, 42, coordinator.OpRead)
	p.add([]coordinator.NodeID{"n2"}, 7, -9, coordinator.OpWrite)
	p.add(nil, 7, 1, coordinator.OpWrite)
	p.flush()

	if len(rec.got) != 1 || rec.got[0].to != "n2" {
		t.Fatalf("flush sent %d batches (%v), want one to n2 (n3 is down)", len(rec.got), rec.got)
	}
	want := []*replicapb.AccountDelta{
		{TableId: 7, Token: -9, Op: replicapb.Op_OP_WRITE, Count: 1},
		{TableId: 7, Token: 42, Op: replicapb.Op_OP_READ, Count: 1},
		{TableId: 7, Token: 42, Op: replicapb.Op_OP_WRITE, Count: 5},
	}
	if got, want := rec.got[0].req.GetStampUnixNanos(), clock.UnixNano(); got != want {
		t.Errorf("batch to n2 is stamped %d, want the coordinator's clock at the flush, %d", got, want)
	}
	got := rec.got[0].req.GetDeltas()
	if len(got) != len(want) {
		t.Fatalf("batch to n2 has %d deltas %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i].GetTableId() != want[i].TableId || got[i].GetToken() != want[i].Token || got[i].GetOp() != want[i].Op || got[i].GetCount() != want[i].Count {
			t.Errorf("delta %d = %v, want %v", i, got[i], want[i])
		}
	}

	p.flush()
	if len(rec.got) != 1 {
		t.Errorf("a second flush with nothing pending sent %d more batches, want none", len(rec.got)-1)
	}
}

func TestPropagatorFlushesOnItsOwn(t *testing.T) {
	rec := &deltaRecorder{sent: make(chan struct{}, 1)}
	p := newPropagator(rec, func(coordinator.NodeID) bool { return true }, time.Millisecond, time.Now, slog.New(slog.DiscardHandler))
	defer p.close()
	p.add([]coordinator.NodeID{"n1"}, 1, 1, coordinator.OpWrite)
	select {
	case <-rec.sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the propagator did not send a pending delta within 10s")
	}
}
