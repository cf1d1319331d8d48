package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/bench"
)

// maxLimit is the largest per_partition_rate_limit value (2^31-1): a limit that never rejects.
const maxLimit = 1<<31 - 1

// rejectKey is the partition every rejection-cost write goes to: kvnode bench's hot partition.
const rejectKey = bench.HotTextKey

// rejectPhase counts the outcomes of one measured phase of writes.
type rejectPhase struct {
	Offered       int64   `json:"offered"`
	Accepted      int64   `json:"accepted"`
	ByCoordinator int64   `json:"rejected_by_coordinator"`
	ByReplicas    int64   `json:"rejected_by_replicas"`
	Dropped       int64   `json:"dropped"` // not sent: the open-loop queue was full
	ElapsedS      float64 `json:"elapsed_s"`
}

// rejected returns the rate-limited writes.
func (p rejectPhase) rejected() int64 { return p.ByCoordinator + p.ByReplicas }

// rejectCost is the server CPU of accepted and of rejected writes on one limiter path.
type rejectCost struct {
	Path string `json:"path"` // "coordinator" or "replicas"
	Sync bool   `json:"sync"`
	// Setup says how the path was obtained (replication factor, coordinators).
	Setup        string      `json:"setup"`
	AcceptPhase  rejectPhase `json:"accept_phase"`
	RejectPhase  rejectPhase `json:"reject_phase"`
	IdleCPUPerS  float64     `json:"idle_cpu_us_per_s"`   // the servers' CPU when idle, subtracted
	CPUAcceptNS  float64     `json:"cpu_ns_per_accepted"` // server CPU per accepted write
	CPURejectNS  float64     `json:"cpu_ns_per_rejected"` // server CPU per rejected write
	Ratio        float64     `json:"ratio"`               // CPURejectNS / CPUAcceptNS
	RatioByTicks float64     `json:"ratio_by_stat_ticks"` // the same from /proc/<pid>/stat utime+stime
}

// idleWindows is how many windows idleCPU measures; it keeps the quietest.
const idleWindows = 3

// idleCPU measures the servers' CPU per second of wall time while nothing is sent to them
// (gossip, timers), to subtract from the phases: the least of idleWindows windows of d each,
// because a window can catch leftover work of the previous phase (a flush, a compaction) that
// is not idle cost.
func idleCPU(ctx context.Context, c *testCluster, d time.Duration) (cpuSample, error) {
	var least cpuSample
	for i := range idleWindows {
		before, err := c.cpu()
		if err != nil {
			return cpuSample{}, err
		}
		start := time.Now()
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return cpuSample{}, ctx.Err()
		case <-timer.C:
		}
		after, err := c.cpu()
		if err != nil {
			return cpuSample{}, err
		}
		el := time.Since(start).Seconds()
		used := after.sub(before)
		rate := cpuSample{Run: time.Duration(float64(used.Run) / el), Ticks: time.Duration(float64(used.Ticks) / el)}
		if i == 0 || rate.Run < least.Run {
			least = rate
		}
	}
	return least, nil
}

// coordinators are the nodes that coordinate a path's writes.
type coordinators struct {
	policy  bench.Coordinator // RoundRobin over all, or Fixed to the one
	addrs   []string
	clients []*client.Client // connected to addrs, in order
}

// pick returns the coordinator of write i.
func (c coordinators) pick(i int64) *client.Client {
	if c.policy == bench.Fixed {
		return c.clients[0]
	}
	return c.clients[i%int64(len(c.clients))]
}

// hotInsert returns the statement of write i to table's partition rejectKey: one of 1024 rows.
func hotInsert(table string) func(i int64) string {
	return func(i int64) string {
		return fmt.Sprintf("INSERT INTO %s (k, c, v) VALUES ('%s', %d, 'value-%08d')", table, rejectKey, i%1024, i)
	}
}

// runWrites runs one phase of writes to table's partition rejectKey and returns its outcomes:
// closed loop, s.RejectOps writes from s.RejectConcurrency workers (warm: s.RejectWarmOps),
// or with s.RejectRate > 0 open loop at that rate for s.RejectDuration (warm: s.RejectWarm).
func runWrites(ctx context.Context, s settings, table string, co coordinators, warm bool) (rejectPhase, error) {
	start := time.Now()
	if s.RejectRate == 0 {
		n := int64(s.RejectOps)
		if warm {
			n = int64(s.RejectWarmOps)
		}
		oc := drive(ctx, co.pick, hotInsert(table), n, s.RejectConcurrency)
		if oc.Errors > 0 {
			return rejectPhase{}, fmt.Errorf("%d of %d writes to %s failed; first: %s", oc.Errors, oc.Ops, table, oc.FirstError)
		}
		return rejectPhase{Offered: oc.Ops, Accepted: oc.Accepted, ByCoordinator: oc.ByCoordinator, ByReplicas: oc.ByReplicas,
			ElapsedS: time.Since(start).Seconds()}, ctx.Err()
	}
	cfg := bench.Config{Addrs: co.addrs, Coordinator: co.policy, Table: table, Writes: 1, Consistency: client.Quorum,
		Hot: 1, Rate: s.RejectRate, Concurrency: s.RejectConcurrency, Duration: s.RejectDuration, Seed: 7}
	if warm {
		cfg.Duration = s.RejectWarm
	}
	sum, err := bench.Execute(ctx, cfg, nil)
	if err != nil {
		return rejectPhase{}, err
	}
	dropped := sum.Errors[bench.ErrorDropped]
	if n := sum.Failed() - dropped; n > 0 {
		return rejectPhase{}, fmt.Errorf("%d of %d writes to %s failed: %v", n, sum.Offered, table, sum.Errors)
	}
	return rejectPhase{Offered: sum.Offered, Accepted: sum.Accepted, ByCoordinator: sum.RejectedByCoordinator,
		ByReplicas: sum.RejectedByReplicas, Dropped: dropped, ElapsedS: time.Since(start).Seconds()}, ctx.Err()
}

// measureRejectCost measures one limiter path: a fixed number of writes to one partition of
// table with the write limit at maxLimit (all accepted), then as many with the limit at 1 on
// the partition already hot (almost all rejected). Each measured phase follows an unmeasured
// one of the same load that warms the connections and, under limit 1, the partition's
// counters. co chooses the coordinators; want says who must reject. The servers' CPU is read
// before and after each measured phase; idle is their CPU per second at rest, subtracted over
// the phase's wall time.
//
// By default the writes run closed loop, as fast as s.RejectConcurrency workers get answers:
// the servers stay busy, the regime of an overload. At a low open-loop rate (--reject-rate) a
// server's CPU per request is dominated instead by what every request pays to wake an idle
// process (system calls, the Go scheduler looking for work before it parks), accepted or not.
func measureRejectCost(ctx context.Context, s settings, c *testCluster, table string, co coordinators,
	want client.RejectedBy, synced bool, idle cpuSample, log io.Writer) (rejectCost, error) {
	rc := rejectCost{Path: string(want), Sync: synced, IdleCPUPerS: float64(idle.Run) / 1e3}
	phase := func(limit int) (rejectPhase, cpuSample, error) {
		if err := c.exec(ctx, log, alterLimit(table, 0, limit)); err != nil {
			return rejectPhase{}, cpuSample{}, err
		}
		if _, err := runWrites(ctx, s, table, co, true); err != nil {
			return rejectPhase{}, cpuSample{}, err
		}
		before, err := c.cpu()
		if err != nil {
			return rejectPhase{}, cpuSample{}, err
		}
		p, err := runWrites(ctx, s, table, co, false)
		if err != nil {
			return rejectPhase{}, cpuSample{}, err
		}
		after, err := c.cpu()
		if err != nil {
			return rejectPhase{}, cpuSample{}, err
		}
		used := after.sub(before)
		used.Run -= time.Duration(float64(idle.Run) * p.ElapsedS)
		used.Ticks -= time.Duration(float64(idle.Ticks) * p.ElapsedS)
		return p, used, nil
	}
	var accCPU, rejCPU cpuSample
	var err error
	if rc.AcceptPhase, accCPU, err = phase(maxLimit); err != nil {
		return rc, err
	}
	if rc.AcceptPhase.Accepted == 0 {
		return rc, fmt.Errorf("no write to %s was accepted under limit %d", table, maxLimit)
	}
	if rc.RejectPhase, rejCPU, err = phase(1); err != nil {
		return rc, err
	}
	rejected := rc.RejectPhase.rejected()
	wrongPath := rc.RejectPhase.ByReplicas
	if want == client.RejectedByReplicas {
		wrongPath = rc.RejectPhase.ByCoordinator
	}
	if rejected == 0 || wrongPath > 0 {
		return rc, fmt.Errorf("writes to %s under limit 1: %d rejected by coordinator, %d by replicas; want all rejected by %s",
			table, rc.RejectPhase.ByCoordinator, rc.RejectPhase.ByReplicas, want)
	}
	perOp := func(acc, rej time.Duration) (float64, float64) {
		a := float64(acc) / float64(rc.AcceptPhase.Accepted)
		// The few writes admitted under limit 1 are charged at the accepted cost.
		r := (float64(rej) - a*float64(rc.RejectPhase.Accepted)) / float64(rejected)
		return a, r
	}
	rc.CPUAcceptNS, rc.CPURejectNS = perOp(accCPU.Run, rejCPU.Run)
	rc.Ratio = ratio(rc.CPURejectNS, rc.CPUAcceptNS)
	ta, tr := perOp(accCPU.Ticks, rejCPU.Ticks)
	rc.RatioByTicks = ratio(tr, ta)
	fmt.Fprintf(log, "perf: rejection cost (%s, sync=%v): %.1f µs CPU per accepted write, %.1f µs per rejected, ratio %.3f (stat ticks: %.3f)\n",
		want, rc.Sync, rc.CPUAcceptNS/1e3, rc.CPURejectNS/1e3, rc.Ratio, rc.RatioByTicks)
	return rc, nil
}

// rejectCosts measures both limiter paths on cluster c, whose servers run with --sync=synced:
// the coordinator path on tableRF3 (every node a replica, coordinators in turn), the replicas
// path on tableRF1 through a node that does not own the partition.
func rejectCosts(ctx context.Context, s settings, c *testCluster, synced bool, log io.Writer) ([]rejectCost, error) {
	idle, err := idleCPU(ctx, c, s.Idle)
	if err != nil {
		return nil, err
	}
	all := coordinators{policy: bench.RoundRobin, addrs: c.addrs(), clients: c.clients}
	coord, err := measureRejectCost(ctx, s, c, tableRF3, all, client.RejectedByCoordinator, synced, idle, log)
	if err != nil {
		return nil, fmt.Errorf("rejection cost, coordinator path: %w", err)
	}
	coord.Setup = "RF=3 on 3 nodes, QUORUM writes, coordinators in turn (every node is a replica)"

	owner, err := c.owner(rejectKey)
	if err != nil {
		return nil, err
	}
	other := (owner + 1) % len(c.servers)
	one := coordinators{policy: bench.Fixed, addrs: []string{c.servers[other].Addr}, clients: []*client.Client{c.clients[other]}}
	repl, err := measureRejectCost(ctx, s, c, tableRF1, one, client.RejectedByReplicas, synced, idle, log)
	if err != nil {
		return nil, fmt.Errorf("rejection cost, replicas path: %w", err)
	}
	repl.Setup = fmt.Sprintf("RF=1, QUORUM writes, all through node %s, which does not own the partition (owner %s, from the ring rebuilt from node ids)",
		c.servers[other].ID[:8], c.servers[owner].ID[:8])
	return []rejectCost{coord, repl}, nil
}
