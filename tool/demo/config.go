package demo

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/kvnode/kvnode/tool/bench"
	"github.com/kvnode/kvnode/tool/cliflags"
)

// Bounds on the flags. The rates are capped because the whole cluster and both load generators
// share one process: far beyond these the demo would measure the machine, not the limiter.
const (
	MaxLimit          = 1_000_000
	MaxHotRate        = 50_000
	MaxBackgroundRate = 50_000
	MaxDuration       = 10 * time.Minute
)

// Config is one demo run. Its fields mirror the flags of kvnode demo; DefaultConfig holds the
// flag defaults, with which the demo finishes in well under a minute.
type Config struct {
	// Limit is the table's max_writes_per_second per partition; --limit.
	Limit int
	// HotRate is the offered load on the hot partition, in writes per second; --hot-rate.
	HotRate int
	// BackgroundRate is the offered load on the background partitions, in operations per second,
	// half writes and half reads; --background-rate.
	BackgroundRate int
	// Duration is how long the load runs, a whole number of seconds (the results are one row per
	// second); --duration.
	Duration time.Duration
	// Coordinator says which nodes coordinate the operations: bench.RoundRobin rotates over the
	// three, as a driver spreading its requests would; bench.Fixed sends every operation to
	// node 1; --coordinator.
	Coordinator bench.Coordinator
	// Protocol is how the load generator talks to the nodes: bench.ProtocolCQL, the native
	// protocol through gocql (the nodes then listen on 127.0.0.1, 127.0.0.2 and 127.0.0.3 with
	// one shared native port, as a driver expects of a cluster), or bench.ProtocolGRPC, kvnode's
	// gRPC API; --protocol.
	Protocol bench.Protocol
	// Seed seeds the load generators' random choices; --seed.
	Seed uint64
	// Verbose sends the nodes' logs to stderr instead of discarding them; --verbose.
	Verbose bool
}

// BackgroundPartitions is how many partitions the background traffic spreads over.
const BackgroundPartitions = 1000

// DefaultConfig returns the flag defaults: a limit of 100 writes/s, the hot partition offered
// five times that, 300 ops/s of background traffic, for 15 seconds.
func DefaultConfig() Config {
	return Config{
		Limit:          100,
		HotRate:        500,
		BackgroundRate: 300,
		Duration:       15 * time.Second,
		Coordinator:    bench.RoundRobin,
		Protocol:       bench.ProtocolCQL,
		Seed:           1,
	}
}

// Validate reports the first setting out of range, as an error naming its flag and value.
func (c Config) Validate() error {
	if c.Limit < 1 || c.Limit > MaxLimit {
		return fmt.Errorf("demo: --limit %d: want writes per second per partition between 1 and %d", c.Limit, MaxLimit)
	}
	if c.HotRate < 1 || c.HotRate > MaxHotRate {
		return fmt.Errorf("demo: --hot-rate %d: want writes per second between 1 and %d", c.HotRate, MaxHotRate)
	}
	if c.BackgroundRate < 1 || c.BackgroundRate > MaxBackgroundRate {
		return fmt.Errorf("demo: --background-rate %d: want operations per second between 1 and %d", c.BackgroundRate, MaxBackgroundRate)
	}
	if c.Duration < time.Second || c.Duration > MaxDuration || c.Duration%time.Second != 0 {
		return fmt.Errorf("demo: --duration %v: want a whole number of seconds between 1s and %v, such as 15s", c.Duration, MaxDuration)
	}
	if c.Coordinator != bench.Fixed && c.Coordinator != bench.RoundRobin {
		return fmt.Errorf("demo: --coordinator %q: want roundrobin (the nodes take turns) or fixed (node 1 coordinates everything)", string(c.Coordinator))
	}
	if c.Protocol != bench.ProtocolCQL && c.Protocol != bench.ProtocolGRPC {
		return fmt.Errorf("demo: --protocol %q: want cql (the native protocol) or grpc (kvnode's gRPC API)", string(c.Protocol))
	}
	return nil
}

const usageText = `Usage: kvnode demo [flags]

Starts a 3-node cluster inside this process (loopback ports, temporary data),
creates a table whose partitions may take --limit writes per second, then for
--duration drives one hot partition at --hot-rate writes per second while
background traffic runs over 1000 other partitions. Each second it prints how
many hot writes the cluster accepted against the limit, and the background
traffic's rejections and latency. Everything is removed at the end, also when
interrupted.

The nodes take turns coordinating the operations, as a driver spreading its
requests over the cluster would; --coordinator fixed sends every operation
through node 1 instead, whose counter then sees the whole load first hand.

The load goes over the CQL native protocol through gocql, the driver
applications use, with the nodes on 127.0.0.1, 127.0.0.2 and 127.0.0.3 sharing
one native port; --protocol grpc uses kvnode's gRPC API instead.

Flags:
`

// parseFlags parses the arguments of kvnode demo (those after "demo") into a validated Config.
// Errors name the flag and the value; -h or --help prints the flags to stderr and returns
// flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (Config, error) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("kvnode demo", flag.ContinueOnError)
	fs.IntVar(&c.Limit, "limit", c.Limit, "the table's per-partition write limit, in `writes/s`")
	fs.IntVar(&c.HotRate, "hot-rate", c.HotRate, "offered load on the hot partition, in `writes/s`")
	fs.IntVar(&c.BackgroundRate, "background-rate", c.BackgroundRate, "offered background load over 1000 partitions, in `ops/s` (half reads)")
	fs.Func("duration", "how long the load runs, a whole number of `seconds` such as 15s or 1m (default 15s)", func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return errors.New("want a duration with a unit, such as 15s")
		}
		c.Duration = d
		return nil
	})
	fs.Func("coordinator", "`policy` for coordinators: roundrobin (the 3 nodes in turn) or fixed (node 1 coordinates every operation) (default roundrobin)", func(s string) error {
		c.Coordinator = bench.Coordinator(s)
		return nil
	})
	fs.Func("protocol", "`protocol` of the load: cql (the native protocol, through gocql) or grpc (kvnode's gRPC API) (default cql)", func(s string) error {
		c.Protocol = bench.Protocol(s)
		return nil
	})
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the load generators' random choices")
	fs.BoolVar(&c.Verbose, "verbose", false, "print the nodes' logs on stderr")

	if err := cliflags.Parse(fs, args, "demo", usageText, stderr); err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}
