package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The lwt part's keyspace and tables, on a 3-node cluster of its own (RF=3, --sync=false).
const (
	lwtKeyspace = "perf_lwt"
	tableLWT    = lwtKeyspace + ".t"   // no limit: LWTs against QUORUM writes
	tableLWTLim = lwtKeyspace + ".lim" // per_partition_rate_limit: LWTs held at the write limit
	// RF=1, the same limit: LWTs sent through a node that does not own the partition, so
	// that the replica decides on the prepare.
	lwtKeyspace1 = "perf_lwt1"
	tableLWTLim1 = lwtKeyspace1 + ".lim"
)

// lwtSettings are the lwt part's sizes.
type lwtSettings struct {
	// Rounds of four phases of Phase each (QUORUM writes and LWTs, uncontended and with
	// Contenders clients on one partition), the kinds' order alternating by round; the headline
	// ratios are the medians of the rounds' ratios. Workers is the uncontended closed loop.
	Rounds     int           `json:"rounds"`
	Phase      time.Duration `json:"-"`
	Warm       time.Duration `json:"-"`
	Workers    int           `json:"workers"`
	Contenders int           `json:"contenders"`
	// The limiter run: LWTs on one partition of a table whose max_writes_per_second is Limit,
	// offered open loop at Offered per second from LimitWorkers workers for LimitDuration; the
	// mean leaves out the first second and the last, cut-short one.
	Limit            int           `json:"limit"`
	Offered          float64       `json:"offered"`
	LimitDuration    time.Duration `json:"-"`
	ReplicasDuration time.Duration `json:"-"`
	LimitWorkers     int           `json:"limit_workers"`
}

// lwtPhase is one measured phase of the lwt part.
type lwtPhase struct {
	Round     int     `json:"round"`
	Kind      string  `json:"kind"` // "quorum_write" or "lwt"
	Contended bool    `json:"contended"`
	Ops       int64   `json:"ops"`
	Applied   int64   `json:"applied,omitempty"` // LWTs answered [applied] = true
	Errors    int64   `json:"errors"`
	FirstErr  string  `json:"first_error,omitempty"`
	OpsPerS   float64 `json:"ops_per_s"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	CPUUSOp   float64 `json:"server_cpu_us_per_op"` // idle CPU subtracted
	ClientCPU float64 `json:"client_cpu_share"`     // this process's CPU over the phase's wall time
}

// lwtCompare is the lwt part's comparison on one cluster: its phases and the medians over
// rounds of LWT over QUORUM write, p50 latency and server CPU per statement.
type lwtCompare struct {
	Sync                  bool       `json:"sync"` // the servers' --sync
	Phases                []lwtPhase `json:"phases"`
	LatencyRatio          float64    `json:"lwt_over_quorum_write_latency"`
	CPURatio              float64    `json:"lwt_over_quorum_write_cpu"`
	LatencyRatioContended float64    `json:"lwt_over_quorum_write_latency_contended"`
	CPURatioContended     float64    `json:"lwt_over_quorum_write_cpu_contended"`
	P99RatioContended     float64    `json:"lwt_over_quorum_write_p99_contended"`
}

// lwtResult is what the lwt part measured: the comparison with the servers' default
// --sync=true (the headline: Paxos state is always synced, so --sync=false compares synced
// LWTs with unsynced writes), the same with --sync=false, and the limiter run.
type lwtResult struct {
	Settings lwtSettings `json:"settings"`
	lwtCompare
	NoSync *lwtCompare `json:"nosync,omitempty"`
	// Limited is the limiter run (part lwtlimit); LimitedReplicas the same on an RF=1 table
	// through a node that does not own the partition, for ReplicasDuration: the replica
	// decides on the prepare.
	Limited         *lwtLimitResult `json:"limited,omitempty"`
	LimitedReplicas *lwtLimitResult `json:"limited_replicas_path,omitempty"`
}

// lwtLimitResult is the limiter run over LWTs: accepted statements per second, and the metrics'
// deltas over the run summed over the nodes.
type lwtLimitResult struct {
	// AdmittedPerSecond counts the statements the limiter let in (answered, or timed out in
	// their Paxos rounds) by the second they started in, AppliedPerSecond those applied.
	AdmittedPerSecond []int64 `json:"admitted_per_second"`
	AppliedPerSecond  []int64 `json:"applied_per_second"`
	OverLimit         float64 `json:"admitted_over_limit"` // seconds 2 to the last whole one
	ElapsedS          float64 `json:"elapsed_s"`
	Accepted          int64   `json:"accepted"` // answered, applied or not
	Rejected          int64   `json:"rejected"`
	Errors            int64   `json:"errors"`
	FirstErr          string  `json:"first_error,omitempty"`
	// kvnode_coordinator_lwt_total and kvnode_replica_paxos_prepares_total deltas.
	Rounds            float64 `json:"coordinator_rounds"`
	CoordRateLimited  float64 `json:"coordinator_rate_limited"`
	Contended         float64 `json:"coordinator_contended"`
	Promised          float64 `json:"replica_prepares_promised"`
	ReplicaRejected   float64 `json:"replica_prepares_rate_limited"`
	RoundsBeyond      float64 `json:"rounds_beyond_admitted_contended_and_rejected_prepares"`
	RejectedNoRound   bool    `json:"rejected_started_no_round"`
	RejectedNoPromise bool    `json:"rejected_left_no_paxos_state"`
}

// lwtPart runs the lwt and lwtlimit parts on 3-node clusters of their own: --sync=true (the
// default) for both, then --sync=false for the lwt comparison alone.
func lwtPart(ctx context.Context, s settings, bin, root string, res *Result, log io.Writer) error {
	ls := s.LWT
	ddl := []string{
		"CREATE KEYSPACE " + lwtKeyspace + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE " + tableLWT + " " + tableColumns,
		"CREATE TABLE " + tableLWTLim + " " + tableColumns + " WITH per_partition_rate_limit = {'max_writes_per_second': " + strconv.Itoa(ls.Limit) + "}",
		"CREATE KEYSPACE " + lwtKeyspace1 + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE " + tableLWTLim1 + " " + tableColumns + " WITH per_partition_rate_limit = {'max_writes_per_second': " + strconv.Itoa(ls.Limit) + "}",
	}
	r := &lwtResult{Settings: ls, lwtCompare: lwtCompare{Sync: true}}
	res.LWT = r
	err := withCluster(ctx, bin, root, "lwt-sync", 3, true, ddl, log, func(c *testCluster) error {
		sess, err := gocqlSession(c.cqlAddrs(), true)
		if err != nil {
			return err
		}
		defer sess.Close()
		if s.has("lwt") {
			if err := lwtVersusWrite(ctx, ls, c, sess, &r.lwtCompare, log); err != nil {
				return err
			}
		}
		if !s.has("lwtlimit") {
			return nil
		}
		lim, err := lwtLimited(ctx, ls, c, sess, tableLWTLim, 3, ls.LimitDuration, log)
		r.Limited = lim
		if err != nil {
			return err
		}
		owner, err := c.owner("hot")
		if err != nil {
			return err
		}
		other := (owner + 1) % len(c.servers)
		s1, err := gocqlSession(c.cqlAddrs()[other:], false)
		if err != nil {
			return err
		}
		defer s1.Close()
		lim, err = lwtLimited(ctx, ls, c, s1, tableLWTLim1, 1, ls.ReplicasDuration, log)
		r.LimitedReplicas = lim
		return err
	})
	if err != nil || !s.has("lwt") {
		return err
	}
	r.NoSync = &lwtCompare{}
	return withCluster(ctx, bin, root, "lwt-nosync", 3, false, ddl, log, func(c *testCluster) error {
		sess, err := gocqlSession(c.cqlAddrs(), true)
		if err != nil {
			return err
		}
		defer sess.Close()
		return lwtVersusWrite(ctx, ls, c, sess, r.NoSync, log)
	})
}

// lwtOp is one statement of a phase: applied reports [applied] for an LWT.
type lwtOp func(ctx context.Context, worker int, i int64) (applied bool, err error)

// lwtVersusWrite measures LWTs against QUORUM writes in alternating phases.
func lwtVersusWrite(ctx context.Context, ls lwtSettings, c *testCluster, sess *gocql.Session, r *lwtCompare, log io.Writer) error {
	idle, err := idleCPU(ctx, c, time.Second)
	if err != nil {
		return err
	}
	const hot = "hot"
	if err := sess.Query("INSERT INTO "+tableLWT+" (k, c, v) VALUES (?, 0, '0')", hot).WithContext(ctx).Exec(); err != nil {
		return fmt.Errorf("lwt: seed the contended row: %w", err)
	}
	write := func(prefix string, contended bool) lwtOp {
		return func(ctx context.Context, w int, i int64) (bool, error) {
			k, cl := fmt.Sprintf("%s-%d-%d", prefix, w, i), int32(0)
			if contended {
				k, cl = "hot-w", int32(i%64)
			}
			q := sess.Query("INSERT INTO "+tableLWT+" (k, c, v) VALUES (?, ?, ?)", k, cl, strconv.FormatInt(i, 10)).WithContext(ctx)
			defer q.Release()
			return true, q.Exec()
		}
	}
	lwt := func(prefix string) lwtOp {
		return func(ctx context.Context, w int, i int64) (bool, error) {
			q := sess.Query("INSERT INTO "+tableLWT+" (k, c, v) VALUES (?, 0, ?) IF NOT EXISTS", fmt.Sprintf("%s-%d-%d", prefix, w, i), strconv.FormatInt(i, 10)).
				SerialConsistency(gocql.Serial).WithContext(ctx)
			defer q.Release()
			return q.MapScanCAS(map[string]any{})
		}
	}
	// Each contender compares against the value it last saw, as a read-modify-write does.
	seen := make([]string, ls.Contenders)
	for i := range seen {
		seen[i] = "0"
	}
	cas := func(ctx context.Context, w int, i int64) (bool, error) {
		next := fmt.Sprintf("%d.%d", w, i)
		q := sess.Query("UPDATE "+tableLWT+" SET v = ? WHERE k = ? AND c = 0 IF v = ?", next, hot, seen[w]).
			SerialConsistency(gocql.Serial).WithContext(ctx)
		defer q.Release()
		cur := map[string]any{}
		applied, err := q.MapScanCAS(cur)
		switch {
		case err != nil:
		case applied:
			seen[w] = next
		default:
			if v, ok := cur["v"].(string); ok {
				seen[w] = v
			}
		}
		return applied, err
	}
	type kind struct {
		name      string
		contended bool
		workers   int
		op        func(round int) lwtOp
	}
	kinds := []kind{
		{"quorum_write", false, ls.Workers, func(rd int) lwtOp { return write(fmt.Sprintf("w%d", rd), false) }},
		{"lwt", false, ls.Workers, func(rd int) lwtOp { return lwt(fmt.Sprintf("l%d", rd)) }},
		{"quorum_write", true, ls.Contenders, func(rd int) lwtOp { return write("", true) }},
		{"lwt", true, ls.Contenders, func(int) lwtOp { return cas }},
	}
	// Warm: every kind once, unmeasured (prepared statements, connections).
	for _, k := range kinds {
		if _, err := lwtPhaseRun(ctx, c, k.op(-1), k.workers, ls.Warm, idle); err != nil {
			return err
		}
	}
	for rd := range ls.Rounds {
		order := []int{0, 1, 2, 3}
		if rd%2 == 1 {
			order = []int{1, 0, 3, 2}
		}
		for _, ki := range order {
			k := kinds[ki]
			ph, err := lwtPhaseRun(ctx, c, k.op(rd), k.workers, ls.Phase, idle)
			if err != nil {
				return err
			}
			ph.Round, ph.Kind, ph.Contended = rd, k.name, k.contended
			r.Phases = append(r.Phases, ph)
			fmt.Fprintf(log, "perf: lwt sync=%v round %d %s contended=%v: %.0f/s p50 %.2f ms p99 %.2f ms, %.0f µs server CPU/op, %d errors\n",
				r.Sync, rd, k.name, k.contended, ph.OpsPerS, ph.P50MS, ph.P99MS, ph.CPUUSOp, ph.Errors)
		}
	}
	ratios := func(contended bool, f func(lwtPhase) float64) float64 {
		var vs []float64
		for rd := range ls.Rounds {
			var w, l float64
			for _, ph := range r.Phases {
				if ph.Round == rd && ph.Contended == contended {
					if ph.Kind == "lwt" {
						l = f(ph)
					} else {
						w = f(ph)
					}
				}
			}
			if w > 0 {
				vs = append(vs, l/w)
			}
		}
		return median(vs)
	}
	r.LatencyRatio = ratios(false, func(p lwtPhase) float64 { return p.P50MS })
	r.CPURatio = ratios(false, func(p lwtPhase) float64 { return p.CPUUSOp })
	r.LatencyRatioContended = ratios(true, func(p lwtPhase) float64 { return p.P50MS })
	r.CPURatioContended = ratios(true, func(p lwtPhase) float64 { return p.CPUUSOp })
	r.P99RatioContended = ratios(true, func(p lwtPhase) float64 { return p.P99MS })
	return nil
}

// lwtPhaseRun runs op in a closed loop of workers for d and measures it: latencies of the
// statements that succeeded, server CPU per statement with the idle rate subtracted.
func lwtPhaseRun(ctx context.Context, c *testCluster, op lwtOp, workers int, d time.Duration, idle cpuSample) (lwtPhase, error) {
	before, selfBefore, err := c.cpuWithSelf()
	if err != nil {
		return lwtPhase{}, err
	}
	start := time.Now()
	pctx, cancel := context.WithDeadline(ctx, start.Add(d))
	defer cancel()
	lats := make([][]time.Duration, workers)
	var ops, applied, errs atomic.Int64
	var firstErr sync.Once
	var first string
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := int64(0); pctx.Err() == nil; i++ {
				t0 := time.Now()
				ok, err := op(ctx, w, i)
				if time.Now().After(start.Add(d)) && err == nil {
					break // finished after the phase: not measured
				}
				ops.Add(1)
				if err != nil {
					errs.Add(1)
					firstErr.Do(func() { first = err.Error() })
					continue
				}
				if ok {
					applied.Add(1)
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	after, selfAfter, err := c.cpuWithSelf()
	if err != nil {
		return lwtPhase{}, err
	}
	all := slices.Concat(lats...)
	slices.Sort(all)
	q := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(len(all)-1, int(p*float64(len(all))))]) / float64(time.Millisecond)
	}
	used := after.sub(before).Run - time.Duration(float64(idle.Run)*el.Seconds())
	n := ops.Load()
	ph := lwtPhase{Ops: n, Applied: applied.Load(), Errors: errs.Load(), FirstErr: first, OpsPerS: float64(n) / el.Seconds(),
		P50MS: q(0.5), P99MS: q(0.99), ClientCPU: selfAfter.sub(selfBefore).Run.Seconds() / el.Seconds()}
	if n > 0 {
		ph.CPUUSOp = float64(used.Microseconds()) / float64(n)
	}
	return ph, nil
}

// lwtLimited offers LWTs on one partition of the limited table at ls.Offered per second and
// counts the accepted ones second by second, with the nodes' LWT metrics before and after.
func lwtLimited(ctx context.Context, ls lwtSettings, c *testCluster, sess *gocql.Session, table string, rf int, d time.Duration, log io.Writer) (*lwtLimitResult, error) {
	before, err := lwtMetrics(ctx, c)
	if err != nil {
		return nil, err
	}
	secs := int(d / time.Second)
	adm := make([]atomic.Int64, secs+1) // by the second the statement started in
	app := make([]atomic.Int64, secs+1)
	start := time.Now()
	n := int64(ls.Offered * d.Seconds())
	counts := drive(ctx, n, ls.LimitWorkers, ls.Offered, func(ctx context.Context, i int64) error {
		sec := min(secs, int(time.Since(start)/time.Second))
		q := sess.Query("INSERT INTO "+table+" (k, c, v) VALUES ('hot', ?, ?) IF NOT EXISTS", int32(i), strconv.FormatInt(i, 10)).
			SerialConsistency(gocql.Serial).WithContext(ctx)
		applied, err := q.MapScanCAS(map[string]any{})
		q.Release()
		if limited, _ := rateLimited(err); !limited {
			adm[sec].Add(1) // admitted: applied, not applied, or timed out after the limiter let it in
		}
		if applied {
			app[sec].Add(1)
		}
		return err
	})
	after, err := lwtMetrics(ctx, c)
	if err != nil {
		return nil, err
	}
	r := &lwtLimitResult{ElapsedS: counts.ElapsedS, Accepted: counts.Accepted, Rejected: counts.rejected(), Errors: counts.Errors, FirstErr: counts.FirstError}
	for i := range secs {
		r.AdmittedPerSecond = append(r.AdmittedPerSecond, adm[i].Load())
		r.AppliedPerSecond = append(r.AppliedPerSecond, app[i].Load())
	}
	if secs > 2 {
		var sum int64
		for _, v := range r.AdmittedPerSecond[1 : secs-1] {
			sum += v
		}
		r.OverLimit = float64(sum) / float64(secs-2) / float64(ls.Limit)
	}
	delta := func(k string) float64 { return after[k] - before[k] }
	r.Rounds, r.CoordRateLimited, r.Contended = delta("rounds"), delta("rate_limited"), delta("contended")
	r.Promised, r.ReplicaRejected = delta("promised"), delta("replica_rate_limited")
	// Rounds are begun by admitted statements (once, once more per round lost to a competing
	// ballot, and a few times more for a ballot that must move to a later microsecond, which
	// no metric counts) and, on the replicas path, by the prepares the replicas reject (one
	// per rejected statement). A rejected statement that began rounds would add at least one
	// each: the rounds beyond the rest stay under a tenth of the rejections. Every promise
	// (the only answer that stores Paxos state) and every rejected prepare answers a prepare
	// of a round, at most rf per round.
	r.RoundsBeyond = r.Rounds - r.Contended - float64(r.Accepted+r.Errors) - r.ReplicaRejected
	r.RejectedNoRound = r.CoordRateLimited >= float64(r.Rejected) && r.RoundsBeyond < 0.1*float64(r.Rejected)
	r.RejectedNoPromise = r.Promised+r.ReplicaRejected <= float64(rf)*r.Rounds
	fmt.Fprintf(log, "perf: lwt limited %s: %.2f × limit in %.1f s; accepted %d, rejected %d, errors %d; rounds %.0f, contended %.0f, coordinator rate_limited %.0f, promised %.0f, replica rate_limited %.0f\n",
		table, r.OverLimit, r.ElapsedS, r.Accepted, r.Rejected, r.Errors, r.Rounds, r.Contended, r.CoordRateLimited, r.Promised, r.ReplicaRejected)
	return r, nil
}

// lwtMetrics scrapes every node and sums kvnode_coordinator_lwt_total by event and
// kvnode_replica_paxos_prepares_total by result ("promised", "replica_rate_limited").
func lwtMetrics(ctx context.Context, c *testCluster) (map[string]float64, error) {
	out := map[string]float64{}
	for _, s := range c.servers {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.MetricsAddr+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("scrape %s: %w", s.Name, err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("scrape %s: %w", s.Name, err)
		}
		for name, prefix := range map[string]string{"kvnode_coordinator_lwt_total": "", "kvnode_replica_paxos_prepares_total": "replica_"} {
			mf, ok := fams[name]
			if !ok {
				return nil, fmt.Errorf("scrape %s: no %s", s.Name, name)
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					k := prefix + l.GetValue()
					if k == "replica_promised" {
						k = "promised"
					}
					out[k] += m.GetCounter().GetValue()
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("scrape: no LWT metrics")
	}
	return out, nil
}

// writeText prints the lwt part's tables.
func (r *lwtResult) writeText(w io.Writer) {
	for _, cmp := range []*lwtCompare{&r.lwtCompare, r.NoSync} {
		if cmp == nil || len(cmp.Phases) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n## Lightweight transactions against QUORUM writes (3 nodes, RF=3, --sync=%v, gocql token-aware)\n\n", cmp.Sync)
		fmt.Fprintf(w, "| round | kind | contended | ops/s | p50 ms | p99 ms | server CPU µs/op | applied | errors |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, p := range cmp.Phases {
			fmt.Fprintf(w, "| %d | %s | %v | %.0f | %.2f | %.2f | %.0f | %d | %d |\n", p.Round, p.Kind, p.Contended, p.OpsPerS, p.P50MS, p.P99MS, p.CPUUSOp, p.Applied, p.Errors)
		}
		fmt.Fprintf(w, "\nLWT / QUORUM write (median of rounds): latency %.2f, CPU %.2f; %d contenders on one partition: latency %.2f (p99 %.2f), CPU %.2f\n",
			cmp.LatencyRatio, cmp.CPURatio, r.Settings.Contenders, cmp.LatencyRatioContended, cmp.P99RatioContended, cmp.CPURatioContended)
	}
	for _, l := range []*lwtLimitResult{r.Limited, r.LimitedReplicas} {
		if l == nil {
			continue
		}
		path := "RF=3, coordinators are replicas"
		if l == r.LimitedReplicas {
			path = "RF=1, through a node that does not own it"
		}
		fmt.Fprintf(w, "\nLWTs on one partition (%s), limit %d writes/s, offered %.0f/s: admitted / limit %.2f (seconds 2 to %d); per second %v, applied %v\n",
			path, r.Settings.Limit, r.Settings.Offered, l.OverLimit, len(l.AdmittedPerSecond)-1, l.AdmittedPerSecond, l.AppliedPerSecond)
		fmt.Fprintf(w, "rejected %d (coordinators counted %.0f, replicas %.0f); rounds %.0f for %d admitted (+%.0f contended retries); prepares promised %.0f\n",
			l.Rejected, l.CoordRateLimited, l.ReplicaRejected, l.Rounds, l.Accepted+l.Errors, l.Contended, l.Promised)
	}
}

// targets lists the LWT targets against r.
func (r *lwtResult) targets(s settings) []target {
	var ts []target
	if s.has("lwt") {
		var nl, nc float64
		if r.NoSync != nil {
			nl, nc = r.NoSync.LatencyRatio, r.NoSync.CPURatio
		}
		ts = append(ts,
			target{"uncontended LWT ≤ 3 × QUORUM write latency (p50, median of rounds, --sync=true)",
				fmt.Sprintf("%.2f (contended: %.2f; --sync=false: %.2f)", r.LatencyRatio, r.LatencyRatioContended, nl), r.LatencyRatio > 0 && r.LatencyRatio <= 3},
			target{"uncontended LWT ≤ 3 × QUORUM write server CPU (--sync=true)",
				fmt.Sprintf("%.2f (contended: %.2f; --sync=false: %.2f)", r.CPURatio, r.CPURatioContended, nc), r.CPURatio > 0 && r.CPURatio <= 3})
	}
	if l, lr := r.Limited, r.LimitedReplicas; s.has("lwtlimit") && l != nil {
		ts = append(ts,
			target{"hot partition's LWTs admitted / write limit within 0.9–1.1 (from the second second)",
				fmt.Sprintf("%.2f", l.OverLimit), l.OverLimit >= targetHotLow && l.OverLimit <= targetHotHigh})
		for _, x := range []*lwtLimitResult{l, lr} {
			if x == nil {
				continue
			}
			what := "coordinator path"
			if x == lr {
				what = "replicas path"
			}
			ts = append(ts, target{"a rejected LWT starts no Paxos round and leaves no Paxos state (metrics, " + what + ")",
				fmt.Sprintf("rejected %d, rate_limited %.0f by coordinators and %.0f by replicas; rounds %.0f = admitted %d + contended %.0f + rejected prepares %.0f + %.0f (< a tenth of the rejections); promised %.0f",
					x.Rejected, x.CoordRateLimited, x.ReplicaRejected, x.Rounds, x.Accepted+x.Errors, x.Contended, x.ReplicaRejected, x.RoundsBeyond, x.Promised),
				x.Rejected > 0 && x.RejectedNoRound && x.RejectedNoPromise})
		}
	}
	return ts
}
