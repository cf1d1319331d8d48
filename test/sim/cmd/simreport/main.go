package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
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
	start := time.Now()
	results, err := sim.RunAll(ctx, scenarios, opts, *workers)
	if err != nil {
		return err
	}
	if *asJSON {
		err = sim.WriteJSON(stdout, results)
	} else {
		_, err = io.WriteString(stdout, sim.MarkdownTable(results))
	}
	if err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintf(stderr, "simreport: %d rows, seed %d, %gs (%gs warm-up) each, in %v\n",
			len(results), *seed, *seconds, *warmup, time.Since(start).Round(time.Millisecond))
	}
	return nil
}
