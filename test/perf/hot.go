package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/tool/bench"
)

// targetLoss is the share of background throughput the hot partition must take away with no
// limit set: the "at least a third".
const targetLoss = 1.0 / 3

// searchLoss is the loss at which the rate search stops: above targetLoss by a margin, because a
// single baseline on a shared machine varies by ±10%, and the measured rounds must still show
// a loss of at least targetLoss.
const searchLoss = 0.4

// limitDivisor sets the hot phase's limit: R / limitDivisor operations per second.
const limitDivisor = 20

// loadResult is one run of background traffic, with or without the hot partition.
type loadResult struct {
	Phase    string         `json:"phase"`
	Protocol string         `json:"protocol"` // of the load generator: "cql" or "grpc"
	Round    int            `json:"round,omitempty"`
	HotRate  float64        `json:"hot_rate"`  // offered to the hot partition, ops/s (0: none)
	HotLimit int            `json:"hot_limit"` // the table's per-partition limit (0: none)
	BG       *bench.Summary `json:"background"`
	Hot      *bench.Summary `json:"hot,omitempty"`
	// FirstHot is, in a limited phase, the hot partition's unmeasured first LimitWarm after the
	// limit was set, while the counters were still young: reported on its own, and left out of
	// Hot.
	FirstHot *bench.Summary `json:"first_hot,omitempty"`
	CPU      phaseCPU       `json:"cpu"`
}

// phaseCPU is where the CPU went during a phase, in cores (CPU seconds per second of wall time).
type phaseCPU struct {
	Servers   float64 `json:"servers_cores"`
	LoadGen   float64 `json:"loadgen_cores"` // this process: the load generator
	WallTimeS float64 `json:"wall_s"`
}

// bgThroughput is the background's accepted operations per second.
func (r loadResult) bgThroughput() float64 { return perSecond(r.BG.Accepted, r.BG.DurationS) }

// hotRate is the hot partition's accepted operations per second.
func (r loadResult) hotRate() float64 {
	if r.Hot == nil {
		return 0
	}
	return perSecond(r.Hot.Hot.Accepted, r.Hot.DurationS)
}

func perSecond(n int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(n) / seconds
}

// loadTarget is how the load generator reaches the cluster: a protocol, a coordinator policy and
// one bench session (connections, and over the native protocol the driver's discovery and
// prepared statements) that every phase reuses.
type loadTarget struct {
	Protocol    bench.Protocol
	Coordinator bench.Coordinator
	addrs       []string
	sess        *bench.Session
	// lean, when set, writes the hot partition instead of sess (the native target with
	// --hot-client lean).
	lean *leanHot
}

// loadConfig is the background workload's configuration on table for d.
func loadConfig(s settings, tgt loadTarget, table string, d time.Duration, seed uint64) bench.Config {
	return bench.Config{
		Protocol:    tgt.Protocol,
		Addrs:       tgt.addrs,
		Coordinator: tgt.Coordinator,
		Table:       table,
		Writes:      0.5,
		Consistency: client.Quorum,
		Partitions:  s.BGPartitions,
		Hot:         0,
		Rate:        0,
		Concurrency: s.BGConcurrency,
		Duration:    d,
		Seed:        seed,
	}
}

// openTarget opens the bench session of a target on table; close it with tgt.sess.Close.
func openTarget(ctx context.Context, s settings, protocol bench.Protocol, coord bench.Coordinator, addrs []string, table string) (loadTarget, error) {
	tgt := loadTarget{Protocol: protocol, Coordinator: coord, addrs: addrs}
	sess, err := bench.Open(ctx, loadConfig(s, tgt, table, time.Second, 1))
	if err != nil {
		return tgt, err
	}
	tgt.sess = sess
	return tgt, nil
}

// runLoad runs the background workload on table for d, and at the same time, when hotRate > 0,
// the hot partition's open-loop writes at hotRate, both through tgt. It reports the CPU the
// servers and this process used meanwhile.
func runLoad(ctx context.Context, s settings, c *testCluster, tgt loadTarget, table string, hotRate float64, d time.Duration, seed uint64) (r loadResult, err error) {
	bgCfg := loadConfig(s, tgt, table, d, seed)
	hotCfg := bgCfg
	hotCfg.Writes = 1
	hotCfg.Hot = 1
	hotCfg.Partitions = 0
	hotCfg.Rate = hotRate
	hotCfg.Concurrency = s.HotConcurrency
	hotCfg.Seed = seed + 1_000_000

	r = loadResult{HotRate: hotRate, Protocol: string(tgt.Protocol)}
	srv0, self0, err := c.cpuWithSelf()
	if err != nil {
		return r, err
	}
	start := time.Now()
	var wg sync.WaitGroup
	var hotErr, bgErr error
	if hotRate > 0 {
		if tgt.lean != nil {
			wg.Go(func() { r.Hot, hotErr = tgt.lean.run(ctx, hotRate, d, hotCfg.Seed) })
		} else {
			wg.Go(func() { r.Hot, hotErr = tgt.sess.Run(ctx, hotCfg, nil) })
		}
	}
	r.BG, bgErr = tgt.sess.Run(ctx, bgCfg, nil)
	wg.Wait()
	if err := errors.Join(bgErr, hotErr, ctx.Err()); err != nil {
		return r, err
	}
	wall := time.Since(start).Seconds()
	srv1, self1, err := c.cpuWithSelf()
	if err != nil {
		return r, err
	}
	r.CPU = phaseCPU{Servers: srv1.sub(srv0).Run.Seconds() / wall, LoadGen: self1.sub(self0).Run.Seconds() / wall, WallTimeS: wall}
	return r, nil
}

// searchStep is one try of the rate search: pairs of background alone and background with the
// hot partition at HotRate.
type searchStep struct {
	HotRate      float64 `json:"hot_rate"`
	Baseline     float64 `json:"background_alone"`    // ops/s over the step's pairs
	BGThroughput float64 `json:"background_with_hot"` // ops/s over the step's pairs
	// Loss is 1 - the median over pairs of (background with hot)/(background alone).
	Loss          float64 `json:"loss"`
	Pairs         int     `json:"pairs"` // twice s.SearchPairs when a step reached the target
	HotThroughput float64 `json:"hot_accepted_per_second"`
}

// searchMaxGrowth bounds how much R grows from one search step to the next.
const searchMaxGrowth = 1.6

// searchOvershoot is how far past searchLoss a step's loss may go before the search tries a
// rate between it and the step before: a step that lands well past the target would set R,
// and with it the limited phase's rejections, higher than the target needs.
const searchOvershoot = 0.05

// searchRate finds R, the hot partition's offered rate at which the background (no limit set)
// loses at least searchLoss of its throughput; base is the background's throughput alone. Each
// step runs s.SearchPairs pairs of s.Search with the background alone and with the hot
// partition at R, in alternating order, and takes the median pair's loss: a burst of other work
// on the machine moves one pair, not the median. A step that reaches the target runs as many
// pairs again, and its loss is the median over all of them. The first R is s.SearchStart × base;
// after a step that lost less than the target, the next R is the linear estimate of the rate
// that would lose it (the loss grows in proportion to R while the cluster is saturated), at
// least s.SearchFactor and at most searchMaxGrowth times the last. A step that reaches the
// target with more than searchOvershoot to spare is followed by one at the rate the line
// between it and the step before puts at the target, which is taken instead when it reaches
// the target too. It returns the steps and the chosen R: the lowest that reached the target,
// else the last tried.
func searchRate(ctx context.Context, s settings, c *testCluster, tgt loadTarget, table string, base float64, log io.Writer) ([]searchStep, float64, error) {
	var steps []searchStep
	step := func(rate float64) error {
		st, err := searchStepAt(ctx, s, c, tgt, table, rate, len(steps))
		if err != nil {
			return err
		}
		steps = append(steps, st)
		fmt.Fprintf(log, "perf: search R=%.0f: background %.0f ops/s alone, %.0f with hot (median loss of %d pairs %.0f%%), hot accepted %.0f/s\n",
			rate, st.Baseline, st.BGThroughput, st.Pairs, 100*st.Loss, st.HotThroughput)
		return nil
	}
	rate := roundRate(s.SearchStart * base)
	for range s.SearchSteps {
		if err := step(rate); err != nil {
			return nil, 0, err
		}
		last := steps[len(steps)-1]
		if last.Loss >= searchLoss {
			break
		}
		next := rate * searchMaxGrowth
		if last.Loss > 0 {
			next = math.Min(next, rate*searchLoss/last.Loss)
		}
		rate = roundRate(math.Max(next, rate*s.SearchFactor))
	}
	n := len(steps)
	last := steps[n-1]
	if n < 2 {
		return steps, last.HotRate, nil
	}
	mid, ok := refineRate(steps[n-2], last)
	if !ok {
		return steps, last.HotRate, nil
	}
	if err := step(mid); err != nil {
		return nil, 0, err
	}
	if steps[n].Loss >= searchLoss {
		return steps, mid, nil
	}
	return steps, last.HotRate, nil
}

// refineRate returns the rate that the line through the steps prev and last puts at
// searchLoss, rounded up to a multiple of 100 ops/s, when last reached the target with more
// than searchOvershoot to spare after prev fell short of it, and that rate lies strictly
// between theirs.
func refineRate(prev, last searchStep) (float64, bool) {
	if prev.Loss >= searchLoss || last.Loss < searchLoss+searchOvershoot || last.HotRate <= prev.HotRate {
		return 0, false
	}
	at := prev.HotRate + (last.HotRate-prev.HotRate)*(searchLoss-prev.Loss)/(last.Loss-prev.Loss)
	mid := math.Ceil(at/100) * 100
	return mid, mid > prev.HotRate && mid < last.HotRate
}

// searchStepAt measures one step of the search at rate: s.SearchPairs pairs, and as many again
// when their median loss reaches searchLoss. i numbers the step, for the seeds.
func searchStepAt(ctx context.Context, s settings, c *testCluster, tgt loadTarget, table string, rate float64, i int) (searchStep, error) {
	st := searchStep{HotRate: rate}
	var alone, with, hot int64
	var aloneS, withS float64
	var pairLoss []float64
	// pairs runs n more pairs of the step and takes the median loss over all of them.
	pairs := func(n int) error {
		for range n {
			p := len(pairLoss)
			// Odd pairs run the hot partition first, so drift within a step cancels.
			seed := uint64(1000 + 10*i + 2*p)
			first, second := 0.0, rate
			if p%2 == 1 {
				first, second = rate, 0
			}
			r1, err := runLoad(ctx, s, c, tgt, table, first, s.Search, seed)
			if err != nil {
				return err
			}
			r2, err := runLoad(ctx, s, c, tgt, table, second, s.Search, seed+1)
			if err != nil {
				return err
			}
			a, h := r1, r2
			if p%2 == 1 {
				a, h = r2, r1
			}
			alone += a.BG.Accepted
			aloneS += a.BG.DurationS
			with += h.BG.Accepted
			withS += h.BG.DurationS
			hot += h.Hot.Accepted
			pairLoss = append(pairLoss, 1-ratio(h.bgThroughput(), a.bgThroughput()))
		}
		st.Baseline, st.BGThroughput = perSecond(alone, aloneS), perSecond(with, withS)
		st.HotThroughput = perSecond(hot, withS)
		st.Loss, st.Pairs = median(pairLoss), len(pairLoss)
		return nil
	}
	if err := pairs(s.SearchPairs); err != nil {
		return st, err
	}
	// A step that reaches the target is measured again before R is taken: the loss of a few
	// pairs is noisy, and an R taken on one lucky step left the rounds' unlimited phases losing
	// far less than the search did (0.78 of the baseline kept).
	if st.Loss >= searchLoss && s.SearchPairs > 1 {
		if err := pairs(s.SearchPairs); err != nil {
			return st, err
		}
	}
	return st, nil
}

// roundRate rounds a rate to a multiple of 100 ops/s (at least 100), so that the limit
// R/limitDivisor is a whole number.
func roundRate(r float64) float64 {
	return math.Max(100, math.Round(r/100)*100)
}

// ratio returns a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// hotPhases runs s.Rounds rounds, each of baseline, hot unlimited and hot limited at rate, in
// the order phaseOrder gives the round, through every target in turn (the order of the
// targets alternating by round, so that a drift in the machine's speed falls on each alike),
// removing the limit after each limited phase. Every phase is measured after s.LimitWarm of
// its own load, unmeasured, which takes the end of what the phase before left running (the
// unlimited phase's flushes and compactions, the schema change that removes a limit); the
// limited phase's warm runs with the limit set, and its hot partition is kept as the phase's
// FirstHot.
func hotPhases(ctx context.Context, s settings, c *testCluster, targets []loadTarget, table string, rate float64, log io.Writer) ([]loadResult, error) {
	limit := int(rate) / limitDivisor
	var out []loadResult
	for round := 1; round <= s.Rounds; round++ {
		order := slices.Clone(targets)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, tgt := range order {
			phases := []hotPhase{{"baseline", 0, 0}, {"hot unlimited", rate, 0}, {"hot limited", rate, limit}}
			for _, i := range phaseOrder(round) {
				ph := phases[i]
				var first *bench.Summary
				if ph.limit > 0 {
					if err := c.exec(ctx, log, alterLimit(table, ph.limit, ph.limit)); err != nil {
						return nil, err
					}
				}
				// Counters start from zero when a limit is set and admit more while they are
				// young: the limited phase's warm is reported on its own.
				w, err := runLoad(ctx, s, c, tgt, table, ph.hot, s.LimitWarm, uint64(100*round+50))
				if err != nil {
					return nil, err
				}
				if ph.limit > 0 {
					first = w.Hot
				}
				r, err := runLoad(ctx, s, c, tgt, table, ph.hot, s.Phase, uint64(100*round))
				if err != nil {
					return nil, err
				}
				r.Phase, r.Round, r.HotLimit, r.FirstHot = ph.name, round, ph.limit, first
				out = append(out, r)
				fmt.Fprintf(log, "perf: round %d %s %s: background %.0f ops/s p99 %.1f ms", round, tgt.Protocol, ph.name, r.bgThroughput(), r.BG.LatencyMS.P99)
				if r.Hot != nil {
					fmt.Fprintf(log, "; hot accepted %.0f/s of %.0f offered", perSecond(r.Hot.Accepted, r.Hot.DurationS), perSecond(r.Hot.Offered, r.Hot.DurationS))
				}
				if first != nil {
					fmt.Fprintf(log, " (first %v: %.0f/s)", s.LimitWarm, perSecond(first.Hot.Accepted, first.DurationS))
				}
				fmt.Fprintf(log, "; CPU: servers %.2f, load generator %.2f cores\n", r.CPU.Servers, r.CPU.LoadGen)
				if ph.limit > 0 {
					if err := c.exec(ctx, log, alterLimit(table, 0, 0)); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return out, nil
}

// hotPhase is one phase of a round: its name, the hot partition's offered rate and its limit.
type hotPhase struct {
	name  string
	hot   float64
	limit int
}

// phaseOrders are the orders of a round's three phases (0 baseline, 1 hot unlimited, 2 hot
// limited): each of the six once in six rounds, so that within a round each phase follows each
// other one equally often. Rotations alone, the order before, always put the limited phase
// right after the unlimited one or after the round's start (a cycle turned keeps its order).
var phaseOrders = [...][3]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}, {1, 0, 2}}

// phaseOrder returns the order of round's phases (rounds from 1).
func phaseOrder(round int) []int {
	o := phaseOrders[(round-1)%len(phaseOrders)]
	return o[:]
}

// alterLimit returns the ALTER TABLE that sets table's per-partition limits; 0 leaves that op
// unlimited.
func alterLimit(table string, reads, writes int) string {
	m := ""
	if reads > 0 {
		m = fmt.Sprintf("'max_reads_per_second': %d", reads)
	}
	if writes > 0 {
		if m != "" {
			m += ", "
		}
		m += fmt.Sprintf("'max_writes_per_second': %d", writes)
	}
	return fmt.Sprintf("ALTER TABLE %s WITH per_partition_rate_limit = {%s}", table, m)
}

// steadyHot is one long limited phase over one protocol: the hot partition's accepted writes
// second by second from the moment the limit is set, the first seconds (young counters) apart
// from the rest.
type steadyHot struct {
	Protocol          string  `json:"protocol"`
	Limit             int     `json:"limit"`
	AcceptedPerSecond []int64 `json:"accepted_per_second"`
	FirstSeconds      int     `json:"first_seconds"`
	// FirstOverLimit and SteadyOverLimit are the mean accepted rate over the first seconds and
	// over the rest, over the limit.
	FirstOverLimit  float64    `json:"first_over_limit"`
	SteadyOverLimit float64    `json:"steady_over_limit"`
	Run             loadResult `json:"run"`
}

// overLimit returns the mean of counts over limit.
func overLimit(counts []int64, limit int) float64 {
	if len(counts) == 0 || limit == 0 {
		return 0
	}
	var sum int64
	for _, c := range counts {
		sum += c
	}
	return float64(sum) / float64(len(counts)) / float64(limit)
}

// summarizeSteady fills in st's ratios from its per-second counts.
func summarizeSteady(st *steadyHot) {
	first := min(st.FirstSeconds, len(st.AcceptedPerSecond))
	st.FirstOverLimit = overLimit(st.AcceptedPerSecond[:first], st.Limit)
	st.SteadyOverLimit = overLimit(st.AcceptedPerSecond[first:], st.Limit)
}

// hotSteady sets the limit R/limitDivisor on table and runs the background and the hot
// partition at rate through tgt for s.SteadyDuration, then removes the limit.
func hotSteady(ctx context.Context, s settings, c *testCluster, tgt loadTarget, table string, rate float64, log io.Writer) (steadyHot, error) {
	limit := int(rate) / limitDivisor
	st := steadyHot{Protocol: string(tgt.Protocol), Limit: limit, FirstSeconds: s.SteadyFirst}
	if err := c.exec(ctx, log, alterLimit(table, limit, limit)); err != nil {
		return st, err
	}
	r, err := runLoad(ctx, s, c, tgt, table, rate, s.SteadyDuration, 7777)
	if err != nil {
		return st, err
	}
	r.Phase, r.HotLimit = "hot limited, long", limit
	st.Run = r
	st.AcceptedPerSecond = r.Hot.Hot.AcceptedPerSecond
	summarizeSteady(&st)
	fmt.Fprintf(log, "perf: %s hot partition over %v at limit %d: accepted per second %v: first %d s %.2f × limit, then %.2f ×\n",
		tgt.Protocol, s.SteadyDuration, limit, st.AcceptedPerSecond, st.FirstSeconds, st.FirstOverLimit, st.SteadyOverLimit)
	return st, c.exec(ctx, log, alterLimit(table, 0, 0))
}
