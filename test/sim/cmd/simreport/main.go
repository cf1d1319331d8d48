package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/kvnode/kvnode/test/sim"
)

func main() {
	// The simulator allocates a small request state machine per operation and keeps only a few
	// MiB live; collecting less often than the default makes the matrix about a quarter faster.
	debug.SetGCPercent(800)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "simreport:", err)
		}
		os.Exit(2)
	}
}

// run parses args, runs the matrix and writes the report to stdout; progress and timing go to
// stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print one JSON object per row instead of a markdown table")
	seed := fs.Uint64("seed", sim.DefaultSeed, "seed of the simulation's random number generator")
	seconds := fs.Float64("seconds", sim.DefaultDuration.Seconds(), "simulated seconds of traffic per row")
	warmup := fs.Float64("warmup", sim.DefaultWarmup.Seconds(), "leading simulated seconds of each row left out of the measurement")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "rows simulated at once (each row is single-threaded; the output does not depend on it)")
	arrival := fs.String("arrival", "poisson", "arrival process of every stream: poisson or smooth")
	quiet := fs.Bool("q", false, "do not print the run time to stderr")
	onsetOnly := fs.Bool("onset", false, "run only the onset rows (a partition turning hot, from idle or again after a pause), both configurations")
	noLearning := fs.Bool("no-learning", false, "kvnode's coordinators outside a partition's replicas forward every operation instead of rejecting learned hot partitions themselves (kvnode before issue 16)")
	match := fs.String("match", "", "run only the rows whose scenario has every space-separated `terms` (e.g. \"configuration=kvnode rf=3 op=read cl=ALL routing=outside skew=500ms V=100L down=false\")")
	offered := fs.Float64("offered", 0, "offer every picked row's hot partition this multiple of L instead of its own V (e.g. 0.9 with --match V=2L: the same layouts just under the limit)")
	out := fs.String("out", "", "write the report to `file` instead of stdout (test/sim/results/accuracy.md is the committed one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *seed == 0 {
		return errors.New("--seed must not be 0")
	}
	if !(*seconds > 0) || !(*warmup > 0) || *warmup >= *seconds {
		return fmt.Errorf("--warmup %g must be positive and shorter than --seconds %g", *warmup, *seconds)
	}
	if *out != "" {
		// Refuse a file that cannot be written before simulating for minutes.
		if fi, err := os.Stat(filepath.Dir(*out)); err != nil || !fi.IsDir() {
			return fmt.Errorf("--out %q: its directory does not exist", *out)
		}
	}
	opts := sim.Options{
		Seed:     *seed,
		Duration: time.Duration(*seconds * float64(time.Second)),
		Warmup:   time.Duration(*warmup * float64(time.Second)),

		NoLearning: *noLearning,
	}
	switch *arrival {
	case "poisson":
		opts.Arrival = sim.Poisson
	case "smooth":
		opts.Arrival = sim.Smooth
	default:
		return fmt.Errorf("--arrival %q is neither poisson nor smooth", *arrival)
	}
	scenarios := sim.Matrix()
	if *onsetOnly {
		var onset []sim.Scenario
		for _, sc := range scenarios {
			if sc.Onset {
				onset = append(onset, sc)
			}
		}
		scenarios = onset
	}
	if *match != "" {
		var picked []sim.Scenario
		for _, sc := range scenarios {
			if matches(sc, strings.Fields(*match)) {
				picked = append(picked, sc)
			}
		}
		if len(picked) == 0 {
			return fmt.Errorf("--match %q: no scenario has all of these terms (a scenario reads %q)", *match, terms(scenarios[0]))
		}
		scenarios = picked
	}
	if *offered != 0 {
		if !(*offered > 0) {
			return fmt.Errorf("--offered %g must be positive", *offered)
		}
		for i := range scenarios {
			scenarios[i].Offered = *offered
		}
	}
	start := time.Now()
	results, err := sim.RunAll(ctx, scenarios, opts, *workers)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if *asJSON {
		err = sim.WriteJSON(&b, results)
	} else {
		args := sim.ReportArgs(opts)
		if *onsetOnly {
			args += " --onset"
		}
		if *match != "" {
			args += fmt.Sprintf(" --match %q", *match)
		}
		if *offered != 0 {
			args += fmt.Sprintf(" --offered %g", *offered)
		}
		err = sim.WriteMarkdown(&b, args, results)
	}
	if err != nil {
		return err
	}
	if *out != "" {
		if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	} else if _, err := stdout.Write(b.Bytes()); err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintf(stderr, "simreport: %d rows, seed %d, %gs (%gs warm-up) each, in %v\n",
			len(results), *seed, *seconds, *warmup, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// terms returns the terms --match compares: the scenario's name, and the fields it leaves out
// when they are unset (the baseline's configuration=scylla, onset=false, again=false).
func terms(sc sim.Scenario) string {
	name := sc.String()
	if sc.Configuration == sim.Scylla {
		name += " configuration=scylla"
	}
	if !sc.Onset {
		name += " onset=false"
	}
	if !sc.Again {
		name += " again=false"
	}
	return name
}

// matches says whether every one of want is a term of sc.
func matches(sc sim.Scenario, want []string) bool {
	have := strings.Fields(terms(sc))
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
