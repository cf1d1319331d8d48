// Package sim is a deterministic discrete-event simulator of a kvnode cluster, built to measure
// how closely the per-partition rate limiter holds a hot partition to its limit L across
// replication factors, consistency levels, driver routings, clock skew and failures. Its report
// (cmd/simreport) for the default flags is committed as results/accuracy.md, which
// docs/accuracy.md reads; TestReport keeps both true (-update regenerates them).
//
// # What is real and what is modelled
//
// Every admission decision is made by the production code: each node owns a real
// partitionlimit.Table (accounting, halving, eviction, Admit), and every client operation is a
// real coordinator.Request state machine (the two limiter paths, targets, consistency levels,
// tally, timeouts). The simulator only carries out what the state machine asks for:
//
//   - Step.LocalCheck: Table.Decide on the coordinator's own table at the coordinator's local time.
//   - Each Send becomes a message that reaches its replica after a sampled network latency; the
//     replica decides with the replica's own decision, partitionlimit's Table.ApplyAt, on its own
//     table with the Send's mode and draw (account-and-enforce: Decide; account-only: Account;
//     none: nothing), at the Send's stamp bounded against its own clock (its own clock for an
//     unstamped Send) and with its own clock for the age of a young counter, and answers with a
//     Response after another sampled latency. A node's messages to itself take no time.
//   - Tick at the request's deadline when some message was lost.
//   - With Scenario.Propagation, the finishing Step's Unaccounted replicas are owed account-only
//     deltas in the coordinator's own Batcher, as the shell's propagator collects them:
//     coalesced per (partition, op) per coordinator, drained every Options.PropagationInterval
//     (20 ms, the shell's default) to each replica the failure detector considers live, and
//     added by the replica with Table.AccountNAt at the batch's stamp, bounded as above.
//
// Modelled, not real: the network (latency MinLatency + Exp(MeanExtraLatency) per hop, lost
// messages to crashed nodes), storage (a replica "performs" an operation instantly), the ring
// (the hot partition's replicas are nodes 0 … RF−1; a cold partition's are RF consecutive nodes
// from a position its token picks), the failure detector (a crashed node is marked down after
// Options.DetectAfter; drivers stop using it at once), and the driver (Routing). There is no pebble, no gRPC and no goroutine
// inside a run.
//
// # Time and clocks
//
// Simulated time is an int64 count of nanoseconds; the event queue is a binary heap ordered by
// (time, sequence number of scheduling), so simultaneous events run in the order they were
// scheduled. Node i's wall clock reads epoch + t + offset_i, where epoch is a whole unix second
// and offset_i is the scenario's skew s times a fixed pattern −1, 0, +½, +1, −½ over nodes
// 0 … 4 (repeating). The hot partition's replicas 0, 1, 2 therefore run at −s, 0 and +s/2:
// their second boundaries, where counters halve, are s, s/2 and 3s/2 apart, which gives three
// distinct phases at s = 100 ms and at s = 500 ms (at 500 ms: a half, a quarter and
// three-quarters of a second). The pattern is deterministic rather than drawn so that a row
// means the same thing for every seed; it avoids putting two replicas at −s and +s, which at
// s = 500 ms would be a whole second apart and halve in step.
//
// # Workloads
//
// A scenario offers the hot partition V = Scenario.Offered · L operations per second, as Poisson
// arrivals (Options.Arrival; Smooth spaces them evenly), a Scenario.ReadFraction of them reads.
// Beside it, Options.ColdRate operations per second go to Options.ColdPartitions cold partitions
// picked uniformly, and a Flood scenario adds Options.FloodRate writes per second, each on a
// partition never seen before, which keeps the nodes' tables (Options.Capacity slots) full and
// evicting. Reads and writes have separate counters, each with limit L.
//
// Coordinators pass no Params.ReadOrder, as the coordinator shell does, so reads at ONE and
// QUORUM go to the coordinator itself if it is a replica, then to replicas in ring order: a
// coordinator outside the replica set reads from the first replicas. Options.SpreadReads makes
// outside coordinators shuffle ReadOrder per read instead, as a coordinator that balances reads
// over the replicas would.
//
// # Measurements
//
// Counters start empty, so the first Options.Warmup of each run is left out: only operations
// that arrive after it are measured, each followed to its end. A Result reports, for the hot
// partition, the accepted rate over L, the replica operations performed for operations that were
// rejected or failed in the end (wasted work) per accepted operation, and the fraction of
// operations decided by two or more enforcing replicas on which those replicas disagreed.
//
// # Determinism
//
// A run's only randomness is one math/rand/v2 PCG generator seeded with Options.Seed and a
// digest of the scenario, drawn in event order. No map is iterated and no goroutine runs inside
// a simulation, so Run(sc, o) always returns the same Result. RunAll runs independent scenarios
// on several goroutines; since each scenario has its own generator, its results do not depend on
// the number of workers or their scheduling.
package sim
