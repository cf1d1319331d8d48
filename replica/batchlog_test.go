package replica

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

func batchID(b byte) []byte {
	id := make([]byte, BatchIDSize)
	id[0], id[15] = b, b
	return id
}

func batchEntry(b byte) *replicapb.BatchlogEntry {
	return &replicapb.BatchlogEntry{Id: batchID(b), Mutations: []*replicapb.Mutation{mut("p", row(1, "a", "marker@1", "v=1@1")), mut("q", row(2, "b", "v=2@1"))}}
}

func TestStoreBatchlogStoreRemoveScan(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open("db", Options{FS: fs, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	tbl := testTable(t)
	mustApply(t, s, tbl, mut("p", row(1, "a", "v=1@1")))
	at := time.Unix(1_700_000_000, 5)
	for _, b := range []byte{3, 1, 2} {
		if err := s.StoreBatch(batchID(b), at.Add(time.Duration(b)*time.Second), []byte{b, b}); err != nil {
			t.Fatalf("StoreBatch(%d): %v", b, err)
		}
	}
	if held, err := s.RemoveBatch(batchID(2)); err != nil || !held {
		t.Fatalf("RemoveBatch(2) = %v, %v; want true, nil", held, err)
	}
	if held, err := s.RemoveBatch(batchID(9)); err != nil || held {
		t.Fatalf("RemoveBatch(9), never stored, = %v, %v; want false, nil", held, err)
	}
	// The batchlog survives a restart (stored synced even with NoSync), and stays out of the
	// tables' key space: TableIDs, which the node sweeps dropped tables by, never lists it.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open("db", Options{FS: fs}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []BatchlogRecord
	if err := s.ScanBatchlog(func(r BatchlogRecord) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !slices.Equal(got[0].ID, batchID(1)) || !slices.Equal(got[1].ID, batchID(3)) {
		t.Fatalf("ScanBatchlog after removing 2 and reopening returned %v, want entries 1 and 3 in id order", got)
	}
	if !got[1].StoredAt.Equal(at.Add(3*time.Second)) || !slices.Equal(got[1].Entry, []byte{3, 3}) {
		t.Errorf("entry 3 reads back as stored at %v with %x, want %v and 0303", got[1].StoredAt, got[1].Entry, at.Add(3*time.Second))
	}
	if n, err := s.BatchlogLen(); err != nil || n != 2 {
		t.Errorf("BatchlogLen() = %d, %v; want 2", n, err)
	}
	if ids, err := s.TableIDs(); err != nil || !slices.Equal(ids, []schema.TableID{testTableID}) {
		t.Errorf("TableIDs() = %v, %v; want only the table's id %d", ids, err, testTableID)
	}
	stop := errors.New("stop")
	n := 0
	if err := s.ScanBatchlog(func(BatchlogRecord) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("ScanBatchlog whose callback fails: %v after %d calls, want the callback's error after 1", err, n)
	}
	for _, id := range [][]byte{nil, make([]byte, 15), make([]byte, 17)} {
		if err := s.StoreBatch(id, at, nil); !errors.Is(err, ErrBadRequest) {
			t.Errorf("StoreBatch with a %d-byte id: %v, want ErrBadRequest", len(id), err)
		}
		if _, err := s.RemoveBatch(id); !errors.Is(err, ErrBadRequest) {
			t.Errorf("RemoveBatch with a %d-byte id: %v, want ErrBadRequest", len(id), err)
		}
	}
}

func TestServiceStoreBatchValidates(t *testing.T) {
	svc, _ := testService(t, 0, 0)
	ctx := context.Background()
	big := batchEntry(1)
	big.Mutations[0].Rows[0].Cells[0].Value = make([]byte, DefaultMaxBatchlogEntry)
	for _, tt := range []struct {
		name string
		e    *replicapb.BatchlogEntry
		want string
	}{
		{"no entry", nil, "carries no entry"},
		{"a short id", &replicapb.BatchlogEntry{Id: []byte{1}, Mutations: batchEntry(1).Mutations}, "id is 1 bytes, want 16"},
		{"no mutations", &replicapb.BatchlogEntry{Id: batchID(1)}, "has no mutations"},
		{"a nil mutation", &replicapb.BatchlogEntry{Id: batchID(1), Mutations: []*replicapb.Mutation{nil}}, "mutation 0 is nil"},
		{"table id 0", &replicapb.BatchlogEntry{Id: batchID(1), Mutations: []*replicapb.Mutation{{PartitionKey: [][]byte{{1}}, Rows: []*replicapb.Row{{}}}}}, "mutation 0 names table id 0"},
		{"an empty mutation", &replicapb.BatchlogEntry{Id: batchID(1), Mutations: []*replicapb.Mutation{{TableId: 5}}}, "mutation 0 writes nothing"},
		{"a token not the key's", &replicapb.BatchlogEntry{Id: batchID(1), Mutations: []*replicapb.Mutation{{TableId: uint64(testTableID), PartitionKey: [][]byte{[]byte("p")}, Token: 42, Rows: batchEntry(1).Mutations[0].Rows}}}, "token"},
		{"too large", big, "more than the largest batch, 16777216 bytes (max_mutation_size)"},
	} {
		resp, err := svc.StoreBatch(ctx, &replicapb.StoreBatchRequest{Entry: tt.e})
		if err != nil || resp.Status != replicapb.Status_STATUS_ERROR || resp.Error.Code != replicapb.Error_BAD_REQUEST || !strings.Contains(resp.Error.Message, tt.want) {
			t.Errorf("StoreBatch with %s = %v, %v; want BAD_REQUEST saying %q", tt.name, resp, err, tt.want)
		}
	}
	if n, _ := svc.Store().BatchlogLen(); n != 0 {
		t.Errorf("refused entries left %d in the batchlog", n)
	}
	resp, err := svc.RemoveBatch(ctx, &replicapb.RemoveBatchRequest{Id: []byte{1, 2}})
	if err != nil || resp.Error.GetCode() != replicapb.Error_BAD_REQUEST {
		t.Errorf("RemoveBatch with a 2-byte id = %v, %v; want BAD_REQUEST", resp, err)
	}
}

func TestServiceReplayBatchlog(t *testing.T) {
	svc, clock := testService(t, 0, 0)
	ctx := context.Background()
	store := func(b byte) {
		t.Helper()
		resp, err := svc.StoreBatch(ctx, &replicapb.StoreBatchRequest{Entry: batchEntry(b)})
		if err != nil || resp.Status != replicapb.Status_STATUS_OK {
			t.Fatalf("StoreBatch(%d) = %v, %v", b, resp, err)
		}
	}
	store(1)
	store(2)
	clock.t = clock.t.Add(10 * time.Second)
	store(3) // younger than the age below: left alone
	remove := func(b byte) {
		t.Helper()
		if resp, err := svc.RemoveBatch(ctx, &replicapb.RemoveBatchRequest{Id: batchID(b)}); err != nil || resp.Status != replicapb.Status_STATUS_OK {
			t.Fatalf("RemoveBatch(%d) = %v, %v", b, resp, err)
		}
	}
	remove(2) // its coordinator applied it
	remove(2) // twice is harmless, and counted once

	var replayed [][]byte
	fail := true
	replay := func(_ context.Context, e *replicapb.BatchlogEntry) error {
		if len(e.Mutations) != 2 || e.Mutations[1].PartitionKey[0][0] != 'q' {
			t.Errorf("replayed entry %x holds %v, want the two stored mutations", e.Id, e.Mutations)
		}
		if fail {
			return errors.New("a replica is down")
		}
		replayed = append(replayed, e.Id)
		return nil
	}
	olderThan := clock.t.Add(-5 * time.Second)
	r, err := svc.ReplayBatchlog(ctx, olderThan, replay)
	if err != nil || r != (BatchlogReplay{Failed: 1, Pending: 1}) {
		t.Fatalf("a replay round that fails = %+v, %v; want 1 failed, 1 pending", r, err)
	}
	fail = false
	r, err = svc.ReplayBatchlog(ctx, olderThan, replay)
	if err != nil || r != (BatchlogReplay{Replayed: 1, Pending: 1}) || len(replayed) != 1 || !slices.Equal(replayed[0], batchID(1)) {
		t.Fatalf("the next round = %+v, %v, replayed %x; want entry 1 replayed, 1 pending", r, err, replayed)
	}
	r, err = svc.ReplayBatchlog(ctx, clock.t, replay)
	if err != nil || r != (BatchlogReplay{Replayed: 1}) {
		t.Fatalf("a round once entry 3 is old enough = %+v, %v; want it replayed", r, err)
	}
	if n, _ := svc.Store().BatchlogLen(); n != 0 {
		t.Errorf("after replaying everything the batchlog holds %d entries", n)
	}
	for name, want := range map[string]float64{"stored": 3, "replayed": 2, "removed": 3} {
		c := svc.batchlog
		got := map[string]float64{"stored": float64(c.stored.Load()), "replayed": float64(c.replayed.Load()), "removed": float64(c.removed.Load())}[name]
		if got != want {
			t.Errorf("kvnode_batchlog_%s_total = %v, want %v", name, got, want)
		}
	}
	if n := testutil.CollectAndCount(svc.BatchlogCollector()); n != 4 {
		t.Errorf("the batchlog collector exports %d metrics, want 4", n)
	}
}
