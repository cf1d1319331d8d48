package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
)

// Row is one line of the accuracy report, as `simreport --json` prints it.
type Row struct {
	// Configuration is "kvnode" (kvnode's shipping behaviour) or "scylla" (the baseline that
	// models ScyllaDB's documented design).
	Configuration    string  `json:"configuration"`
	RF               int     `json:"rf"`
	Op               string  `json:"op"`
	CL               string  `json:"cl"`
	Routing          string  `json:"routing"`
	SkewMS           int64   `json:"skew_ms"`
	OfferedOverLimit float64 `json:"offered_over_limit"`
	ReplicaDown      bool    `json:"replica_down"`
	Flood            bool    `json:"flood"`
	// Onset says whether the hot partition turned hot during the run (idle, then V from one
	// instant after the warm-up).
	Onset bool `json:"onset"`
	// Again says whether, in an onset row, the partition had been hot before (the run's first
	// two seconds) and turned hot again after a pause (Scenario.Again).
	Again bool `json:"again"`
	// AcceptedOverLimit is the hot partition's accepted rate over L in the measurement window
	// (for an onset row: from the second second after the onset on).
	AcceptedOverLimit float64 `json:"accepted_over_limit"`
	// FirstSecondOverLimit is, in onset rows only, the operations accepted of those that
	// arrived in the first second from the onset, over L.
	FirstSecondOverLimit *float64 `json:"first_second_over_limit,omitempty"`
	// WastedPerAccepted is the replica operations performed for rejected or failed operations,
	// per accepted operation.
	WastedPerAccepted float64 `json:"wasted_per_accepted"`
	// Disagreement is the fraction of operations decided by two or more enforcing replicas on
	// which they disagreed; 0 when no operation was (DisagreementMeasured is then false).
	Disagreement         float64 `json:"disagreement"`
	DisagreementMeasured bool    `json:"disagreement_measured"`
	// ColdRejected is the fraction of cold-partition operations rejected by the limiter
	// (it should be 0: cold partitions are far under the limit).
	ColdRejected float64 `json:"cold_rejected"`
	// EvictionsPerSecond is the rate at which the nodes' tables evicted live counters, summed
	// over the nodes.
	EvictionsPerSecond float64 `json:"evictions_per_s"`
	// PartialWritesPerAccepted is the number of writes that ended rejected or failed although
	// some replica applied them, per accepted operation.
	PartialWritesPerAccepted float64 `json:"partial_writes_per_accepted"`
	// LearnedPerRejected is the share of the hot partition's rejections that a coordinator
	// outside the replica set made itself, on the counter it learned from the replicas'
	// earlier rejections: rejections that cost no replica request (kvnode only; 0 elsewhere).
	LearnedPerRejected float64 `json:"learned_per_rejected"`
	// Offered and Rejected count the hot partition's operations in the measurement window
	// and those that ended with the rate-limit error (for an onset row, from the second second
	// after the onset on, as AcceptedOverLimit).
	Offered  int `json:"offered"`
	Rejected int `json:"rejected"`
}

// Row returns the report line of r. Ratios are rounded to 4 decimals, so the JSON and the
// markdown of one run print the same numbers on every platform.
func (r Result) Row() Row {
	cold := 0.0
	if r.ColdOffered > 0 {
		cold = float64(r.ColdRejected) / float64(r.ColdOffered)
	}
	sc := r.Scenario
	var first *float64
	if sc.Onset {
		f := round4(r.FirstSecondOverLimit())
		first = &f
	}
	return Row{
		Configuration:        sc.Configuration.String(),
		RF:                   sc.RF,
		Op:                   sc.Op(),
		CL:                   sc.Consistency.String(),
		Routing:              sc.Routing.String(),
		SkewMS:               sc.Skew.Milliseconds(),
		OfferedOverLimit:     sc.Offered,
		ReplicaDown:          sc.ReplicaDown,
		Flood:                sc.Flood,
		Onset:                sc.Onset,
		Again:                sc.Again,
		AcceptedOverLimit:    round4(r.AcceptedOverLimit()),
		FirstSecondOverLimit: first,
		WastedPerAccepted:    round4(r.WastedPerAccepted()),
		Disagreement:         round4(r.Disagreement()),
		DisagreementMeasured: r.HasDisagreement(),
		ColdRejected:         round4(cold),
		EvictionsPerSecond:   math.Round(float64(r.Evictions) / r.Window.Seconds()),

		PartialWritesPerAccepted: round4(float64(r.PartialWrites) / float64(max(r.Accepted, 1))),
		LearnedPerRejected:       round4(float64(r.LearnedRejected) / float64(max(r.Rejected, 1))),
		Offered:                  r.Offered,
		Rejected:                 r.Rejected,
	}
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// RunAll runs every scenario with options o on up to workers goroutines (one scenario per
// goroutine at a time; each simulation itself is single-threaded) and returns the results in
// the order of scenarios. Each scenario's result depends only on the scenario and o, never on
// workers or scheduling. It stops early, returning ctx's error, when ctx is done.
func RunAll(ctx context.Context, scenarios []Scenario, o Options, workers int) ([]Result, error) {
	results := make([]Result, len(scenarios))
	errs := make([]error, len(scenarios))
	workers = max(1, min(workers, len(scenarios)))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				results[i], errs[i] = Run(scenarios[i], o)
			}
		})
	}
	var err error
feed:
	for i := range scenarios {
		select {
		case next <- i:
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	return results, nil
}

// WriteJSON writes one JSON object per result, one per line.
func WriteJSON(w io.Writer, results []Result) error {
	enc := json.NewEncoder(w)
	for _, r := range results {
		if err := enc.Encode(r.Row()); err != nil {
			return err
		}
	}
	return nil
}

// ReportArgs returns the simreport flags that reproduce a report made with o (zero fields
// meaning their defaults): the seed and the lengths always, the arrival process and
// --no-learning where they differ from the defaults.
func ReportArgs(o Options) string {
	o.EnsureDefaults()
	args := fmt.Sprintf("--seed %d --seconds %g --warmup %g", o.Seed, o.Duration.Seconds(), o.Warmup.Seconds())
	if o.Arrival == Smooth {
		args += " --arrival smooth"
	}
	if o.NoLearning {
		args += " --no-learning"
	}
	return args
}

// WriteMarkdown writes the report as a markdown document: a heading that names the simreport
// flags it was made with (args, as ReportArgs returns them), a sentence on what it is, and the
// table of results.
func WriteMarkdown(w io.Writer, args string, results []Result) error {
	_, err := io.WriteString(w, "# simreport "+args+"\n\n"+markdownAbout+MarkdownTable(results))
	return err
}

// markdownAbout follows the heading of a markdown report.
const markdownAbout = `The rate-limiter accuracy matrix of the deterministic cluster simulator (package test/sim), one
row per scenario and configuration. docs/accuracy.md explains the columns and reads them.

`

// markdownHeader is the header of the markdown table.
const markdownHeader = `| configuration | RF | op | CL | routing | skew | V/L | replica down | flood | onset | accepted/L | first second/L | wasted/accepted | partial writes/accepted | disagreement | learned/rejected | cold rejected |
|---|---:|---|---|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|
`

// MarkdownTable returns the results as a markdown table, one row per result. A disagreement of
// "–" means no operation was decided by two or more enforcing replicas; first second/L is
// printed for onset rows only.
func MarkdownTable(results []Result) string {
	var b strings.Builder
	b.WriteString(markdownHeader)
	for _, r := range results {
		b.WriteString(MarkdownRow(r.Row()))
	}
	return b.String()
}

// MarkdownRow returns one line of the markdown table, newline included. The disagreement is a
// percentage with two decimals, which is every digit Row keeps.
func MarkdownRow(w Row) string {
	yes := func(v bool) string {
		if v {
			return "yes"
		}
		return ""
	}
	dis := "–"
	if w.DisagreementMeasured {
		dis = fmt.Sprintf("%.2f%%", 100*w.Disagreement)
	}
	onset := yes(w.Onset)
	if w.Again {
		onset = "again"
	}
	first := ""
	if w.FirstSecondOverLimit != nil {
		first = fmt.Sprintf("%.3f", *w.FirstSecondOverLimit)
	}
	return fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %g | %s | %s | %s | %.3f | %s | %.3f | %.3f | %s | %.3f | %.3f |\n",
		w.Configuration, w.RF, w.Op, w.CL, w.Routing, skewLabel(w.SkewMS), w.OfferedOverLimit,
		yes(w.ReplicaDown), yes(w.Flood), onset, w.AcceptedOverLimit, first, w.WastedPerAccepted,
		w.PartialWritesPerAccepted, dis, w.LearnedPerRejected, w.ColdRejected)
}

func skewLabel(ms int64) string {
	if ms == 0 {
		return "0"
	}
	return fmt.Sprintf("±%d ms", ms)
}
