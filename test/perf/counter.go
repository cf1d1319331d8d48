package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"
)

// The counterlimit part's keyspaces and tables, on a 3-node cluster of its own (--sync=true,
// --coordinator-learning=false):
// RF=3, where every coordinator is a replica and decides, and RF=2, where one of the three
// coordinators is not a replica and the partition's leader decides for it.
const (
	counterKeyspace  = "perf_ctr"
	tableCounter     = counterKeyspace + ".c"
	counterKeyspace2 = "perf_ctr2"
	tableCounter2    = counterKeyspace2 + ".c"
	counterKey       = "hot"
)

// counterSettings are the counterlimit part's sizes: increments of one counter partition of a
// table whose max_writes_per_second is Limit, offered open loop at Offered per second from
// Workers workers through the three coordinators in turn, for Duration on the RF=3 table and
// OtherDuration on the RF=2 one; the mean leaves out the first second and the last, cut-short
// one.
type counterSettings struct {
	Limit         int           `json:"limit"`
	Offered       float64       `json:"offered"`
	Duration      time.Duration `json:"-"`
	OtherDuration time.Duration `json:"-"`
	Workers       int           `json:"workers"`
}

// counterResult is what the counterlimit part measured: the RF=3 run (the headline) and the
// RF=2 run with a coordinator that is not a replica.
type counterResult struct {
	Settings counterSettings     `json:"settings"`
	RF3      *counterLimitResult `json:"rf3,omitempty"`
	RF2      *counterLimitResult `json:"rf2_non_replica_coordinator,omitempty"`
}

// counterLimitResult is one limiter run over counter increments (each + 1): the increments
// answered OK by the second they started in, the outcomes, and the counter read at ALL at the
// end, which must lie between the OK count and the OK count plus the increments whose outcome
// the client does not know (timed out or failed otherwise): a rate-limited increment is never
// applied, and an applied one is never answered rate limited.
type counterLimitResult struct {
	Table             string  `json:"table"`
	RF                int     `json:"rf"`
	AcceptedPerSecond []int64 `json:"accepted_per_second"`
	// OverLimit is the mean of AcceptedPerSecond from the second second to the last whole one,
	// over the limit.
	OverLimit     float64 `json:"accepted_over_limit"`
	MeasuredS     int     `json:"measured_s"`
	ElapsedS      float64 `json:"elapsed_s"`
	Offered       int64   `json:"offered"`
	OK            int64   `json:"ok"`
	ByCoordinator int64   `json:"rate_limited_by_coordinator"`
	ByReplicas    int64   `json:"rate_limited_by_replicas"`
	TimedOut      int64   `json:"timed_out"`
	OtherErrors   int64   `json:"other_errors"`
	FirstErr      string  `json:"first_error,omitempty"`
	OKByNode      []int64 `json:"ok_by_coordinator"` // node i's share (i % 3 of the increments)
	Counter       int64   `json:"counter_at_all"`
	// Consistent says OK ≤ Counter ≤ OK + TimedOut + OtherErrors.
	Consistent bool `json:"counter_between_ok_and_ok_plus_unknown"`
}

// counterPart runs the counterlimit part on a 3-node cluster of its own, without
// --coordinator-learning: a coordinator that is not a replica never rejects on its own, so the
// partition's leader decides for it, the path issue 32 describes.
func counterPart(ctx context.Context, s settings, bin, root string, res *Result, log io.Writer) error {
	cs := s.Counter
	with := " WITH per_partition_rate_limit = {'max_writes_per_second': " + strconv.Itoa(cs.Limit) + "}"
	ddl := []string{
		"CREATE KEYSPACE " + counterKeyspace + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE " + tableCounter + " (k text PRIMARY KEY, n counter)" + with,
		"CREATE KEYSPACE " + counterKeyspace2 + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE " + tableCounter2 + " (k text PRIMARY KEY, n counter)" + with,
	}
	r := &counterResult{Settings: cs}
	res.Counter = r
	return withCluster(ctx, bin, root, "counter", 3, true, ddl, log, func(c *testCluster) error {
		// One session per node, each held to it: increment i goes through node i % 3.
		var sessions []*gocql.Session
		defer func() {
			for _, s := range sessions {
				s.Close()
			}
		}()
		for _, a := range c.cqlAddrs() {
			sess, err := gocqlSession([]string{a}, false)
			if err != nil {
				return err
			}
			sessions = append(sessions, sess)
		}
		var err error
		r.RF3, err = counterLimited(ctx, cs, sessions, tableCounter, 3, cs.Duration, log)
		if err != nil {
			return err
		}
		r.RF2, err = counterLimited(ctx, cs, sessions, tableCounter2, 2, cs.OtherDuration, log)
		return err
	}, "--coordinator-learning=false")
}

// counterLimited offers increments of table's hot counter at cs.Offered per second for d,
// through the sessions in turn, counts them second by second and reads the counter at ALL.
func counterLimited(ctx context.Context, cs counterSettings, sessions []*gocql.Session, table string, rf int, d time.Duration, log io.Writer) (*counterLimitResult, error) {
	secs := int(d / time.Second)
	ok := make([]atomic.Int64, secs+1) // by the second the increment started in
	okBy := make([]atomic.Int64, len(sessions))
	var timedOut atomic.Int64
	upd := "UPDATE " + table + " SET n = n + ? WHERE k = ?"
	start := time.Now()
	counts := drive(ctx, int64(cs.Offered*d.Seconds()), cs.Workers, cs.Offered, func(ctx context.Context, i int64) error {
		sec := min(secs, int(time.Since(start)/time.Second))
		node := int(i % int64(len(sessions)))
		err := sessions[node].Query(upd, int64(1), counterKey).WithContext(ctx).Exec()
		switch {
		case err == nil:
			ok[sec].Add(1)
			okBy[node].Add(1)
		case timeout(err):
			timedOut.Add(1)
		}
		return err
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &counterLimitResult{Table: table, RF: rf, ElapsedS: counts.ElapsedS, Offered: counts.Ops, OK: counts.Accepted,
		ByCoordinator: counts.ByCoordinator, ByReplicas: counts.ByReplicas, TimedOut: timedOut.Load(),
		OtherErrors: counts.Errors - timedOut.Load(), FirstErr: counts.FirstError}
	for i := range secs {
		r.AcceptedPerSecond = append(r.AcceptedPerSecond, ok[i].Load())
	}
	for i := range okBy {
		r.OKByNode = append(r.OKByNode, okBy[i].Load())
	}
	if secs > 2 {
		var sum int64
		for _, v := range r.AcceptedPerSecond[1 : secs-1] {
			sum += v
		}
		r.MeasuredS = secs - 2
		r.OverLimit = float64(sum) / float64(r.MeasuredS) / float64(cs.Limit)
	}
	var n int64
	if err := sessions[0].Query("SELECT n FROM "+table+" WHERE k = ?", counterKey).Consistency(gocql.All).WithContext(ctx).Scan(&n); err != nil {
		return r, fmt.Errorf("counterlimit: read %s at ALL: %w", table, err)
	}
	r.Counter = n
	r.Consistent = r.OK <= n && n <= r.OK+r.TimedOut+r.OtherErrors
	fmt.Fprintf(log, "perf: counter limited %s (RF=%d): %.2f × limit over %d s; ok %d, rate limited %d+%d, timed out %d, other errors %d; counter %d\n",
		table, rf, r.OverLimit, r.MeasuredS, r.OK, r.ByCoordinator, r.ByReplicas, r.TimedOut, r.OtherErrors, r.Counter)
	return r, nil
}

// timeout reports whether err says the client does not know whether a write was applied
// because an answer did not come in time.
func timeout(err error) bool {
	var wt *gocql.RequestErrWriteTimeout
	return errors.As(err, &wt) || errors.Is(err, gocql.ErrTimeoutNoResponse) || errors.Is(err, context.DeadlineExceeded)
}

// writeText prints the counterlimit part's figures.
func (r *counterResult) writeText(w io.Writer) {
	fmt.Fprintf(w, "\n## A hot counter partition under its write limit (3 nodes, --sync=true, gocql, coordinators in turn)\n\n")
	fmt.Fprintf(w, "| table | RF | accepted / limit | seconds | offered | ok | rate limited (coordinator + replicas) | timed out | other errors | counter at ALL | ok ≤ counter ≤ ok + unknown |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, l := range []*counterLimitResult{r.RF3, r.RF2} {
		if l == nil {
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %.2f | %d | %d | %d | %d + %d | %d | %d | %d | %s |\n", l.Table, l.RF, l.OverLimit, l.MeasuredS, l.Offered, l.OK,
			l.ByCoordinator, l.ByReplicas, l.TimedOut, l.OtherErrors, l.Counter, yesNo(l.Consistent))
	}
	for _, l := range []*counterLimitResult{r.RF3, r.RF2} {
		if l != nil {
			fmt.Fprintf(w, "\n%s: limit %d increments/s, offered %.0f/s; accepted per second %v; by coordinator %v\n",
				l.Table, r.Settings.Limit, r.Settings.Offered, l.AcceptedPerSecond, l.OKByNode)
		}
	}
}

// targets lists issue 32's counter limiter target against r.
func (r *counterResult) targets() []target {
	var ts []target
	for _, l := range []*counterLimitResult{r.RF3, r.RF2} {
		if l == nil {
			continue
		}
		what := "RF=3, every coordinator a replica"
		if l == r.RF2 {
			what = "RF=2, one coordinator not a replica"
		}
		ts = append(ts, target{fmt.Sprintf("hot counter partition's increments accepted / write limit within 0.9–1.1 from the second second, and no rate-limit error for an applied increment (%s)", what),
			fmt.Sprintf("%.2f over %d s; counter %d, ok %d, rate limited %d, timed out %d, other errors %d", l.OverLimit, l.MeasuredS, l.Counter, l.OK,
				l.ByCoordinator+l.ByReplicas, l.TimedOut, l.OtherErrors),
			l.OverLimit >= targetHotLow && l.OverLimit <= targetHotHigh && l.Consistent && l.ByCoordinator+l.ByReplicas > 0})
	}
	return ts
}
