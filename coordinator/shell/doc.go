// Package shell is the coordinator's shell: it drives the pure core (package coordinator) over
// the network and owns everything of the coordinator that touches the world.
//
// It owns the Executor, whose Execute is the domain API every front end adapts; the goroutines,
// timers and clock reads that drive a coordinator.Request (drive.go); the replica transport
// interfaces and the translation between domain values and the internode protocol (replicapb:
// mutations, reads, error codes; pages.go converts replica answers to coordinator.Page for the
// core's Merger and its RepairSets to mutations); fetching a read's pages and read repair
// (read.go, repair.go); DDL hand-off (ddl.go); write timestamps (timestamp.go); and the
// propagation ticker (propagate.go), which drains a coordinator.Batcher every
// coordinator.DefaultPropagationInterval, and at once for deltas a step marks Urgent. It may import the core, the domain packages (schema,
// cql, cell, partitioner, partitionlimit) and proto/replicapb; it must not import the client
// API's wire form (kvnodepb) or any front end: it speaks domain types (coordinator.Statement,
// coordinator.Result, the core's errors) upwards.
//
// Executor (executor.go, drive.go, write.go, read.go, repair.go, ddl.go) executes one client
// statement on a node. Its Execute is the domain API that every front end adapts (the core's
// result.go): a coordinator.Statement (text, keyspace, consistency) in, a typed Result (void,
// rows with schema-typed columns and canonical values, set keyspace, schema change,
// description; warnings) or a typed error out. The package knows nothing of the client API's
// wire form: frontend/grpcapi serves Execute as the gRPC service kvnodepb.KVNode, and nothing
// here imports kvnodepb. Ops are schema.Op (coordinator.Op is an alias), converted to the
// internode enum only where replica requests are built. For each statement the Executor parses
// it (one statement per request), then:
//
//   - Schema statements go to SchemaManager.ApplyDDL, which agrees on them with the cluster
//     and checks them against the agreed schema (its statement errors are the client's,
//     *InvalidError). USE checks the keyspace and returns it; DESCRIBE renders from the
//     schema, DESCRIBE CLUSTER from the ClusterDescriber.
//   - INSERT, UPDATE, DELETE and SELECT are prepared against the schema (package schema), the
//     partition key's token computed (package partitioner, Cassandra's Murmur3), the replicas
//     looked up in the Ring, and a core Request driven: Start; the local check, synchronously,
//     on Config.Local; then one goroutine per Send, answers fed back through a channel with room
//     for all of them, and a timer that ticks the request at its deadline. The limiter draw r
//     comes from Config.Draw (rand.Float64 by default) and is drawn only for limited operations.
//     A rejection by the coordinator costs the local check: no replica is contacted, no
//     goroutine started, and the mutation is never built.
//
// Prepared statements, values, paging and batches (prepare.go, paging.go, batch.go): Prepare
// parses and validates a statement once and describes its bind markers and result columns,
// under an ID (coordinator.PreparedID, the MD5 of keyspace and text) that every node computes
// alike; Execute runs a prepared statement without parsing it again but binds it against the
// current schema every time, so DROP, CREATE and ALTER are seen. Statement.Values bind the
// markers (schema.BindWrite and BindRead check each against its column's type). A SELECT with
// a PageSize reads one row more than the page to know whether another follows, and its paging
// state holds the clustering key of the page's last row (the replicas resume after it, in the
// read's order), the rows returned so far (LIMIT counts across pages) and a fingerprint of the
// statement and its values. A BATCH (BEGIN BATCH text, or ExecuteBatch for the protocol's
// message) gets one timestamp, and its writes to one partition go as one mutation, which the
// limiter counts once; partitions are written one after the other. A LOGGED batch across
// partitions is first stored in the batchlog of up to two other live nodes (Config.Batchlog),
// which replay it should this coordinator fail part way (ReplayBatch). USING
// TIMEOUT replaces the configured timeout of its statement. Config.System serves the computed
// system tables before the schema's tables are consulted.
//
// Write timestamps are assigned by the coordinator in microseconds: max(now, last+1), so they
// strictly increase per coordinator even when the clock stands still or steps back. USING
// TIMESTAMP overrides them, up to Options.MaxTimestampAhead (default 1 h) ahead of the clock:
// a cell written further ahead would shadow every later write and DELETE of it, so such a
// write is an *InvalidError before any replica is contacted. Timeouts default to 2 s for writes
// and 5 s for reads; a client deadline that ends sooner wins, and a deadline reached without the
// consistency level is a *TimeoutError saying how many replicas answered.
//
// A write is sent to every live replica and answered at the consistency level, but the calls to
// the replicas that have not answered yet are not canceled: canceling would leave them without
// the write (a write at ONE would usually reach one replica). They go on, detached from the
// client's context, until the replica answers or the write timeout passes; Executor.Close
// cancels them. Read calls are canceled as soon as the read has its answers.
//
// A DELETE of a range of rows (= on a prefix of the clustering columns, then optionally a range
// on the next one) writes one range tombstone, at the requested consistency level and limited
// like any write: it needs no read, works with replicas down as any write does, and deletes the
// rows in the range written at or before its timestamp, including those that arrive later with
// an older USING TIMESTAMP.
//
// # Reads and read repair
//
// Replicas return what they hold with write timestamps: cells, cell tombstones, row markers, row
// tombstones, the partition tombstone and the range tombstones over the rows they scanned. The
// shell asks for every column (whether a row exists can depend on a column the statement does
// not select) and hands the answers to the core's coordinator.Merger, which reconciles them row
// by row with cell.MergeRows, the newest partition tombstone and the newest range tombstone over
// the row, and computes for each answering replica with cell.Missing what it lacks of the
// reconciled rows, and which range tombstones and partition tombstone it lacks. The shell
// renders the live rows in the read's order as typed values.
//
// After a read at QUORUM or ALL that found stale replicas, the shell sends each of them what it
// lacks, exempt from the limiter (mode NONE), through a write Request at ALL over the stale
// replicas, and waits for every acknowledgement, up to the read's deadline, before answering.
// This makes QUORUM reads monotonic: every replica that took part in a read holds its result
// afterwards, and any later QUORUM read overlaps them. A read whose repairs do not all succeed
// fails, as in Cassandra, with a *TimeoutError (or *FailureError) whose Received counts the
// replicas known to hold the result. Reads at ONE compare nothing and repair nothing. Only the
// replicas that answered are repaired; the others converge through later reads.
//
// Replicas answer in pages of at most Options.ReadPageBytes (1 MiB; a page holds at least one
// row) and at most the LIMIT's live rows by their own view, and say where they stopped. The
// merge never passes the point where a replica stopped (the replica may hold newer tombstones
// for what follows): when it gets there and still needs rows, it asks that replica for the
// next page, exempt from the limiter (the user operation was counted once), and goes on until
// it has the LIMIT or every replica reached the end of the range. So a partition of any size
// reads at every consistency level, and replicas that disagree about deletions (a short read)
// are asked for more. Each replica fails a read that scans more tombstones than its threshold
// (replica.Options.TombstoneFailureThreshold, over all the read's pages) with
// TOO_MANY_TOMBSTONES; a read whose replicas scanned more than Options.TombstoneWarnThreshold
// answers with a warning.
//
// # Slow and silent replicas
//
// A replica the failure detector calls live may still not answer: a paused process, one behind
// a partition only some nodes see. Reads at ONE and QUORUM route around it in two ways. The
// table's speculative_retry (schema.SpeculativeRetry) sets the read's Params.Speculation: with
// a percentile ('99p', the default) or a fixed delay ('50ms') a timer calls Request.Speculate
// once the read has waited that long, and the core asks a spare replica; 'ALWAYS' asks one more
// replica from the start; 'NONE' never speculates. A percentile's delay comes from a histogram
// of the table's replica read latencies over the last 30 to 60 s (latency.go; every table's
// while the table has too few samples, 50 ms while the node has too few), at least 1 ms and
// at most half the read's time left. And each coordinator keeps a score per replica (score.go,
// like Cassandra's dynamic snitch): the moving average of its answers' latencies, weighed by
// its calls in flight, plus a penalty for each failure and each read that ended without its
// answer, halving every second. Reads prefer the replicas whose score is not far worse than the
// best one's, in the default order (itself first, then ring order), so a silent replica is no
// longer asked first after its first miss, and is asked again once its penalty has decayed.
// Speculative reads are counted by the limiter once per replica, like any other
// (coordinator.Speculation), and reported to the Observer.
//
// # Service levels' and keyspaces' budgets
//
// Config.Budgets, when set, lists the budgets each statement is held by (scopelimit.Budget: its
// client's service level, the shared levels up its role graph, its keyspace's rate_limit, most
// specific first). After node admission (the front ends') and before any partition's limit, the
// statement is judged on the executor's scopelimit.Limiter, one unit per partition it touches
// (each partition of a BATCH, one per read page): each unit goes down the chain, each budget
// counting it and deciding with its own draw from the request's one seed, until a budget refuses;
// the first refusal rejects the statement with a *RateLimitError naming the scope (the units
// before it stay counted, the refused one by the budgets up to the refuser). A budget in shadow
// mode counts a would-reject and warns instead. Every DefaultScopeInterval the executor sends its
// own counts to every live peer (ScopeSender, an internode scope_counts request), which adds them
// on its own clock (ScopeCounts), so that every coordinator's counter holds the cluster's load;
// a starting node fills its counters from a peer (SyncScopes). ScopeCollector exports the
// budgets' metrics, and ClusterTopClients says who spends them across the cluster
// (system.top_clients): this coordinator's tracked spenders and every live peer's, asked over
// internode (a ScopeSender that is also a TopClientsSender; peers serve the top_clients kind
// with TopClients), merged by coordinator.MergeTopClients.
//
// # Errors
//
// Execute returns the core's errors: *InvalidError (syntax, with the parser's line:col; validation, naming what
// and where, with the position of an unknown keyspace or table name), *RateLimitError,
// *UnavailableError, *TimeoutError, *FailureError (wrapping a *ReplicaError or a transport
// error; FailureError.Reason classifies it), the context's error, or coordinator.ErrClosed. Each error carries
// every field a client needs and builds its own message, once: front ends send the message as it
// is with the fields as details (grpcapi.ErrorStatus).
//
// Config.Observer, when set, is told about every request (with its table), rate-limit
// rejection, read repair, speculative read, and operation whose enforcing replicas disagreed,
// for metrics.
package shell
