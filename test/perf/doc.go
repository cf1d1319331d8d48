// Command perf is kvnode's end-to-end performance evidence for the per-partition rate limiter:
//
//	go run ./test/perf                   # Markdown tables on stdout, progress on stderr
//	go run ./test/perf --json            # one JSON object (Result) instead
//	go run ./test/perf --save perf.json  # the tables, and the JSON object written to perf.json
//	go run ./test/perf --quick           # a smoke run of a few seconds per part
//	go run ./test/perf --parts reject    # only some parts: hot, reject, overhead, overload, levels, floor, lwt, lwtlimit, counterlimit, replicated, stream, scaling, bigread, memory, repair
//	go run ./test/perf --parts lwt,lwtlimit  # the lightweight transactions' parts, which run only when named
//	go run ./test/perf --parts counterlimit  # a hot counter partition under its limit, likewise
//	go run ./test/perf --parts replicated,stream  # RF-3 against RF-1 writes, and streaming, likewise
//	go run ./test/perf --parts scaling,bigread,memory --size 1GiB  # the scaling curves, likewise
//	go run ./test/perf --parts repair --repair-mib 1024  # repair of a 1-GiB node missing 1 % of its rows
//
// It builds cmd/kvnode, starts kvnode serve processes on loopback (node i on 127.0.0.(i+1), every
// listener on a port shared by all nodes, as CQL drivers expect; data in a temporary directory,
// removed at the end) and measures, in one run, over both client protocols side by side: the
// CQL native protocol through gocql (ScyllaDB's fork) with prepared statements and token-aware
// routing, as applications use it, which the headline fields report ("protocol": "cql"), and
// kvnode's gRPC API, under "grpc" in the JSON.
//
//  1. hot: a hot partition against background traffic, on 3 nodes with RF=3 and --sync=false.
//     Background: 2000 partitions (every row written once first, so reads do not grow heavier
//     during the run), half reads and half writes at QUORUM, a closed loop of 32 workers, so its
//     throughput is the measure. Hot: one partition of the same table offered writes at a fixed
//     open-loop rate R, as a bug's or a bot's load is, whatever the answers: over gRPC through
//     tool/bench, over the native protocol (with the default --hot-client lean) by a client
//     without a driver's per-request work, one connection per node, the INSERT prepared on
//     each and its EXECUTE frames encoded once (only the stream id changes), the nodes in turn,
//     the frames due on a connection within 200 µs of the first sent in one write as gocql's
//     write coalescer sends them (--hot-coalesce, 0 for a write per frame); --hot-client gocql
//     writes it through gocql as the background is. The hot partition's
//     client runs elsewhere in production; here it shares the cores with the servers, and
//     gocql's CPU per rejected write (13–24 µs) is more than the server's. R is searched for (searchRate) over the native protocol with the lean client (over gRPC, coordinators in turn, with --hot-client gocql: the target whose hot partition costs its client least) until,
//     with no limit, the background loses at least 40% (a margin over the third), in a
//     step measured twice over (a median of six pairs instead of three), each pair's halves as
//     long as the rounds' phases (2.5 s), so that the rounds lose what the search did; a step
//     that lands more than 5 points past 40% is followed by one at the rate interpolated
//     between it and the step before, taken when it too reaches 40%, so that R is not set far
//     above what the loss needs; --rate fixes it instead. Then rounds, each running over both protocols at that same R (their
//     order alternating by round) three phases: background alone; with the hot partition and no
//     limit; with the table's per_partition_rate_limit at R/20 (each of the six orders in turn,
//     so that each phase follows each other alike), each after a second of its own load
//     unmeasured, which takes the end of what the phase before left running. The limited
//     phase's unmeasured second (counters young after the limit is set) is reported apart. Each round's
//     background throughput and p99 are ratios to the same round's and protocol's baseline; the
//     headline is the median over rounds, which outlasts bursts of other work on a shared
//     machine. Last, one long limited phase per protocol (20 s) gives the hot partition's
//     accepted writes second by second: its first 3 seconds, while the counters are young, and
//     the rest, which the 0.9–1.1 × limit is about. With the reject part, cpu_accounting
//     splits the limited phases' CPU: the servers' for the hot partition (at the reject part's
//     per-write costs, and measured from the phases), the load generator's per operation, and
//     the background's ratio from the servers' CPU alone (1 − the hot partition's server cores
//     over the baseline's), which a load generator on other machines would leave.
//     --server-cpus 0 --loadgen-cpus 1 pins the 3 nodes of this part (and of the reject part's
//     --sync=false cluster) to CPU 0 and this process to CPU 1 (taskset), so that the load
//     generator's CPU is not taken from the servers; both kinds of phases run pinned alike.
//  2. reject: the server CPU of a rejected write against an accepted one, on both limiter paths
//     and both protocols: the coordinator path (RF=3 on 3 nodes, every coordinator is a replica
//     and rejects locally; gocql token-aware, gRPC coordinators in turn) and the replicas path
//     (RF=1, every write sent through a node that does not own the partition, found by
//     rebuilding the ring from the node ids). A fixed number of writes to one partition with the
//     limit at 2^31-1 (all accepted), per protocol, then three rounds of as many with the limit
//     at 1 on the partition already hot (almost all rejected), one per protocol in each round in
//     alternating order, the median round taken; closed loop (--reject-rate for an open-loop
//     rate); CPU is the servers' total from /proc, minus their idle CPU. The same for a request that does
//     nothing, the floor under any request: the native protocol's OPTIONS and a gRPC health
//     check. On a cluster with --sync=false and on one with the default --sync=true; the fields
//     native_reject_cpu_us, grpc_reject_cpu_us, native_noop_cpu_us and grpc_noop_cpu_us come
//     from the latter.
//  3. overhead: the limiter's overhead on one node (--sync=false), over the native protocol:
//     closed-loop read and then write throughput on a table whose limits (2^31-1) never reject
//     against a table with none, in pairs of alternating order; overhead = 1 - limited/unlimited,
//     the median pair, with its resolution (twice the median's standard error).
//  4. overload: one node (--sync=false) with admission control (--max-concurrent-requests C
//     --max-queued-requests Q --request-queue-timeout T, when the binary has them) offered 10 × C
//     closed-loop workers over the native protocol: goodput, p99 of admitted requests, the rate
//     of requests shed as Overloaded, the p99 of a low-rate open-loop client against its p99 on
//     the idle node, the node's resident memory before and at its peak (VmHWM), and whether
//     health checks and /metrics scrapes kept answering.
//  5. levels: service levels held across coordinators, on 3 nodes (--sync=false) with password
//     authentication, every session gocql round-robin over the three nodes: a tenant's level of
//     100 writes/s offered 1,000/s for 32 s beside another role's closed loop; that role's
//     throughput alone and beside the tenant in six pairs of 5-s phases, in alternating order
//     (the median pair's ratio); then two clients, each with a level
//     of 100 writes/s and both granted a role whose level is 100 too, the first offered 1,000/s
//     alone, the second joining half way at the same rate. Accepted writes are counted per
//     second; the means leave out each phase's first second and the last, cut-short one.
//  6. floor: the native front end's floor: the server CPU of an OPTIONS on a started
//     connection to one node (--sync=false) over that of a minimal Go server answering the same
//     frame with the same bytes (this program re-executed as "floor-server": a goroutine per
//     connection reading frames and writing the answers to those read at once), one request in
//     flight and 16 pipelined on one connection, and open loop at 4,600/s on one connection
//     coalesced as the hot part's lean client writes (what each node gets of a hot partition
//     offered 13,800/s); rounds of phases whose order rotates, each server's idle CPU
//     subtracted, the median of the rounds' ratios reported as native_noop_over_floor,
//     native_noop_over_floor_pipelined and native_noop_over_floor_open_loop (cpu_us_open_loop:
//     each server's µs). With --parent-kvnode, a node of that binary (the parent commit's) is
//     measured in the same rounds.
//  7. lwt: lightweight transactions against plain QUORUM writes on 3 nodes (RF=3, gocql
//     token-aware), on a cluster with the default --sync=true (the headline: Paxos state is
//     synced whatever --sync says) and on one with --sync=false: rounds of four 3-s phases, the kinds' order alternating by round: 4
//     closed-loop clients writing fresh partitions (INSERT, and INSERT ... IF NOT EXISTS at
//     SERIAL), then 8 clients on one partition (INSERT of rows of one partition, and UPDATE ...
//     IF v = ? on one row with the value each client last saw). Per phase the p50 and p99 of
//     the statements answered and the servers' CPU per statement (idle subtracted); the
//     headline lwt_over_quorum_write_latency and lwt_over_quorum_write_cpu are the medians of
//     the rounds' uncontended ratios, the contended ones beside them.
//  8. lwtlimit: LWTs (INSERT ... IF NOT EXISTS) on one partition of a table whose
//     per_partition_rate_limit is 50 writes/s, offered 500/s open loop for 32 s: the statements
//     the limiter admitted (answered, or timed out in their rounds), by the second they
//     started, their mean from the second second to the last whole one over the limit; and the
//     nodes' kvnode_coordinator_lwt_total and kvnode_replica_paxos_prepares_total before and
//     after: every rejection counted, no more rounds than admitted statements and their
//     contended retries (a tenth of the rejections at most beyond), promises and rejected
//     prepares no more than the replication factor per round; then the same for 12 s on an
//     RF=1 table through a node that does not own the partition (the replica decides).
//  9. counterlimit: increments (+1) of one counter partition of a table whose
//     per_partition_rate_limit is 50 writes/s, offered 500/s open loop for 32 s through the
//     three coordinators in turn (one gocql session held to each node), on 3 nodes with RF=3
//     (every coordinator a replica that decides) and then as long with RF=2 (one coordinator
//     not a replica, for which the partition's leader decides: this cluster runs without
//     --coordinator-learning, so that coordinator never rejects on its own): the increments
//     answered OK by the second they started, their mean from the second second to the last
//     whole one over the limit, and the counter read at ALL at the end, which must lie between
//     the OK count and the OK count plus the increments whose outcome is unknown (timed out or
//     failed otherwise): a rate-limited increment is never applied, an applied one never
//     answered rate limited.
//  10. replicated: the server CPU of an RF-3 QUORUM write over an RF-1 write at ONE
//     (replicated_write_cost_ratio), on one 3-node cluster (--sync=false), one gocql token-aware
//     session per table, 32 closed-loop workers over 1,000 partitions: rounds of a 2-s phase of
//     each, their order alternating, CPU summed over the three servers; the median of the
//     rounds' ratios, and the RF-3 QUORUM writes/s. With --parent-kvnode, a 3-node cluster of
//     that binary takes its phases in the same rounds (the binaries' order rotating), and the
//     median of the rounds' RF-3 throughput ratios is rf3_quorum_throughput_over_parent.
//  11. stream: bootstrap streaming against a local rewrite (stream_over_local_rewrite): per
//     round, one node (RF 1, --sync=false) loaded with --stream-mib MiB (64 by default) of
//     1,000-byte rows, a second node joining it (--sync=true) with --stream-throughput at 1 TiB/s
//     (off), taking sstables of merge operands that it checks and ingests per span, its stream
//     timed from its log (from "bootstrapping" to "bootstrap streamed", less its 10-ms write
//     timeout, the wait for writes in flight); then, both stopped, a copy (cp -r, timed for
//     information) of the first node's pebble directory opened read-only, the joiner's span
//     iterated as a sender does (replica.Store.ScanTokens) and written as sstables of merge
//     operands, one per key span, each synced. MiB are key and value bytes on both sides; the
//     headline is the median of the rounds' ratios of MiB/s.
//  12. scaling: write and read throughput, p99 and server CPU on one node (RF 1) and on three
//     (RF 1 at ONE, RF 3 at QUORUM), --sync=false, gocql token-aware, 32 closed-loop workers over
//     1,000 partitions written first: rounds of a 2-s write and a 2-s read phase (a whole
//     partition) per table, their order alternating; ops/s per server core (server CPU from
//     /proc), min, median and max over rounds.
//  13. bigread: per --size, one node (RF 1, --sync=false) stopped after its DDL, loaded by
//     ingestion (replica.BulkLoader: sstables of merge operands, written in storage order and
//     ingested into the closed store) with rows of 1,000 bytes, 16 to a partition, restarted on
//     the loaded directory; then point reads of random rows (CL ONE, gocql token-aware) at
//     1,000/s open loop, rounds of 5 s: p50, p99 and server CPU per read. The data is removed
//     after each size.
//  14. memory: one node's resident set (/proc) and Go heap (its /metrics) with its table
//     empty, then loaded likewise with --memory-partitions partitions (10M) of one row of 16
//     bytes: idle after its restart, and after 5 s of point reads at 1,000/s.
//  15. repair: a node missing 1 % of its rows repaired: two nodes (RF 2, --sync=false, the
//     automatic repair off, the stream throttle off) loaded with --repair-mib MiB (64 by default)
//     of the stream part's rows at QUORUM; the second stopped (SIGTERM), every 100th partition in
//     token order deleted from its store (their key and value bytes counted), started again and
//     repaired through the Repair service as `kvnode repair` calls it: repair_s, repair_s_per_gib,
//     and streamed_mib (the repair's bytes_streamed) over missing_mib (moved_over_missing).
//
// Every run ends with the issues' "done when" targets against what it measured (Result.Targets).
//
// The load generator is tool/bench (and gocql directly where a path needs a fixed
// coordinator), run in this process: it shares the machine's CPUs with the servers, and the
// report shows how much of them it used in each phase. Server CPU is read from
// /proc/<pid>/task/<tid>/schedstat (nanoseconds) and cross-checked with utime+stime from
// /proc/<pid>/stat, so this program runs on Linux only.
//
// docs/performance.md states the current figures, what they mean and how noisy they are; a
// run's JSON (--save) records the machine, date and load it ran with.
package main
