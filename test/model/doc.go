// Package model is kvnode's model-checked workload: seeded random histories of INSERT, UPDATE,
// DELETE (cells, a row, a clustering range, a partition) and SELECT (a row, a partition, a
// clustering range, LIMIT, ORDER BY, IN over 2 or 3 partitions: their rows in token order,
// each partition's checked as a read of it alone), with and without USING TIMESTAMP, sent through random
// coordinators at random consistency levels (ONE, QUORUM, ALL; reads also SERIAL and
// LOCAL_SERIAL, which read at QUORUM after a Paxos prepare), over every table shape (no
// clustering column, one or two, ascending or descending, composite partition keys) and every
// column type, and checked against a reference model: last-write-wins over the same history,
// with package cell's rules for ties.
//
// What a read must return. Each row is a marker (written by INSERT) and one cell per regular
// column; row, range and partition deletions are tombstones of every component they cover. For
// a read at consistency R, a write acknowledged at W with W + R > RF is definite: the read must
// see it. The definite writes reconcile to one version per component; the read may also see
// any write that is not definite (acknowledged at a weaker level, or failed) if it wins over
// that version, and nothing else. So a read never returns a value nobody wrote, never misses an
// acknowledged write when W + R > RF, and never resurrects a row a definite deletion covers.
// A write refused as unavailable was never sent, so it must never appear; any other failure may
// or may not have been applied. A failure the server did not answer (the client gave up) may
// carry a timestamp later than the model knows, and may win over any server timestamp.
//
// Timestamps. Operations run one at a time, so the server-assigned timestamp of each lies in the
// wall-clock interval around it, and those intervals are disjoint and ordered (the coordinator
// assigns max(now, last+1) in microseconds): the model orders server timestamps by the time each
// operation was sent. Explicit USING TIMESTAMP values are either tiny (100 to 1200, with ties on
// purpose) or 50 minutes past the history's start (servers refuse timestamps too far ahead of
// their clock; a history lasts minutes), so their order against every server timestamp is certain. A third of the
// tables take USING TIMESTAMP on every write, so that last-write-wins order differs from history
// order and ties between different values are frequent.
//
// Expiring data. A quarter of the INSERTs and UPDATEs with a server timestamp carry USING TTL of
// 1 to 3 seconds, so cells and row markers expire within a history. An expired write is a
// tombstone at its timestamp; within the clocks' skew around its expiry (ttlSkew, plus the
// request's own interval, in which the coordinator set the expiry) it is indeterminate: a read
// may see it or not. The final reads at ALL, after the stopped node came back with its hints,
// check that expired data never reappears.
//
// Non-frozen collections. Four tables in five have a set<int>, map<int, int>, list<int> or
// non-frozen user type column, which INSERTs assign, UPDATEs assign, add to, remove from, append
// and prepend to, and set elements or fields of (m[k] = v, u.f = v), DELETEs delete whole or by
// element, and SELECTs read; the model takes each element (a list's by its cell path, a user
// type's field) as a component of its own, last-write-wins element by element, an assignment
// being a collection tombstone at its timestamp − 1 then its elements, and checks a list's order
// (see collection.go). User type values are read only through the Executor: the gRPC API
// refuses them.
//
// Static columns. Half the tables with clustering columns have a static column s int, which
// INSERTs and UPDATEs of a row may set, and UPDATEs and DELETEs naming the partition key alone
// set or delete; it is one component per partition that row and range deletions leave, and a
// whole-partition read of a partition with static values and no row returns one row of them.
//
// Counters. Each keyspace has a counter table, whose UPDATEs increment one or two counters by 0
// to 9 and whose reads are checked by bounds, not by a value (counter.go, checkCounters): a
// counter lies between the sum of the increments acknowledged at a level W with W + R > RF and
// the sum of all those that may have been applied. Counter tables take no USING TIMESTAMP, TTL,
// SERIAL read, BATCH with other writes, TRUNCATE or dropped column.
//
// A range DELETE may be a true range tombstone or row tombstones for the rows the server found;
// the model's answer does not depend on which (see component).
//
// The workload uses CLUSTERING ORDER BY and SELECT ... ORDER BY only when package cql parses
// them (ProbeFeatures); the test logs which are off.
//
// Concurrency. Operations run on -model.workers workers (4 by default); each partition belongs
// to one worker, which runs its operations one at a time in history order, so the model's
// reasoning holds per partition while the cluster serves several at once.
//
// Running it. `go test ./test/model/` runs two histories of 3000 operations, each against a new
// in-process cluster of 3 to 5 nodes with one node stopped for a quarter of the history and
// restarted, then reads every partition at ALL through every node (about 10 s). A failure prints the seed, the failing read and the history of its
// partition with every outcome, then shrinks it by replay (-model.shrink bounds the time spent);
// -model.seed N -model.histories 1 replays that history (the operations are a
// function of the seed alone; outcomes depend on the cluster). -model.ops sets the history's
// length, -model.histories their number, and -model.duration D runs histories with successive seeds until D has passed, then
// logs how many operations ran clean (run with -v to see it). test/e2e runs the same workload
// against real kvnode processes, with nodes SIGKILLed and restarted between phases.
//
// The package also holds focused regression tests for bugs the model found or was built for.
package model
