package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/tool/bench"
)

// second is one second of load: what the hot partition and the background traffic were offered
// and how they fared.
type second struct {
	// N numbers the second from 1.
	N int
	// Hot and Background are the two workloads' summaries for this second; both nil when the
	// second was skipped because its load could not start in time.
	Hot, Background *bench.Summary
}

// Skipped reports whether no load ran in this second.
func (s second) Skipped() bool { return s.Hot == nil }

// minSlice is the shortest remainder of a second worth loading: a second whose load could not
// start until less than this was left is skipped (only a badly overloaded machine gets there).
const minSlice = 200 * time.Millisecond

// outcome is what one second's pair of bench runs returned.
type outcome struct {
	hot, background *bench.Summary
	err             error
}

// runLoad drives the load for cfg.Duration, second by second, printing each second's row once
// its operations have finished. It returns the completed seconds, in order; seconds cut short by
// ctx are left out.
//
// Each second runs two bench.Execute calls at once, one for the hot partition and one for the
// background traffic, each issuing operations until the second's end. Running a fresh pair
// every second (instead of one pair for the whole duration) is what gives a row per second for
// both workloads, background latency percentiles included. The limiter's counters live on the
// nodes, so the hot partition's counter carries over from second to second as under one
// continuous run. A second's pair starts at its boundary whether or not the previous pair's
// last operations have finished, so a slow second does not shorten the next one; each
// operation counts in the second it was issued in. Seconds are aligned to wall-clock seconds,
// the instants at which the counters halve, so each row covers one period of the limiter.
func runLoad(ctx context.Context, cfg Config, sess *bench.Session, addrs []string, out io.Writer) ([]second, error) {
	via := "the CQL native protocol (gocql, prepared statements)"
	if cfg.Protocol == bench.ProtocolGRPC {
		via = "kvnode's gRPC API"
	}
	fmt.Fprintf(out, "Load for %v over %s, two workloads at once,\neach operation at consistency QUORUM and ", cfg.Duration, via)
	if cfg.Coordinator == bench.RoundRobin {
		fmt.Fprintf(out, "coordinated by the %d nodes in turn, as a driver spreading its requests would:\n", len(addrs))
	} else {
		fmt.Fprintf(out, "coordinated by node 1, like an application connected to one node:\n")
	}
	fmt.Fprintf(out, "  hot:        %d writes/s to the single partition 'hot' (limit %d/s)\n", cfg.HotRate, cfg.Limit)
	fmt.Fprintf(out, "  background: %d ops/s over %d other partitions, half writes and half reads\n\n", cfg.BackgroundRate, BackgroundPartitions)

	n := int(cfg.Duration / time.Second)
	loadCtx, cancelLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancelLoad() // a no-op when every second has finished
		wg.Wait()
	}()

	start := time.Now().Truncate(time.Second).Add(time.Second)
	timer := time.NewTimer(time.Until(start))
	defer timer.Stop()
	results := make([]chan outcome, n)
	seconds := make([]second, 0, n)
	launched := 0
	for len(seconds) < n {
		var launch <-chan time.Time
		if launched < n {
			launch = timer.C
		}
		var done <-chan outcome
		if len(seconds) < launched {
			done = results[len(seconds)]
		}
		select {
		case <-ctx.Done():
			return seconds, nil
		case <-launch:
			if launched == 0 {
				writeHeader(out)
			}
			i := launched
			ch := make(chan outcome, 1)
			results[i] = ch
			end := start.Add(time.Duration(i+1) * time.Second)
			if d := time.Until(end); d < minSlice {
				ch <- outcome{}
			} else {
				wg.Go(func() {
					hot, bg, err := runSecond(loadCtx, cfg, sess, addrs, i, d)
					ch <- outcome{hot: hot, background: bg, err: err}
				})
			}
			launched++
			if launched < n {
				timer.Reset(time.Until(end))
			}
		case o := <-done:
			if o.err != nil {
				return seconds, o.err
			}
			if ctx.Err() != nil {
				return seconds, nil // this second was cut short
			}
			s := second{N: len(seconds) + 1, Hot: o.hot, Background: o.background}
			writeRow(out, cfg.Limit, s)
			seconds = append(seconds, s)
		}
	}
	return seconds, nil
}

// loadConfig is the hot workload's configuration for a second of length d (connection fields
// included: the session is opened with it).
func loadConfig(cfg Config, addrs []string, d time.Duration) bench.Config {
	return bench.Config{
		Protocol:    cfg.Protocol,
		Addrs:       addrs,
		Coordinator: cfg.Coordinator,
		Table:       table,
		Writes:      1,
		Consistency: client.Quorum,
		Hot:         1,
		Rate:        float64(cfg.HotRate),
		Concurrency: workers(cfg.HotRate),
		Duration:    d,
		Seed:        cfg.Seed,
	}
}

// openSession connects the load generator to the nodes once for the whole run: both workloads
// of every second share the session, so no second pays for connecting.
func openSession(ctx context.Context, cfg Config, addrs []string) (*bench.Session, error) {
	sess, err := bench.Open(ctx, loadConfig(cfg, addrs, cfg.Duration))
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return sess, nil
}

// runSecond runs second i's two workloads, each for d, and returns their summaries.
func runSecond(ctx context.Context, cfg Config, sess *bench.Session, addrs []string, i int, d time.Duration) (hot, background *bench.Summary, err error) {
	hotCfg := loadConfig(cfg, addrs, d)
	hotCfg.Seed = cfg.Seed + uint64(2*i) // every second and workload draws its own sequence
	bgCfg := hotCfg
	bgCfg.Writes = 0.5
	bgCfg.Hot = 0
	bgCfg.Partitions = BackgroundPartitions
	bgCfg.Rate = float64(cfg.BackgroundRate)
	bgCfg.Concurrency = workers(cfg.BackgroundRate)
	bgCfg.Seed = cfg.Seed + uint64(2*i+1)

	var hotErr, bgErr error
	var wg sync.WaitGroup
	wg.Go(func() { hot, hotErr = sess.Run(ctx, hotCfg, nil) })
	wg.Go(func() { background, bgErr = sess.Run(ctx, bgCfg, nil) })
	wg.Wait()
	if hotErr != nil {
		return nil, nil, fmt.Errorf("demo: hot partition load in second %d: %w", i+1, hotErr)
	}
	if bgErr != nil {
		return nil, nil, fmt.Errorf("demo: background load in second %d: %w", i+1, bgErr)
	}
	return hot, background, nil
}

// workers returns how many concurrent operations a workload of rate ops/s may have in flight:
// enough for about 40 ms of operations, and at least 16.
func workers(rate int) int {
	return max(16, rate/25)
}

// The per-second table. Each row is printed as its second ends, so the columns have fixed
// widths: rowFormat's numbers line up under headFormat's names.
const (
	headFormat = "  %6s  %7s  %8s  %8s  %7s    %7s  %8s  %8s  %7s  %7s  %6s\n"
	rowFormat  = "  %6d  %7d  %8d  %8d  %7d    %7d  %8d  %8d  %7.2f  %7.2f  %6d\n"
	hotWidth   = 7 + 2 + 8 + 2 + 8 + 2 + 7
	bgWidth    = 7 + 2 + 8 + 2 + 8 + 2 + 7 + 2 + 7
)

// writeHeader prints the table's two header lines.
func writeHeader(out io.Writer) {
	fmt.Fprintf(out, "  %6s  %s    %s\n", "", rule("hot partition", hotWidth), rule("background", bgWidth))
	fmt.Fprintf(out, headFormat, "second", "offered", "accepted", "rejected", "limit",
		"offered", "accepted", "rejected", "p50 ms", "p99 ms", "errors")
}

// rule centres label in a line of dashes width wide.
func rule(label string, width int) string {
	label = " " + label + " "
	left := (width - len(label)) / 2
	return strings.Repeat("-", left) + label + strings.Repeat("-", width-left-len(label))
}

// writeRow prints second s's row.
func writeRow(out io.Writer, limit int, s second) {
	if s.Skipped() {
		fmt.Fprintf(out, "  %6d  (skipped: its load could not start in time)\n", s.N)
		return
	}
	h, b := s.Hot, s.Background
	fmt.Fprintf(out, rowFormat, s.N, h.Offered, h.Accepted, h.Rejected(), limit,
		b.Offered, b.Accepted, b.Rejected(), b.LatencyMS.P50, b.LatencyMS.P99, h.Failed()+b.Failed())
}
