package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/tool/bench"
)

// tableOverload is the overload part's table, on a one-node cluster of its own.
const tableOverload = "perf_ovl.t"

// overloadSettings are the overload part's sizes.
type overloadSettings struct {
	// MaxConcurrent, MaxQueued and QueueTimeout are the node's admission control
	// (--max-concurrent-requests, --max-queued-requests, --request-queue-timeout).
	MaxConcurrent int           `json:"max_concurrent_requests"`
	MaxQueued     int           `json:"max_queued_requests"`
	QueueTimeout  time.Duration `json:"-"`
	// Factor × MaxConcurrent closed-loop workers are the overload.
	Factor     int           `json:"factor"`
	Partitions int           `json:"partitions"`
	Duration   time.Duration `json:"-"`
	// ProbeRate is the low-rate client's open-loop rate, alone (ProbeDuration) and during the
	// overload.
	ProbeRate     float64       `json:"probe_rate"`
	ProbeDuration time.Duration `json:"-"`
	// Poll is the interval of the health check, metrics scrape and RSS sample during the
	// overload.
	Poll time.Duration `json:"-"`
}

// overloadResult is what the overload part measured.
type overloadResult struct {
	Settings overloadSettings `json:"settings"`
	// AdmissionControl says whether the kvnode binary has the admission control flags; without
	// them the node runs unbounded and the part measures what that does.
	AdmissionControl bool `json:"admission_control"`
	Workers          int  `json:"workers"`
	// Load is the closed-loop overload; Probe the low-rate client during it, ProbeAlone the same
	// client on the idle node just before. The low-rate client is a process of its own
	// (kvnode bench), as a second application is: in this process its goroutines would queue
	// behind the load's 10 × MaxConcurrent workers in the Go scheduler, and its latency would
	// measure the load generator as much as the node. The same client run in this process is
	// reported beside it (ProbeInProcess, ProbeAloneInProcess) to show that difference.
	Load                *bench.Summary `json:"load"`
	Probe               *bench.Summary `json:"probe"`
	ProbeAlone          *bench.Summary `json:"probe_alone"`
	ProbeInProcess      *bench.Summary `json:"probe_in_process"`
	ProbeAloneInProcess *bench.Summary `json:"probe_alone_in_process"`
	// The headline: goodput (accepted/s), the p99 of admitted requests, shed requests per second
	// and as a share of those answered, and the low-rate client's p99 against its p99 alone.
	GoodputPerS     float64 `json:"goodput_per_s"`
	AdmittedP99MS   float64 `json:"admitted_p99_ms"`
	ShedPerS        float64 `json:"shed_per_s"`
	ShedShare       float64 `json:"shed_share"`
	ProbeP99MS      float64 `json:"probe_p99_ms"`
	ProbeP99AloneMS float64 `json:"probe_p99_alone_ms"`
	ProbeP99Ratio   float64 `json:"probe_p99_ratio"`
	// ProbeInProcessP99Ratio is ProbeP99Ratio for the low-rate client run in this process.
	ProbeInProcessP99Ratio float64 `json:"probe_in_process_p99_ratio"`
	// ProbeShed is how many of the low-rate client's requests were shed during the overload.
	ProbeShed int64 `json:"probe_shed"`
	// The node's memory: resident set before the overload, and its peak (VmHWM) after.
	RSSBeforeMiB float64 `json:"rss_before_mib"`
	PeakRSSMiB   float64 `json:"peak_rss_mib"`
	// Responsiveness during the overload: gRPC health checks and /metrics scrapes, one each
	// per Poll, each bounded by pollTimeout.
	HealthChecks   int     `json:"health_checks"`
	HealthFailures int     `json:"health_failures"`
	HealthMaxMS    float64 `json:"health_max_ms"`
	Scrapes        int     `json:"metrics_scrapes"`
	ScrapeFailures int     `json:"metrics_failures"`
	ScrapeMaxMS    float64 `json:"metrics_max_ms"`
	FirstFailure   string  `json:"first_failure,omitempty"`
	ServerCores    float64 `json:"server_cores"`
	LoadGenCores   float64 `json:"loadgen_cores"`
}

// pollTimeout bounds one health check or metrics scrape during the overload: a node that takes
// longer is not responsive.
const pollTimeout = 2 * time.Second

// hasAdmissionControl reports whether bin's serve command has the admission control flags.
func hasAdmissionControl(ctx context.Context, bin string) bool {
	out, _ := exec.CommandContext(ctx, bin, "serve", "-h").CombinedOutput()
	return bytes.Contains(out, []byte("max-concurrent-requests")) && bytes.Contains(out, []byte("max-queued-requests")) &&
		bytes.Contains(out, []byte("request-queue-timeout"))
}

// overloadPart runs the overload part on a one-node cluster of its own (--sync=false): a
// low-rate client alone, then Factor × MaxConcurrent closed-loop workers over the native
// protocol beside the same low-rate client, while health checks, metrics scrapes and RSS
// samples watch the node.
func overloadPart(ctx context.Context, s settings, bin, root string, res *Result, log io.Writer) error {
	o := s.Overload
	r := &overloadResult{Settings: o, AdmissionControl: hasAdmissionControl(ctx, bin), Workers: o.Factor * o.MaxConcurrent}
	res.Overload = r
	var extra []string
	if r.AdmissionControl {
		extra = []string{"--max-concurrent-requests", strconv.Itoa(o.MaxConcurrent), "--max-queued-requests", strconv.Itoa(o.MaxQueued),
			"--request-queue-timeout", o.QueueTimeout.String()}
	} else {
		fmt.Fprintln(log, "perf: this kvnode has no admission control flags; the overload part runs the node unbounded")
	}
	ddl := []string{
		"CREATE KEYSPACE perf_ovl WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE " + tableOverload + " " + tableColumns,
	}
	fmt.Fprintf(log, "perf: starting 1 node(s), --sync=false %s\n", strings.Join(extra, " "))
	c, err := startCluster(ctx, bin, root, "overload", 1, false, extra...)
	if err == nil {
		err = c.exec(ctx, log, ddl...)
	}
	if err == nil {
		err = runOverload(ctx, o, bin, c, r, log)
	}
	return errors.Join(err, c.stop())
}

func runOverload(ctx context.Context, o overloadSettings, bin string, c *testCluster, r *overloadResult, log io.Writer) error {
	// The loader stays within the node's execution slots: more workers than slots would queue,
	// and a write shed as Overloaded while the table loads fails the run (it did, once in CI, in
	// --quick mode with 4 slots and 16 workers).
	if err := loadRows(ctx, c, tableOverload, o.Partitions, min(16, o.MaxConcurrent)); err != nil {
		return err
	}
	base := bench.Config{
		Protocol: bench.ProtocolCQL, Addrs: c.cqlAddrs(), Coordinator: bench.Fixed, Table: tableOverload,
		Writes: 0.5, Consistency: client.Quorum, Partitions: o.Partitions, Concurrency: 4, Duration: time.Second, Seed: 1,
	}
	probeSess, err := bench.Open(ctx, base)
	if err != nil {
		return err
	}
	defer probeSess.Close()
	loadSess, err := bench.Open(ctx, base)
	if err != nil {
		return err
	}
	defer loadSess.Close()

	probeCfg := base
	probeCfg.Rate, probeCfg.Duration = o.ProbeRate, o.ProbeDuration
	if r.ProbeAlone, err = runBenchProcess(ctx, bin, probeCfg); err != nil {
		return err
	}
	if r.ProbeAloneInProcess, err = probeSess.Run(ctx, probeCfg, nil); err != nil {
		return err
	}
	srv := c.servers[0]
	pid := srv.Proc().Pid()
	before, err := readMemory(pid)
	if err != nil {
		return err
	}
	r.RSSBeforeMiB = before.rssMiB

	loadCfg := base
	loadCfg.Concurrency, loadCfg.Duration, loadCfg.Seed = r.Workers, o.Duration, 2
	probeCfg.Duration, probeCfg.Seed = o.Duration, 3

	watchCtx, stopWatch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var watchErr error
	wg.Go(func() { watchErr = watchNode(watchCtx, o.Poll, srv.Addr, srv.MetricsAddr, r) })
	srv0, self0, err := c.cpuWithSelf()
	if err != nil {
		stopWatch()
		wg.Wait()
		return err
	}
	start := time.Now()
	var probeErr, inProcessErr error
	wg.Go(func() { r.Probe, probeErr = runBenchProcess(ctx, bin, probeCfg) })
	wg.Go(func() { r.ProbeInProcess, inProcessErr = probeSess.Run(ctx, probeCfg, nil) })
	var loadErr error
	r.Load, loadErr = loadSess.Run(ctx, loadCfg, nil)
	stopWatch()
	wg.Wait()
	if err := errors.Join(loadErr, probeErr, inProcessErr, watchErr, ctx.Err()); err != nil {
		return err
	}
	wall := time.Since(start).Seconds()
	srv1, self1, err := c.cpuWithSelf()
	if err != nil {
		return err
	}
	r.ServerCores, r.LoadGenCores = srv1.sub(srv0).Run.Seconds()/wall, self1.sub(self0).Run.Seconds()/wall
	after, err := readMemory(pid)
	if err != nil {
		return err
	}
	r.PeakRSSMiB = after.peakMiB

	l := r.Load
	r.GoodputPerS = perSecond(l.Accepted, l.DurationS)
	r.AdmittedP99MS = l.LatencyMS.P99
	shed := l.Errors[bench.ErrorOverloaded]
	r.ShedPerS = perSecond(shed, l.DurationS)
	r.ShedShare = ratio(float64(shed), float64(l.Accepted+l.Rejected()+l.Failed()))
	r.ProbeP99MS, r.ProbeP99AloneMS = r.Probe.LatencyMS.P99, r.ProbeAlone.LatencyMS.P99
	r.ProbeP99Ratio = ratio(r.ProbeP99MS, r.ProbeP99AloneMS)
	r.ProbeInProcessP99Ratio = ratio(r.ProbeInProcess.LatencyMS.P99, r.ProbeAloneInProcess.LatencyMS.P99)
	r.ProbeShed = r.Probe.Errors[bench.ErrorOverloaded]
	fmt.Fprintf(log, "perf: overload (%d workers, admission control %v): goodput %.0f/s, admitted p99 %.1f ms, shed %.0f/s (%.0f%%); "+
		"low-rate client p99 %.1f ms (alone %.1f ms; in this process %.1f ms, alone %.1f ms); RSS %.0f MiB before, peak %.0f MiB; health %d/%d ok (max %.0f ms), metrics %d/%d ok (max %.0f ms)\n",
		r.Workers, r.AdmissionControl, r.GoodputPerS, r.AdmittedP99MS, r.ShedPerS, 100*r.ShedShare, r.ProbeP99MS, r.ProbeP99AloneMS,
		r.ProbeInProcess.LatencyMS.P99, r.ProbeAloneInProcess.LatencyMS.P99,
		r.RSSBeforeMiB, r.PeakRSSMiB, r.HealthChecks-r.HealthFailures, r.HealthChecks, r.HealthMaxMS,
		r.Scrapes-r.ScrapeFailures, r.Scrapes, r.ScrapeMaxMS)
	return nil
}

// runBenchProcess runs the open-loop client cfg (Rate > 0, no hot partition) as a process of its
// own, bin bench --json, and returns its summary.
func runBenchProcess(ctx context.Context, bin string, cfg bench.Config) (*bench.Summary, error) {
	args := []string{"bench", "--json", "--protocol", string(cfg.Protocol), "--addrs", strings.Join(cfg.Addrs, ","),
		"--coordinator", string(cfg.Coordinator), "--table", cfg.Table, "--cl", cfg.Consistency.String(),
		"--rate", strconv.FormatFloat(cfg.Rate, 'f', -1, 64), "--duration", cfg.Duration.String(),
		"--hot", "0", "--partitions", strconv.Itoa(cfg.Partitions), "--writes", strconv.FormatFloat(cfg.Writes, 'f', -1, 64),
		"--seed", strconv.FormatUint(cfg.Seed, 10)}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	var s bench.Summary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		return nil, fmt.Errorf("%s bench --json printed no summary: %w: %q", bin, err, stdout.String())
	}
	return &s, nil
}

// watchNode checks, every poll until ctx ends, that the node answers a gRPC health check at
// addr and a /metrics scrape at metricsAddr within pollTimeout, recording into r.
func watchNode(ctx context.Context, poll time.Duration, addr, metricsAddr string, r *overloadResult) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("health check connection to %s: %w", addr, err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	httpc := &http.Client{Timeout: pollTimeout}
	fail := func(what string, err error) {
		if r.FirstFailure == "" {
			r.FirstFailure = fmt.Sprintf("%s: %v", what, err)
		}
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		hctx, cancel := context.WithTimeout(ctx, pollTimeout)
		t0 := time.Now()
		resp, err := hc.Check(hctx, &healthpb.HealthCheckRequest{})
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		r.HealthChecks++
		r.HealthMaxMS = max(r.HealthMaxMS, float64(time.Since(t0).Microseconds())/1e3)
		if err == nil && resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			err = fmt.Errorf("status %v", resp.GetStatus())
		}
		if err != nil {
			r.HealthFailures++
			fail("health check", err)
		}
		if metricsAddr == "" {
			continue
		}
		t0 = time.Now()
		err = scrape(ctx, httpc, "http://"+metricsAddr+"/metrics")
		if ctx.Err() != nil {
			return nil
		}
		r.Scrapes++
		r.ScrapeMaxMS = max(r.ScrapeMaxMS, float64(time.Since(t0).Microseconds())/1e3)
		if err != nil {
			r.ScrapeFailures++
			fail("metrics scrape", err)
		}
	}
}

// scrape fetches url and reads the whole body.
func scrape(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// memory is a process's resident set now and at its peak, from /proc/<pid>/status.
type memory struct{ rssMiB, peakMiB float64 }

// readMemory reads VmRSS and VmHWM of process pid.
func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return memory{}, fmt.Errorf("read memory of process %d: %w", pid, err)
	}
	m, err := parseMemory(b)
	if err != nil {
		return memory{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return m, nil
}

// parseMemory reads VmRSS and VmHWM (in kB) from the contents of /proc/<pid>/status.
func parseMemory(status []byte) (memory, error) {
	var m memory
	var seen int
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return memory{}, fmt.Errorf("/proc status: %s is %q, want a number of kB", k, strings.TrimSpace(v))
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc status: %s is %q, want a number of kB", k, strings.TrimSpace(v))
		}
		if k == "VmRSS" {
			m.rssMiB = float64(kb) / 1024
		} else {
			m.peakMiB = float64(kb) / 1024
		}
		seen++
	}
	if seen != 2 {
		return memory{}, errors.New("/proc status: no VmRSS and VmHWM lines")
	}
	return m, nil
}

// writeText prints the overload part's section.
func (r *overloadResult) writeText(b *strings.Builder) {
	o := r.Settings
	fmt.Fprintf(b, "\n## Overload: one node offered %d× the concurrency it serves\n\n", o.Factor)
	if r.AdmissionControl {
		fmt.Fprintf(b, "One node (--sync=false) with --max-concurrent-requests %d --max-queued-requests %d --request-queue-timeout %v; ",
			o.MaxConcurrent, o.MaxQueued, o.QueueTimeout)
	} else {
		fmt.Fprintf(b, "One node (--sync=false) **without admission control** (the binary has no such flags); ")
	}
	fmt.Fprintf(b, "%d closed-loop workers over the native protocol (gocql), 50%% writes over %d partitions, for %v, beside a "+
		"low-rate client at %.0f ops/s (open loop, a kvnode bench process of its own, as a second application is) measured alone first; "+
		"the last column is the same client run inside the load generator's process.\n\n", r.Workers, o.Partitions, o.Duration, o.ProbeRate)
	fmt.Fprintf(b, "| goodput ops/s | admitted p99 ms | shed/s (share) | other errors | low-rate p99 ms (alone) | × alone | low-rate shed / offered | RSS MiB before, peak | health checks ok (max ms) | metrics scrapes ok (max ms) | CPU cores: server, load generator | low-rate p99 ms (alone) in the load generator's process |\n")
	fmt.Fprintf(b, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	other := r.Load.Failed() - r.Load.Errors[bench.ErrorOverloaded]
	fmt.Fprintf(b, "| %.0f | %.1f | %.0f (%.0f%%) | %d | %.1f (%.1f) | %.1f | %d / %d | %.0f, %.0f | %d/%d (%.0f) | %d/%d (%.0f) | %.2f, %.2f | %.1f (%.1f), %.1f× |\n",
		r.GoodputPerS, r.AdmittedP99MS, r.ShedPerS, 100*r.ShedShare, other, r.ProbeP99MS, r.ProbeP99AloneMS, r.ProbeP99Ratio, r.ProbeShed, r.Probe.Offered,
		r.RSSBeforeMiB, r.PeakRSSMiB, r.HealthChecks-r.HealthFailures, r.HealthChecks, r.HealthMaxMS,
		r.Scrapes-r.ScrapeFailures, r.Scrapes, r.ScrapeMaxMS, r.ServerCores, r.LoadGenCores,
		r.ProbeInProcess.LatencyMS.P99, r.ProbeAloneInProcess.LatencyMS.P99, r.ProbeInProcessP99Ratio)
	if r.FirstFailure != "" {
		fmt.Fprintf(b, "\nFirst failed probe: %s\n", r.FirstFailure)
	}
}

// targets are issue 20's criteria for the overload run.
func (r *overloadResult) targets() []target {
	ac := ""
	if !r.AdmissionControl {
		ac = " (no admission control in this binary)"
	}
	return []target{
		{fmt.Sprintf("overload: the low-rate client's p99 ≤ %.0f× its p99 alone%s", targetOverloadP99, ac),
			fmt.Sprintf("%.1f ms vs %.1f ms = %.1f×", r.ProbeP99MS, r.ProbeP99AloneMS, r.ProbeP99Ratio),
			r.ProbeP99AloneMS > 0 && r.ProbeP99Ratio <= targetOverloadP99},
		{"overload: the node stays responsive (every health check and metrics scrape answered within " + pollTimeout.String() + ")" + ac,
			fmt.Sprintf("health %d/%d (max %.0f ms), metrics %d/%d (max %.0f ms)", r.HealthChecks-r.HealthFailures, r.HealthChecks, r.HealthMaxMS,
				r.Scrapes-r.ScrapeFailures, r.Scrapes, r.ScrapeMaxMS),
			r.HealthChecks > 0 && r.HealthFailures == 0 && r.ScrapeFailures == 0},
		{fmt.Sprintf("overload: memory bounded (peak RSS ≤ RSS before + %d MiB)%s", targetRSSGrowthMiB, ac),
			fmt.Sprintf("%.0f MiB before, peak %.0f MiB", r.RSSBeforeMiB, r.PeakRSSMiB),
			r.PeakRSSMiB > 0 && r.PeakRSSMiB <= r.RSSBeforeMiB+targetRSSGrowthMiB},
	}
}
