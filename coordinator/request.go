package coordinator

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/schema"
)

// NodeID names a node. The shell maps cluster node ids to it; the core only compares them.
type NodeID string

// Op is the kind of a user operation: the domain's one op type, schema.Op. The limiter keeps
// separate counters and limits per op (schema.Table.Limit). The zero Op is invalid.
type Op = schema.Op

// The ops.
const (
	OpRead  = schema.OpRead
	OpWrite = schema.OpWrite
)

// LimiterMode tells a replica what to do with its rate-limit counter for one operation; the
// replica carries it out with partitionlimit's Table.Apply.
type LimiterMode = partitionlimit.Mode

// The limiter modes a Send carries (see partitionlimit.Mode).
const (
	ModeNone              = partitionlimit.ModeNone
	ModeAccountOnly       = partitionlimit.ModeAccountOnly
	ModeAccountAndEnforce = partitionlimit.ModeAccountAndEnforce
)

// Replica is one replica of the request's token.
type Replica struct {
	ID NodeID
	// Down is true when the failure detector considers the node down. Down replicas are never
	// contacted. The coordinator itself (Params.Self) is always considered live.
	Down bool
	// DC is the replica's data center as the request numbers them: 0 for the coordinator's, and
	// 1 to MaxDataCenters-1 for the others, one number each. The LOCAL levels count the
	// replicas of DC 0 alone, EACH_QUORUM every data center's; and when DC 0 has replicas, the
	// others only account a limited operation and never reject it (they are not its decision
	// point).
	DC uint8
}

// MaxDataCenters bounds the data centers of one request's replicas.
const MaxDataCenters = 8

// Params describes one request. NewRequest copies what it keeps, so the caller may reuse the
// slices afterwards.
type Params struct {
	Op          Op
	Consistency Consistency
	// Self is the coordinator's own id. When Self is one of Replicas and the operation is limited,
	// the request takes the local-check path (see the package documentation). An empty Self, or
	// one that is not a replica, takes the account-and-enforce path.
	Self NodeID
	// Replicas is the replica set of the token in ring order; its length is the replication
	// factor. Ids must be non-empty and distinct.
	Replicas []Replica
	// PerDC says the keyspace places its replicas per data center (NetworkTopologyStrategy):
	// LOCAL_QUORUM is then a quorum of the local data center's replicas, and EACH_QUORUM is
	// allowed. Otherwise LOCAL_QUORUM needs a quorum of all the replicas, from the local data
	// center, as in Cassandra.
	PerDC bool
	// ReadOrder optionally overrides which replicas a read at ONE or QUORUM prefers: listed
	// replicas first, in this order, then the rest in the default order (Self first if it is a
	// replica, then ring order). Every entry must be a replica, at most once. Writes and reads at
	// ALL contact every live replica and ignore it.
	ReadOrder []NodeID
	// Speculation says whether a read at ONE or QUORUM may ask more replicas than the
	// consistency level needs before any of them failed (speculative retry; the table's
	// speculative_retry option): never (the zero value), once the driver calls Speculate, or
	// from the start. Writes and reads at ALL ignore it.
	Speculation Speculation
	// Limit is the table's per-partition limit for Op in operations per second; 0 means the table
	// has no limit for Op.
	Limit uint32
	// Exempt marks traffic the limiter never counts or rejects: read repair, hint replay, schema
	// and system tables, internal work.
	Exempt bool
	// Draw is the random number r in [0, 1) the shell (or the simulator) drew for this operation;
	// the core never draws. It is sent to every replica that enforces, so replicas whose counters
	// agree also agree on the decision. Ignored when the operation is not limited.
	Draw float64
	// Stamp is the coordinator's clock reading for the operation, which the shell (or the
	// simulator) takes once: every replica that counts the operation accounts it at this time
	// (bounded against its own clock), so the counters that decide it halve at the
	// coordinator's second boundaries, not at each replica's (docs/architecture.md, the limiter). The zero time sends
	// no stamp: replicas account on their own clocks. Ignored when the operation is not
	// limited.
	Stamp time.Time
	// Deadline is when the request times out if the consistency level has not been reached; the
	// zero time means no deadline. Time enters only through Start and Tick.
	Deadline time.Time
	// Learned says the coordinator, which is not a replica of the partition, has learned from
	// replicas' rejections that the partition is hot (Request.Learn; the shell keeps what it
	// learned). The limited operation then takes a local check too, on the coordinator's
	// learned copy of the replicas' counter with the same rule and draw: a rejection ends the
	// request as rejected by the coordinator without contacting any replica (every replica is
	// then Unaccounted, so propagation counts it for them), and an admission sends the
	// operation to the replicas with account-and-enforce as if there had been no check. It is
	// ignored when Self is a replica.
	Learned bool
}

// Speculation is when a read at ONE or QUORUM asks a replica beyond the ones its consistency
// level needs while those have not failed: speculative retry, which keeps a read from waiting
// out a replica that is slow or silent (paused, cut off) while the failure detector still
// calls it live. A speculative read goes to the next live replica not yet asked, in the order
// failure-driven retry uses (Params.ReadOrder, then Self, then ring order), and is sent in the
// limiter mode of the request's path, so the replica that gets it counts the operation once,
// as the others do, and is not Unaccounted (propagation does not count it for that replica
// again). The first answers that reach the level decide the request; later ones are ignored.
type Speculation uint8

// The speculations.
const (
	// SpeculateNever: only a failure sends the read to another replica (the table's
	// speculative_retry = 'NONE'). Speculate is a no-op.
	SpeculateNever Speculation = iota
	// SpeculateDelayed: the driver calls Speculate once the table's speculative delay (a
	// percentile of its replicas' read latency, or a fixed time) has passed without the
	// answers the level needs.
	SpeculateDelayed
	// SpeculateAlways: the read goes to one more live replica than the level needs from the
	// start (speculative_retry = 'ALWAYS'). Speculate is a no-op.
	SpeculateAlways
)

// String returns "never", "delayed" or "always".
func (s Speculation) String() string {
	switch s {
	case SpeculateNever:
		return "never"
	case SpeculateDelayed:
		return "delayed"
	case SpeculateAlways:
		return "always"
	}
	return fmt.Sprintf("Speculation(%d)", uint8(s))
}

// limited reports whether the operation is subject to the limiter at all.
func (p *Params) limited() bool { return p.Limit > 0 && !p.Exempt }

// Send asks the driver to send the operation to one replica. The driver answers it with exactly
// one Response carrying the same Seq and To (as From), or none if the replica never answers.
type Send struct {
	// Seq identifies this message within its request, from 1. Responses are matched on it.
	Seq  int
	To   NodeID
	Mode LimiterMode
	// Draw is the random number r for ModeAccountAndEnforce, and 0 for the other modes.
	Draw float64
	// Stamp is Params.Stamp for the counting modes, and the zero time for ModeNone.
	Stamp time.Time
}

// Status is a replica's answer to one Send.
type Status uint8

// The statuses. The zero Status is invalid; a response carrying it counts as a failure.
const (
	// StatusOK: the replica applied the write or returned the read's data.
	StatusOK Status = iota + 1
	// StatusRateLimited: the replica counted the operation and rejected it on its own counter.
	StatusRateLimited
	// StatusFailed: the replica failed to apply or read (Response.Err says why).
	StatusFailed
)

// String returns "ok", "rate-limited" or "failed".
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusRateLimited:
		return "rate-limited"
	case StatusFailed:
		return "failed"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Response is a replica's answer to a Send.
type Response struct {
	// Seq and From must match a Send of the request; a response that matches none, or answers a
	// Send already answered, is ignored.
	Seq    int
	From   NodeID
	Status Status
	// Count and RetryAfter come with StatusRateLimited: the replica's counter after the
	// increment, and when it will have decayed back under twice the limit. Born is the
	// counter's birth while it is in its onset (partitionlimit.Decision.Born), else zero,
	// and Residual the part of Count that predates the birth (Decision.Residual).
	Count      uint32
	RetryAfter time.Duration
	Born       time.Time
	Residual   uint32
	// WouldReject may come with StatusOK: the table's limit is in shadow mode and the
	// replica, deciding in account-and-enforce mode, would have rejected the operation.
	WouldReject bool
	// Err comes with StatusFailed.
	Err error
	// Payload is the read's data with StatusOK. The core never looks inside; it hands the
	// payloads back in Success.Responses for the shell to reconcile.
	Payload any
}

// CheckResult is the coordinator's local limiter decision, fed back through OnLocalCheck.
type CheckResult struct {
	Admitted bool
	// Count is the coordinator's counter after the increment.
	Count uint32
	// RetryAfter is the retry hint when the operation was rejected.
	RetryAfter time.Duration
	// WouldReject comes with Admitted when the table's limit is in shadow mode and the check
	// would have rejected the operation in enforce mode.
	WouldReject bool
	// Born is the counter's birth while it is in its onset (partitionlimit.Decision.Born),
	// else zero: with Count it tells whether the operation's deltas are urgent (Step.Urgent).
	Born time.Time
}

// Step is what one input to a Request asks the driver to do.
type Step struct {
	// LocalCheck asks the driver to account the operation on the coordinator's own counter and
	// decide it with Params.Limit and Params.Draw (no storage access), then call OnLocalCheck
	// with the decision before anything else.
	LocalCheck bool
	// Sends are the messages to send to replicas.
	Sends []Send
	// Outcome is non-nil in the one step that finishes the request.
	Outcome Outcome
	// Unaccounted comes with the Outcome of a limited operation: the replicas, in ring order,
	// whose limiter counter did not count this operation because it was never sent to them (the
	// coordinator rejected it locally, or a read contacted fewer than all replicas, or the
	// replica was down). A future account-propagation batcher sends them account-only deltas.
	// It is nil for unlimited and exempt operations and for requests that reached no counter at
	// all (unavailable, or past the deadline at Start).
	Unaccounted []NodeID
	// Urgent comes with a non-empty Unaccounted when the coordinator's own counter is in its
	// onset's first second, at most twice the limit (where the onset's guards may judge a
	// count as it is), and counts faster than the limit (partitionlimit.Outpaces): the
	// driver sends the deltas within UrgentPropagationDelay instead of at its next tick, since
	// until they arrive each replica judges the young partition on its own share of the
	// operations and admits all of it while that share is at most the limit.
	Urgent bool
}

// UrgentPropagationDelay is the longest a driver holds deltas a Step marked Urgent before
// draining its Batcher; the shell drains at once, the simulator after this delay.
const UrgentPropagationDelay = time.Millisecond

type phase uint8

const (
	phaseNew      phase = iota // Start not called yet
	phaseChecking              // waiting for OnLocalCheck
	phaseWaiting               // waiting for responses
	phaseDone                  // finished: every input is a no-op
)

// Request is the state machine of one client operation. It has no clock, no goroutines and no
// I/O: the driver calls Start, then OnLocalCheck (if asked), OnResponse for each replica answer
// and Tick as time passes, and carries out the Steps they return, until a Step carries the
// Outcome. After that every input is a no-op returning an empty Step. A Request is not safe for
// concurrent use; the driver serialises the inputs of one request.
type Request struct {
	p             Params
	required      int // the sum of the groups'
	groups        [MaxDataCenters]group
	ngroups       int
	hasLocal      bool // a replica is in the coordinator's data center (Replica.DC 0)
	selfIsReplica bool
	phase         phase
	checked       bool // the coordinator's own counter counted the operation
	learnedCheck  bool // the coordinator checked on its learned copy (Params.Learned)
	speculated    bool // Speculate sent what it could
	speculative   int  // how many Sends were speculative

	sent      []Send
	answered  []bool
	tally     Tally      // the counted replicas' answers: the groups' tallies added up
	responses []Response // OK responses of a read, in arrival order

	maxCount uint32        // largest counter among rejecting replicas
	maxRetry time.Duration // largest retry hint among rejecting replicas
	minCount uint32        // smallest counter among rejecting replicas
	minBorn  time.Time     // and its birth
	minResid uint32        // and its residual
	// Shadow mode: wouldReject is the local check's verdict that enforce mode would have
	// rejected the operation; wouldRejected and wouldAdmit count the replicas' OK answers that
	// say they would, and would not, have rejected it (see shadowRejects).
	wouldReject               bool
	wouldRejected, wouldAdmit int
	firstErr                  error // first failure

	outcome     Outcome
	unaccounted []NodeID
	urgent      bool
	localCount  uint32                 // the local check's counter (OnLocalCheck)
	localBorn   time.Time              // and its birth in its onset
	gapBuf      [inlineReplicas]NodeID // unaccounted's storage for up to inlineReplicas

	// Room for the replicas, sends and answers of a request to up to inlineReplicas replicas,
	// inside the request: one allocation per request instead of one per slice.
	replicaBuf  [inlineReplicas]Replica
	sentBuf     [inlineReplicas]Send
	answeredBuf [inlineReplicas]bool
}

// inlineReplicas is how many replicas a Request has room for without allocating: RF=3 and the
// replacement a failed replica's place may go to.
const inlineReplicas = 4

// Params returns the parameters the request was made with. The driver must not modify them
// (Replicas is shared with the request).
func (r *Request) Params() Params { return r.p }

// NewRequest validates p and returns a request ready to Start.
func NewRequest(p Params) (*Request, error) {
	r := new(Request)
	if err := r.Reset(p); err != nil {
		return nil, err
	}
	return r, nil
}

// Reset validates p and makes r a request ready to Start, as NewRequest does, in r's memory: a
// driver that pools requests resets one it is done with instead of allocating a new one. Nothing
// of r's previous request may be in use any more (its Step's slices included). After an error r
// is not ready to Start.
func (r *Request) Reset(p Params) error {
	if !p.Op.Valid() {
		return fmt.Errorf("coordinator: invalid request: invalid op %v", p.Op)
	}
	if !p.Consistency.Valid() {
		return fmt.Errorf("coordinator: invalid request: invalid consistency level %v", p.Consistency)
	}
	if len(p.Replicas) == 0 {
		return errors.New("coordinator: invalid request: no replicas")
	}
	*r = Request{p: p}
	r.p.Replicas = append(r.replicaBuf[:0:len(r.replicaBuf)], p.Replicas...)
	r.p.ReadOrder = slices.Clone(p.ReadOrder)
	for i, rep := range r.p.Replicas {
		if rep.ID == "" {
			return fmt.Errorf("coordinator: invalid request: replica %d has an empty id", i)
		}
		if r.replicaIndex(rep.ID) != i {
			return fmt.Errorf("coordinator: invalid request: replica %s is listed twice", rep.ID)
		}
		if rep.ID == p.Self {
			r.selfIsReplica = true
			r.p.Replicas[i].Down = false
		}
	}
	for i, id := range r.p.ReadOrder {
		if r.replicaIndex(id) < 0 {
			return fmt.Errorf("coordinator: invalid request: read order names %s, which is not a replica", id)
		}
		if slices.Index(r.p.ReadOrder, id) != i {
			return fmt.Errorf("coordinator: invalid request: read order names %s twice", id)
		}
	}
	if p.Speculation > SpeculateAlways {
		return fmt.Errorf("coordinator: invalid request: invalid speculation %v", p.Speculation)
	}
	if p.limited() && !(p.Draw >= 0 && p.Draw < 1) {
		return fmt.Errorf("coordinator: invalid request: draw %v is outside [0, 1)", p.Draw)
	}
	if p.Consistency == EachQuorum && !p.PerDC {
		return errors.New("coordinator: invalid request: EACH_QUORUM needs a keyspace placed per data center (NetworkTopologyStrategy)")
	}
	var size [MaxDataCenters]int
	for _, rep := range r.p.Replicas {
		if rep.DC >= MaxDataCenters {
			return fmt.Errorf("coordinator: invalid request: replica %s is in data center %d, the limit is %d", rep.ID, rep.DC, MaxDataCenters)
		}
		r.hasLocal = r.hasLocal || rep.DC == 0
		if g := r.groupOf(rep); g >= 0 {
			size[g]++
			r.ngroups = max(r.ngroups, g+1)
		}
	}
	switch cl := p.Consistency; {
	case cl == EachQuorum:
		for g := range r.ngroups {
			if size[g] > 0 {
				r.groups[g].required = BlockFor(cl, size[g])
			}
		}
	case cl == LocalQuorum && !p.PerDC:
		r.groups[0].required = BlockFor(cl, len(p.Replicas))
	default:
		r.groups[0].required = BlockFor(cl, size[0])
	}
	r.ngroups = max(r.ngroups, 1) // LOCAL levels with no local replica: group 0 needs one
	for g := range r.ngroups {
		r.required += r.groups[g].required
	}
	return nil
}

// group is the answers one data center owes a request (all the counted replicas', but for
// EACH_QUORUM).
type group struct {
	required int
	tally    Tally
}

// groupOf returns the group rep counts in for the request's consistency level: its data center
// for EACH_QUORUM, 0 for every other level but for a replica outside the coordinator's data
// center at a LOCAL level, which is not counted (-1).
func (r *Request) groupOf(rep Replica) int {
	switch {
	case r.p.Consistency == EachQuorum:
		return int(rep.DC)
	case r.p.Consistency.Local() && rep.DC != 0:
		return -1
	}
	return 0
}

// result combines the groups' tallies: reached when every group is; lost when one is; rejected
// when none is lost and rate-limit rejections alone put one out of reach.
func (r *Request) result() QuorumResult {
	res := QuorumReached
	for g := range r.ngroups {
		switch gr := &r.groups[g]; gr.tally.Result(gr.required) {
		case QuorumLost:
			return QuorumLost
		case QuorumRejected:
			res = QuorumRejected
		case QuorumPending:
			if res == QuorumReached {
				res = QuorumPending
			}
		}
	}
	return res
}

func (r *Request) replicaIndex(id NodeID) int {
	return slices.IndexFunc(r.p.Replicas, func(rep Replica) bool { return rep.ID == id })
}

// Start begins the request at time now. It finishes at once with Unavailable when fewer live
// replicas than the consistency level requires exist, and with Timeout when now is not before the
// deadline. Otherwise it asks for the local check (coordinator is a replica, operation limited) or
// returns the Sends. Calling Start again is a no-op.
func (r *Request) Start(now time.Time) Step {
	if r.phase != phaseNew {
		return Step{}
	}
	var live [MaxDataCenters]int
	total := 0
	for _, rep := range r.p.Replicas {
		if g := r.groupOf(rep); g >= 0 && !rep.Down {
			live[g]++
			total++
		}
	}
	for g := range r.ngroups {
		if live[g] < r.groups[g].required {
			if r.p.Consistency == EachQuorum { // group g is data center g: name it, with its counts
				return r.finish(Unavailable{Consistency: r.p.Consistency, Live: live[g], Required: r.groups[g].required, InDC: true, DC: uint8(g)})
			}
			return r.finish(Unavailable{Consistency: r.p.Consistency, Live: total, Required: r.required})
		}
	}
	if r.expired(now) {
		return r.finish(r.timeout())
	}
	if r.p.limited() && (r.selfIsReplica || r.p.Learned) {
		r.phase = phaseChecking
		return Step{LocalCheck: true}
	}
	return r.send()
}

// OnLocalCheck takes the coordinator's local limiter decision the previous Step asked for. A
// rejection finishes the request with RateLimited (rejected by the coordinator) without
// contacting any replica; an admission returns the Sends: the coordinator itself with ModeNone
// (its counter already counted the operation) and the other replicas with ModeAccountOnly.
// On a learned check (Params.Learned, the coordinator not a replica) an admission sends to
// the replicas with ModeAccountAndEnforce: the learned copy only rules out operations the
// replicas would reject too. Outside the local check it is a no-op.
func (r *Request) OnLocalCheck(res CheckResult) Step {
	if r.phase != phaseChecking {
		return Step{}
	}
	if r.selfIsReplica {
		r.checked = true
	} else {
		r.learnedCheck = true
	}
	r.wouldReject = res.Admitted && res.WouldReject
	r.localCount, r.localBorn = res.Count, res.Born
	if !res.Admitted {
		return r.finish(RateLimited{
			Op:         r.p.Op,
			RejectedBy: RejectedByCoordinator,
			Limit:      r.p.Limit,
			Count:      res.Count,
			RetryAfter: res.RetryAfter,
		})
	}
	return r.send()
}

// shadowRejects reports whether enforce mode would have rejected an operation that shadow mode
// admitted: the coordinator's own check said so, or the enforcing replicas' answers do. Enforce
// mode rejects on the replicas path when the rejections alone put the consistency level out of
// reach (Tally.Result). When every replica that answered would have rejected, the ones that
// have not answered are taken to agree, as replicas whose counters agree do (the same count and
// draw give the same decision); when their answers differ, the operation counts only if the
// would-be rejections alone put the level out of reach, as they would in enforce mode.
func (r *Request) shadowRejects() bool {
	switch {
	case r.wouldReject:
		return true
	case r.wouldRejected == 0:
		return false
	case r.wouldAdmit == 0:
		return true
	}
	return r.tally.Contacted-r.wouldRejected < r.required
}

// OnResponse takes one replica's answer. It returns the Outcome once the answers decide the
// request: success when the consistency level is reached; RateLimited (rejected by replicas) when
// rejections alone make it unreachable; Failed when failures do. A response whose Seq and From
// match no Send, or that answers a Send already answered, is ignored, as is any response before
// the Sends or after the Outcome.
func (r *Request) OnResponse(resp Response) Step {
	if r.phase != phaseWaiting {
		return Step{}
	}
	i := resp.Seq - 1
	if i < 0 || i >= len(r.sent) || r.sent[i].To != resp.From || r.answered[i] {
		return Step{}
	}
	r.answered[i] = true
	g := r.groupOf(r.p.Replicas[r.replicaIndex(resp.From)])
	if g < 0 {
		// A replica the level does not count (another data center's, at a LOCAL level): its
		// write stands, and it accounts a limited operation without deciding it.
		return Step{}
	}
	gt := &r.groups[g].tally
	switch resp.Status {
	case StatusOK:
		r.tally.OK++
		gt.OK++
		if r.p.limited() {
			if resp.WouldReject {
				r.wouldRejected++
			} else {
				r.wouldAdmit++
			}
		}
		if r.p.Op == OpRead {
			r.responses = append(r.responses, resp)
		}
	case StatusRateLimited:
		r.tally.Rejected++
		gt.Rejected++
		r.maxCount = max(r.maxCount, resp.Count)
		r.maxRetry = max(r.maxRetry, resp.RetryAfter)
		if r.tally.Rejected == 1 || resp.Count < r.minCount {
			r.minCount, r.minBorn, r.minResid = resp.Count, resp.Born, resp.Residual
		}
	default:
		r.tally.Failed++
		gt.Failed++
		if r.firstErr == nil {
			r.firstErr = failure(resp)
		}
		if s, ok := r.replacement(); ok {
			// The failed replica's place goes to one not yet asked: the level stays in reach.
			return Step{Sends: []Send{s}}
		}
	}
	switch r.result() {
	case QuorumReached:
		s := Success{Op: r.p.Op, Acks: r.tally.OK, Responses: r.responses, WouldReject: r.shadowRejects()}
		if s.WouldReject {
			s.Limit = r.p.Limit
		}
		return r.finish(s)
	case QuorumRejected:
		return r.finish(RateLimited{
			Op:           r.p.Op,
			RejectedBy:   RejectedByReplicas,
			Limit:        r.p.Limit,
			Count:        r.maxCount,
			RetryAfter:   r.maxRetry,
			MayBeApplied: r.p.Op == OpWrite && len(r.sent) > r.tally.Rejected,
		})
	case QuorumLost:
		return r.finish(Failed{
			Op:          r.p.Op,
			Consistency: r.p.Consistency,
			Received:    r.tally.OK,
			Required:    r.required,
			Failures:    r.tally.Failed,
			Rejected:    r.tally.Rejected,
			Cause:       r.firstErr,
		})
	}
	return Step{}
}

// failure returns the error a failed or malformed response stands for.
func failure(resp Response) error {
	switch {
	case resp.Status != StatusFailed:
		return fmt.Errorf("replica %s answered with invalid status %v", resp.From, resp.Status)
	case resp.Err == nil:
		return fmt.Errorf("replica %s failed without an error", resp.From)
	}
	return resp.Err
}

// Tick tells the request the time is now. It finishes the request with Timeout when now is not
// before the deadline and the request has started but not finished; otherwise it is a no-op.
func (r *Request) Tick(now time.Time) Step {
	if (r.phase == phaseChecking || r.phase == phaseWaiting) && r.expired(now) {
		return r.finish(r.timeout())
	}
	return Step{}
}

// Speculate tells a read at ONE or QUORUM with SpeculateDelayed that its speculative delay has
// passed. For each answer the consistency level still misses from a replica that has not
// answered, it sends the read to the next live replica not yet asked (see Speculation), as far
// as there are such replicas; nothing when there are none. Only the first call does anything:
// each missing answer is covered at most once. Writes, reads at ALL, other speculations, and a
// request that is not waiting for answers (before its Sends, or Done) ignore it.
func (r *Request) Speculate() Step {
	if r.phase != phaseWaiting || r.p.Speculation != SpeculateDelayed || r.speculated || !r.mayReplace() {
		return Step{}
	}
	r.speculated = true
	missing := min(r.required-r.tally.OK, r.tally.Outstanding())
	var sends []Send
	for range missing {
		s, ok := r.replacement()
		if !ok {
			break
		}
		sends = append(sends, s)
		r.speculative++
	}
	return Step{Sends: sends}
}

// Speculative returns how many of the request's Sends were speculative reads: those Speculate
// returned, or the extra one SpeculateAlways sent at the start.
func (r *Request) Speculative() int { return r.speculative }

// Done reports whether the request has its Outcome.
func (r *Request) Done() bool { return r.phase == phaseDone }

// Outcome returns how the request ended, or nil while it is not Done.
func (r *Request) Outcome() Outcome { return r.outcome }

// Unaccounted returns, once the request is Done, the replicas whose counter did not count the
// operation: the same list as the finishing Step's Unaccounted.
func (r *Request) Unaccounted() []NodeID { return r.unaccounted }

// Urgent returns, once the request is Done, whether its Unaccounted deltas are urgent: the same
// as the finishing Step's Urgent.
func (r *Request) Urgent() bool { return r.urgent }

// Learned is what a coordinator that is not a replica of a partition learns when the replicas
// reject a limited operation on it: the smallest counter among the rejecting replicas, its
// birth and its residual (Response.Count, Born and Residual), as of the operation's Stamp. The shell keeps it in its
// table of hot partitions (partitionlimit.Table.Learn) and sets Params.Learned on the
// partition's next operations while the learned counter has not decayed to zero.
type Learned struct {
	Count    uint32
	Born     time.Time
	Residual uint32
	Stamp    time.Time
}

// learnAfter is how old a replicas' counter must be before a coordinator outside the replica
// set learns it (see Learn): in its first second a counter's onset allowance assumes it counts
// every operation as it happens, and the operations a coordinator rejects reach it only as
// propagated deltas, up to 20 ms late, which at ±500 ms of skew let young counters admit
// 0.3–0.4·L more in a partition's first hot second (test/sim's onset rows).
const learnAfter = time.Second

// Learn returns, once the request is Done, what its coordinator learns about the partition:
// ok only for a limited operation whose coordinator is not a replica and that the replicas
// rejected (RateLimited by replicas). The smallest rejecting counter is learned because the
// coordinator's copy must not exceed any replica's counter: it then rejects only operations
// every replica would reject too. Nothing is learned from a counter younger than learnAfter (its birth
// within a second of the stamp).
func (r *Request) Learn() (Learned, bool) {
	rl, ok := r.outcome.(RateLimited)
	if !ok || rl.RejectedBy != RejectedByReplicas || r.selfIsReplica || !r.p.limited() {
		return Learned{}, false
	}
	if !r.minBorn.IsZero() && r.p.Stamp.Sub(r.minBorn) < learnAfter {
		return Learned{}, false
	}
	return Learned{Count: r.minCount, Born: r.minBorn, Residual: r.minResid, Stamp: r.p.Stamp}, true
}

// Tally returns the answers counted so far.
func (r *Request) Tally() Tally { return r.tally }

// Required returns how many replicas must succeed: BlockFor of the consistency level and the
// replication factor.
func (r *Request) Required() int { return r.required }

func (r *Request) expired(now time.Time) bool {
	return !r.p.Deadline.IsZero() && !now.Before(r.p.Deadline)
}

func (r *Request) timeout() Timeout {
	return Timeout{Op: r.p.Op, Consistency: r.p.Consistency, Received: r.tally.OK, Required: r.required}
}

// send sends the operation to its targets with the limiter mode of the request's path.
func (r *Request) send() Step {
	var buf [inlineReplicas]NodeID
	targets := r.targets(buf[:0])
	r.sent, r.answered = r.sentBuf[:0:len(r.sentBuf)], r.answeredBuf[:0:len(r.answeredBuf)]
	for i, id := range targets {
		r.sent = append(r.sent, r.sendTo(i+1, id))
		r.answered = append(r.answered, false)
	}
	for _, id := range targets {
		r.contact(id)
	}
	if r.mayReplace() {
		r.speculative = len(targets) - r.required // SpeculateAlways's spare, if there was one
	}
	r.phase = phaseWaiting
	return Step{Sends: slices.Clone(r.sent)}
}

// contact counts replica id as contacted, in its group's tally when the level counts it.
func (r *Request) contact(id NodeID) {
	if g := r.groupOf(r.p.Replicas[r.replicaIndex(id)]); g >= 0 {
		r.groups[g].tally.Contacted++
		r.tally.Contacted++
	}
}

// sendTo builds the Send with sequence number seq to replica id, in the limiter mode of the
// request's path: a replica outside the coordinator's data center only accounts the operation
// when the data center has replicas, which decide it (or the coordinator does).
func (r *Request) sendTo(seq int, id NodeID) Send {
	s := Send{Seq: seq, To: id}
	switch {
	case !r.p.limited(), r.checked && id == r.p.Self:
		s.Mode = ModeNone
	case r.checked, r.hasLocal && r.p.Replicas[r.replicaIndex(id)].DC != 0:
		s.Mode = ModeAccountOnly
		s.Stamp = r.p.Stamp
	default:
		s.Mode = ModeAccountAndEnforce
		s.Draw, s.Stamp = r.p.Draw, r.p.Stamp
	}
	return s
}

// replacement returns, for a read at ONE or QUORUM whose contacted replica failed, a Send to the
// next live replica not yet asked, in the same preference order as targets. Failure-driven retry
// keeps a read available when a replica dies before the failure detector notices; reads at ALL
// and writes (which already go to every live replica) have no one to ask instead.
func (r *Request) replacement() (Send, bool) {
	if !r.mayReplace() {
		return Send{}, false
	}
	asked := func(id NodeID) bool {
		return slices.ContainsFunc(r.sent, func(s Send) bool { return s.To == id })
	}
	try := func(id NodeID) bool {
		rep := r.p.Replicas[r.replicaIndex(id)]
		return !rep.Down && r.groupOf(rep) >= 0 && !asked(id)
	}
	var next NodeID
	for _, id := range r.p.ReadOrder {
		if next == "" && try(id) {
			next = id
		}
	}
	if next == "" && r.selfIsReplica && try(r.p.Self) {
		next = r.p.Self
	}
	for _, rep := range r.p.Replicas {
		if next == "" && try(rep.ID) {
			next = rep.ID
		}
	}
	if next == "" {
		return Send{}, false
	}
	s := r.sendTo(len(r.sent)+1, next)
	r.sent = append(r.sent, s)
	r.answered = append(r.answered, false)
	r.contact(next)
	return s, true
}

// mayReplace reports whether the request is a read at a level other than ALL and EACH_QUORUM:
// the only requests that ask replicas beyond their first targets (failure-driven retry and
// speculation).
func (r *Request) mayReplace() bool {
	return r.p.Op == OpRead && r.p.Consistency != All && r.p.Consistency != EachQuorum
}

// targets returns the replicas to contact. Writes, and reads at ALL and EACH_QUORUM, go to
// every live replica in ring order (a LOCAL level's write too: the other data centers' replicas
// get it without being waited for). Other reads go to the first required live replicas the
// level counts, in the preference order: ReadOrder, then Self if it is a replica, then ring
// order; with SpeculateAlways to one more, when there is one. Start has checked that enough
// replicas are live. The targets are appended to ids, which is returned.
func (r *Request) targets(ids []NodeID) []NodeID {
	if r.p.Op == OpWrite || r.p.Consistency == All || r.p.Consistency == EachQuorum {
		for _, rep := range r.p.Replicas {
			if !rep.Down {
				ids = append(ids, rep.ID)
			}
		}
		return ids
	}
	want := r.required
	if r.p.Speculation == SpeculateAlways {
		want++
	}
	pick := func(id NodeID) {
		rep := r.p.Replicas[r.replicaIndex(id)]
		if len(ids) < want && !rep.Down && r.groupOf(rep) >= 0 && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, id := range r.p.ReadOrder {
		pick(id)
	}
	if r.selfIsReplica {
		pick(r.p.Self)
	}
	for _, rep := range r.p.Replicas {
		pick(rep.ID)
	}
	return ids
}

// finish records the outcome and reports it with the unaccounted replicas.
func (r *Request) finish(o Outcome) Step {
	r.phase = phaseDone
	r.outcome = o
	r.unaccounted = r.accountGaps()
	r.urgent = len(r.unaccounted) > 0 && r.checked && !r.localBorn.IsZero() &&
		uint64(r.localCount) <= 2*uint64(r.p.Limit) &&
		partitionlimit.Outpaces(r.localCount, r.p.Limit, r.p.Stamp.Sub(r.localBorn))
	return Step{Outcome: o, Unaccounted: r.unaccounted, Urgent: r.urgent}
}

// accountGaps returns the replicas whose counter did not count a limited operation that reached
// at least one counter.
func (r *Request) accountGaps() []NodeID {
	if !r.p.limited() || (!r.checked && !r.learnedCheck && len(r.sent) == 0) {
		return nil
	}
	ids := r.gapBuf[:0:len(r.gapBuf)]
	for _, rep := range r.p.Replicas {
		if r.checked && rep.ID == r.p.Self {
			continue
		}
		if slices.ContainsFunc(r.sent, func(s Send) bool { return s.To == rep.ID }) {
			continue
		}
		ids = append(ids, rep.ID)
	}
	if len(ids) == 0 {
		return nil
	}
	return ids[:len(ids):len(ids)] // an append by the caller does not write into gapBuf
}
