package replica

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

const counterDDL = "CREATE TABLE ks.c (k text, r int, hits counter, misses counter, PRIMARY KEY (k, r))"

// counterService returns a service leading counter updates as node id over an in-memory store
// holding ks.c, whose writes are limited to writes per second (0: none).
func counterService(t *testing.T, id string, writes uint32) (*Service, *fakeClock) {
	t.Helper()
	s, _ := openMem(t)
	tbl := newTable(t, counterDDL)
	tbl.RateLimit = schema.RateLimit{MaxWritesPerSecond: writes}
	limits, err := partitionlimit.New(partitionlimit.Options{Capacity: 1024})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Unix(1_700_000_000, 250_000_000)}
	svc, err := NewService(Config{Store: s, Schema: tables{testTableID: tbl}, Limits: limits, Now: clock.now, NodeID: id})
	if err != nil {
		t.Fatal(err)
	}
	return svc, clock
}

// increment returns a counter update of partition pk adding n to column col of row r.
func increment(lim *replicapb.Limiter, pk string, r int32, col string, n int64, ts int64) *replicapb.CounterUpdateRequest {
	return &replicapb.CounterUpdateRequest{Limiter: lim, Mutation: &replicapb.Mutation{
		TableId: testTableID, PartitionKey: [][]byte{[]byte(pk)}, Token: tokenOf(pk),
		Rows: []*replicapb.Row{{Clustering: [][]byte{schema.EncodeInt(r)}, Cells: []*replicapb.Cell{
			{Column: col, Counter: true, Timestamp: ts, Value: schema.EncodeBigInt(n)},
		}}},
	}}
}

// counterOf reads column col of row r of partition pk and returns its shards' sum and shards.
func counterOf(t *testing.T, svc *Service, pk string, col string) (int64, []cell.Shard) {
	t.Helper()
	resp, err := svc.Read(context.Background(), readReq(pk))
	if err != nil || resp.Status != replicapb.Status_STATUS_OK {
		t.Fatalf("read: %v, %v", resp, err)
	}
	for _, row := range resp.Rows {
		for _, c := range row.Cells {
			if c.Column == col && c.Tombstone {
				return 0, nil
			}
			if c.Column == col {
				if !c.Counter {
					t.Fatalf("column %s comes back without the counter flag: %v", col, c)
				}
				shards, err := cell.DecodeShards(c.Value)
				if err != nil {
					t.Fatalf("column %s: %v", col, err)
				}
				return cell.SumShards(shards), shards
			}
		}
	}
	return 0, nil
}

func TestCounterUpdateLeadsItsShard(t *testing.T) {
	ctx := context.Background()
	leader, _ := counterService(t, "n1", 0)
	follower, _ := counterService(t, "n2", 0)
	for i, n := range []int64{5, -2, 10} {
		resp, err := leader.CounterUpdate(ctx, increment(nil, "p", 1, "hits", n, int64(100+i)))
		if err != nil || resp.Status != replicapb.Status_STATUS_OK {
			t.Fatalf("CounterUpdate(+%d): %v, %v", n, resp, err)
		}
		sh, err := cell.DecodeShards(resp.Applied.Rows[0].Cells[0].Value)
		if err != nil || len(sh) != 1 || sh[0].ID != "n1" || sh[0].Clock != int64(i+1) {
			t.Fatalf("update %d applied shards %v (%v), want n1's shard at clock %d", i, sh, err, i+1)
		}
		// Replicate the applied shard, as the coordinator does; replay it too (a hint, say).
		for range 2 {
			if r, err := follower.Mutate(ctx, &replicapb.MutateRequest{Mutation: resp.Applied}); err != nil || r.Status != replicapb.Status_STATUS_OK {
				t.Fatalf("replicating the shard: %v, %v", r, err)
			}
		}
	}
	if got, _ := counterOf(t, leader, "p", "hits"); got != 13 {
		t.Errorf("leader reads hits = %d, want 13", got)
	}
	if got, _ := counterOf(t, follower, "p", "hits"); got != 13 {
		t.Errorf("follower reads hits = %d, want 13 (replayed shards count once)", got)
	}
	// The follower leads an update of its own: a second shard, and both replicas sum them
	// once they exchange shards.
	resp, err := follower.CounterUpdate(ctx, increment(nil, "p", 1, "hits", 7, 200))
	if err != nil || resp.Status != replicapb.Status_STATUS_OK {
		t.Fatalf("follower's update: %v, %v", resp, err)
	}
	if r, err := leader.Mutate(ctx, &replicapb.MutateRequest{Mutation: resp.Applied}); err != nil || r.Status != replicapb.Status_STATUS_OK {
		t.Fatalf("replicating n2's shard: %v, %v", r, err)
	}
	got, shards := counterOf(t, leader, "p", "hits")
	if got != 20 || len(shards) != 2 {
		t.Errorf("leader reads hits = %d from shards %v, want 20 from n1's and n2's", got, shards)
	}
}

func TestCounterUpdateConcurrent(t *testing.T) {
	ctx := context.Background()
	leader, _ := counterService(t, "n1", 0)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				resp, err := leader.CounterUpdate(ctx, increment(nil, "p", 1, "misses", 1, int64(1000+w*100+i)))
				if err != nil || resp.Status != replicapb.Status_STATUS_OK {
					t.Errorf("CounterUpdate: %v, %v", resp, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got, shards := counterOf(t, leader, "p", "misses"); got != 100 || shards[0].Clock != 100 {
		t.Errorf("after 100 concurrent increments misses = %d (shards %v), want 100 at clock 100", got, shards)
	}
}

func TestCounterDeletionWins(t *testing.T) {
	ctx := context.Background()
	leader, _ := counterService(t, "n1", 0)
	leader.CounterUpdate(ctx, increment(nil, "p", 1, "hits", 3, 100))
	del := &replicapb.MutateRequest{Mutation: &replicapb.Mutation{
		TableId: testTableID, PartitionKey: [][]byte{[]byte("p")}, Token: tokenOf("p"),
		Rows: []*replicapb.Row{{Clustering: [][]byte{schema.EncodeInt(1)}, Cells: []*replicapb.Cell{{Column: "hits", Timestamp: 50, Tombstone: true}}}},
	}}
	if r, err := leader.Mutate(ctx, del); err != nil || r.Status != replicapb.Status_STATUS_OK {
		t.Fatalf("delete: %v, %v", r, err)
	}
	leader.CounterUpdate(ctx, increment(nil, "p", 1, "hits", 4, 300))
	if got, shards := counterOf(t, leader, "p", "hits"); shards != nil {
		t.Errorf("a deleted counter reads %d (shards %v), want it deleted for good, whatever the timestamps", got, shards)
	}
}

func TestCounterUpdateRefusals(t *testing.T) {
	ctx := context.Background()
	leader, _ := counterService(t, "n1", 0)
	bad := []*replicapb.CounterUpdateRequest{
		{},
		increment(nil, "p", 1, "nope", 1, 1),
		func() *replicapb.CounterUpdateRequest {
			r := increment(nil, "p", 1, "hits", 1, 1)
			r.Mutation.Rows[0].Cells[0].Value = []byte{1}
			return r
		}(),
	}
	for _, r := range bad {
		resp, err := leader.CounterUpdate(ctx, r)
		if err != nil || resp.Status != replicapb.Status_STATUS_ERROR {
			t.Errorf("CounterUpdate(%v) = %v, %v; want a bad request", r, resp, err)
		}
	}
	// A plain value for a counter column is refused by Mutate.
	plain := &replicapb.MutateRequest{Mutation: &replicapb.Mutation{
		TableId: testTableID, PartitionKey: [][]byte{[]byte("p")}, Token: tokenOf("p"),
		Rows: []*replicapb.Row{{Clustering: [][]byte{schema.EncodeInt(1)}, Cells: []*replicapb.Cell{{Column: "hits", Timestamp: 5, Value: schema.EncodeBigInt(1)}}}},
	}}
	if r, _ := leader.Mutate(ctx, plain); r.Status != replicapb.Status_STATUS_ERROR {
		t.Errorf("Mutate of a plain value into a counter column = %v, want a bad request", r)
	}
	noID, _ := counterService(t, "", 0)
	if r, _ := noID.CounterUpdate(ctx, increment(nil, "p", 1, "hits", 1, 1)); r.Status != replicapb.Status_STATUS_ERROR {
		t.Errorf("a replica without a node id led a counter update: %v", r)
	}
}

// TestCounterUpdateEnforcedOnce: the leader decides a limited update; a rejected one writes
// nothing, and the shard a follower receives account-only is never rejected.
func TestCounterUpdateEnforcedOnce(t *testing.T) {
	ctx := context.Background()
	leader, _ := counterService(t, "n1", 2)
	follower, _ := counterService(t, "n2", 2)
	applied, rejected := 0, 0
	for i := range 50 {
		resp, err := leader.CounterUpdate(ctx, increment(limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99), "p", 1, "hits", 1, int64(100+i)))
		if err != nil {
			t.Fatal(err)
		}
		switch resp.Status {
		case replicapb.Status_STATUS_RATE_LIMITED:
			rejected++
			continue
		case replicapb.Status_STATUS_OK:
			applied++
		default:
			t.Fatalf("update %d: %v", i, resp)
		}
		r, err := follower.Mutate(ctx, &replicapb.MutateRequest{Limiter: limiter(replicapb.Limiter_ACCOUNT_ONLY, 0), Mutation: resp.Applied})
		if err != nil || r.Status != replicapb.Status_STATUS_OK {
			t.Fatalf("the follower refused an applied shard: %v, %v", r, err)
		}
	}
	if rejected == 0 || applied == 0 {
		t.Fatalf("applied %d, rejected %d of 50 updates in one second at limit 2; want both", applied, rejected)
	}
	for _, svc := range []*Service{leader, follower} {
		if got, _ := counterOf(t, svc, "p", "hits"); got != int64(applied) {
			t.Errorf("a replica reads hits = %d, want the %d applied increments", got, applied)
		}
	}
}

// TestCounterRepairAndStreaming: a replica that missed shards gets them from another replica's
// FetchPartition (repair) or from its raw entries (streaming), and both merge them with what it
// holds: every leader's shard counts once.
func TestCounterRepairAndStreaming(t *testing.T) {
	ctx := context.Background()
	n1, _ := counterService(t, "n1", 0)
	n2, _ := counterService(t, "n2", 0)
	for i := range 3 {
		n1.CounterUpdate(ctx, increment(nil, "p", 1, "hits", 10, int64(100+i)))
		n2.CounterUpdate(ctx, increment(nil, "p", 1, "hits", 1, int64(200+i)))
	}
	tbl := newTable(t, counterDDL)
	m, err := n1.store.FetchPartition(tbl, tokenOf("p"), [][]byte{[]byte("p")})
	if err != nil || m == nil {
		t.Fatalf("FetchPartition: %v, %v", m, err)
	}
	for range 2 { // repair twice: idempotent
		if err := n2.store.Apply(tbl, m); err != nil {
			t.Fatalf("applying n1's partition on n2: %v", err)
		}
	}
	if got, _ := counterOf(t, n2, "p", "hits"); got != 33 {
		t.Errorf("after repair n2 reads hits = %d, want 33 (n1's 30 and its own 3)", got)
	}
	var entries []StreamEntry
	err = n2.store.ScanTokens(testTableID, tokenOf("p"), tokenOf("p"), func(k, v []byte) error {
		entries = append(entries, StreamEntry{Key: bytes.Clone(k), Value: bytes.Clone(v)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n1.store.ApplyStreamed(entries, func(schema.TableID, int64) error { return nil }, nil); err != nil {
		t.Fatalf("ApplyStreamed: %v", err)
	}
	if got, _ := counterOf(t, n1, "p", "hits"); got != 33 {
		t.Errorf("after streaming n1 reads hits = %d, want 33", got)
	}
}
