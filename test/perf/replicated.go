package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/tool/bench"
)

// replicatedSettings are the replicated part's sizes: Rounds rounds, each a phase of RF-3
// QUORUM writes and one of RF-1 writes at ONE per binary (kvnode, and the parent commit's with
// --parent-kvnode), Phase long, closed loop from Workers workers over Partitions partitions.
type replicatedSettings struct {
	Rounds     int           `json:"rounds"`
	Phase      time.Duration `json:"-"`
	Warm       time.Duration `json:"-"` // unmeasured, per binary and table, before the rounds
	Workers    int           `json:"workers"`
	Partitions int           `json:"partitions"`
}

// MarshalJSON encodes r with its durations in seconds.
func (r replicatedSettings) MarshalJSON() ([]byte, error) {
	type plain replicatedSettings
	return json.Marshal(struct {
		plain
		PhaseS float64 `json:"phase_s"`
		WarmS  float64 `json:"warm_s"`
	}{plain(r), r.Phase.Seconds(), r.Warm.Seconds()})
}

// replicatedPhase is one measured phase of the replicated part.
type replicatedPhase struct {
	Round    int     `json:"round"`
	Server   string  `json:"server"` // "kvnode" or "parent"
	Kind     string  `json:"kind"`   // "rf3_quorum" or "rf1_one"
	Accepted int64   `json:"accepted"`
	OpsPerS  float64 `json:"ops_per_s"`
	P99MS    float64 `json:"p99_ms"`
	CPUUSOp  float64 `json:"server_cpu_us_per_op"` // the 3 servers together
}

// replicatedServer is the medians over rounds of one binary's phases.
type replicatedServer struct {
	RF3OpsPerS float64 `json:"rf3_quorum_writes_per_s"`
	RF1OpsPerS float64 `json:"rf1_one_writes_per_s"`
	RF3CPUUS   float64 `json:"rf3_quorum_cpu_us_per_write"`
	RF1CPUUS   float64 `json:"rf1_one_cpu_us_per_write"`
	// CostRatio is the median over rounds of the round's RF-3 over RF-1 CPU per write.
	CostRatio float64 `json:"replicated_write_cost_ratio"`
}

// replicatedResult is what the replicated part measured.
type replicatedResult struct {
	Phases  []replicatedPhase           `json:"phases"`
	Servers map[string]replicatedServer `json:"servers"`
	// ThroughputOverParent is the median over rounds of kvnode's RF-3 QUORUM writes/s over the
	// parent's in the same round (0 without --parent-kvnode).
	ThroughputOverParent float64 `json:"rf3_quorum_throughput_over_parent,omitempty"`
}

// The tables of the replicated part, on its own 3-node cluster (--sync=false).
const (
	tableRepl3 = "perf_repl3.t" // RF 3, written at QUORUM
	tableRepl1 = "perf_repl1.t" // RF 1, written at ONE
)

// replicatedTarget is issue 36's bound on replicated_write_cost_ratio, and its bound on RF-3
// QUORUM write throughput over the parent commit's.
const (
	targetReplicatedCost   = 3.0
	targetReplicatedParent = 1.5
)

// replicatedPart measures the server CPU of an RF-3 QUORUM write against an RF-1 write at ONE
// on one 3-node cluster (--sync=false) through one gocql token-aware client per table, in
// rounds whose phases alternate; with parentBin, a second 3-node cluster of the parent binary
// runs beside it and takes its phases in the same rounds, the binaries' order rotating.
func replicatedPart(ctx context.Context, s settings, bin, parentBin, root string, res *Result, log io.Writer) error {
	ddl := []string{
		"CREATE KEYSPACE perf_repl3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE " + tableRepl3 + " " + tableColumns,
		"CREATE KEYSPACE perf_repl1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE " + tableRepl1 + " " + tableColumns,
	}
	var servers []replServer
	run := func() error { return measureReplicated(ctx, s, servers, res, log) }
	withServer := func(name, b string, next func() error) func() error {
		return func() error {
			return withCluster(ctx, b, root, "repl-"+name, 3, false, ddl, log, func(c *testCluster) error {
				servers = append(servers, replServer{name: name, c: c})
				return next()
			})
		}
	}
	if parentBin != "" {
		run = withServer("parent", parentBin, run)
	}
	return withServer("kvnode", bin, run)()
}

// replServer is one cluster of the replicated part.
type replServer struct {
	name string
	c    *testCluster
}

// measureReplicated runs the replicated part's rounds over servers.
func measureReplicated(ctx context.Context, s settings, servers []replServer, res *Result, log io.Writer) error {
	rs := s.Replicated
	kinds := []struct {
		kind, table string
		cl          client.Consistency
	}{{"rf3_quorum", tableRepl3, client.Quorum}, {"rf1_one", tableRepl1, client.One}}
	cfg := func(c *testCluster, table string, cl client.Consistency, d time.Duration, seed uint64) bench.Config {
		return bench.Config{Protocol: bench.ProtocolCQL, Addrs: c.cqlAddrs(), Coordinator: bench.TokenAware, Table: table,
			Writes: 1, Consistency: cl, Partitions: rs.Partitions, Concurrency: rs.Workers, Duration: d, Seed: seed}
	}
	sessions := map[string]*bench.Session{}
	for _, sv := range servers {
		for _, k := range kinds {
			sess, err := bench.Open(ctx, cfg(sv.c, k.table, k.cl, time.Second, 1))
			if err != nil {
				return fmt.Errorf("%s %s: %w", sv.name, k.table, err)
			}
			defer sess.Close()
			sessions[sv.name+k.kind] = sess
			if _, err := sess.Run(ctx, cfg(sv.c, k.table, k.cl, rs.Warm, 1), nil); err != nil {
				return err
			}
		}
	}
	rr := &replicatedResult{Servers: map[string]replicatedServer{}}
	for round := range rs.Rounds {
		for i := range servers {
			sv := servers[(i+round)%len(servers)]
			order := kinds
			if round%2 == 1 {
				order = []struct {
					kind, table string
					cl          client.Consistency
				}{kinds[1], kinds[0]}
			}
			for _, k := range order {
				before, err := sv.c.cpu()
				if err != nil {
					return err
				}
				sum, err := sessions[sv.name+k.kind].Run(ctx, cfg(sv.c, k.table, k.cl, rs.Phase, uint64(10+round)), nil)
				if err != nil {
					return err
				}
				after, err := sv.c.cpu()
				if err != nil {
					return err
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				if n := sum.Rejected() + sum.Failed(); n > 0 || sum.Accepted == 0 {
					return fmt.Errorf("replicated %s %s: %d accepted, %d not (errors %v)", sv.name, k.kind, sum.Accepted, n, sum.Errors)
				}
				p := replicatedPhase{Round: round, Server: sv.name, Kind: k.kind, Accepted: sum.Accepted,
					OpsPerS: perSecond(sum.Accepted, sum.DurationS), P99MS: sum.LatencyMS.P99,
					CPUUSOp: ratio(float64(after.sub(before).Run), float64(sum.Accepted)) / 1e3}
				rr.Phases = append(rr.Phases, p)
				fmt.Fprintf(log, "perf: replicated %d/%d %s %s: %.0f writes/s, %.1f µs server CPU/write\n",
					round+1, rs.Rounds, sv.name, k.kind, p.OpsPerS, p.CPUUSOp)
			}
		}
	}
	for _, sv := range servers {
		var ops3, ops1, cpu3, cpu1, ratios []float64
		for round := range rs.Rounds {
			a, b := rr.phase(round, sv.name, "rf3_quorum"), rr.phase(round, sv.name, "rf1_one")
			ops3, ops1 = append(ops3, a.OpsPerS), append(ops1, b.OpsPerS)
			cpu3, cpu1 = append(cpu3, a.CPUUSOp), append(cpu1, b.CPUUSOp)
			ratios = append(ratios, ratio(a.CPUUSOp, b.CPUUSOp))
		}
		rr.Servers[sv.name] = replicatedServer{RF3OpsPerS: median(ops3), RF1OpsPerS: median(ops1),
			RF3CPUUS: median(cpu3), RF1CPUUS: median(cpu1), CostRatio: median(ratios)}
	}
	if len(servers) > 1 {
		var vs []float64
		for round := range rs.Rounds {
			vs = append(vs, ratio(rr.phase(round, "kvnode", "rf3_quorum").OpsPerS, rr.phase(round, "parent", "rf3_quorum").OpsPerS))
		}
		rr.ThroughputOverParent = median(vs)
	}
	res.Replicated = rr
	k := rr.Servers["kvnode"]
	fmt.Fprintf(log, "perf: replicated: RF-3 QUORUM %.1f µs/write, RF-1 ONE %.1f µs/write, ratio %.2f; RF-3 %.0f writes/s\n",
		k.RF3CPUUS, k.RF1CPUUS, k.CostRatio, k.RF3OpsPerS)
	return nil
}

// phase returns the phase of server and kind in round (zero if none).
func (rr *replicatedResult) phase(round int, server, kind string) replicatedPhase {
	for _, p := range rr.Phases {
		if p.Round == round && p.Server == server && p.Kind == kind {
			return p
		}
	}
	return replicatedPhase{}
}

// targets lists issue 36's targets on replicated writes.
func (rr *replicatedResult) targets() []target {
	k := rr.Servers["kvnode"]
	out := []target{{"replicated_write_cost_ratio: server CPU of an RF-3 QUORUM write ≤ 3.0 × an RF-1 write's (3 nodes, gocql token-aware)",
		fmt.Sprintf("%.2f (%.1f / %.1f µs; %.0f RF-3 QUORUM writes/s)", k.CostRatio, k.RF3CPUUS, k.RF1CPUUS, k.RF3OpsPerS),
		k.CostRatio > 0 && k.CostRatio <= targetReplicatedCost}}
	if p, ok := rr.Servers["parent"]; ok {
		out = append(out, target{"RF-3 QUORUM write throughput of 3 nodes ≥ 1.5 × the parent commit's, same run",
			fmt.Sprintf("%.2f (%.0f / %.0f writes/s; parent's cost ratio %.2f)", rr.ThroughputOverParent, k.RF3OpsPerS, p.RF3OpsPerS, p.CostRatio),
			rr.ThroughputOverParent >= targetReplicatedParent})
	}
	return out
}

// writeText prints the replicated part as a Markdown table.
func (rr *replicatedResult) writeText(b *strings.Builder, rs replicatedSettings) {
	fmt.Fprintf(b, "\n## Replicated writes (3 nodes, --sync=false, gocql token-aware)\n\n")
	fmt.Fprintf(b, "Closed loop, %d workers, %d partitions; %d round(s) of %v per phase, RF-3 QUORUM and RF-1 ONE alternating; server CPU summed over the 3 processes; medians over rounds.\n\n",
		rs.Workers, rs.Partitions, rs.Rounds, rs.Phase)
	fmt.Fprintf(b, "| binary | RF-3 QUORUM writes/s | µs CPU / write | RF-1 ONE writes/s | µs CPU / write | cost ratio |\n|---|---:|---:|---:|---:|---:|\n")
	for _, name := range []string{"kvnode", "parent"} {
		if v, ok := rr.Servers[name]; ok {
			fmt.Fprintf(b, "| %s | %.0f | %.1f | %.0f | %.1f | %.2f |\n", name, v.RF3OpsPerS, v.RF3CPUUS, v.RF1OpsPerS, v.RF1CPUUS, v.CostRatio)
		}
	}
	if rr.ThroughputOverParent > 0 {
		fmt.Fprintf(b, "\nRF-3 QUORUM throughput, kvnode over parent (median of rounds): %.2f\n", rr.ThroughputOverParent)
	}
}
