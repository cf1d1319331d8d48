// Command perf is kvnode's end-to-end performance evidence for the per-partition rate limiter:
//
//	go run ./test/perf           # Markdown tables on stdout, progress on stderr
//	go run ./test/perf --json    # one JSON object (Result) instead
//	go run ./test/perf --quick   # a smoke run of a few seconds per part
//
// It builds cmd/kvnode, starts kvnode serve processes on loopback (ephemeral ports, data in a
// temporary directory, removed at the end) and measures, in one run:
//
//  1. A hot partition against background traffic, on 3 nodes with RF=3 and --sync=false.
//     Background: many partitions, half reads and half writes at QUORUM, a closed loop of a fixed
//     number of workers with coordinators in turn, so its throughput is the measure. Hot: one
//     partition of the same table offered writes at a fixed open-loop rate R. R is searched for
//     (searchRate) until, with no limit, the background loses at least a third of its
//     throughput. Then rounds of three phases (background alone; with the hot partition and no
//     limit; with the table's per_partition_rate_limit at R/20) give the background's
//     throughput and p99 as ratios to the baseline, and the hot partition's accepted rate
//     against its limit.
//  2. The server CPU of a rejected write against an accepted one, on both limiter paths: the
//     coordinator path (RF=3 on 3 nodes, every coordinator is a replica and rejects locally)
//     and the replicas path (RF=1, every write sent through a node that does not own the
//     partition, found by rebuilding the ring from the node ids). A fixed number of writes to
//     one partition with the limit at 2^31-1 (all accepted), then as many with the limit at 1
//     on the partition already hot (almost all rejected); CPU is the servers' total from /proc,
//     minus their idle CPU. Measured on a cluster with --sync=false and on one with the default
//     --sync=true.
//  3. The limiter's overhead on one node (--sync=false): closed-loop write and then read
//     throughput on a table whose limits (2^31-1) never reject against a table with none,
//     in alternating pairs; overhead = 1 - limited/unlimited.
//
// The load generator is internal/bench, run in this process: it shares the machine's CPUs with
// the servers, and the report shows how much of them it used in each phase. Server CPU is read
// from /proc/<pid>/task/<tid>/schedstat (nanoseconds) and cross-checked with utime+stime from
// /proc/<pid>/stat, so this program runs on Linux only.
//
// docs/performance.md records a run with the machine it ran on.
package main
