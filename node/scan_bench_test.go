package node_test

import (
	"cmp"
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	repairpkg "github.com/kvnode/kvnode/repair"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

var (
	benchScanRows   = flag.Int("scan.bench.rows", 100000, "rows of the scan benchmarks' table (about 100 bytes of value each)")
	benchPointRate  = flag.Int("scan.bench.rate", 300, "point reads per second of BenchmarkScanPointReadP99's fixed-rate load")
	benchPhase      = flag.Duration("scan.bench.phase", 3*time.Second, "length of one phase (with or without the scan) of BenchmarkScanPointReadP99")
	benchScanPage   = flag.Int("scan.bench.page", 5000, "page size of BenchmarkScanPointReadP99's scan")
	benchScanRate   = flag.Int("scan.bench.pace", 0, "the nodes' scan_rows_per_second (0: the default; negative: no pacing)")
	benchScanRounds = flag.Int("scan.bench.rounds", 3, "rounds of BenchmarkScanPointReadP99 (each a phase without and one with the scan, order alternated)")
	benchValueBytes = flag.Int("scan.bench.value", 0, "bytes of each row's value (0: about 100, written as TestExportByDriverTokenRangesReturnsEveryRowOnce does; else loaded by ingestion); -scan.bench.rows 1048576 -scan.bench.value 1024 is a 1 GiB table")
)

// scanBenchCluster starts three nodes (RF 2) and writes the benchmarks' table ks.e: through
// the write path, or with -scan.bench.value set by ingestion (bulkLoadRows).
func scanBenchCluster(b *testing.B) (*localcluster.Cluster, []*gocql.Session, int) {
	b.Helper()
	ctx := context.Background()
	tc, err := localcluster.Start(ctx, localcluster.Options{Dir: b.TempDir(), Nodes: 3, Adjust: func(_ int, cfg *node.Config) {
		cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout
		cfg.Admission.Scans.RowsPerSecond = *benchScanRate
		// Automatic repair would start a minute after the nodes start and read the whole
		// table on every node, through the phases: its work is not the scan's.
		cfg.Repair.AutoRepair = repairpkg.AutoRepairOff
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tc.Close() })
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.e (k int, c int, v text, PRIMARY KEY (k, c))",
	} {
		if _, err := tc.Node(0).Client().Execute(ctx, 1, stmt); err != nil {
			b.Fatal(err)
		}
	}
	rows := 0
	if *benchValueBytes > 0 {
		rows = bulkLoadRows(b, tc, *benchScanRows/2, *benchValueBytes)
	}
	var sessions []*gocql.Session
	for _, n := range tc.Nodes() {
		sessions = append(sessions, gocqlTo(b, n.Node().CQLAddr(), false))
	}
	if *benchValueBytes > 0 {
		return tc, sessions, rows
	}
	acked := map[[2]int32]bool{}
	writeRows(b, sessions[0], 0, int32(*benchScanRows/2), acked)
	return tc, sessions, len(acked)
}

// bulkLoadRows loads partitions 0 to parts-1 of ks.e, each two rows (c 0 and 1) of a random
// value of valueBytes bytes (hex text, which pebble's block compression cannot shrink, so the
// table takes its size on disk), by ingestion: each node in turn is stopped, given the
// partitions it is a replica of as sstables (replica.BulkLoad, in token order, as test/perf's
// bigread part loads), and restarted. It returns the rows loaded. A GiB takes 10 to 20 s,
// where the write path took 7 to 10 minutes.
func bulkLoadRows(b *testing.B, tc *localcluster.Cluster, parts, valueBytes int) int {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	tbl, ok := tc.Node(0).Node().Schema().Table("ks", "e")
	if !ok {
		b.Fatal("no table ks.e in the schema")
	}
	ring := tc.Node(0).Node().Cluster().Ring()
	type part struct {
		token int64
		k     int32
	}
	order := make([]part, parts)
	for k := range order {
		order[k] = part{partitioner.Token(partitioner.AppendKey(nil, [][]byte{schema.EncodeInt(int32(k))})), int32(k)}
	}
	slices.SortFunc(order, func(x, y part) int { return cmp.Or(cmp.Compare(x.token, y.token), cmp.Compare(x.k, y.k)) })
	ts := time.Now().UnixMicro()
	for i, n := range tc.Nodes() {
		id := cluster.NodeID(n.ID)
		mutations := func(yield func(*replicapb.Mutation) bool) {
			rng := rand.NewChaCha8([32]byte{byte(i)})
			raw := make([]byte, (valueBytes+1)/2)
			for _, p := range order {
				if !slices.Contains(ring.Replicas(p.token, 2), id) {
					continue
				}
				m := &replicapb.Mutation{TableId: uint64(tbl.ID), PartitionKey: [][]byte{schema.EncodeInt(p.k)}, Token: p.token}
				for c := range int32(2) {
					rng.Read(raw)
					m.Rows = append(m.Rows, &replicapb.Row{Clustering: [][]byte{schema.EncodeInt(c)}, Marker: &ts,
						Cells: []*replicapb.Cell{{Column: "v", Value: []byte(hex.EncodeToString(raw)[:valueBytes]), Timestamp: ts}}})
				}
				if !yield(m) {
					return
				}
			}
		}
		if err := tc.Stop(i); err != nil {
			b.Fatal(err)
		}
		st, err := replica.BulkLoad(ctx, filepath.Join(n.DataDir, "data"), tbl, replica.Options{NoSync: true}, mutations)
		if err != nil {
			b.Fatalf("bulk loading %s: %v", n.Name, err)
		}
		if err := tc.Restart(ctx, i); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "loaded %.0f MiB into %s (%d sstables) in %v\n", float64(st.Bytes)/(1<<20), n.Name, st.Files, time.Since(start).Round(time.Second))
	}
	b.Logf("loaded %d rows of %d-byte values (%.0f MiB, RF 2) by ingestion in %v", 2*parts, valueBytes, float64(2*parts*valueBytes)/(1<<20), time.Since(start).Round(time.Second))
	return 2 * parts
}

// fullScan scans ks.e through s at QUORUM in pages of 5000 rows and returns the rows read.
func fullScan(b *testing.B, s *gocql.Session) int {
	it := s.Query("SELECT k, c, v FROM e").PageSize(5000).Iter()
	n := 0
	var k, c int32
	var v string
	for it.Scan(&k, &c, &v) {
		n++
	}
	if err := it.Close(); err != nil {
		b.Fatalf("full scan: %v", err)
	}
	return n
}

// BenchmarkScanRowsPerNode measures a full scan at QUORUM of a table of -scan.bench.rows rows
// on three in-process nodes (RF 2) through one coordinator: rows per second per node.
//
//	go test ./node -run '^$' -bench BenchmarkScanRowsPerNode -benchtime 3x
func BenchmarkScanRowsPerNode(b *testing.B) {
	_, sessions, rows := scanBenchCluster(b)
	b.ResetTimer()
	start := time.Now()
	total := 0
	for i := 0; b.Loop(); i++ {
		if n := fullScan(b, sessions[i%3]); n != rows {
			b.Fatalf("a full scan returned %d rows, want %d", n, rows)
		} else {
			total += n
		}
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds()/3, "rows/s/node")
}

// BenchmarkScanPointReadP99 measures the p99 latency of a fixed-rate point-read load at QUORUM
// (-scan.bench.rate reads per second, spread over the three nodes, latency counted from each
// read's scheduled start) without and with one concurrent full scan looping through one node,
// in rounds of two phases whose order alternates; it reports the median of the rounds'
// ratios (the target: at most 2).
//
//	go test ./node -run '^$' -bench BenchmarkScanPointReadP99 -benchtime 1x
//
// On issue 33's 1 GiB table (-v shows every round; loading it by ingestion takes under a minute):
//
//	go test ./node -run '^$' -bench BenchmarkScanPointReadP99 -benchtime 1x -v -timeout 1h \
//	    -scan.bench.rows 1048576 -scan.bench.value 1024 -scan.bench.rounds 7 -scan.bench.phase 5s
func BenchmarkScanPointReadP99(b *testing.B) {
	tc, sessions, rows := scanBenchCluster(b)
	keys := int32(rows / 2)
	// The scan is another client's: its own session, so its pages do not share the point
	// reads' connections.
	scanner := gocqlTo(b, tc.Node(1).Node().CQLAddr(), false)
	phase := func(withScan bool) (p99 time.Duration, scanned int64, elapsed time.Duration) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var scannedRows atomic.Int64
		if withScan {
			wg.Go(func() {
				for ctx.Err() == nil {
					it := scanner.Query("SELECT k, c, v FROM e").PageSize(*benchScanPage).WithContext(ctx).Iter()
					var k, c int32
					var v string
					for it.Scan(&k, &c, &v) {
						scannedRows.Add(1)
					}
					it.Close()
				}
			})
		}
		interval := time.Second / time.Duration(*benchPointRate)
		n := int(*benchPhase / interval)
		start := time.Now()
		due := make(chan time.Time, n)
		lat := make([]time.Duration, n)
		var next atomic.Int64
		var lw sync.WaitGroup
		for range 16 {
			lw.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
				for at := range due {
					k, c := rng.Int32N(keys), rng.Int32N(2)
					var v string
					i := next.Add(1) - 1
					if err := sessions[int(i)%3].Query("SELECT v FROM e WHERE k = ? AND c = ?", k, c).Scan(&v); err != nil {
						b.Errorf("point read: %v", err)
					}
					lat[i] = time.Since(at)
				}
			})
		}
		for i := range n {
			// Read i is due at its slot of the fixed rate, and latency counts from there
			// however late it starts. A generator that fell behind (descheduled, or a
			// ticker's dropped ticks) sends the late reads at once, as an open loop does, so
			// that its own lag counts for the reads it delayed and not for every read after.
			at := start.Add(time.Duration(i) * interval)
			if d := time.Until(at); d > 0 {
				<-time.After(d)
			}
			due <- at
		}
		close(due)
		lw.Wait()
		elapsed = time.Since(start)
		cancel()
		wg.Wait()
		slices.Sort(lat)
		b.Logf("scan %v: p50 %v p90 %v p99 %v max %v over %v", withScan, lat[len(lat)/2], lat[len(lat)*9/10], lat[len(lat)*99/100], lat[len(lat)-1], elapsed)
		return lat[len(lat)*99/100], scannedRows.Load(), elapsed
	}
	phase(false) // warm up
	var ratios, base, loaded []float64
	var scanRate []float64
	b.ResetTimer()
	for round := range *benchScanRounds {
		order := []bool{false, true}
		if round%2 == 1 {
			order = []bool{true, false}
		}
		var p [2]time.Duration
		for _, with := range order {
			p99, scanned, elapsed := phase(with)
			if with {
				p[1] = p99
				scanRate = append(scanRate, float64(scanned)/elapsed.Seconds()/3)
			} else {
				p[0] = p99
			}
		}
		b.Logf("round %d: p99 %v without the scan, %v with it (%.2f×)", round+1, p[0], p[1], float64(p[1])/float64(p[0]))
		ratios = append(ratios, float64(p[1])/float64(p[0]))
		base = append(base, float64(p[0].Microseconds())/1000)
		loaded = append(loaded, float64(p[1].Microseconds())/1000)
	}
	b.ReportMetric(median(ratios), "p99-ratio")
	b.ReportMetric(median(base), "p99-ms-alone")
	b.ReportMetric(median(loaded), "p99-ms-with-scan")
	b.ReportMetric(median(scanRate), "scan-rows/s/node")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	return s[len(s)/2]
}
