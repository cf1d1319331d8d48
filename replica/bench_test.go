package replica

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// The benchmarks write to a store on disk (b.TempDir) with the default
// options, so every write is synced: BenchmarkHandler/write and
// BenchmarkPebbleWrite compare the same durable write with and without the
// handler around it. docs/performance.md records the results.

// benchService returns a service over a store on disk, with default
// options, whose test table has the given limits.
func benchService(b *testing.B, reads, writes uint32) *Service {
	return benchServiceWith(b, Options{}, reads, writes)
}

func benchServiceWith(b *testing.B, opts Options, reads, writes uint32) *Service {
	b.Helper()
	s, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	tbl := testTable(b)
	tbl.RateLimit = schema.RateLimit{MaxReadsPerSecond: reads, MaxWritesPerSecond: writes}
	limits, err := partitionlimit.New(partitionlimit.Options{})
	if err != nil {
		b.Fatal(err)
	}
	// A fixed clock keeps the rejected benchmark's counter from decaying.
	now := time.Unix(1_700_000_000, 0)
	svc, err := NewService(Config{Store: s, Schema: tables{testTableID: tbl}, Limits: limits, Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	return svc
}

// benchWrite is the benchmarks' write: an INSERT of one row (a marker and an
// int cell) into partition "p", enforced by the limiter. Set c1 to vary the
// row.
func benchWrite() (req *replicapb.MutateRequest, c1 []byte) {
	req = mutateReq(limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99), 0)
	return req, req.Mutation.Rows[0].Clustering[0]
}

func BenchmarkHandler(b *testing.B) {
	ctx := context.Background()
	b.Run("write", func(b *testing.B) { benchHandlerWrite(b, Options{}) })
	b.Run("rejected", func(b *testing.B) {
		svc := benchService(b, 0, 1)
		req, _ := benchWrite()
		for range 10 { // push the counter past 2L
			svc.Mutate(ctx, req)
		}
		for b.Loop() {
			if resp, _ := svc.Mutate(ctx, req); resp.Status != replicapb.Status_STATUS_RATE_LIMITED {
				b.Fatalf("Mutate returned %v, want STATUS_RATE_LIMITED", resp)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		svc := benchService(b, schema.MaxLimit, 0)
		w, c1 := benchWrite()
		w.Limiter = nil
		for i := range 100 { // a partition of 100 rows; read the middle one
			binary.BigEndian.PutUint32(c1, uint32(i))
			if resp, _ := svc.Mutate(ctx, w); resp.Status != replicapb.Status_STATUS_OK {
				b.Fatal(resp)
			}
		}
		req := readReq("p")
		req.Limiter = limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99)
		req.Filter = &replicapb.ClusteringFilter{Equal: [][]byte{schema.EncodeInt(50), []byte("a")}}
		for b.Loop() {
			if resp, _ := svc.Read(ctx, req); resp.Status != replicapb.Status_STATUS_OK || len(resp.Rows) != 1 {
				b.Fatalf("Read returned %v, want STATUS_OK with one row", resp)
			}
		}
	})
}

func benchHandlerWrite(b *testing.B, opts Options) {
	svc := benchServiceWith(b, opts, 0, schema.MaxLimit)
	req, c1 := benchWrite()
	ctx := context.Background()
	i := uint32(0)
	for b.Loop() {
		binary.BigEndian.PutUint32(c1, i)
		i++
		if resp, _ := svc.Mutate(ctx, req); resp.Status != replicapb.Status_STATUS_OK {
			b.Fatalf("Mutate returned %v, want STATUS_OK", resp)
		}
	}
}

// BenchmarkPebbleWrite is BenchmarkHandler/write straight into pebble: the
// same two keys and values in one synced batch, on a database with the same
// options, without validation, limiter or request handling.
func BenchmarkPebbleWrite(b *testing.B) { benchPebbleWrite(b, Options{}) }

// BenchmarkNoSync repeats the write comparison without fsync, which on most
// disks dominates a synced write: it shows the handler's CPU cost.
func BenchmarkNoSync(b *testing.B) {
	b.Run("handler-write", func(b *testing.B) { benchHandlerWrite(b, Options{NoSync: true}) })
	b.Run("pebble-write", func(b *testing.B) { benchPebbleWrite(b, Options{NoSync: true}) })
}

func benchPebbleWrite(b *testing.B, opts Options) {
	opts.EnsureDefaults()
	sync := pebble.Sync
	if opts.NoSync {
		sync = pebble.NoSync
	}
	db, err := pebble.Open(b.TempDir(), opts.pebbleOptions(opts.FS, pebbleLogger{}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	tbl := testTable(b)
	req, _ := benchWrite()
	m := req.Mutation
	rowKey := appendPartitionPrefix(nil, uint64(tbl.ID), m.Token, []byte("p"))
	rowKey = append(rowKey, kindRow)
	c1At := len(rowKey)
	rowKey = appendClustering(rowKey, schema.TypeInt, false, m.Rows[0].Clustering[0])
	rowKey = appendClustering(rowKey, schema.TypeText, false, m.Rows[0].Clustering[1])
	markerKey := append(append([]byte(nil), rowKey...), rowMarker)
	cellKey := append(append(append([]byte(nil), rowKey...), rowCell), 'v')
	markerVal := appendValue(nil, cell.Cell{Timestamp: 1}, 0)
	cellVal := appendValue(nil, cell.Cell{Timestamp: 1, Value: schema.EncodeInt(1)}, 0)
	i := uint32(0)
	for b.Loop() {
		binary.BigEndian.PutUint32(markerKey[c1At:], i^(1<<31))
		binary.BigEndian.PutUint32(cellKey[c1At:], i^(1<<31))
		i++
		batch := db.NewBatch()
		batch.Set(markerKey, markerVal, nil)
		batch.Set(cellKey, cellVal, nil)
		if err := batch.Commit(sync); err != nil {
			b.Fatal(err)
		}
		batch.Close()
	}
}
