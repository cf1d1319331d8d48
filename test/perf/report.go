package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
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

	// Protocol and Driver say how the fields above were measured: the native protocol ("cql")
	// through gocql with prepared statements, token-aware (the replicas path through a fixed node
	// that is not a replica, which is what makes it that path). GRPC has the same over gRPC.
	Protocol string `json:"protocol"`
	Driver   string `json:"driver"`
	// HotAcceptedOverLimitFirst is the hot partition's accepted rate over its limit in the first
	// LimitWarm after the limit is set (median over rounds): young counters admit more, so it is
	// reported apart from HotAcceptedOverLimit, which covers the rest of the phase.
	HotAcceptedOverLimitFirst float64 `json:"hot_accepted_over_limit_first_second"`
	// HotAcceptedOverLimitSteady and HotAcceptedOverLimitFirstSeconds come from the long limited
	// phase (HotSteady): the accepted rate over the limit after its first seconds, and in them.
	HotAcceptedOverLimitSteady       float64 `json:"hot_accepted_over_limit_steady"`
	HotAcceptedOverLimitFirstSeconds float64 `json:"hot_accepted_over_limit_first_seconds"`
	// Server CPU per request in µs, summed over the servers (--sync=true cluster): a request that
	// does nothing (native OPTIONS, gRPC health check) and a write rejected by its coordinator.
	NativeNoopCPUUS   float64 `json:"native_noop_cpu_us"`
	GRPCNoopCPUUS     float64 `json:"grpc_noop_cpu_us"`
	NativeRejectCPUUS float64 `json:"native_reject_cpu_us"`
	GRPCRejectCPUUS   float64 `json:"grpc_reject_cpu_us"`
	// The limiter overheads' resolution: the smallest overhead the run tells from none.
	LimiterOverheadWriteResolution float64 `json:"limiter_overhead_write_resolution"`
	LimiterOverheadReadResolution  float64 `json:"limiter_overhead_read_resolution"`
	// GRPC is the hot partition and rejection-cost headline over gRPC, measured in the same run
	// at the same R (coordinators in turn).
	GRPC protocolHeadline `json:"grpc"`
	// Accounting explains the limited phases' background throughput by CPU, per protocol.
	Accounting []cpuAccount `json:"cpu_accounting,omitempty"`
	// Overload is the node admission control run (part overload).
	Overload *overloadResult `json:"overload,omitempty"`
	// Levels is the service levels run (part levels).
	Levels *levelsResult `json:"levels,omitempty"`
	// Server CPU of a native OPTIONS on a started connection over the same request answered
	// by a minimal Go server (the floor), one request in flight and 16 pipelined on one
	// connection (part floor, whose details are Floor).
	NativeNoopOverFloor          float64      `json:"native_noop_over_floor"`
	NativeNoopOverFloorPipelined float64      `json:"native_noop_over_floor_pipelined"`
	Floor                        *floorResult `json:"floor,omitempty"`
	// LWT over QUORUM write, p50 latency and server CPU per statement, uncontended (part lwt,
	// whose details, the contended figures and the limiter run are LWT).
	LWTOverQuorumWriteLatency float64    `json:"lwt_over_quorum_write_latency"`
	LWTOverQuorumWriteCPU     float64    `json:"lwt_over_quorum_write_cpu"`
	LWT                       *lwtResult `json:"lwt,omitempty"`
	// Counter is the counterlimit part: a hot counter partition under its write limit.
	Counter *counterResult `json:"counterlimit,omitempty"`
	// Server CPU of an RF-3 QUORUM write over an RF-1 write at ONE, same 3-node cluster and
	// client, median of rounds, and the cluster's RF-3 QUORUM writes/s (part replicated, whose
	// details, and the parent commit's figures with --parent-kvnode, are Replicated).
	ReplicatedWriteCostRatio float64           `json:"replicated_write_cost_ratio"`
	RF3QuorumWritesPerS      float64           `json:"rf3_quorum_writes_per_s"`
	Replicated               *replicatedResult `json:"replicated,omitempty"`
	// Bootstrap streaming MiB/s (throttle off) over iterating the same span and writing
	// sstables locally, same run (part stream, whose details are Stream).
	StreamOverLocalRewrite float64       `json:"stream_over_local_rewrite"`
	Stream                 *streamResult `json:"stream,omitempty"`
	// Curves holds the scaling curves (parts scaling, bigread and memory).
	Curves *curvesResult `json:"curves,omitempty"`
	// Repair of a node missing some rows (part repair): its time, and the bytes it moved over
	// the bytes missing.
	Repair *repairResult `json:"repair,omitempty"`
	// Targets are the issues' "done when" criteria against this run.
	Targets []target `json:"targets"`

	// HotRate is R, the hot partition's offered rate (found by the search unless --rate gave it);
	// HotLimit is the limit of the limited phase, R/20.
	HotRate  float64 `json:"hot_rate"`
	HotLimit int     `json:"hot_limit"`
	// RateSearch lists the search steps; SearchReachedTarget says whether the step of the R
	// taken reached the search's loss (searchLoss).
	RateSearch          []searchStep `json:"rate_search"`
	SearchReachedTarget bool         `json:"rate_search_reached_target"`
	// SearchProtocol is the target R was searched for over: "cql" (the lean hot client) or
	// "grpc".
	SearchProtocol string `json:"rate_search_protocol,omitempty"`

	// Rounds holds each round's ratios; the headline values are their medians.
	Rounds     []roundRatio `json:"rounds"`
	Phases     []loadResult `json:"phases"`
	HotSteady  []steadyHot  `json:"hot_steady"`
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

// cpuAccount is where the servers' CPU went in the limited hot phases over one protocol: the hot
// partition's rejected and accepted writes at the per-write costs the reject part measured on
// the --sync=false cluster (the hot part's), against the servers' cores in the limited and in
// the baseline phases. What is left for the background predicts its share of the baseline.
type cpuAccount struct {
	Protocol            string  `json:"protocol"`
	HotRejectedPerS     float64 `json:"hot_rejected_per_s"`
	CPUPerRejectedUS    float64 `json:"cpu_us_per_rejected"`
	HotAcceptedPerS     float64 `json:"hot_accepted_per_s"`
	CPUPerAcceptedUS    float64 `json:"cpu_us_per_accepted"`
	HotCores            float64 `json:"hot_cores"` // both, in cores
	ServerCoresLimited  float64 `json:"server_cores_limited"`
	ServerCoresBaseline float64 `json:"server_cores_baseline"`
	LoadGenCoresLimited float64 `json:"loadgen_cores_limited"`
	LoadGenCoresBase    float64 `json:"loadgen_cores_baseline"`
	// Predicted is (ServerCoresLimited − HotCores) / ServerCoresBaseline: the background's
	// throughput ratio if its operations cost what they cost alone.
	Predicted float64 `json:"predicted_background_ratio"`
	Measured  float64 `json:"measured_background_ratio"`

	// The load generator's side, from the phases alone (needs the unlimited phases too): its
	// CPU per background operation (baseline), per accepted hot write (what the unlimited
	// phases spent beyond their background) and per rejected one (what the limited phases
	// spent beyond their background and accepted hot writes). On two cores shared by the
	// servers and the load generator, the hot partition takes what both spend on it.
	LoadGenPerBGOpUS     float64 `json:"loadgen_cpu_us_per_background_op"`
	LoadGenPerAcceptedUS float64 `json:"loadgen_cpu_us_per_accepted"`
	LoadGenPerRejectedUS float64 `json:"loadgen_cpu_us_per_rejected"`
	LoadGenHotCores      float64 `json:"loadgen_hot_cores"`
	// PredictedSharedCores is 1 − (HotCores + LoadGenHotCores) / (server + load generator
	// cores of the baseline): the background's ratio if the servers and the load generator
	// had as many cores in the limited phases as in the baseline and every operation cost
	// what it costs alone. With the limit at R/20 and R set where the unlimited hot partition
	// takes a share u of the cores, it is about 1 − u/20 − u × (rejection / accepted write,
	// both sides' CPU).
	PredictedSharedCores float64 `json:"predicted_background_ratio_shared_cores"`

	// The servers' side alone, which a load generator on other machines would leave as the
	// figure: ServersOnly is 1 − HotCores / ServerCoresBaseline, what the background keeps if
	// the servers had the baseline's cores beside the hot partition and its writes cost what
	// the reject part measured; ServersOnlyMeasured takes the hot partition's server cores
	// from the phases instead: the limited phases' server cores less their background's at
	// the baseline's server CPU per background operation.
	ServersOnly         float64 `json:"background_ratio_servers_only"`
	HotCoresMeasured    float64 `json:"hot_cores_measured"`
	ServersOnlyMeasured float64 `json:"background_ratio_servers_only_measured"`
}

// accounting computes the cpuAccounts of r's limited phases (needs the hot and reject parts).
func (r *Result) accounting() []cpuAccount {
	var out []cpuAccount
	agg := aggregate(r.Phases)
	for _, p := range []struct {
		name     string
		measured float64
	}{{"cql", r.BGThroughputRatioLimited}, {"grpc", r.GRPC.BGThroughputRatioLimited}} {
		var base, lim, unl *phaseAggregate
		for i := range agg {
			if agg[i].Protocol != p.name {
				continue
			}
			switch agg[i].Name {
			case "baseline":
				base = &agg[i]
			case "hot limited":
				lim = &agg[i]
			case "hot unlimited":
				unl = &agg[i]
			}
		}
		var cost *rejectCost
		for i := range r.RejectCost {
			if rc := &r.RejectCost[i]; rc.Protocol == p.name && rc.Path == "coordinator" && !rc.Sync {
				cost = rc
			}
		}
		if base == nil || lim == nil || cost == nil {
			continue
		}
		a := cpuAccount{
			Protocol: p.name, HotRejectedPerS: lim.HotRejected, CPUPerRejectedUS: cost.CPURejectNS / 1e3,
			HotAcceptedPerS: lim.HotAccepted, CPUPerAcceptedUS: cost.CPUAcceptNS / 1e3,
			ServerCoresLimited: lim.ServerCPU, ServerCoresBaseline: base.ServerCPU,
			LoadGenCoresLimited: lim.LoadGenCPU, LoadGenCoresBase: base.LoadGenCPU, Measured: p.measured,
		}
		a.HotCores = (a.HotRejectedPerS*a.CPUPerRejectedUS + a.HotAcceptedPerS*a.CPUPerAcceptedUS) / 1e6
		a.Predicted = ratio(a.ServerCoresLimited-a.HotCores, a.ServerCoresBaseline)
		if a.ServerCoresBaseline > 0 && base.BGThroughput > 0 {
			a.ServersOnly = 1 - a.HotCores/a.ServerCoresBaseline
			a.HotCoresMeasured = lim.ServerCPU - lim.BGThroughput*base.ServerCPU/base.BGThroughput
			a.ServersOnlyMeasured = 1 - a.HotCoresMeasured/a.ServerCoresBaseline
		}
		if unl != nil && base.BGThroughput > 0 && unl.HotAccepted > 0 && lim.HotRejected > 0 {
			perBG := base.LoadGenCPU / base.BGThroughput // cores per op/s: seconds per op
			perAcc := (unl.LoadGenCPU - unl.BGThroughput*perBG) / unl.HotAccepted
			perRej := (lim.LoadGenCPU - lim.BGThroughput*perBG - lim.HotAccepted*perAcc) / lim.HotRejected
			a.LoadGenPerBGOpUS, a.LoadGenPerAcceptedUS, a.LoadGenPerRejectedUS = perBG*1e6, perAcc*1e6, perRej*1e6
			a.LoadGenHotCores = lim.HotRejected*perRej + lim.HotAccepted*perAcc
			a.PredictedSharedCores = 1 - ratio(a.HotCores+a.LoadGenHotCores, base.ServerCPU+base.LoadGenCPU)
		}
		out = append(out, a)
	}
	return out
}

// protocolHeadline is the headline of the hot partition and of the rejection costs over one
// protocol.
type protocolHeadline struct {
	BGThroughputRatioLimited         float64 `json:"background_throughput_ratio_limited"`
	BGThroughputRatioUnlimited       float64 `json:"background_throughput_ratio_unlimited"`
	BGP99RatioLimited                float64 `json:"background_p99_ratio_limited"`
	BGP99RatioUnlimited              float64 `json:"background_p99_ratio_unlimited"`
	HotAcceptedOverLimit             float64 `json:"hot_accepted_over_limit"`
	HotAcceptedOverLimitFirst        float64 `json:"hot_accepted_over_limit_first_second"`
	HotAcceptedOverLimitSteady       float64 `json:"hot_accepted_over_limit_steady"`
	HotAcceptedOverLimitFirstSeconds float64 `json:"hot_accepted_over_limit_first_seconds"`
	RejectCostRatioCoordinator       float64 `json:"reject_cost_ratio_coordinator"`
	RejectCostRatioReplica           float64 `json:"reject_cost_ratio_replica"`
	RejectCostRatioCoordinatorNoSync float64 `json:"reject_cost_ratio_coordinator_nosync"`
	RejectCostRatioReplicaNoSync     float64 `json:"reject_cost_ratio_replica_nosync"`
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
	Protocol              string
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
		key := p.Protocol + "/" + p.Phase
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, phaseAggregate{Name: p.Phase, Protocol: p.Protocol, HotRate: p.HotRate, HotLimit: p.HotLimit})
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
	Protocol            string  `json:"protocol"`
	ThroughputLimited   float64 `json:"background_throughput_ratio_limited"`
	ThroughputUnlimited float64 `json:"background_throughput_ratio_unlimited"`
	P99Limited          float64 `json:"background_p99_ratio_limited"`
	P99Unlimited        float64 `json:"background_p99_ratio_unlimited"`
	HotOverLimit        float64 `json:"hot_accepted_over_limit"`
	HotOverLimitFirst   float64 `json:"hot_accepted_over_limit_first_second"`
}

// roundRatios compares each round's hot phases over protocol with the baseline of the same round
// and protocol, so that a drift in the machine's speed between rounds cancels. Rounds missing a
// phase are left out.
func roundRatios(phases []loadResult, protocol string) []roundRatio {
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
			if p.Protocol != protocol {
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
		first := 0.0
		if lim.FirstHot != nil {
			first = ratio(perSecond(lim.FirstHot.Hot.Accepted, lim.FirstHot.DurationS), float64(lim.HotLimit))
		}
		out = append(out, roundRatio{
			Round:               round,
			Protocol:            protocol,
			HotOverLimitFirst:   first,
			ThroughputLimited:   ratio(lim.bgThroughput(), base.bgThroughput()),
			ThroughputUnlimited: ratio(unl.bgThroughput(), base.bgThroughput()),
			P99Limited:          ratio(lim.BG.LatencyMS.P99, base.BG.LatencyMS.P99),
			P99Unlimited:        ratio(unl.BG.LatencyMS.P99, base.BG.LatencyMS.P99),
			HotOverLimit:        ratio(lim.hotRate(), float64(lim.HotLimit)),
		})
	}
}

// headline fills in the headline numbers of r from its measurements: for the hot phases the
// median over rounds of each round's ratio to its own baseline; the native protocol's in the
// top-level fields, gRPC's in r.GRPC.
func (r *Result) headline() {
	r.Protocol, r.Driver = "cql", "gocql (scylladb/gocql), prepared statements, token-aware"
	var cqlHL protocolHeadline
	r.Rounds = nil
	for _, p := range []struct {
		name string
		hl   *protocolHeadline
	}{{"cql", &cqlHL}, {"grpc", &r.GRPC}} {
		rounds := roundRatios(r.Phases, p.name)
		r.Rounds = append(r.Rounds, rounds...)
		med := func(f func(roundRatio) float64) float64 {
			vs := make([]float64, len(rounds))
			for i, rr := range rounds {
				vs[i] = f(rr)
			}
			return median(vs)
		}
		hl := p.hl
		hl.BGThroughputRatioLimited = med(func(rr roundRatio) float64 { return rr.ThroughputLimited })
		hl.BGThroughputRatioUnlimited = med(func(rr roundRatio) float64 { return rr.ThroughputUnlimited })
		hl.BGP99RatioLimited = med(func(rr roundRatio) float64 { return rr.P99Limited })
		hl.BGP99RatioUnlimited = med(func(rr roundRatio) float64 { return rr.P99Unlimited })
		hl.HotAcceptedOverLimit = med(func(rr roundRatio) float64 { return rr.HotOverLimit })
		hl.HotAcceptedOverLimitFirst = med(func(rr roundRatio) float64 { return rr.HotOverLimitFirst })
		for _, st := range r.HotSteady {
			if st.Protocol == p.name {
				hl.HotAcceptedOverLimitSteady, hl.HotAcceptedOverLimitFirstSeconds = st.SteadyOverLimit, st.FirstOverLimit
			}
		}
		for _, rc := range r.RejectCost {
			if rc.Protocol != p.name {
				continue
			}
			switch {
			case rc.Path == "coordinator" && rc.Sync:
				hl.RejectCostRatioCoordinator = rc.Ratio
			case rc.Path == "replicas" && rc.Sync:
				hl.RejectCostRatioReplica = rc.Ratio
			case rc.Path == "coordinator":
				hl.RejectCostRatioCoordinatorNoSync = rc.Ratio
			case rc.Path == "replicas":
				hl.RejectCostRatioReplicaNoSync = rc.Ratio
			}
		}
	}
	r.BGThroughputRatioLimited = cqlHL.BGThroughputRatioLimited
	r.BGThroughputRatioUnlimited = cqlHL.BGThroughputRatioUnlimited
	r.BGP99RatioLimited = cqlHL.BGP99RatioLimited
	r.BGP99RatioUnlimited = cqlHL.BGP99RatioUnlimited
	r.HotAcceptedOverLimit = cqlHL.HotAcceptedOverLimit
	r.HotAcceptedOverLimitFirst = cqlHL.HotAcceptedOverLimitFirst
	r.HotAcceptedOverLimitSteady = cqlHL.HotAcceptedOverLimitSteady
	r.HotAcceptedOverLimitFirstSeconds = cqlHL.HotAcceptedOverLimitFirstSeconds
	r.RejectCostRatioCoordinator = cqlHL.RejectCostRatioCoordinator
	r.RejectCostRatioReplica = cqlHL.RejectCostRatioReplica
	r.RejectCostRatioCoordinatorNoSync = cqlHL.RejectCostRatioCoordinatorNoSync
	r.RejectCostRatioReplicaNoSync = cqlHL.RejectCostRatioReplicaNoSync

	// The per-request CPU figures: from the cluster with the default --sync=true when it ran,
	// else from the other.
	pick := func(protocol string, f func(sync bool) (float64, bool)) float64 {
		if v, ok := f(true); ok {
			return v
		}
		v, _ := f(false)
		return v
	}
	noop := func(protocol string) float64 {
		return pick(protocol, func(sync bool) (float64, bool) {
			for _, n := range r.NoopRequest {
				if n.Protocol == protocol && n.Sync == sync {
					return n.CPUPerReqNS / 1e3, true
				}
			}
			return 0, false
		})
	}
	reject := func(protocol string) float64 {
		return pick(protocol, func(sync bool) (float64, bool) {
			for _, rc := range r.RejectCost {
				if rc.Protocol == protocol && rc.Sync == sync && rc.Path == "coordinator" {
					return rc.CPURejectNS / 1e3, true
				}
			}
			return 0, false
		})
	}
	r.NativeNoopCPUUS, r.GRPCNoopCPUUS = noop("cql"), noop("grpc")
	r.NativeRejectCPUUS, r.GRPCRejectCPUUS = reject("cql"), reject("grpc")
	for _, o := range r.Overhead {
		switch o.Op {
		case "write":
			r.LimiterOverheadWrite, r.LimiterOverheadWriteResolution = o.Overhead, o.Resolution
		case "read":
			r.LimiterOverheadRead, r.LimiterOverheadReadResolution = o.Overhead, o.Resolution
		}
	}
	if r.LWT != nil {
		r.LWTOverQuorumWriteLatency, r.LWTOverQuorumWriteCPU = r.LWT.LatencyRatio, r.LWT.CPURatio
	}
	if r.Floor != nil {
		r.NativeNoopOverFloor, r.NativeNoopOverFloorPipelined = r.Floor.Over, r.Floor.OverPipelined
	}
	if r.Replicated != nil {
		k := r.Replicated.Servers["kvnode"]
		r.ReplicatedWriteCostRatio, r.RF3QuorumWritesPerS = k.CostRatio, k.RF3OpsPerS
	}
	if r.Stream != nil {
		r.StreamOverLocalRewrite = r.Stream.OverLocal
	}
	r.Accounting = r.accounting()
	r.Targets = r.targets()
}

// writeText prints r as Markdown tables, which read well on a terminal and as a file; --save
// keeps the same run as JSON.
func (r *Result) writeText(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "# kvnode perf, %s\n\n", r.Date)
	fmt.Fprintf(&b, "`%s`: %d CPUs (%s), %s %s, load average %s at start, %s at end; ran %.0f s.\n\n",
		r.Command, m.CPUs, m.CPUModel, m.GoVersion, m.OS, m.LoadAtStart, m.LoadAtEnd, r.RuntimeS)

	s := r.Settings
	if s.has("hot") {
		fmt.Fprintf(&b, "## Hot partition against background traffic\n\n")
		fmt.Fprintf(&b, "3 nodes (--sync=false), RF=3, QUORUM. Background: %d partitions, 50%% writes, closed loop, %d workers. "+
			"Hot: one partition, writes, open loop at R ops/s (%d workers). Over each protocol in every round: cql is gocql, "+
			"token-aware, prepared statements; grpc is kvnode's gRPC API with coordinators in turn. %d round(s) of %v per phase; "+
			"the limited phase is measured after %v with the limit set, reported as the first second.\n\n",
			s.BGPartitions, s.BGConcurrency, s.HotConcurrency, s.Rounds, s.Phase, s.LimitWarm)
		if len(r.RateSearch) > 0 {
			over := "gRPC"
			if r.SearchProtocol == "cql" {
				over = "the native protocol (the lean hot client)"
			}
			fmt.Fprintf(&b, "Search for R over %s (each step: %d pairs of %v background alone and %v with the hot partition at R, no limit, in alternating order; a step whose median pair loss reaches %.0f%%, a margin over 1/3, is measured again over as many pairs and R is taken when the median over all its pairs still does; a step past the target by more than %.0f points is followed by one at the rate interpolated between it and the step before, taken when it reaches the target too):\n\n",
				over, s.SearchPairs, s.Search, s.Search, 100*searchLoss, 100*searchOvershoot)
			fmt.Fprintf(&b, "| R (ops/s) | background alone ops/s | with hot ops/s | pairs | loss (median pair) | hot accepted/s |\n|---:|---:|---:|---:|---:|---:|\n")
			for _, st := range r.RateSearch {
				fmt.Fprintf(&b, "| %.0f | %.0f | %.0f | %d | %.1f%% | %.0f |\n", st.HotRate, st.Baseline, st.BGThroughput, st.Pairs, 100*st.Loss, st.HotThroughput)
			}
			if !r.SearchReachedTarget {
				fmt.Fprintf(&b, "\nThe search did not reach a loss of %.0f%%; R is its last step.\n", 100*searchLoss)
			} else {
				fmt.Fprintf(&b, "\nR = %.0f ops/s.\n", r.HotRate)
			}
			b.WriteString("\n")
		}
		agg := aggregate(r.Phases)
		base := map[string]phaseAggregate{}
		for _, a := range agg {
			if a.Name == "baseline" {
				base[a.Protocol] = a
			}
		}
		fmt.Fprintf(&b, "| protocol | phase (all rounds) | hot offered/s | limit | background ops/s | × baseline | p50 ms | p99 ms | p99 × baseline | hot accepted/s | hot accepted / limit | hot rejected/s | background rejected, errors | CPU cores: servers, load generator |\n")
		fmt.Fprintf(&b, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
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
			bs := base[a.Protocol]
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.0f | %.2f | %.2f | %.2f | %.2f | %s | %s | %s | %d, %d | %.2f, %.2f |\n",
				a.Protocol, a.Name, hot(a.HotOffered), limit, a.BGThroughput, ratio(a.BGThroughput, bs.BGThroughput),
				a.P50, a.P99, ratio(a.P99, bs.P99), hot(a.HotAccepted), over, hot(a.HotRejected),
				a.BGRejected, a.BGErrors, a.ServerCPU, a.LoadGenCPU)
		}

		fmt.Fprintf(&b, "\nEach round's hot phases against the same round's baseline over the same protocol; the headline is the median over rounds:\n\n")
		fmt.Fprintf(&b, "| protocol | round | background throughput × baseline, unlimited | limited | background p99 × baseline, unlimited | limited | hot accepted / limit | first second |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, rr := range r.Rounds {
			fmt.Fprintf(&b, "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", rr.Protocol, rr.Round, rr.ThroughputUnlimited, rr.ThroughputLimited, rr.P99Unlimited, rr.P99Limited, rr.HotOverLimit, rr.HotOverLimitFirst)
		}
		for _, p := range []struct {
			name string
			hl   protocolHeadline
		}{{"cql", r.cqlHeadline()}, {"grpc", r.GRPC}} {
			fmt.Fprintf(&b, "| %s | median | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", p.name, p.hl.BGThroughputRatioUnlimited, p.hl.BGThroughputRatioLimited,
				p.hl.BGP99RatioUnlimited, p.hl.BGP99RatioLimited, p.hl.HotAcceptedOverLimit, p.hl.HotAcceptedOverLimitFirst)
		}
	}

	if len(r.HotSteady) > 0 {
		fmt.Fprintf(&b, "\nA long limited phase per protocol (%v, the same load, the limit set at its start): the hot partition's accepted writes per second:\n\n", s.SteadyDuration)
		fmt.Fprintf(&b, "| protocol | limit | accepted per second | first %d s / limit | the rest / limit |\n|---|---:|---|---:|---:|\n", s.SteadyFirst)
		for _, st := range r.HotSteady {
			var ps []string
			for _, v := range st.AcceptedPerSecond {
				ps = append(ps, strconv.FormatInt(v, 10))
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %.2f | %.2f |\n", st.Protocol, st.Limit, strings.Join(ps, ", "), st.FirstOverLimit, st.SteadyOverLimit)
		}
	}

	if s.has("reject") {
		fmt.Fprintf(&b, "\n## Cost of a rejection (server CPU per write)\n\n")
		if s.RejectRate > 0 {
			fmt.Fprintf(&b, "Writes to one partition at %.0f/s, open loop (%d workers), for %v per phase after %v unmeasured", s.RejectRate, s.RejectConcurrency, s.RejectDuration, s.RejectWarm)
		} else {
			fmt.Fprintf(&b, "%d writes per phase to one partition, closed loop, %d workers, after %d unmeasured", s.RejectOps, s.RejectConcurrency, s.RejectWarmOps)
		}
		fmt.Fprintf(&b, "; CPU summed over the 3 server processes from /proc, idle CPU subtracted. Per path: one accept phase per protocol, then %d round(s) of a reject phase per protocol, the protocols' order alternating; the cost per rejected write is the median over the rounds.\n\n", max(s.RejectReps, 1))
		fmt.Fprintf(&b, "| --sync | protocol | path | setup | accept phase: accepted | µs CPU / accepted | reject phases: rejected by coordinator + by replicas (admitted) | µs CPU / rejected (rounds) | ratio | ratio by stat ticks |\n")
		fmt.Fprintf(&b, "|---|---|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, rc := range r.RejectCost {
			var reps []float64
			for _, rep := range rc.RejectReps {
				reps = append(reps, rep.CPURejectNS)
			}
			fmt.Fprintf(&b, "| %v | %s | %s | %s | %d | %.1f | %d + %d (%d) | %.1f (%s) | %.3f | %.3f |\n", rc.Sync, rc.Protocol, rc.Path, rc.Setup,
				rc.AcceptPhase.Accepted, rc.CPUAcceptNS/1e3, rc.RejectPhase.ByCoordinator, rc.RejectPhase.ByReplicas, rc.RejectPhase.Accepted,
				rc.CPURejectNS/1e3, repsUS(reps), rc.Ratio, rc.RatioByTicks)
		}
		fmt.Fprintf(&b, "\nA request that does nothing, sent the same way (nodes in turn):\n\n| --sync | protocol | request | requests | µs CPU / request |\n|---|---|---|---:|---:|\n")
		for _, n := range r.NoopRequest {
			fmt.Fprintf(&b, "| %v | %s | %s | %d | %.1f |\n", n.Sync, n.Protocol, n.Request, n.Phase.Ops, n.CPUPerReqNS/1e3)
		}
	}

	if len(r.Accounting) > 0 {
		fmt.Fprintf(&b, "\n## Where the CPU went in the limited phases\n\nThe hot partition's writes at the per-write CPU the reject part measured (coordinator path, --sync=false, as the hot part runs), against the servers' cores:\n\n")
		fmt.Fprintf(&b, "| protocol | hot rejected/s × µs | hot accepted/s × µs | hot partition cores | server cores limited, baseline | load generator cores limited, baseline | background predicted (limited − hot) / baseline | measured |\n|---|---|---|---:|---|---|---:|---:|\n")
		for _, a := range r.Accounting {
			fmt.Fprintf(&b, "| %s | %.0f × %.1f | %.0f × %.1f | %.2f | %.2f, %.2f | %.2f, %.2f | %.2f | %.2f |\n", a.Protocol,
				a.HotRejectedPerS, a.CPUPerRejectedUS, a.HotAcceptedPerS, a.CPUPerAcceptedUS, a.HotCores,
				a.ServerCoresLimited, a.ServerCoresBaseline, a.LoadGenCoresLimited, a.LoadGenCoresBase, a.Predicted, a.Measured)
		}
		fmt.Fprintf(&b, "\nThe load generator's side (its CPU per operation, from the phases: the unlimited phases' beyond their background for an accepted hot write, the limited phases' beyond their background and accepted writes for a rejected one), and the background predicted with the servers and the load generator keeping the baseline's cores:\n\n")
		fmt.Fprintf(&b, "| protocol | load generator µs per background op | per accepted hot write | per rejected | hot partition cores, load generator | predicted, shared cores | measured |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, a := range r.Accounting {
			fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %.2f | %.3f | %.3f |\n", a.Protocol,
				a.LoadGenPerBGOpUS, a.LoadGenPerAcceptedUS, a.LoadGenPerRejectedUS, a.LoadGenHotCores, a.PredictedSharedCores, a.Measured)
		}
		fmt.Fprintf(&b, "\nThe servers' CPU alone (the background's ratio were the load generator on other cores): 1 − the hot partition's server cores over the baseline's server cores, with the hot partition's cores from the reject part's costs and measured from the phases (the limited phases' server cores less their background's at the baseline's CPU per operation):\n\n")
		fmt.Fprintf(&b, "| protocol | servers only, reject part's costs | hot partition server cores, from the phases | servers only, from the phases | measured throughput ratio |\n|---|---:|---:|---:|---:|\n")
		for _, a := range r.Accounting {
			fmt.Fprintf(&b, "| %s | %.3f | %.3f | %.3f | %.3f |\n", a.Protocol, a.ServersOnly, a.HotCoresMeasured, a.ServersOnlyMeasured, a.Measured)
		}
	}

	if s.has("overhead") {
		fmt.Fprintf(&b, "\n## Limiter overhead (one node, --sync=false, native protocol)\n\n")
		fmt.Fprintf(&b, "Closed loop, %d workers, %d partitions, QUORUM (RF=1); limits 2^31-1 vs none; %d pairs of %v, order alternating.\n\n",
			s.OverheadConcurrency, s.OverheadPartitions, s.OverheadReps, s.OverheadPhase)
		fmt.Fprintf(&b, "| op | unlimited ops/s (per pair) | limited ops/s (per pair) | overhead = 1 − limited/unlimited (median pair) | resolution (2 × s.e. of the median pair) | per-pair range | pooled | server CPU/op, limited vs unlimited (median pair) |\n|---|---|---|---:|---:|---|---:|---:|\n")
		for _, o := range r.Overhead {
			var un, li []string
			for _, p := range o.Pairs {
				un = append(un, fmt.Sprintf("%.0f", p.Unlimited.OpsPerS))
				li = append(li, fmt.Sprintf("%.0f", p.Limited.OpsPerS))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %+.1f%% | ±%.1f%% | %+.1f%% … %+.1f%% | %+.1f%% | %+.1f%% |\n", o.Op, strings.Join(un, ", "), strings.Join(li, ", "),
				100*o.Overhead, 100*o.Resolution, 100*o.Min, 100*o.Max, 100*o.Pooled, 100*o.CPUOverhead)
		}
	}

	if s.has("overload") && r.Overload != nil {
		r.Overload.writeText(&b)
	}
	if r.LWT != nil {
		r.LWT.writeText(&b)
	}
	if r.Counter != nil {
		r.Counter.writeText(&b)
	}
	if s.has("levels") && r.Levels != nil {
		r.Levels.writeText(&b)
	}
	if r.Replicated != nil {
		r.Replicated.writeText(&b, s.Replicated)
	}
	if r.Stream != nil {
		r.Stream.writeText(&b, s.Stream)
	}
	if r.Curves != nil {
		r.Curves.writeText(&b, s.Curves)
	}
	if r.Repair != nil {
		r.Repair.writeText(&b, s.Repair)
	}

	fmt.Fprintf(&b, "\n## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.What, t.Measured, yesNo(t.Met))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cqlHeadline returns the native protocol's headline, which r holds in its top-level fields.
func (r *Result) cqlHeadline() protocolHeadline {
	return protocolHeadline{
		BGThroughputRatioLimited: r.BGThroughputRatioLimited, BGThroughputRatioUnlimited: r.BGThroughputRatioUnlimited,
		BGP99RatioLimited: r.BGP99RatioLimited, BGP99RatioUnlimited: r.BGP99RatioUnlimited,
		HotAcceptedOverLimit: r.HotAcceptedOverLimit, HotAcceptedOverLimitFirst: r.HotAcceptedOverLimitFirst,
		HotAcceptedOverLimitSteady: r.HotAcceptedOverLimitSteady, HotAcceptedOverLimitFirstSeconds: r.HotAcceptedOverLimitFirstSeconds,
		RejectCostRatioCoordinator: r.RejectCostRatioCoordinator, RejectCostRatioReplica: r.RejectCostRatioReplica,
		RejectCostRatioCoordinatorNoSync: r.RejectCostRatioCoordinatorNoSync, RejectCostRatioReplicaNoSync: r.RejectCostRatioReplicaNoSync,
	}
}

// target is one "done when" criterion of the issues against a run.
type target struct {
	What     string `json:"what"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

// The targets' bounds.
const (
	targetBackground    = 0.95 // background throughput beside the limited hot partition, × baseline (issue 36)
	targetRejectRatio   = 0.10 // rejected / accepted write CPU, both paths (issue 36)
	targetNativeVsGRPC  = 0.25 // native_reject_cpu_us / grpc_reject_cpu_us
	targetHotLow        = 0.9  // hot accepted / limit after the first second
	targetHotHigh       = 1.1
	targetOverloadP99   = 5.0 // the low-rate client's p99 under overload, × unloaded
	targetRSSGrowthMiB  = 512 // the node's peak RSS under overload above its RSS before
	targetOverheadLimit = 0.03
)

// targets lists the issues' targets (16 and 20) against what r measured.
func (r *Result) targets() []target {
	var ts []target
	if r.Settings.has("hot") {
		ts = append(ts,
			target{fmt.Sprintf("background throughput, hot limited ≥ %.2f × baseline (median of rounds, native protocol)", targetBackground),
				fmt.Sprintf("%.2f (gRPC %.2f)", r.BGThroughputRatioLimited, r.GRPC.BGThroughputRatioLimited), r.BGThroughputRatioLimited >= targetBackground},
			target{"background throughput, hot unlimited clearly worse: ≤ 2/3 × baseline",
				fmt.Sprintf("%.2f (gRPC %.2f)", r.BGThroughputRatioUnlimited, r.GRPC.BGThroughputRatioUnlimited), r.BGThroughputRatioUnlimited <= 1-targetLoss},
			target{fmt.Sprintf("hot partition accepted / limit within 0.9–1.1 after the first %d s of a %v limited phase (native protocol)", r.Settings.SteadyFirst, r.Settings.SteadyDuration),
				fmt.Sprintf("%.2f; first %d s %.2f (gRPC %.2f; first %.2f); the rounds' phases after their first %v: %.2f (gRPC %.2f), in it %.2f (gRPC %.2f)",
					r.HotAcceptedOverLimitSteady, r.Settings.SteadyFirst, r.HotAcceptedOverLimitFirstSeconds, r.GRPC.HotAcceptedOverLimitSteady, r.GRPC.HotAcceptedOverLimitFirstSeconds,
					r.Settings.LimitWarm, r.HotAcceptedOverLimit, r.GRPC.HotAcceptedOverLimit, r.HotAcceptedOverLimitFirst, r.GRPC.HotAcceptedOverLimitFirst),
				r.HotAcceptedOverLimitSteady >= targetHotLow && r.HotAcceptedOverLimitSteady <= targetHotHigh})
	}
	if r.Settings.has("reject") {
		ts = append(ts,
			target{fmt.Sprintf("rejected / accepted CPU ≤ %.2f, coordinator path (native, --sync=true)", targetRejectRatio),
				fmt.Sprintf("%.3f (gRPC %.3f; --sync=false %.3f)", r.RejectCostRatioCoordinator, r.GRPC.RejectCostRatioCoordinator, r.RejectCostRatioCoordinatorNoSync),
				r.RejectCostRatioCoordinator <= targetRejectRatio},
			target{fmt.Sprintf("rejected / accepted CPU ≤ %.2f, replicas path (native, --sync=true)", targetRejectRatio),
				fmt.Sprintf("%.3f (gRPC %.3f; --sync=false %.3f)", r.RejectCostRatioReplica, r.GRPC.RejectCostRatioReplica, r.RejectCostRatioReplicaNoSync),
				r.RejectCostRatioReplica <= targetRejectRatio},
			target{"native_reject_cpu_us ≤ 0.25 × grpc_reject_cpu_us",
				fmt.Sprintf("%.1f / %.1f µs = %.2f (no-op: %.1f / %.1f µs)", r.NativeRejectCPUUS, r.GRPCRejectCPUUS, ratio(r.NativeRejectCPUUS, r.GRPCRejectCPUUS),
					r.NativeNoopCPUUS, r.GRPCNoopCPUUS),
				r.GRPCRejectCPUUS > 0 && r.NativeRejectCPUUS <= targetNativeVsGRPC*r.GRPCRejectCPUUS})
	}
	if r.Settings.has("overhead") {
		for _, o := range []struct {
			op        string
			ov, resol float64
		}{{"writes", r.LimiterOverheadWrite, r.LimiterOverheadWriteResolution}, {"reads", r.LimiterOverheadRead, r.LimiterOverheadReadResolution}} {
			ts = append(ts, target{fmt.Sprintf("limiter overhead, %s: within the resolution (or ≤ 3%%)", o.op),
				fmt.Sprintf("%+.1f%%, resolution ±%.1f%%", 100*o.ov, 100*o.resol), o.ov <= math.Max(o.resol, targetOverheadLimit)})
		}
	}
	if r.Settings.has("overload") && r.Overload != nil {
		ts = append(ts, r.Overload.targets()...)
	}
	if r.Settings.has("levels") && r.Levels != nil {
		ts = append(ts, r.Levels.targets()...)
	}
	if r.LWT != nil {
		ts = append(ts, r.LWT.targets(r.Settings)...)
	}
	if r.Settings.has("floor") && r.Floor != nil {
		ts = append(ts, r.Floor.targets()...)
	}
	if r.Counter != nil {
		ts = append(ts, r.Counter.targets()...)
	}
	if r.Replicated != nil {
		ts = append(ts, r.Replicated.targets()...)
	}
	if r.Stream != nil {
		ts = append(ts, r.Stream.targets()...)
	}
	if r.Repair != nil {
		ts = append(ts, r.Repair.targets()...)
	}
	return ts
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
