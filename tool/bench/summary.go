package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Summary is the outcome of a run. Its JSON encoding is the object kvnode bench --json prints;
// scripts rely on its field names. Every offered operation is counted exactly once:
//
//	Offered = Accepted + RejectedByCoordinator + RejectedByReplicas + sum(Errors)
//	Hot.Accepted + Cold.Accepted = Accepted
//	Hot.Rejected + Cold.Rejected = RejectedByCoordinator + RejectedByReplicas
//	sum(Hot.AcceptedPerSecond) = Hot.Accepted
type Summary struct {
	// Protocol is the client protocol of the run: "cql" (the native protocol) or "grpc".
	Protocol string `json:"protocol"`
	// Coordinator is the coordinator choice: "tokenaware", "roundrobin" or "fixed".
	Coordinator string `json:"coordinator"`
	// Offered counts the operations issued (open loop: scheduled, dropped ones included).
	Offered  int64 `json:"offered"`
	Accepted int64 `json:"accepted"`
	// RejectedByCoordinator and RejectedByReplicas count rate-limit errors by who rejected.
	RejectedByCoordinator int64 `json:"rejected_by_coordinator"`
	RejectedByReplicas    int64 `json:"rejected_by_replicas"`
	// Errors counts the other failures by kind: ErrorUnavailable, ErrorTimeout, ErrorFailed, ErrorInvalid,
	// ErrorCanceled, ErrorDropped, ErrorOther or "grpc_<code>". Never nil.
	Errors map[string]int64 `json:"errors"`
	// LatencyMS holds latency percentiles of accepted operations.
	LatencyMS Latency `json:"latency_ms"`
	// DurationS is how long operations were issued, in seconds: Config.Duration, or less when the
	// run was cancelled.
	DurationS float64     `json:"duration_s"`
	Hot       HotSummary  `json:"hot"`
	Cold      ColdSummary `json:"cold"`
}

// Latency holds latency percentiles in milliseconds, from a log-linear histogram whose buckets
// are at most 1/64 of their value wide (each percentile is within 0.8% of the exact sample).
// Open-loop latency counts from each operation's intended start, so time spent queued behind a
// slow server is included (no coordinated omission). All zero without accepted operations.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
}

// HotSummary counts the operations on the hot partition.
type HotSummary struct {
	Accepted int64 `json:"accepted"`
	Rejected int64 `json:"rejected"`
	// AcceptedPerSecond[i] counts hot operations accepted in second i of the run (by completion
	// time), one entry per second: ceil(DurationS) entries. Operations still finishing after the
	// last second count in the last entry.
	AcceptedPerSecond []int64 `json:"accepted_per_second"`
}

// ColdSummary counts the operations on the cold partitions.
type ColdSummary struct {
	Accepted int64 `json:"accepted"`
	Rejected int64 `json:"rejected"`
}

// Rejected returns the rate-limited operations, whoever rejected them.
func (s *Summary) Rejected() int64 { return s.RejectedByCoordinator + s.RejectedByReplicas }

// Failed returns the operations that failed with an error other than a rate limit.
func (s *Summary) Failed() int64 {
	var n int64
	for _, v := range s.Errors {
		n += v
	}
	return n
}

// perSecond returns n per second of the run.
func (s *Summary) perSecond(n int64) string {
	if s.DurationS <= 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(n)/s.DurationS, 'f', 1, 64) + "/s"
}

// maxListedSeconds is the longest hot accepted-per-second list WriteText prints in full.
const maxListedSeconds = 60

// WriteText writes s as a table for people.
func (s *Summary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "protocol\t%s\tcoordinator %s\n", s.Protocol, s.Coordinator)
	fmt.Fprintf(tw, "duration\t%.1f s\n", s.DurationS)
	fmt.Fprintf(tw, "offered\t%d\t%s\n", s.Offered, s.perSecond(s.Offered))
	fmt.Fprintf(tw, "accepted\t%d\t%s\n", s.Accepted, s.perSecond(s.Accepted))
	fmt.Fprintf(tw, "rejected by coordinator\t%d\t%s\n", s.RejectedByCoordinator, s.perSecond(s.RejectedByCoordinator))
	fmt.Fprintf(tw, "rejected by replicas\t%d\t%s\n", s.RejectedByReplicas, s.perSecond(s.RejectedByReplicas))
	fmt.Fprintf(tw, "errors\t%d\t%s\n", s.Failed(), s.errorList())
	fmt.Fprintf(tw, "latency (accepted)\tp50 %.3f ms\tp90 %.3f ms\tp99 %.3f ms\tp99.9 %.3f ms\n",
		s.LatencyMS.P50, s.LatencyMS.P90, s.LatencyMS.P99, s.LatencyMS.P999)
	fmt.Fprintf(tw, "hot partition\taccepted %d\t%s\trejected %d\n", s.Hot.Accepted, s.perSecond(s.Hot.Accepted), s.Hot.Rejected)
	fmt.Fprintf(tw, "cold partitions\taccepted %d\t%s\trejected %d\n", s.Cold.Accepted, s.perSecond(s.Cold.Accepted), s.Cold.Rejected)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "hot accepted per second: %s\n", s.perSecondList())
	return err
}

// errorList lists the error kinds with their counts, by name.
func (s *Summary) errorList() string {
	kinds := make([]string, 0, len(s.Errors))
	for k := range s.Errors {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for i, k := range kinds {
		kinds[i] = k + " " + strconv.FormatInt(s.Errors[k], 10)
	}
	return strings.Join(kinds, ", ")
}

// perSecondList prints the hot accepted-per-second entries, or for a long run their minimum,
// mean and maximum.
func (s *Summary) perSecondList() string {
	ps := s.Hot.AcceptedPerSecond
	if len(ps) == 0 {
		return "-"
	}
	if len(ps) <= maxListedSeconds {
		parts := make([]string, len(ps))
		for i, v := range ps {
			parts[i] = strconv.FormatInt(v, 10)
		}
		return strings.Join(parts, " ")
	}
	var sum int64
	for _, v := range ps {
		sum += v
	}
	return fmt.Sprintf("min %d, mean %.1f, max %d over %d seconds (--json lists every second)",
		slices.Min(ps), float64(sum)/float64(len(ps)), slices.Max(ps), len(ps))
}
