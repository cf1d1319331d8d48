package demo

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/kvnode/kvnode/tool/bench"
)

// totals adds up the seconds that ran.
type totals struct {
	ran int // seconds with load

	hotOffered, hotAccepted, hotRejected int64
	// hotSteady counts the hot operations accepted in the last steadySeconds seconds, the second
	// half of the run: the counters start at zero and take a few seconds to settle, admitting
	// more meanwhile.
	hotSteady     int64
	steadySeconds int

	bgOffered, bgAccepted, bgRejected int64
	// bgP99 holds the background p99 latency of each second, in ms.
	bgP99 []float64

	// errors counts the operations that failed other than by the limiter, by workload and kind.
	errors map[string]int64
}

// sum adds up seconds, which are numbered 1 to len(seconds).
func sum(seconds []second) totals {
	t := totals{errors: make(map[string]int64)}
	for _, s := range seconds {
		if s.Skipped() {
			continue
		}
		t.ran++
		h, b := s.Hot, s.Background
		t.hotOffered += h.Offered
		t.hotAccepted += h.Accepted
		t.hotRejected += h.Rejected()
		if s.N > len(seconds)/2 {
			t.hotSteady += h.Accepted
			t.steadySeconds++
		}
		t.bgOffered += b.Offered
		t.bgAccepted += b.Accepted
		t.bgRejected += b.Rejected()
		t.bgP99 = append(t.bgP99, b.LatencyMS.P99)
		addErrors(t.errors, "hot", h)
		addErrors(t.errors, "background", b)
	}
	slices.Sort(t.bgP99)
	return t
}

func addErrors(into map[string]int64, workload string, s *bench.Summary) {
	for kind, n := range s.Errors {
		if n > 0 {
			into[workload+" "+kind] += n
		}
	}
}

// hotSteadyRate returns the hot partition's accepted operations per second over the second half
// of the run.
func (t totals) hotSteadyRate() float64 {
	if t.steadySeconds == 0 {
		return 0
	}
	return float64(t.hotSteady) / float64(t.steadySeconds)
}

// overLimit is the ratio of the steady accepted rate to the limit above which the reading
// points at the coordinators: the limiter's own statistical error is far smaller.
const overLimit = 1.5

// writeReading prints the totals and what they show.
func writeReading(out io.Writer, cfg Config, seconds []second) {
	t := sum(seconds)
	fmt.Fprintln(out)
	if t.ran == 0 || t.steadySeconds == 0 {
		fmt.Fprintln(out, "Too few seconds ran their load to read anything: the machine was too busy. Try lower rates.")
		return
	}
	fmt.Fprintf(out, "  hot partition: offered %d, accepted %d (%.1f/s), rejected %d by the limiter\n",
		t.hotOffered, t.hotAccepted, float64(t.hotAccepted)/float64(t.ran), t.hotRejected)
	fmt.Fprintf(out, "  background:    offered %d, accepted %d, rejected %d", t.bgOffered, t.bgAccepted, t.bgRejected)
	if t.bgRejected == 0 {
		fmt.Fprint(out, " (none, as it should be: the limit is per partition)")
	}
	fmt.Fprintln(out)
	if len(t.errors) > 0 {
		kinds := slices.Sorted(maps.Keys(t.errors))
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			parts[i] = fmt.Sprintf("%s %d", k, t.errors[k])
		}
		fmt.Fprintf(out, "  errors other than rate limits: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintln(out, "  The first seconds admit more: the counters start at zero, a partition is never rejected")
	fmt.Fprintln(out, "  while its counter is at most twice the limit, and the counters take a few seconds to settle.")
	if cfg.Coordinator == bench.RoundRobin && t.hotSteadyRate() > overLimit*float64(cfg.Limit) {
		fmt.Fprintln(out, "  That is well over the limit. With the nodes coordinating in turn, each node's counter")
		fmt.Fprintln(out, "  must also learn of the writes the other nodes rejected; compare --coordinator fixed,")
		fmt.Fprintln(out, "  where node 1 sees them all.")
	}

	fmt.Fprintln(out)
	bg := "background traffic saw no rejections"
	if t.bgRejected > 0 {
		bg = fmt.Sprintf("background traffic saw %d rejections", t.bgRejected)
	}
	held := "was held to"
	if cfg.HotRate <= cfg.Limit {
		held = "stayed within its limit at" // a counter that stays under twice the limit never rejects
	}
	fmt.Fprintf(out, "Reading: over the last %d %s the hot partition %s about %.0f/s (limit %d/s,\n",
		t.steadySeconds, plural(t.steadySeconds, "second", "seconds"), held, t.hotSteadyRate(), cfg.Limit)
	fmt.Fprintf(out, "offered %d/s); %s, with p99 %.1f ms in the median\nsecond and %.1f ms in the worst.\n",
		cfg.HotRate, bg, t.bgP99[len(t.bgP99)/2], t.bgP99[len(t.bgP99)-1])
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
