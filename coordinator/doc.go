// Package coordinator is the pure core of the coordinator: how a client operation against the
// replicas of a partition proceeds (consistency levels, the two rate-limiter paths, timeouts,
// the hand-off to read repair), in domain terms.
//
// # Core and shell
//
// The package owns one Request state machine per client operation (request.go), quorum
// arithmetic (quorum.go: BlockFor, Tally), outcomes and the domain errors a client sees
// (outcome.go, errors.go) with the one classification of them that every front end maps to its
// wire form (code.go: Code), the domain API's statement and result types (result.go), account
// propagation as a value (batcher.go: Batcher.Add, Batcher.Drain), and the reconciliation of a
// read's answers (reconcile.go: Merger over domain Pages, its live rows and each stale replica's
// RepairSet). It has no clock, no goroutines, no I/O and no RPC clients or wire types (no gRPC,
// no protobuf): TestPackageIsPure guards that. Time enters only as the now argument of Start and
// Tick; the random draw r enters as Params.Draw; messages leave as data (Step). It may import
// only the standard library's pure packages and the domain packages (schema, cql,
// partitionlimit, cell, and auth for its two errors).
//
// The shell, package coordinator/shell, drives the core over the network: the Executor (the
// domain API front ends adapt), schema resolution, the token, the ring, the draw, write
// timestamps, the replica transport and the conversion of replica answers to Pages and of
// RepairSets to mutations, timers, and the propagation ticker. test/sim drives the very same Request and Batcher under virtual time.
//
// Driving one request:
//
//	req, err := coordinator.NewRequest(params)
//	step := req.Start(now)
//	if step.LocalCheck {
//		// Account on the coordinator's own counter and decide with params.Limit and params.Draw.
//		step = req.OnLocalCheck(coordinator.CheckResult{Admitted: ok, Count: n, RetryAfter: d})
//	}
//	// Send each of step.Sends; feed every answer back with req.OnResponse, copying Seq and To;
//	// call req.Tick(now) as time passes. The step that carries an Outcome ends the request
//	// (req.Done, req.Outcome and req.Unaccounted report it afterwards too):
//	// step.Outcome.Err(keyspace, table) is the client's error, nil on success.
//
// # The limiter paths
//
// An operation is limited when the table has a limit for its op (Params.Limit > 0) and it is not
// exempt (Params.Exempt). Unlimited and exempt operations are sent with ModeNone everywhere.
//
// When the coordinator is itself a replica of the token (Params.Self is in Params.Replicas), a
// limited operation starts with a local check: Start returns Step.LocalCheck and the driver
// accounts the operation on the coordinator's own counter and decides it (no storage), then calls
// OnLocalCheck. A rejection ends the request with RateLimited{RejectedBy: RejectedByCoordinator}
// and no replica is contacted. An admission sends the operation to the targets: the coordinator
// itself with ModeNone, since its counter already counted the operation, and the others with
// ModeAccountOnly (they count and never reject).
//
// Otherwise the operation goes to the targets with ModeAccountAndEnforce and the draw, and every
// replica decides on its own counter. Answers are tallied (Tally.Result): the request succeeds
// once the consistency level's number of replicas said OK, however many rejected; it ends with
// RateLimited{RejectedBy: RejectedByReplicas} as soon as rejections alone make that number
// unreachable (RF=3 QUORUM: one rejection and two OKs succeed, a second rejection ends the
// request at once), and with Failed when failures, possibly together with rejections, do. The
// retry hint and count of a replica rejection are the largest among the rejecting replicas: the
// operation needs a quorum of them to admit it again.
//
// A coordinator outside the replica set learns from the replicas' rejections which partitions
// are hot: once the replicas rejected an operation, Request.Learn reports the smallest rejecting
// counter (and its onset birth) for the shell to keep in a small partitionlimit.Table of learned
// copies, LearnedLead ahead of its clock (LearnedTime, Learned.Copy). While a copy lives the
// shell sets Params.Learned, and the operation takes a local check on the copy with the same
// rule and draw: a rejection ends the request with RejectedByCoordinator without contacting
// anyone (every replica is Unaccounted, so propagation counts it for them all), an admission
// sends to the replicas with ModeAccountAndEnforce as before. The copy is at most the replicas'
// counter, so the coordinator rejects only what every replica would reject.
//
// In shadow mode (schema.Shadow) the local check and the replicas admit what they would reject
// and say so (CheckResult.WouldReject, Response.WouldReject); the request's Success then has
// WouldReject set and Success.Warning words it for the client.
//
// # Targets
//
// Writes go to every live replica and succeed on BlockFor acks. Reads at ALL go to every replica;
// reads at ONE and QUORUM go to BlockFor live replicas, preferring Params.ReadOrder, then the
// coordinator itself, then ring order. A contacted replica that fails (a read at ONE or QUORUM)
// is replaced by the next live replica not yet asked, in the same order, so a read stays available
// when a replica dies before the failure detector notices (failure-driven retry). Speculative
// retry (Params.Speculation) asks a spare replica when one is merely slow or silent (paused, cut
// off) while still called live: with SpeculateDelayed the driver calls Request.Speculate once
// the table's delay has passed, and the read goes to the next live replica not yet asked, in
// the same order, once per answer still missing; SpeculateAlways asks one more replica than the
// level needs from the start. The first answers that reach the level win. A speculative read is
// sent in the limiter mode of the request's path, like the other replicas' (account-only on the
// coordinator-local path, account-and-enforce with the same draw on the replicas path), and the
// replica it goes to is no longer Unaccounted: the limiter counts the read once per replica,
// never twice. Digest reads are not implemented: every contacted replica returns data.
//
// # Account propagation
//
// Replicas that do not see an operation do not count it: the others when the coordinator rejects
// locally, the replicas a read at ONE or QUORUM skips, and down replicas. The step that ends a
// limited request lists them in Step.Unaccounted (and Request.Unaccounted). The shell adds them
// to a Batcher (batcher.go), and its ticker (coordinator/shell, propagate.go) drains it every
// shell.Options.PropagationInterval (20 ms) and sends each live replica one AccountDelta batch of
// coalesced (table, token, op, count) deltas, which the replica counts and never rejects. Every counter then measures the partition's whole load, so coordinators
// spread over the replicas hold it near its limit instead of up to RF × limit. Deltas are best
// effort: a lost batch only leaves a counter a little low. While the coordinator's own counter
// is in its onset's first second and counts faster than the limit, the step also carries
// Step.Urgent and the shell drains at once: until the deltas arrive each replica would judge the
// young partition on its own share of the operations (docs/accuracy.md, the onset).
//
// # Read repair
//
// The Request never interprets row data: a read's Success carries every OK Response with its
// replica and opaque Payload. The shell converts each payload to a Page and adds it to a Merger
// (reconcile.go), which merges the replicas' rows in the read's order (the clustering order, or
// its reverse for a reversed read) with the last-write-wins rules of package cell, the newest
// partition tombstone and the newest range tombstone over each row. It never passes the point
// where a replica stopped early (Page.StoppedAfter, or its limit's last row): Merge then returns
// the NextPage each such replica must send, which the shell fetches and adds, until the merge
// has the limit or every answer is used up. Result gives the live rows and, per stale replica,
// what it lacks (cell.Missing): rows, range tombstones over rows it scanned, the partition
// tombstone. The merger checks every answer (key encodings, cells, order, pages that follow
// the previous one) and names the replica and table of what was wrong. The shell writes the
// repair sets back as exempt write Requests with Replicas set to the stale replicas and
// Consistency ALL.
package coordinator
