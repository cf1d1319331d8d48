package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/client"
)

// maxLimit is the largest per_partition_rate_limit value (2^31-1): a limit that never rejects.
const maxLimit = 1<<31 - 1

// rejectKey is the partition every rejection-cost write goes to.
const rejectKey = "hot"

// opCounts counts the outcomes of a fixed number of writes.
type opCounts struct {
	Ops           int64         `json:"ops"`
	Accepted      int64         `json:"accepted"`
	ByCoordinator int64         `json:"rejected_by_coordinator"`
	ByReplicas    int64         `json:"rejected_by_replicas"`
	Errors        int64         `json:"errors"`
	Elapsed       time.Duration `json:"-"`
	ElapsedS      float64       `json:"elapsed_s"`
	FirstError    string        `json:"first_error,omitempty"`
}

// hotInsert returns the statement of write i to table's partition rejectKey: one row of 1024.
func hotInsert(table string) func(i int64) string {
	return func(i int64) string {
		return fmt.Sprintf("INSERT INTO %s (k, c, v) VALUES ('%s', %d, 'value-%08d')", table, rejectKey, i%1024, i)
	}
}

// drive runs statements stmt(0) ... stmt(n-1) at QUORUM from concurrency workers, each through
// the coordinator pick returns for it, and counts the outcomes.
func drive(ctx context.Context, pick func(i int64) *client.Client, stmt func(i int64) string, n int64, concurrency int) opCounts {
	var next, acc, byCoord, byRepl, errs atomic.Int64
	var firstErr sync.Once
	var first string
	start := time.Now()
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				_, err := pick(i).Execute(ctx, client.Quorum, stmt(i))
				var rl *client.RateLimitError
				switch {
				case err == nil:
					acc.Add(1)
				case errors.As(err, &rl) && rl.RejectedBy == client.RejectedByCoordinator:
					byCoord.Add(1)
				case errors.As(err, &rl):
					byRepl.Add(1)
				default:
					errs.Add(1)
					firstErr.Do(func() { first = err.Error() })
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	return opCounts{Ops: min(next.Load(), n), Accepted: acc.Load(), ByCoordinator: byCoord.Load(),
		ByReplicas: byRepl.Load(), Errors: errs.Load(), Elapsed: el, ElapsedS: el.Seconds(), FirstError: first}
}

// rejectCost is the server CPU of accepted and of rejected writes on one limiter path.
type rejectCost struct {
	Path string `json:"path"` // "coordinator" or "replicas"
	Sync bool   `json:"sync"`
	// Setup says how the path was obtained (replication factor, coordinators).
	Setup        string   `json:"setup"`
	AcceptPhase  opCounts `json:"accept_phase"`
	RejectPhase  opCounts `json:"reject_phase"`
	IdleCPUPerS  float64  `json:"idle_cpu_us_per_s"`   // the servers' CPU when idle, subtracted
	CPUAcceptNS  float64  `json:"cpu_ns_per_accepted"` // server CPU per accepted write
	CPURejectNS  float64  `json:"cpu_ns_per_rejected"` // server CPU per rejected write
	Ratio        float64  `json:"ratio"`               // CPURejectNS / CPUAcceptNS
	RatioByTicks float64  `json:"ratio_by_stat_ticks"` // the same from /proc/<pid>/stat utime+stime
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

// measureRejectCost measures one limiter path: n writes to one partition of table with the
// write limit at maxLimit (all accepted), then the limit at 1 and, after warm writes that make
// the partition hot, n more (almost all rejected). pick chooses each write's coordinator; want
// says who must reject. The servers' CPU is read before and after each measured phase; idle is
// their CPU per second at rest, subtracted over each phase's wall time.
func measureRejectCost(ctx context.Context, s settings, c *testCluster, table string, pick func(i int64) *client.Client,
	want client.RejectedBy, synced bool, idle cpuSample, log io.Writer) (rejectCost, error) {
	rc := rejectCost{Path: string(want), Sync: synced, IdleCPUPerS: float64(idle.Run) / 1e3}
	phase := func(limit int) (opCounts, cpuSample, error) {
		if err := c.exec(ctx, log, alterLimit(table, 0, limit)); err != nil {
			return opCounts{}, cpuSample{}, err
		}
		// Warm up connections and, under limit 1, the partition's counters.
		if w := drive(ctx, pick, hotInsert(table), int64(s.RejectWarm), s.RejectConcurrency); w.Errors > 0 {
			return opCounts{}, cpuSample{}, fmt.Errorf("warm-up writes to %s failed: %s", table, w.FirstError)
		}
		before, err := c.cpu()
		if err != nil {
			return opCounts{}, cpuSample{}, err
		}
		oc := drive(ctx, pick, hotInsert(table), int64(s.RejectOps), s.RejectConcurrency)
		after, err := c.cpu()
		if err != nil {
			return opCounts{}, cpuSample{}, err
		}
		if err := ctx.Err(); err != nil {
			return opCounts{}, cpuSample{}, err
		}
		if oc.Errors > 0 {
			return opCounts{}, cpuSample{}, fmt.Errorf("%d of %d writes to %s failed; first: %s", oc.Errors, oc.Ops, table, oc.FirstError)
		}
		used := after.sub(before)
		el := oc.Elapsed.Seconds()
		used.Run -= time.Duration(float64(idle.Run) * el)
		used.Ticks -= time.Duration(float64(idle.Ticks) * el)
		return oc, used, nil
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
	rejected := rc.RejectPhase.ByCoordinator + rc.RejectPhase.ByReplicas
	wrongPath := rc.RejectPhase.ByReplicas
	if want == client.RejectedByReplicas {
		wrongPath = rc.RejectPhase.ByCoordinator
	}
	if rejected == 0 || wrongPath > 0 {
		return rc, fmt.Errorf("writes to %s under limit 1: %d rejected by coordinator, %d by replicas; want all rejected by %s",
			table, rc.RejectPhase.ByCoordinator, rc.RejectPhase.ByReplicas, want)
	}
	perOp := func(acc, rej cpuSample) (float64, float64) {
		a := float64(acc.Run) / float64(rc.AcceptPhase.Accepted)
		// The few writes admitted under limit 1 are charged at the accepted cost.
		r := (float64(rej.Run) - a*float64(rc.RejectPhase.Accepted)) / float64(rejected)
		return a, r
	}
	rc.CPUAcceptNS, rc.CPURejectNS = perOp(accCPU, rejCPU)
	rc.Ratio = ratio(rc.CPURejectNS, rc.CPUAcceptNS)
	ta, tr := perOp(cpuSample{Run: accCPU.Ticks}, cpuSample{Run: rejCPU.Ticks})
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
	roundRobin := func(i int64) *client.Client { return c.clients[i%int64(len(c.clients))] }
	coord, err := measureRejectCost(ctx, s, c, tableRF3, roundRobin, client.RejectedByCoordinator, synced, idle, log)
	if err != nil {
		return nil, fmt.Errorf("rejection cost, coordinator path: %w", err)
	}
	coord.Setup = "RF=3 on 3 nodes, QUORUM writes, coordinators in turn (every node is a replica)"

	owner, err := c.owner(rejectKey)
	if err != nil {
		return nil, err
	}
	other := c.clients[(owner+1)%len(c.clients)]
	fixed := func(int64) *client.Client { return other }
	repl, err := measureRejectCost(ctx, s, c, tableRF1, fixed, client.RejectedByReplicas, synced, idle, log)
	if err != nil {
		return nil, fmt.Errorf("rejection cost, replicas path: %w", err)
	}
	repl.Setup = fmt.Sprintf("RF=1, QUORUM writes, all through node %s, which does not own the partition (owner %s, from the ring rebuilt from node ids)",
		c.servers[(owner+1)%len(c.servers)].ID[:8], c.servers[owner].ID[:8])
	return []rejectCost{coord, repl}, nil
}
