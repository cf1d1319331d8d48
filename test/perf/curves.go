package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
	"github.com/kvnode/kvnode/tool/bench"
)

// curvesSettings are the sizes of issue 36's scaling curves: the parts scaling (throughput
// per server core at 1 and 3 nodes), bigread (point-read p99 of one node holding BigSizes
// bytes of rows, loaded by ingestion) and memory (one node's memory holding MemPartitions
// partitions of one small row, loaded likewise).
type curvesSettings struct {
	// scaling: Rounds rounds of a write phase and a read phase per cluster and table, their
	// order alternating by round, each Phase long, closed loop from Workers workers over
	// Partitions partitions written first.
	Rounds     int           `json:"scaling_rounds"`
	Phase      time.Duration `json:"-"`
	Warm       time.Duration `json:"-"`
	Workers    int           `json:"scaling_workers"`
	Partitions int           `json:"scaling_partitions"`
	// bigread: per size, one node loaded by ingestion with rows of BigValueBytes random hex,
	// BigRowsPerPartition to a partition, then point reads (one row, CL ONE, gocql
	// token-aware) at BigRate a second, open loop, in BigRounds phases of BigPhase.
	BigSizes            []int64       `json:"bigread_sizes_bytes"`
	BigValueBytes       int           `json:"bigread_value_bytes"`
	BigRowsPerPartition int           `json:"bigread_rows_per_partition"`
	BigRate             float64       `json:"bigread_rate"`
	BigRounds           int           `json:"bigread_rounds"`
	BigPhase            time.Duration `json:"-"`
	// memory: MemPartitions partitions of one row with a 16-byte value, loaded by ingestion;
	// the node's memory idle after its start, and after MemReadPhase of point reads at BigRate.
	MemPartitions int64         `json:"memory_partitions"`
	MemReadPhase  time.Duration `json:"-"`
}

// MarshalJSON encodes c with its durations in seconds.
func (c curvesSettings) MarshalJSON() ([]byte, error) {
	type plain curvesSettings
	return json.Marshal(struct {
		plain
		PhaseS    float64 `json:"scaling_phase_s"`
		BigPhaseS float64 `json:"bigread_phase_s"`
		MemReadS  float64 `json:"memory_read_s"`
	}{plain(c), c.Phase.Seconds(), c.BigPhase.Seconds(), c.MemReadPhase.Seconds()})
}

// curvesResult is what the scaling, bigread and memory parts measured.
type curvesResult struct {
	Scaling       []scalingPhase  `json:"scaling_phases,omitempty"`
	ScalingRanges []scalingRange  `json:"scaling,omitempty"`
	BigRead       []bigReadResult `json:"bigread,omitempty"`
	Memory        *memoryResult   `json:"memory,omitempty"`
	// Load is the 1-, 5- and 15-minute load averages at the start of each part.
	Load map[string]string `json:"load_at_start"`
}

// scalingPhase is one measured phase of the scaling part.
type scalingPhase struct {
	Round        int     `json:"round"`
	Nodes        int     `json:"nodes"`
	Kind         string  `json:"kind"` // "rf1_one" or "rf3_quorum"
	Op           string  `json:"op"`   // "write" or "read" (a whole partition of up to 16 rows)
	Accepted     int64   `json:"accepted"`
	OpsPerS      float64 `json:"ops_per_s"`
	P50MS        float64 `json:"p50_ms"`
	P99MS        float64 `json:"p99_ms"`
	ServerCores  float64 `json:"server_cores"`  // server CPU seconds per second, all servers
	LoadGenCores float64 `json:"loadgen_cores"` // this process's
	OpsPerCore   float64 `json:"ops_per_server_core_s"`
	CPUUSOp      float64 `json:"server_cpu_us_per_op"`
}

// scalingRange is one (nodes, kind, op) over the rounds: min, median and max.
type scalingRange struct {
	Nodes      int        `json:"nodes"`
	Kind       string     `json:"kind"`
	Op         string     `json:"op"`
	OpsPerS    [3]float64 `json:"ops_per_s"`
	P99MS      [3]float64 `json:"p99_ms"`
	OpsPerCore [3]float64 `json:"ops_per_server_core_s"`
	CPUUSOp    [3]float64 `json:"server_cpu_us_per_op"`
	Cores      [3]float64 `json:"server_cores"`
}

// span returns the min, median and max of vs.
func span(vs []float64) [3]float64 {
	if len(vs) == 0 {
		return [3]float64{}
	}
	return [3]float64{slices.Min(vs), median(vs), slices.Max(vs)}
}

// scalingKinds are the tables of the scaling part: RF 1 read and written at ONE on every
// cluster, RF 3 at QUORUM on the 3-node one.
var scalingKinds = []struct {
	kind, keyspace string
	rf             int
	cl             client.Consistency
}{{"rf1_one", "perf_scale1", 1, client.One}, {"rf3_quorum", "perf_scale3", 3, client.Quorum}}

// scalingPart measures write and read throughput, p99 and server CPU on one node (RF 1) and
// on three (RF 1 at ONE and RF 3 at QUORUM), --sync=false, gocql token-aware.
func scalingPart(ctx context.Context, s settings, bin, root string, cr *curvesResult, log io.Writer) error {
	cs := s.Curves
	for _, nodes := range []int{1, 3} {
		var ddl []string
		var kinds []int
		for i, k := range scalingKinds {
			if k.rf > nodes {
				continue
			}
			kinds = append(kinds, i)
			ddl = append(ddl, fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", k.keyspace, k.rf),
				"CREATE TABLE "+k.keyspace+".t "+tableColumns)
		}
		err := withCluster(ctx, bin, root, fmt.Sprintf("scale-%d", nodes), nodes, false, ddl, log, func(c *testCluster) error {
			cfg := func(i int, writes float64, d time.Duration, seed uint64) bench.Config {
				k := scalingKinds[i]
				return bench.Config{Protocol: bench.ProtocolCQL, Addrs: c.cqlAddrs(), Coordinator: bench.TokenAware, Table: k.keyspace + ".t",
					Writes: writes, Consistency: k.cl, Partitions: cs.Partitions, Concurrency: cs.Workers, Duration: d, Seed: seed}
			}
			sessions := map[int]*bench.Session{}
			for _, i := range kinds {
				if err := loadRows(ctx, c, scalingKinds[i].keyspace+".t", cs.Partitions, 32); err != nil {
					return err
				}
				sess, err := bench.Open(ctx, cfg(i, 1, time.Second, 1))
				if err != nil {
					return err
				}
				defer sess.Close()
				sessions[i] = sess
				for _, w := range []float64{1, 0} {
					if _, err := sess.Run(ctx, cfg(i, w, cs.Warm, 1), nil); err != nil {
						return err
					}
				}
			}
			for round := range cs.Rounds {
				ops := []string{"write", "read"}
				if round%2 == 1 {
					ops = []string{"read", "write"}
				}
				for _, i := range kinds {
					for _, op := range ops {
						writes := map[string]float64{"write": 1, "read": 0}[op]
						srv0, self0, err := c.cpuWithSelf()
						if err != nil {
							return err
						}
						sum, err := sessions[i].Run(ctx, cfg(i, writes, cs.Phase, uint64(10+round)), nil)
						if err != nil {
							return err
						}
						srv1, self1, err := c.cpuWithSelf()
						if err != nil {
							return err
						}
						if err := ctx.Err(); err != nil {
							return err
						}
						if n := sum.Rejected() + sum.Failed(); n > 0 || sum.Accepted == 0 {
							return fmt.Errorf("scaling %d nodes %s %s: %d accepted, %d not (errors %v)", nodes, scalingKinds[i].kind, op, sum.Accepted, n, sum.Errors)
						}
						cpu := srv1.sub(srv0).Run
						p := scalingPhase{Round: round, Nodes: nodes, Kind: scalingKinds[i].kind, Op: op, Accepted: sum.Accepted,
							OpsPerS: perSecond(sum.Accepted, sum.DurationS), P50MS: sum.LatencyMS.P50, P99MS: sum.LatencyMS.P99,
							ServerCores: ratio(cpu.Seconds(), sum.DurationS), LoadGenCores: ratio(self1.sub(self0).Run.Seconds(), sum.DurationS),
							OpsPerCore: ratio(float64(sum.Accepted), cpu.Seconds()), CPUUSOp: ratio(float64(cpu.Microseconds()), float64(sum.Accepted))}
						cr.Scaling = append(cr.Scaling, p)
						fmt.Fprintf(log, "perf: scaling %d/%d, %d node(s) %s %s: %.0f ops/s, p99 %.2f ms, %.2f server cores, %.0f ops/s per core (%.1f µs/op)\n",
							round+1, cs.Rounds, nodes, p.Kind, op, p.OpsPerS, p.P99MS, p.ServerCores, p.OpsPerCore, p.CPUUSOp)
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, nodes := range []int{1, 3} {
		for _, k := range scalingKinds {
			for _, op := range []string{"write", "read"} {
				var ops, p99, per, us, cores []float64
				for _, p := range cr.Scaling {
					if p.Nodes == nodes && p.Kind == k.kind && p.Op == op {
						ops, p99, per = append(ops, p.OpsPerS), append(p99, p.P99MS), append(per, p.OpsPerCore)
						us, cores = append(us, p.CPUUSOp), append(cores, p.ServerCores)
					}
				}
				if len(ops) > 0 {
					cr.ScalingRanges = append(cr.ScalingRanges, scalingRange{Nodes: nodes, Kind: k.kind, Op: op,
						OpsPerS: span(ops), P99MS: span(p99), OpsPerCore: span(per), CPUUSOp: span(us), Cores: span(cores)})
				}
			}
		}
	}
	return nil
}

// The bigread and memory parts' table, on a one-node cluster loaded by ingestion.
const (
	bigKeyspace = "perf_big"
	tableBig    = bigKeyspace + ".t"
)

// bigReadResult is one size of the bigread part.
type bigReadResult struct {
	TargetBytes int64       `json:"target_bytes"`
	Partitions  int64       `json:"partitions"`
	Rows        int64       `json:"rows"`
	LoadedMiB   float64     `json:"loaded_mib"` // key and value bytes the loader wrote
	DiskMiB     float64     `json:"disk_mib"`   // the pebble directory after the load
	LoadS       float64     `json:"load_s"`     // generating, sorting, writing and ingesting
	Files       int         `json:"sstables"`
	Ingests     int         `json:"ingests"`
	StartS      float64     `json:"start_s"` // the node's restart on the loaded directory
	Rounds      []readRound `json:"rounds"`
	P99MS       [3]float64  `json:"p99_ms"` // min, median, max over rounds
	P50MS       [3]float64  `json:"p50_ms"`
	CPUUSRead   [3]float64  `json:"server_cpu_us_per_read"`
	RSSMiB      float64     `json:"rss_mib_after"`
}

// readRound is one phase of point reads at a fixed rate.
type readRound struct {
	Reads     int64   `json:"reads"`
	Errors    int64   `json:"errors"`
	Missing   int64   `json:"missing"` // reads that found no row: the load is wrong
	OpsPerS   float64 `json:"ops_per_s"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	P999MS    float64 `json:"p999_ms"`
	CPUUSRead float64 `json:"server_cpu_us_per_read"`
}

// memoryResult is the memory part: one node empty, then holding MemPartitions partitions.
type memoryResult struct {
	Partitions int64     `json:"partitions"`
	LoadedMiB  float64   `json:"loaded_mib"`
	DiskMiB    float64   `json:"disk_mib"`
	LoadS      float64   `json:"load_s"`
	Empty      memSample `json:"empty"`       // the node with the table, before the load
	Started    memSample `json:"started"`     // restarted on the loaded directory, idle
	AfterReads memSample `json:"after_reads"` // after MemReadPhase of point reads
	Reads      readRound `json:"reads"`
}

// memSample is a node's memory: resident set (/proc) and Go heap (its /metrics).
type memSample struct {
	RSSMiB       float64 `json:"rss_mib"`
	HeapInuseMiB float64 `json:"go_heap_inuse_mib"`
	HeapAllocMiB float64 `json:"go_heap_alloc_mib"`
	GoSysMiB     float64 `json:"go_sys_mib"`
}

// curvesPart runs the scaling, bigread and memory parts that s names.
func curvesPart(ctx context.Context, s settings, bin, root string, res *Result, log io.Writer) error {
	cr := &curvesResult{Load: map[string]string{}}
	res.Curves = cr
	if s.has("scaling") {
		cr.Load["scaling"] = loadAvg()
		if err := scalingPart(ctx, s, bin, root, cr, log); err != nil {
			return err
		}
	}
	if s.has("bigread") {
		for _, size := range s.Curves.BigSizes {
			cr.Load[fmt.Sprintf("bigread %s", sizeName(size))] = loadAvg()
			r, err := bigRead(ctx, s.Curves, bin, filepath.Join(root, "big-"+sizeName(size)), size, log)
			cr.BigRead = append(cr.BigRead, r)
			if err != nil {
				return err
			}
		}
	}
	if s.has("memory") {
		cr.Load["memory"] = loadAvg()
		m, err := memoryPart(ctx, s.Curves, bin, filepath.Join(root, "memory"), log)
		cr.Memory = m
		if err != nil {
			return err
		}
	}
	return nil
}

// sizeName prints a byte size the way --size reads it.
func sizeName(b int64) string {
	switch {
	case b%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", b>>30)
	case b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	}
	return strconv.FormatInt(b, 10)
}

// parseSizes reads --size: a comma-separated list of sizes with a MiB or GiB suffix.
func parseSizes(list string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		unit := int64(0)
		num, ok := strings.CutSuffix(f, "GiB")
		if ok {
			unit = 1 << 30
		} else if num, ok = strings.CutSuffix(f, "MiB"); ok {
			unit = 1 << 20
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if unit == 0 || err != nil || n < 1 || n > 12<<30/unit {
			return nil, fmt.Errorf("--size %q: want sizes such as 64MiB or 1GiB, at most 12GiB (the disk is shared)", f)
		}
		out = append(out, n*unit)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--size %q names no size", list)
	}
	return out, nil
}

// loadedNode is a one-node cluster (--sync=false) whose table tableBig was loaded by ingestion
// while it was stopped, and restarted on it.
type loadedNode struct {
	c                   *testCluster
	partitions, rowsPer int64
	stats               replica.BulkStats
	loadS               float64
	startS              float64
	diskMiB             float64
}

// startLoaded starts one node under dir, creates tableBig, calls before (the empty node's
// measurements; nil for none), stops it, bulk loads partitions partitions of rowsPer rows
// each (value(i, j) their values) into its store, and restarts it.
func startLoaded(ctx context.Context, bin, dir string, partitions, rowsPer int64, valueBytes int, log io.Writer, before func(*testCluster) error) (*loadedNode, error) {
	ddl := []string{
		"CREATE KEYSPACE " + bigKeyspace + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE " + tableBig + " " + tableColumns,
	}
	fmt.Fprintf(log, "perf: starting 1 node, --sync=false, to load %d partitions of %d rows by ingestion\n", partitions, rowsPer)
	c, err := startCluster(ctx, bin, filepath.Dir(dir), filepath.Base(dir), 1, false)
	if err != nil {
		return nil, err
	}
	ln := &loadedNode{c: c, partitions: partitions, rowsPer: rowsPer}
	fail := func(err error) (*loadedNode, error) { return nil, fmt.Errorf("%w%v", err, joinErr(c.stop())) }
	if err := c.exec(ctx, log, ddl...); err != nil {
		return fail(err)
	}
	if before != nil {
		if err := before(c); err != nil {
			return fail(err)
		}
	}
	srv := c.servers[0]
	if errs := c.pc.StopAll(); len(errs) > 0 {
		return fail(fmt.Errorf("stopping the node to load it: %v", errs))
	}
	sc, err := readSchema(srv.DataDir)
	if err != nil {
		return fail(err)
	}
	var tbl *schema.Table
	for _, t := range sc.Tables(bigKeyspace) {
		tbl = t
	}
	if tbl == nil {
		return fail(fmt.Errorf("no table of %s in the node's schema", bigKeyspace))
	}
	start := time.Now()
	st, err := replica.BulkLoad(ctx, filepath.Join(srv.DataDir, "data"), tbl, replica.Options{NoSync: true}, bigRows(tbl, partitions, rowsPer, valueBytes))
	if err != nil {
		return fail(err)
	}
	ln.stats, ln.loadS = st, time.Since(start).Seconds()
	size, err := dirBytes(filepath.Join(srv.DataDir, "data"))
	if err != nil {
		return fail(err)
	}
	ln.diskMiB = float64(size) / (1 << 20)
	fmt.Fprintf(log, "perf: loaded %.0f MiB (%.0f MiB on disk, %d sstables, %d ingestion(s)) in %.1f s\n",
		float64(st.Bytes)/(1<<20), ln.diskMiB, st.Files, st.Ingests, ln.loadS)
	start = time.Now()
	if err := srv.Start(); err != nil {
		return fail(fmt.Errorf("restarting the loaded node: %w", err))
	}
	c.clients = []*client.Client{srv.Client()}
	if err := c.pc.WaitStates(ctx, joinTimeout, c.servers, c.pc.AllUp()); err != nil {
		return fail(err)
	}
	ln.startS = time.Since(start).Seconds()
	return ln, nil
}

// joinErr formats a stop error to append to another.
func joinErr(err error) string {
	if err == nil {
		return ""
	}
	return "; stopping: " + err.Error()
}

// bigKey is partition i's key.
func bigKey(i int64) string { return "big-" + strconv.FormatInt(i, 10) }

// bigRows yields the mutations of partitions partitions of rowsPer rows (c = 0 ... rowsPer-1,
// v valueBytes of random hex, a row marker), in storage order (by token, then key), so that
// the loader's sstables do not overlap and are ingested into the lowest level at once.
func bigRows(tbl *schema.Table, partitions, rowsPer int64, valueBytes int) iter.Seq[*replicapb.Mutation] {
	return func(yield func(*replicapb.Mutation) bool) {
		type part struct {
			token int64
			i     int64
		}
		order := make([]part, partitions)
		for i := range order {
			k := bigKey(int64(i))
			order[i] = part{partitioner.Token(partitioner.AppendKey(nil, [][]byte{[]byte(k)})), int64(i)}
		}
		slices.SortFunc(order, func(a, b part) int {
			return cmp.Or(cmp.Compare(a.token, b.token), strings.Compare(bigKey(a.i), bigKey(b.i)))
		})
		ts := time.Now().UnixMicro()
		rng := rand.NewChaCha8([32]byte{36})
		raw := make([]byte, (valueBytes+1)/2)
		for _, p := range order {
			m := &replicapb.Mutation{TableId: uint64(tbl.ID), PartitionKey: [][]byte{[]byte(bigKey(p.i))}, Token: p.token}
			for j := range rowsPer {
				rng.Read(raw)
				v := []byte(hex.EncodeToString(raw))[:valueBytes]
				m.Rows = append(m.Rows, &replicapb.Row{Clustering: [][]byte{schema.EncodeInt(int32(j))}, Marker: &ts,
					Cells: []*replicapb.Cell{{Column: "v", Value: v, Timestamp: ts}}})
			}
			if !yield(m) {
				return
			}
		}
	}
}

// pointReads reads random rows of the loaded node's table (one row each, CL ONE, gocql
// token-aware, prepared) at rate a second for d, open loop: latency counts from each read's
// intended start.
func pointReads(ctx context.Context, ln *loadedNode, sess *gocql.Session, rate float64, d time.Duration, seed uint64) (readRound, error) {
	n := int64(rate * d.Seconds())
	lat := make([]time.Duration, n)
	var missing, errs int64
	var mu sync.Mutex
	srv0, err := ln.c.cpu()
	if err != nil {
		return readRound{}, err
	}
	start := time.Now()
	oc := drive(ctx, n, 64, rate, func(ctx context.Context, i int64) error {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		p, r := rng.Int64N(ln.partitions), rng.Int64N(ln.rowsPer)
		var v string
		err := sess.Query("SELECT v FROM "+tableBig+" WHERE k = ? AND c = ?", bigKey(p), int32(r)).
			WithContext(ctx).Consistency(gocql.One).Scan(&v)
		lat[i] = time.Since(start.Add(time.Duration(float64(i) / rate * float64(time.Second))))
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			missing++
			return nil
		case err != nil:
			errs++
		}
		return err
	})
	srv1, err := ln.c.cpu()
	if err != nil {
		return readRound{}, err
	}
	if err := ctx.Err(); err != nil {
		return readRound{}, err
	}
	ok := make([]time.Duration, 0, n)
	for _, l := range lat[:oc.Ops] {
		ok = append(ok, l)
	}
	slices.Sort(ok)
	q := func(p float64) float64 {
		if len(ok) == 0 {
			return 0
		}
		return float64(ok[min(len(ok)-1, int(p*float64(len(ok))))].Microseconds()) / 1e3
	}
	rr := readRound{Reads: oc.Ops, Errors: errs, Missing: missing, OpsPerS: perSecond(oc.Accepted, oc.ElapsedS),
		P50MS: q(0.50), P99MS: q(0.99), P999MS: q(0.999), CPUUSRead: ratio(float64(srv1.sub(srv0).Run.Microseconds()), float64(oc.Ops))}
	if errs > 0 || missing > 0 {
		return rr, fmt.Errorf("point reads: %d of %d failed (first: %s), %d found no row", errs, oc.Ops, oc.FirstError, missing)
	}
	return rr, nil
}

// bigRead loads one node with size bytes of rows by ingestion and measures point reads.
func bigRead(ctx context.Context, cs curvesSettings, bin, dir string, size int64, log io.Writer) (r bigReadResult, err error) {
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	rowBytes := int64(cs.BigValueBytes + 90) // the value, and about what its keys and headers add (its cell and its marker)
	rowsPer := int64(cs.BigRowsPerPartition)
	r.TargetBytes = size
	r.Partitions = max(1, size/(rowBytes*rowsPer))
	r.Rows = r.Partitions * rowsPer
	ln, err := startLoaded(ctx, bin, dir, r.Partitions, rowsPer, cs.BigValueBytes, log, nil)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, ln.c.stop()) }()
	r.LoadedMiB, r.DiskMiB, r.LoadS, r.Files, r.Ingests, r.StartS = float64(ln.stats.Bytes)/(1<<20), ln.diskMiB, ln.loadS, ln.stats.Files, ln.stats.Ingests, ln.startS
	sess, err := gocqlSession(ln.c.cqlAddrs(), true)
	if err != nil {
		return r, err
	}
	defer sess.Close()
	if _, err := pointReads(ctx, ln, sess, cs.BigRate, cs.BigPhase/2, 1); err != nil { // warm: connections, prepared statement
		return r, err
	}
	var p50, p99, cpu []float64
	for round := range cs.BigRounds {
		rr, err := pointReads(ctx, ln, sess, cs.BigRate, cs.BigPhase, uint64(10+round))
		r.Rounds = append(r.Rounds, rr)
		if err != nil {
			return r, err
		}
		p50, p99, cpu = append(p50, rr.P50MS), append(p99, rr.P99MS), append(cpu, rr.CPUUSRead)
		fmt.Fprintf(log, "perf: bigread %s %d/%d: %.0f reads/s, p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, %.0f µs server CPU/read\n",
			sizeName(size), round+1, cs.BigRounds, rr.OpsPerS, rr.P50MS, rr.P99MS, rr.P999MS, rr.CPUUSRead)
	}
	r.P50MS, r.P99MS, r.CPUUSRead = span(p50), span(p99), span(cpu)
	if m, err := readMemory(ln.c.servers[0].Proc().Pid()); err == nil {
		r.RSSMiB = m.rssMiB
	}
	return r, nil
}

// memoryPart measures one node's memory empty and holding cs.MemPartitions partitions of one
// small row, loaded by ingestion.
func memoryPart(ctx context.Context, cs curvesSettings, bin, dir string, log io.Writer) (m *memoryResult, err error) {
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	m = &memoryResult{Partitions: cs.MemPartitions}
	ln, err := startLoaded(ctx, bin, dir, cs.MemPartitions, 1, 16, log, func(c *testCluster) error {
		s, err := sampleMemory(ctx, c)
		m.Empty = s
		return err
	})
	if err != nil {
		return m, err
	}
	defer func() { err = errors.Join(err, ln.c.stop()) }()
	m.LoadedMiB, m.DiskMiB, m.LoadS = float64(ln.stats.Bytes)/(1<<20), ln.diskMiB, ln.loadS
	if m.Started, err = sampleMemory(ctx, ln.c); err != nil {
		return m, err
	}
	sess, err := gocqlSession(ln.c.cqlAddrs(), true)
	if err != nil {
		return m, err
	}
	defer sess.Close()
	if m.Reads, err = pointReads(ctx, ln, sess, cs.BigRate, cs.MemReadPhase, 1); err != nil {
		return m, err
	}
	m.AfterReads, err = sampleMemory(ctx, ln.c)
	fmt.Fprintf(log, "perf: memory: empty RSS %.0f MiB (heap %.0f MiB); %d partitions: RSS %.0f MiB (heap %.0f MiB) at start, %.0f MiB (heap %.0f MiB) after %v of reads (p99 %.2f ms)\n",
		m.Empty.RSSMiB, m.Empty.HeapInuseMiB, m.Partitions, m.Started.RSSMiB, m.Started.HeapInuseMiB, m.AfterReads.RSSMiB, m.AfterReads.HeapInuseMiB, cs.MemReadPhase, m.Reads.P99MS)
	return m, err
}

// sampleMemory reads the one node's resident set from /proc and its Go heap from /metrics.
func sampleMemory(ctx context.Context, c *testCluster) (memSample, error) {
	srv := c.servers[0]
	mem, err := readMemory(srv.Proc().Pid())
	if err != nil {
		return memSample{}, err
	}
	vals, err := scrapeValues(ctx, srv.MetricsAddr, "go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_sys_bytes")
	if err != nil {
		return memSample{}, err
	}
	return memSample{RSSMiB: mem.rssMiB, HeapInuseMiB: vals[0] / (1 << 20), HeapAllocMiB: vals[1] / (1 << 20), GoSysMiB: vals[2] / (1 << 20)}, nil
}

// scrapeValues reads the values of the unlabelled metrics names from a node's /metrics.
func scrapeValues(ctx context.Context, addr string, names ...string) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := make([]float64, len(names))
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if i := slices.Index(names, name); i >= 0 {
			v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil {
				return nil, fmt.Errorf("metrics of %s: %s is %q", addr, name, val)
			}
			out[i] = v
			found++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if found != len(names) {
		return nil, fmt.Errorf("metrics of %s: found %d of %v", addr, found, names)
	}
	return out, nil
}

// writeText prints the scaling curves' sections.
func (cr *curvesResult) writeText(b *strings.Builder, cs curvesSettings) {
	if len(cr.ScalingRanges) > 0 {
		fmt.Fprintf(b, "\n## Scaling: throughput per server core at 1 and 3 nodes (--sync=false, gocql token-aware)\n\n")
		fmt.Fprintf(b, "Closed loop, %d workers, %d partitions written first; %d round(s) of %v per phase, writes and reads (the whole partition, up to 16 rows) alternating; min / median / max over rounds. Load at start: %s\n\n",
			cs.Workers, cs.Partitions, cs.Rounds, cs.Phase, cr.Load["scaling"])
		fmt.Fprintf(b, "| nodes | table | op | ops/s | p99 ms | server cores | ops/s per server core | µs server CPU / op |\n|---:|---|---|---|---|---|---|---|\n")
		for _, r := range cr.ScalingRanges {
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", r.Nodes, r.Kind, r.Op, rng3(r.OpsPerS, "%.0f"), rng3(r.P99MS, "%.2f"),
				rng3(r.Cores, "%.2f"), rng3(r.OpsPerCore, "%.0f"), rng3(r.CPUUSOp, "%.0f"))
		}
	}
	if len(cr.BigRead) > 0 {
		fmt.Fprintf(b, "\n## Point reads of one node as its data grows (loaded by ingestion)\n\n")
		fmt.Fprintf(b, "One node (--sync=false, RF 1), rows of %d bytes of random hex, %d to a partition, bulk loaded as sstables of merge operands (replica.BulkLoader) and ingested; then point reads of random rows (CL ONE, gocql token-aware, prepared) at %.0f/s open loop, %d round(s) of %v; min / median / max over rounds.\n\n",
			cs.BigValueBytes, cs.BigRowsPerPartition, cs.BigRate, cs.BigRounds, cs.BigPhase)
		fmt.Fprintf(b, "| size | partitions | loaded MiB | on disk MiB | load s | p50 ms | p99 ms | µs server CPU / read | RSS MiB | load at start |\n|---|---:|---:|---:|---:|---|---|---|---:|---|\n")
		for _, r := range cr.BigRead {
			fmt.Fprintf(b, "| %s | %d | %.0f | %.0f | %.1f | %s | %s | %s | %.0f | %s |\n", sizeName(r.TargetBytes), r.Partitions, r.LoadedMiB, r.DiskMiB, r.LoadS,
				rng3(r.P50MS, "%.2f"), rng3(r.P99MS, "%.2f"), rng3(r.CPUUSRead, "%.0f"), r.RSSMiB, cr.Load["bigread "+sizeName(r.TargetBytes)])
		}
	}
	if m := cr.Memory; m != nil {
		fmt.Fprintf(b, "\n## One node's memory at %d partitions (loaded by ingestion)\n\n", m.Partitions)
		fmt.Fprintf(b, "Loaded %.0f MiB (%.0f MiB on disk) in %.1f s; reads: %.0f/s for %v, p99 %.2f ms. Load at start: %s\n\n", m.LoadedMiB, m.DiskMiB, m.LoadS, m.Reads.OpsPerS, cs.MemReadPhase, m.Reads.P99MS, cr.Load["memory"])
		fmt.Fprintf(b, "| node | RSS MiB | Go heap in use MiB | Go heap allocated MiB | Go sys MiB |\n|---|---:|---:|---:|---:|\n")
		for _, r := range []struct {
			name string
			s    memSample
		}{{"empty (the table created)", m.Empty}, {"loaded, idle after start", m.Started}, {"loaded, after the reads", m.AfterReads}} {
			fmt.Fprintf(b, "| %s | %.0f | %.0f | %.0f | %.0f |\n", r.name, r.s.RSSMiB, r.s.HeapInuseMiB, r.s.HeapAllocMiB, r.s.GoSysMiB)
		}
	}
}

// rng3 prints min / median / max, or one value when they agree at the precision.
func rng3(v [3]float64, f string) string {
	lo, mid, hi := fmt.Sprintf(f, v[0]), fmt.Sprintf(f, v[1]), fmt.Sprintf(f, v[2])
	if lo == hi {
		return mid
	}
	return lo + " / " + mid + " / " + hi
}
