// Command perf is kvnode's end-to-end performance evidence for the per-partition rate limiter:
//
//	go run ./test/perf                 # Markdown tables on stdout, progress on stderr
//	go run ./test/perf --json          # one JSON object (Result) instead
//	go run ./test/perf --quick         # a smoke run of a few seconds per part
//	go run ./test/perf --parts reject  # only some parts: hot, reject, overhead
//
// It builds cmd/kvnode, starts kvnode serve processes on loopback (ephemeral ports, data in a
// temporary directory, removed at the end) and measures, in one run:
//
//  1. hot: a hot partition against background traffic, on 3 nodes with RF=3 and --sync=false.
//     Background: 2000 partitions (every row written once first, so reads do not grow heavier
//     during the run), half reads and half writes at QUORUM, a closed loop of 32 workers with
//     coordinators in turn, so its throughput is the measure. Hot: one partition of the same
//     table offered writes at a fixed open-loop rate R. R is searched for (searchRate) until,
//     with no limit, the background loses at least 40% (a margin over the third).
//     Then rounds of three phases (background alone; with the hot partition and no limit; with
//     the table's per_partition_rate_limit at R/20, measured after a second that warms the
//     counters) give each round's background throughput and p99 as ratios to the same round's
//     baseline; the headline is the median over rounds, which outlasts bursts of other work on
//     a shared machine. --rate fixes R instead of searching.
//  2. reject: the server CPU of a rejected write against an accepted one, on both limiter
//     paths: the coordinator path (RF=3 on 3 nodes, every coordinator is a replica and rejects
//     locally) and the replicas path (RF=1, every write sent through a node that does not own
//     the partition, found by rebuilding the ring from the node ids). A fixed number of writes
//     to one partition with the limit at 2^31-1 (all accepted), then as many with the limit at
//     1 on the partition already hot (almost all rejected), closed loop (--reject-rate for an
//     open-loop rate); CPU is the servers' total from /proc, minus their idle CPU. The same for
//     a gRPC health check, the floor under any request. On a cluster with --sync=false and on
//     one with the default --sync=true.
//  3. overhead: the limiter's overhead on one node (--sync=false): closed-loop read and then
//     write throughput on a table whose limits (2^31-1) never reject against a table with
//     none, in pairs of alternating order; overhead = 1 - limited/unlimited, the median pair.
//
// The load generator is internal/bench, run in this process: it shares the machine's CPUs with
// the servers, and the report shows how much of them it used in each phase. Server CPU is read
// from /proc/<pid>/task/<tid>/schedstat (nanoseconds) and cross-checked with utime+stime from
// /proc/<pid>/stat, so this program runs on Linux only.
//
// docs/performance.md records a run with the machine it ran on.
package main
