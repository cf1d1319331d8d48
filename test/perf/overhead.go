package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/tool/bench"
)

// The single-node tables of the overhead comparison: the same columns, one with limits that
// never reject and one with none.
const (
	tableLimited   = "perf_one.limited"
	tableUnlimited = "perf_one.unlimited"
)

// loadRows writes every row kvnode bench's cold partitions 0 ... partitions-1 can hold in
// table, once each, through the first node.
func loadRows(ctx context.Context, c *testCluster, table string, partitions, workers int) error {
	rows := int64(partitions * bench.RowsPerPartition)
	oc := drive(ctx, rows, workers, 0, func(ctx context.Context, i int64) error {
		stmt := fmt.Sprintf("INSERT INTO %s (k, c, v) VALUES ('cold-%d', %d, 'value-%08d')", table, i/bench.RowsPerPartition, i%bench.RowsPerPartition, i)
		_, err := c.clients[0].Execute(ctx, client.Quorum, stmt)
		return err
	})
	if oc.Accepted != rows {
		return fmt.Errorf("loading %s: %d of %d rows written; first error: %s", table, oc.Accepted, rows, oc.FirstError)
	}
	return ctx.Err()
}

// overheadSide is one table's run in a pair.
type overheadSide struct {
	OpsPerS float64 `json:"ops_per_s"`
	// CPUPerOpNS is the server's CPU per accepted operation, in nanoseconds.
	CPUPerOpNS float64 `json:"server_cpu_ns_per_op"`
}

// overheadPair is one repetition: the same workload on both tables, back to back.
type overheadPair struct {
	Unlimited overheadSide `json:"unlimited"`
	Limited   overheadSide `json:"limited"`
	Overhead  float64      `json:"overhead"` // 1 - Limited.OpsPerS/Unlimited.OpsPerS
}

// overheadResult is the limiter's overhead on one operation kind.
type overheadResult struct {
	Op    string         `json:"op"` // "write" or "read"
	Pairs []overheadPair `json:"pairs"`
	// Overhead is the median over the pairs of 1 - limited/unlimited throughput: the headline,
	// because a burst of other work on a shared machine moves single pairs, not the median.
	Overhead float64 `json:"overhead"`
	// Pooled is 1 - (sum of limited throughputs)/(sum of unlimited throughputs).
	Pooled float64 `json:"overhead_pooled"`
	// Min and Max are the smallest and largest overhead of a single pair.
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	// CPUOverhead is the median over the pairs of limited/unlimited server CPU per op, minus 1:
	// the limiter's cost seen from the server's CPU accounting rather than from throughput.
	CPUOverhead float64 `json:"server_cpu_overhead"`
	// Resolution is the smallest overhead this run can tell from none: twice the standard error
	// of the median pair's overhead (a 95% interval's half width), from the spread of the pairs.
	Resolution float64 `json:"resolution"`
}

// median returns the median of vs (the mean of the middle two for an even count), 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// summarizeOverhead fills in the totals of r from its pairs.
func summarizeOverhead(r *overheadResult) {
	var lim, unl float64
	var ovs, cpus []float64
	for i := range r.Pairs {
		p := &r.Pairs[i]
		p.Overhead = 1 - ratio(p.Limited.OpsPerS, p.Unlimited.OpsPerS)
		lim += p.Limited.OpsPerS
		unl += p.Unlimited.OpsPerS
		ovs = append(ovs, p.Overhead)
		cpus = append(cpus, ratio(p.Limited.CPUPerOpNS, p.Unlimited.CPUPerOpNS)-1)
	}
	r.Overhead = median(ovs)
	r.Pooled = 1 - ratio(lim, unl)
	r.CPUOverhead = median(cpus)
	if len(ovs) > 0 {
		r.Min, r.Max = slices.Min(ovs), slices.Max(ovs)
	}
	r.Resolution = resolution(ovs)
}

// resolution returns twice the standard error of the median of vs, 0 for fewer than two values:
// the standard error of their mean (the sample standard deviation over the square root of the
// count) times medianSEFactor. Before 4459d97 it was the mean's alone, which understated the
// median's by a sixth for 8 pairs.
func resolution(vs []float64) float64 {
	n := float64(len(vs))
	if n < 2 {
		return 0
	}
	var sum, sq float64
	for _, v := range vs {
		sum += v
	}
	mean := sum / n
	for _, v := range vs {
		sq += (v - mean) * (v - mean)
	}
	return 2 * medianSEFactor(len(vs)) * math.Sqrt(sq/(n-1)) / math.Sqrt(n)
}

// medianSEFactor returns the standard error of the median of n values drawn from one normal
// distribution over that of their mean, from a simulation with a fixed seed: about 1.16 for 3
// or 8 values and 1.20 for 16 (a median of an even count averages the middle two), approaching
// √(π/2) ≈ 1.25 for many.
func medianSEFactor(n int) float64 {
	const draws = 20_000
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	vs := make([]float64, n)
	var sum, sq float64
	for range draws {
		for i := range vs {
			vs[i] = rng.NormFloat64()
		}
		m := median(vs)
		sum += m
		sq += m * m
	}
	mean := sum / draws
	return math.Sqrt((sq/draws - mean*mean) * float64(n))
}

// limiterOverhead measures, on a one-node cluster, closed-loop read and then write throughput
// of tableLimited (limits 2^31-1: every operation accounted and admitted) against tableUnlimited
// (no limit: the limiter is skipped). Each repetition runs both tables back to back, and the
// order alternates between repetitions (A B, B A, A B, ...) so that a drift in the machine's
// speed falls on both sides alike. Reads come first, on tables loaded with the same rows once
// each (every row the read workload can touch), so both read the same data in the same state;
// the write phases that follow leave the tables with different numbers of overwritten versions.
// The load goes over the native protocol (gocql, prepared statements), one session per table,
// opened once.
func limiterOverhead(ctx context.Context, s settings, c *testCluster, log io.Writer) ([]overheadResult, error) {
	cfg := func(table string, writes float64, d time.Duration, seed uint64) bench.Config {
		return bench.Config{
			Protocol: bench.ProtocolCQL, Addrs: c.cqlAddrs(), Coordinator: bench.Fixed, Table: table, Writes: writes,
			Consistency: client.Quorum, Partitions: s.OverheadPartitions, Concurrency: s.OverheadConcurrency,
			Duration: d, Seed: seed,
		}
	}
	sessions := map[string]*bench.Session{}
	for _, t := range []string{tableUnlimited, tableLimited} {
		sess, err := bench.Open(ctx, cfg(t, 0, time.Second, 1))
		if err != nil {
			return nil, err
		}
		defer sess.Close()
		sessions[t] = sess
	}
	run := func(table string, writes float64, d time.Duration, seed uint64) (overheadSide, error) {
		before, err := c.cpu()
		if err != nil {
			return overheadSide{}, err
		}
		sum, err := sessions[table].Run(ctx, cfg(table, writes, d, seed), nil)
		if err != nil {
			return overheadSide{}, err
		}
		after, err := c.cpu()
		if err != nil {
			return overheadSide{}, err
		}
		if err := ctx.Err(); err != nil {
			return overheadSide{}, err
		}
		if n := sum.Rejected() + sum.Failed(); n > 0 {
			return overheadSide{}, fmt.Errorf("%s: %d of %d operations were not accepted (rejected %d, errors %v)",
				table, n, sum.Offered, sum.Rejected(), sum.Errors)
		}
		return overheadSide{
			OpsPerS:    perSecond(sum.Accepted, sum.DurationS),
			CPUPerOpNS: ratio(float64(after.sub(before).Run), float64(sum.Accepted)),
		}, nil
	}
	for _, t := range []string{tableUnlimited, tableLimited} {
		if err := loadRows(ctx, c, t, s.OverheadPartitions, s.OverheadConcurrency); err != nil {
			return nil, err
		}
	}
	var out []overheadResult
	for _, op := range []struct {
		name   string
		writes float64
	}{{"read", 0}, {"write", 1}} {
		for _, t := range []string{tableUnlimited, tableLimited} {
			if _, err := run(t, op.writes, s.OverheadWarm, 1); err != nil {
				return nil, err
			}
		}
		r := overheadResult{Op: op.name}
		for rep := range s.OverheadReps {
			var p overheadPair
			order := []string{tableUnlimited, tableLimited}
			if rep%2 == 1 {
				order = []string{tableLimited, tableUnlimited}
			}
			for _, t := range order {
				v, err := run(t, op.writes, s.OverheadPhase, uint64(10+rep))
				if err != nil {
					return nil, err
				}
				if t == tableLimited {
					p.Limited = v
				} else {
					p.Unlimited = v
				}
			}
			r.Pairs = append(r.Pairs, p)
			fmt.Fprintf(log, "perf: overhead %s %d/%d: unlimited %.0f ops/s (%.1f µs server CPU/op), limited %.0f ops/s (%.1f µs)\n",
				op.name, rep+1, s.OverheadReps, p.Unlimited.OpsPerS, p.Unlimited.CPUPerOpNS/1e3, p.Limited.OpsPerS, p.Limited.CPUPerOpNS/1e3)
		}
		summarizeOverhead(&r)
		out = append(out, r)
	}
	return out, nil
}
