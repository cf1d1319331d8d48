package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// Result is everything one run measured. Its JSON encoding is what --json prints; the first
// fields are the headline numbers the issue asks for, by those exact names.
type Result struct {
	// Background throughput and p99 latency with the hot partition, as ratios to the baseline
	// (background alone), with the table's limit at R/20 ("limited") and with no limit.
	BGThroughputRatioLimited   float64 `json:"background_throughput_ratio_limited"`
	BGThroughputRatioUnlimited float64 `json:"background_throughput_ratio_unlimited"`
	BGP99RatioLimited          float64 `json:"background_p99_ratio_limited"`
	BGP99RatioUnlimited        float64 `json:"background_p99_ratio_unlimited"`
	// HotAcceptedOverLimit is the hot partition's accepted rate in the limited phase divided by
	// its limit.
	HotAcceptedOverLimit float64 `json:"hot_accepted_over_limit"`
	// Server CPU per rejected write / per accepted write, on each limiter path, with the
	// servers' default --sync=true.
	RejectCostRatioCoordinator float64 `json:"reject_cost_ratio_coordinator"`
	RejectCostRatioReplica     float64 `json:"reject_cost_ratio_replica"`
	// 1 - limited/unlimited throughput of one node (limits that never reject vs none).
	LimiterOverheadWrite float64 `json:"limiter_overhead_write"`
	LimiterOverheadRead  float64 `json:"limiter_overhead_read"`

	// The same rejection-cost ratios with --sync=false.
	RejectCostRatioCoordinatorNoSync float64 `json:"reject_cost_ratio_coordinator_nosync"`
	RejectCostRatioReplicaNoSync     float64 `json:"reject_cost_ratio_replica_nosync"`

	// HotRate is R, the hot partition's offered rate (found by the search unless --rate gave it);
	// HotLimit is the limit of the limited phase, R/20.
	HotRate  float64 `json:"hot_rate"`
	HotLimit int     `json:"hot_limit"`
	// RateSearch lists the search steps; SearchReachedTarget says whether the last reached the
	// search's loss (searchLoss).
	RateSearch          []searchStep `json:"rate_search"`
	SearchReachedTarget bool         `json:"rate_search_reached_target"`

	// Rounds holds each round's ratios; the headline values are their medians.
	Rounds     []roundRatio `json:"rounds"`
	Phases     []loadResult `json:"phases"`
	RejectCost []rejectCost `json:"reject_cost"`
	// NoopRequest is the cost of a gRPC health check on each cluster: the floor of any request.
	NoopRequest []noopCost       `json:"noop_request"`
	Overhead    []overheadResult `json:"overhead"`

	Machine  machine  `json:"machine"`
	Settings settings `json:"settings"`
	Command  string   `json:"command"`
	Date     string   `json:"date"`
	RuntimeS float64  `json:"runtime_s"`
}

// machine describes where the numbers were taken.
type machine struct {
	CPUs        int    `json:"cpus"`
	CPUModel    string `json:"cpu_model"`
	GoVersion   string `json:"go_version"`
	OS          string `json:"os"`
	LoadAtStart string `json:"loadavg_start"`
	LoadAtEnd   string `json:"loadavg_end"`
}

// readMachine describes this machine from the Go runtime and /proc.
func readMachine() machine {
	return machine{
		CPUs:        runtime.NumCPU(),
		CPUModel:    cpuModel(),
		GoVersion:   runtime.Version(),
		OS:          runtime.GOOS + "/" + runtime.GOARCH,
		LoadAtStart: loadAvg(),
	}
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or "" if there is none.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	return parseCPUModel(b)
}

func parseCPUModel(cpuinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// loadAvg returns the 1, 5 and 15 minute load averages from /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// phaseAggregate is a phase kind over all rounds.
type phaseAggregate struct {
	Name                  string
	HotRate               float64
	HotLimit              int
	BGThroughput          float64 // accepted per second over all rounds
	P50, P99              float64 // mean over rounds, ms
	HotAccepted           float64 // per second, over all rounds
	HotOffered            float64 // per second
	HotRejected           float64 // per second
	HotDropped            int64   // open-loop operations never sent: the queue was full
	BGRejected, BGErrors  int64
	ServerCPU, LoadGenCPU float64 // cores, mean over rounds
}

// aggregate combines the rounds of each phase kind, in order of first appearance.
func aggregate(phases []loadResult) []phaseAggregate {
	var out []phaseAggregate
	index := map[string]int{}
	type sums struct {
		acc, hotAcc, hotOff, hotRej int64
		dur, hotDur                 float64
		p50, p99                    float64
		srvCPU, lgCPU               float64
		n                           int
	}
	var all []sums
	for _, p := range phases {
		i, ok := index[p.Phase]
		if !ok {
			i = len(out)
			index[p.Phase] = i
			out = append(out, phaseAggregate{Name: p.Phase, HotRate: p.HotRate, HotLimit: p.HotLimit})
			all = append(all, sums{})
		}
		s := &all[i]
		s.acc += p.BG.Accepted
		s.dur += p.BG.DurationS
		s.p50 += p.BG.LatencyMS.P50
		s.p99 += p.BG.LatencyMS.P99
		s.srvCPU += p.CPU.Servers
		s.lgCPU += p.CPU.LoadGen
		s.n++
		out[i].BGRejected += p.BG.Rejected()
		out[i].BGErrors += p.BG.Failed()
		if p.Hot != nil {
			s.hotAcc += p.Hot.Accepted
			s.hotOff += p.Hot.Offered
			s.hotRej += p.Hot.Rejected()
			s.hotDur += p.Hot.DurationS
			out[i].HotDropped += p.Hot.Errors["dropped"]
		}
	}
	for i := range out {
		s := all[i]
		out[i].BGThroughput = perSecond(s.acc, s.dur)
		out[i].P50 = s.p50 / float64(s.n)
		out[i].P99 = s.p99 / float64(s.n)
		out[i].HotAccepted = perSecond(s.hotAcc, s.hotDur)
		out[i].HotOffered = perSecond(s.hotOff, s.hotDur)
		out[i].HotRejected = perSecond(s.hotRej, s.hotDur)
		out[i].ServerCPU = s.srvCPU / float64(s.n)
		out[i].LoadGenCPU = s.lgCPU / float64(s.n)
	}
	return out
}

// roundRatio is one round's hot phases as ratios to that round's baseline.
type roundRatio struct {
	Round               int     `json:"round"`
	ThroughputLimited   float64 `json:"background_throughput_ratio_limited"`
	ThroughputUnlimited float64 `json:"background_throughput_ratio_unlimited"`
	P99Limited          float64 `json:"background_p99_ratio_limited"`
	P99Unlimited        float64 `json:"background_p99_ratio_unlimited"`
	HotOverLimit        float64 `json:"hot_accepted_over_limit"`
}

// roundRatios compares each round's hot phases with the baseline of the same round, so that a
// drift in the machine's speed between rounds cancels. Rounds missing a phase are left out.
func roundRatios(phases []loadResult) []roundRatio {
	var out []roundRatio
	for round := 1; ; round++ {
		var base, unl, lim *loadResult
		seen := false
		for i := range phases {
			p := &phases[i]
			if p.Round != round {
				continue
			}
			seen = true
			switch p.Phase {
			case "baseline":
				base = p
			case "hot unlimited":
				unl = p
			case "hot limited":
				lim = p
			}
		}
		if !seen {
			return out
		}
		if base == nil || unl == nil || lim == nil {
			continue
		}
		out = append(out, roundRatio{
			Round:               round,
			ThroughputLimited:   ratio(lim.bgThroughput(), base.bgThroughput()),
			ThroughputUnlimited: ratio(unl.bgThroughput(), base.bgThroughput()),
			P99Limited:          ratio(lim.BG.LatencyMS.P99, base.BG.LatencyMS.P99),
			P99Unlimited:        ratio(unl.BG.LatencyMS.P99, base.BG.LatencyMS.P99),
			HotOverLimit:        ratio(lim.hotRate(), float64(lim.HotLimit)),
		})
	}
}

// headline fills in the headline numbers of r from its measurements: for the hot phases the
// median over rounds of each round's ratio to its own baseline.
func (r *Result) headline() {
	r.Rounds = roundRatios(r.Phases)
	med := func(f func(roundRatio) float64) float64 {
		vs := make([]float64, len(r.Rounds))
		for i, rr := range r.Rounds {
			vs[i] = f(rr)
		}
		return median(vs)
	}
	r.BGThroughputRatioLimited = med(func(rr roundRatio) float64 { return rr.ThroughputLimited })
	r.BGThroughputRatioUnlimited = med(func(rr roundRatio) float64 { return rr.ThroughputUnlimited })
	r.BGP99RatioLimited = med(func(rr roundRatio) float64 { return rr.P99Limited })
	r.BGP99RatioUnlimited = med(func(rr roundRatio) float64 { return rr.P99Unlimited })
	r.HotAcceptedOverLimit = med(func(rr roundRatio) float64 { return rr.HotOverLimit })
	for _, rc := range r.RejectCost {
		switch {
		case rc.Path == "coordinator" && rc.Sync:
			r.RejectCostRatioCoordinator = rc.Ratio
		case rc.Path == "replicas" && rc.Sync:
			r.RejectCostRatioReplica = rc.Ratio
		case rc.Path == "coordinator":
			r.RejectCostRatioCoordinatorNoSync = rc.Ratio
		case rc.Path == "replicas":
			r.RejectCostRatioReplicaNoSync = rc.Ratio
		}
	}
	for _, o := range r.Overhead {
		switch o.Op {
		case "write":
			r.LimiterOverheadWrite = o.Overhead
		case "read":
			r.LimiterOverheadRead = o.Overhead
		}
	}
}

// writeText prints r as Markdown tables, which read well on a terminal and paste into
// docs/performance.md as they are.
func (r *Result) writeText(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "# kvnode perf, %s\n\n", r.Date)
	fmt.Fprintf(&b, "`%s`: %d CPUs (%s), %s %s, load average %s at start, %s at end; ran %.0f s.\n\n",
		r.Command, m.CPUs, m.CPUModel, m.GoVersion, m.OS, m.LoadAtStart, m.LoadAtEnd, r.RuntimeS)

	s := r.Settings
	if s.has("hot") {
		fmt.Fprintf(&b, "## Hot partition against background traffic\n\n")
		fmt.Fprintf(&b, "3 nodes (--sync=false), RF=3, QUORUM. Background: %d partitions, 50%% writes, closed loop, %d workers, coordinators in turn. "+
			"Hot: one partition, writes, open loop at R ops/s (%d workers). %d round(s) of %v per phase.\n\n",
			s.BGPartitions, s.BGConcurrency, s.HotConcurrency, s.Rounds, s.Phase)
		if len(r.RateSearch) > 0 {
			fmt.Fprintf(&b, "Search for R (each step: %d pairs of %v background alone and %v with the hot partition at R, no limit, in alternating order; stop at a median pair loss ≥ %.0f%%, a margin over 1/3):\n\n",
				s.SearchPairs, s.Search, s.Search, 100*searchLoss)
			fmt.Fprintf(&b, "| R (ops/s) | background alone ops/s | with hot ops/s | loss (median pair) | hot accepted/s |\n|---:|---:|---:|---:|---:|\n")
			for _, st := range r.RateSearch {
				fmt.Fprintf(&b, "| %.0f | %.0f | %.0f | %.1f%% | %.0f |\n", st.HotRate, st.Baseline, st.BGThroughput, 100*st.Loss, st.HotThroughput)
			}
			if !r.SearchReachedTarget {
				fmt.Fprintf(&b, "\nThe search did not reach a loss of %.0f%%; R is its last step.\n", 100*searchLoss)
			}
			b.WriteString("\n")
		}
		agg := aggregate(r.Phases)
		var base phaseAggregate
		for _, a := range agg {
			if a.Name == "baseline" {
				base = a
			}
		}
		fmt.Fprintf(&b, "| phase (all rounds) | hot offered/s | limit | background ops/s | × baseline | p50 ms | p99 ms | p99 × baseline | hot accepted/s | hot accepted / limit | hot rejected/s | background rejected, errors | CPU cores: servers, load generator |\n")
		fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, a := range agg {
			limit, over := "none", "-"
			if a.HotLimit > 0 {
				limit = fmt.Sprint(a.HotLimit)
				over = fmt.Sprintf("%.2f", ratio(a.HotAccepted, float64(a.HotLimit)))
			}
			hot := func(v float64) string {
				if a.HotRate == 0 {
					return "-"
				}
				return fmt.Sprintf("%.0f", v)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %.2f | %.2f | %.2f | %.2f | %s | %s | %s | %d, %d | %.2f, %.2f |\n",
				a.Name, hot(a.HotOffered), limit, a.BGThroughput, ratio(a.BGThroughput, base.BGThroughput),
				a.P50, a.P99, ratio(a.P99, base.P99), hot(a.HotAccepted), over, hot(a.HotRejected),
				a.BGRejected, a.BGErrors, a.ServerCPU, a.LoadGenCPU)
		}

		fmt.Fprintf(&b, "\nEach round's hot phases against the same round's baseline; the headline is the median over rounds:\n\n")
		fmt.Fprintf(&b, "| round | background throughput × baseline, unlimited | limited | background p99 × baseline, unlimited | limited | hot accepted / limit |\n|---|---:|---:|---:|---:|---:|\n")
		for _, rr := range r.Rounds {
			fmt.Fprintf(&b, "| %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n", rr.Round, rr.ThroughputUnlimited, rr.ThroughputLimited, rr.P99Unlimited, rr.P99Limited, rr.HotOverLimit)
		}
		fmt.Fprintf(&b, "| median | %.2f | %.2f | %.2f | %.2f | %.2f |\n", r.BGThroughputRatioUnlimited, r.BGThroughputRatioLimited,
			r.BGP99RatioUnlimited, r.BGP99RatioLimited, r.HotAcceptedOverLimit)
	}

	if s.has("reject") {
		fmt.Fprintf(&b, "\n## Cost of a rejection (server CPU per write)\n\n")
		if s.RejectRate > 0 {
			fmt.Fprintf(&b, "Writes to one partition at %.0f/s, open loop (%d workers), for %v per phase after %v unmeasured", s.RejectRate, s.RejectConcurrency, s.RejectDuration, s.RejectWarm)
		} else {
			fmt.Fprintf(&b, "%d writes per phase to one partition, closed loop, %d workers, after %d unmeasured", s.RejectOps, s.RejectConcurrency, s.RejectWarmOps)
		}
		fmt.Fprintf(&b, "; CPU summed over the 3 server processes from /proc, idle CPU subtracted.\n\n")
		fmt.Fprintf(&b, "| --sync | path | setup | accept phase: accepted | µs CPU / accepted | reject phase: rejected (admitted) | µs CPU / rejected | ratio | ratio by stat ticks |\n")
		fmt.Fprintf(&b, "|---|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, rc := range r.RejectCost {
			fmt.Fprintf(&b, "| %v | %s | %s | %d | %.1f | %d | %.1f | %.3f | %.3f |\n", rc.Sync, rc.Path, rc.Setup,
				rc.AcceptPhase.Accepted, rc.CPUAcceptNS/1e3, rc.RejectPhase.rejected(),
				rc.CPURejectNS/1e3, rc.Ratio, rc.RatioByTicks)
		}
	}

	if s.has("overhead") {
		fmt.Fprintf(&b, "\n## Limiter overhead (one node, --sync=false)\n\n")
		fmt.Fprintf(&b, "Closed loop, %d workers, %d partitions, QUORUM (RF=1); limits 2^31-1 vs none; %d pairs of %v, order alternating.\n\n",
			s.OverheadConcurrency, s.OverheadPartitions, s.OverheadReps, s.OverheadPhase)
		fmt.Fprintf(&b, "| op | unlimited ops/s (per pair) | limited ops/s (per pair) | overhead = 1 − limited/unlimited (median pair) | per-pair range | pooled | server CPU/op, limited vs unlimited (median pair) |\n|---|---|---|---:|---|---:|---:|\n")
		for _, o := range r.Overhead {
			var un, li []string
			for _, p := range o.Pairs {
				un = append(un, fmt.Sprintf("%.0f", p.Unlimited.OpsPerS))
				li = append(li, fmt.Sprintf("%.0f", p.Limited.OpsPerS))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %+.1f%% | %+.1f%% … %+.1f%% | %+.1f%% | %+.1f%% |\n", o.Op, strings.Join(un, ", "), strings.Join(li, ", "),
				100*o.Overhead, 100*o.Min, 100*o.Max, 100*o.Pooled, 100*o.CPUOverhead)
		}
	}

	fmt.Fprintf(&b, "\n## Targets\n\n| target | measured | met |\n|---|---:|---|\n")
	for _, t := range r.targets() {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.what, t.measured, yesNo(t.met))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type target struct {
	what, measured string
	met            bool
}

// targets lists the targets against what r measured.
func (r *Result) targets() []target {
	var ts []target
	if r.Settings.has("hot") {
		ts = append(ts,
			target{"background throughput, hot limited ≥ 0.90 × baseline", fmt.Sprintf("%.2f", r.BGThroughputRatioLimited), r.BGThroughputRatioLimited >= 0.90},
			target{"background throughput, hot unlimited ≤ 2/3 × baseline", fmt.Sprintf("%.2f", r.BGThroughputRatioUnlimited), r.BGThroughputRatioUnlimited <= 1-targetLoss})
	}
	if r.Settings.has("reject") {
		ts = append(ts,
			target{"rejected / accepted CPU, coordinator path ≤ 0.15 (--sync=true)", fmt.Sprintf("%.3f", r.RejectCostRatioCoordinator), r.RejectCostRatioCoordinator <= 0.15},
			target{"rejected / accepted CPU, replicas path ≤ 0.15 (--sync=true)", fmt.Sprintf("%.3f", r.RejectCostRatioReplica), r.RejectCostRatioReplica <= 0.15})
	}
	if r.Settings.has("overhead") {
		ts = append(ts,
			target{"limiter overhead, writes ≤ 3%", fmt.Sprintf("%+.1f%%", 100*r.LimiterOverheadWrite), r.LimiterOverheadWrite <= 0.03},
			target{"limiter overhead, reads ≤ 3%", fmt.Sprintf("%+.1f%%", 100*r.LimiterOverheadRead), r.LimiterOverheadRead <= 0.03})
	}
	return ts
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
