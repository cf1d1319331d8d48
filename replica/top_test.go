package replica

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// TestServiceTopPartitions makes three partitions hot in different ways and one stay within
// its limit, and checks what TopPartitions lists.
func TestServiceTopPartitions(t *testing.T) {
	svc, clock := testService(t, 0, 10)
	ctx := context.Background()
	enforce := limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99)

	// "p": 60 enforced writes, carrying the key; those past 2·limit (20) are rejected. Every
	// count here is a multiple of HotSample, so the sampled rejection counts are exact.
	for i := range 60 {
		svc.Mutate(ctx, mutateReq(enforce, int32(i)))
	}
	// "q": 5 exempt writes (so storage holds it), then 40 checks by a local coordinator, which
	// know only the token: the key comes from storage.
	for i := range 5 {
		if resp, _ := svc.Mutate(ctx, &replicapb.MutateRequest{Mutation: mut("q", row(int32(i), "a", "marker@1"))}); resp.Status != replicapb.Status_STATUS_OK {
			t.Fatal(resp)
		}
	}
	for range 40 {
		svc.Check(testTableID, tokenOf("q"), schema.OpWrite, 0.99, clock.t)
	}
	// "r": an account delta of 30, never written: its key is unknown.
	svc.AccountDelta(ctx, &replicapb.AccountDeltaRequest{Deltas: []*replicapb.AccountDelta{
		{TableId: testTableID, Token: tokenOf("r"), Op: replicapb.Op_OP_WRITE, Count: 30},
	}})
	// "s": 20 checks, within 2·limit: never hot.
	for range 20 {
		svc.Check(testTableID, tokenOf("s"), schema.OpWrite, 0.99, clock.t)
	}

	resp, err := svc.TopPartitions(ctx, &replicapb.TopPartitionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		key              string
		count            uint32
		coordRej, repRej float64
	}
	want := []row{ // hottest first
		{"p", 60, 0, 40},
		{"q", 40, 20, 0},
		{"r", 30, 0, 0},
	}
	if len(resp.Partitions) != len(want) {
		t.Fatalf("TopPartitions listed %d partitions (%v), want %d: p, q and r", len(resp.Partitions), resp.Partitions, len(want))
	}
	// The clock is 250 ms into its second: estimates are count / 1.25.
	for i, w := range want {
		p := resp.Partitions[i]
		var key string
		if len(p.PartitionKey) == 1 {
			key = string(p.PartitionKey[0])
		}
		if w.key == "r" {
			if len(p.PartitionKey) != 0 || p.Token != tokenOf("r") {
				t.Errorf("partition %d = %v, want token of r without a key (never written, only counted)", i, p)
			}
		} else if key != w.key || p.Token != tokenOf(w.key) {
			t.Errorf("partition %d has key %q, token %d; want %q, token %d", i, key, p.Token, w.key, tokenOf(w.key))
		}
		if p.TableId != testTableID || p.Op != replicapb.Op_OP_WRITE || p.Limit != 10 || p.Count != w.count {
			t.Errorf("partition %d (%s) = table %d op %v limit %d count %d; want table %d, writes, limit 10, count %d",
				i, w.key, p.TableId, p.Op, p.Limit, p.Count, testTableID, w.count)
		}
		if math.Abs(p.OpsPerSecond-float64(w.count)/1.25) > 1e-9 ||
			math.Abs(p.CoordinatorRejectionsPerSecond-w.coordRej/1.25) > 1e-9 ||
			math.Abs(p.ReplicaRejectionsPerSecond-w.repRej/1.25) > 1e-9 {
			t.Errorf("partition %d (%s): %.1f ops/s, %.1f coordinator and %.1f replica rejections/s; want %.1f, %.1f, %.1f",
				i, w.key, p.OpsPerSecond, p.CoordinatorRejectionsPerSecond, p.ReplicaRejectionsPerSecond,
				float64(w.count)/1.25, w.coordRej/1.25, w.repRej/1.25)
		}
	}

	// The scrape-time gauge counts the partitions above 2·limit now: p, q and r.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(svc.Collector())
	if got := gatheredValue(t, reg, "kvnode_limiter_hot_partitions", "keyspace", "ks", "table", "t", "op", "write"); got != 3 {
		t.Errorf(`kvnode_limiter_hot_partitions{table="t",op="write"} = %v, want 3 (p, q and r)`, got)
	}

	// Limit and table filters.
	resp, _ = svc.TopPartitions(ctx, &replicapb.TopPartitionsRequest{Limit: 1})
	if len(resp.Partitions) != 1 || string(resp.Partitions[0].PartitionKey[0]) != "p" {
		t.Errorf("TopPartitions with limit 1 = %v, want only p", resp.Partitions)
	}
	resp, _ = svc.TopPartitions(ctx, &replicapb.TopPartitionsRequest{TableId: testTableID + 1})
	if len(resp.Partitions) != 0 {
		t.Errorf("TopPartitions of another table = %v, want none", resp.Partitions)
	}

	// Two seconds later the counters have halved twice; forty seconds later nothing is hot.
	clock.t = clock.t.Add(2 * time.Second)
	resp, _ = svc.TopPartitions(ctx, &replicapb.TopPartitionsRequest{})
	if len(resp.Partitions) != 3 || resp.Partitions[0].Count != 15 {
		t.Errorf("two seconds later TopPartitions = %v, want 3 partitions, p's count 15", resp.Partitions)
	}
	clock.t = clock.t.Add(40 * time.Second)
	if resp, _ = svc.TopPartitions(ctx, &replicapb.TopPartitionsRequest{}); len(resp.Partitions) != 0 {
		t.Errorf("forty seconds later TopPartitions = %v, want none", resp.Partitions)
	}
	if got := gatheredValue(t, reg, "kvnode_limiter_hot_partitions", "table", "t", "op", "write"); got != 0 {
		t.Errorf("forty seconds later kvnode_limiter_hot_partitions = %v, want 0", got)
	}
}

// TestServiceShadowMode: on a table whose write limit is in shadow mode, enforced writes and a
// coordinator's checks past 2·limit are counted and decided as in enforce mode and admitted,
// each saying it would have been rejected; the rejection metrics stay at zero (the coordinator,
// not the replica, counts would-be rejections: once per operation), and TopPartitions shows
// them as would-be rejections by
// rejecter. An ALTER back to enforce mode (a new schema) rejects at once.
func TestServiceShadowMode(t *testing.T) {
	s, _ := openMem(t)
	tbl := testTable(t)
	tbl.RateLimit = schema.RateLimit{MaxWritesPerSecond: 10, Mode: schema.Shadow}
	sch := tables{testTableID: tbl}
	clock := &fakeClock{t: time.Unix(1_700_000_000, 250_000_000)}
	svc, err := NewService(Config{Store: s, Schema: sch, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	enforce := limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99)
	would := 0
	for i := range 60 {
		resp, err := svc.Mutate(ctx, mutateReq(enforce, int32(i)))
		if err != nil || resp.Status != replicapb.Status_STATUS_OK {
			t.Fatalf("write %d in shadow mode: %v, %v; want STATUS_OK", i+1, resp, err)
		}
		if resp.WouldReject != (i >= 20) {
			t.Errorf("write %d (counter %d, limit 10, draw 0.99): would_reject = %v, want %v", i+1, i+1, resp.WouldReject, i >= 20)
		}
		if resp.WouldReject {
			would++
		}
	}
	for i := range 40 {
		d, err := svc.Check(testTableID, tokenOf("q"), schema.OpWrite, 0.99, clock.t)
		if err != nil || !d.Admitted || d.WouldReject != (i >= 20) {
			t.Fatalf("check %d in shadow mode = %+v, %v; want admitted, would reject %v", i+1, d, err, i >= 20)
		}
		if d.WouldReject {
			would++
		}
	}
	if n := countRows(t, svc); n != 60 {
		t.Errorf("the partition has %d rows after 60 writes in shadow mode, want 60", n)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(svc.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()] += m.GetCounter().GetValue()
		}
	}
	if got["kvnode_limiter_rejections_total"] != 0 || got["kvnode_limiter_operations_total"] != 100 {
		t.Errorf("kvnode_limiter_rejections_total = %v and kvnode_limiter_operations_total = %v, want 0 and 100 (60 writes, 40 checks)",
			got["kvnode_limiter_rejections_total"], got["kvnode_limiter_operations_total"])
	}
	if _, ok := got["kvnode_limiter_would_reject_total"]; ok {
		t.Error("the replica exports kvnode_limiter_would_reject_total, want it counted once per operation by coordinators")
	}
	resp, err := svc.TopPartitions(ctx, &replicapb.TopPartitionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	f := float64(clock.t.Nanosecond()) / 1e9
	wantRep, wantCoord := map[int64]float64{tokenOf("p"): 40 / (1 + f)}, map[int64]float64{tokenOf("q"): 20 / (1 + f)}
	for _, p := range resp.Partitions {
		if p.ReplicaRejectionsPerSecond != 0 || p.CoordinatorRejectionsPerSecond != 0 ||
			math.Abs(p.ReplicaWouldRejectPerSecond-wantRep[p.Token]) > 1e-9 || math.Abs(p.CoordinatorWouldRejectPerSecond-wantCoord[p.Token]) > 1e-9 {
			t.Errorf("hot partition %d: rejections %v/%v, would-reject %v/%v (coordinator/replica); want no rejections and would-reject %v/%v",
				p.Token, p.CoordinatorRejectionsPerSecond, p.ReplicaRejectionsPerSecond, p.CoordinatorWouldRejectPerSecond, p.ReplicaWouldRejectPerSecond,
				wantCoord[p.Token], wantRep[p.Token])
		}
	}
	if len(resp.Partitions) != 2 {
		t.Errorf("TopPartitions lists %d partitions, want p and q", len(resp.Partitions))
	}

	enforced := *tbl
	enforced.RateLimit.Mode = schema.Enforce
	sch[testTableID] = &enforced
	if resp, _ := svc.Mutate(ctx, mutateReq(enforce, 100)); resp.Status != replicapb.Status_STATUS_RATE_LIMITED {
		t.Errorf("a write after the table went back to enforce mode returned %v, want STATUS_RATE_LIMITED", resp)
	}
}
