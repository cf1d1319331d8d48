package shell

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Lightweight transactions: conditional INSERT, UPDATE and DELETE, and SERIAL reads, by Paxos
// over the partition's replicas in the shape of Cassandra 4.1's Paxos v2 (docs/consistency.md).
// One round is a prepare (which carries the read the condition needs and returns each
// replica's Paxos state), a propose and a commit: two round trips before the commit, three
// with it. A proposal a prepare finds in progress is completed (proposed again at the new
// ballot and committed) before anything else, so a proposer never decides on a read that misses
// a value Paxos chose.

// PaxosTransport sends the Paxos exchanges of lightweight transactions. The node's Transport
// implements it; a Transport that does not (some tests' fakes) makes conditional statements
// and SERIAL reads fail with an internal error.
type PaxosTransport interface {
	PaxosPrepare(ctx context.Context, to coordinator.NodeID, req *replicapb.PaxosPrepareRequest) (*replicapb.PaxosPrepareResponse, error)
	PaxosPropose(ctx context.Context, to coordinator.NodeID, req *replicapb.PaxosProposeRequest) (*replicapb.PaxosProposeResponse, error)
	PaxosCommit(ctx context.Context, to coordinator.NodeID, req *replicapb.PaxosCommitRequest) (*replicapb.PaxosCommitResponse, error)
}

// lwtState is the executor's part of lightweight transactions: its ballot clock and counters.
type lwtState struct {
	mu   sync.Mutex
	last int64 // the counter of the last ballot this coordinator made
	// lat holds the latencies of the last len(lat) statements decided (n of them so far), the
	// p50 and p95 the contention backoff is drawn from (coordinator.ContentionWait).
	lat [64]time.Duration
	n   int
	// lines are the partitions this coordinator runs lightweight transactions on now, each
	// statement waiting its turn in its partition's line (enter).
	lines map[casKey]*casLine
	// rounds counts Paxos rounds begun (prepares sent), rejected the statements a rate limit
	// rejected before any round (by this coordinator or on the prepare), contended the rounds
	// lost to a competing ballot.
	rounds, rejected, contended atomic.Uint64
	// skipCompletion is a bug the tests inject (BreakLWTCompletion): proposals in progress
	// are ignored.
	skipCompletion bool
}

// LWTStats are a coordinator's counts of lightweight transactions.
type LWTStats struct {
	// Rounds counts Paxos rounds begun: the prepares of conditional statements and SERIAL reads,
	// retries included.
	Rounds uint64
	// RateLimited counts statements the rate limiter rejected before any promise.
	RateLimited uint64
	// Contended counts rounds lost to a competing proposer (then retried after a backoff).
	Contended uint64
}

// LWTStats returns the executor's counts of lightweight transactions since it started.
func (e *Executor) LWTStats() LWTStats {
	return LWTStats{Rounds: e.lwt.rounds.Load(), RateLimited: e.lwt.rejected.Load(), Contended: e.lwt.contended.Load()}
}

// LWTCollector returns the Prometheus metric of the executor's LWTStats,
// kvnode_coordinator_lwt_total by event: rounds (Paxos rounds begun, retries included),
// rate_limited (statements rejected before any round) and contended (rounds lost to a competing
// ballot).
func (e *Executor) LWTCollector() prometheus.Collector {
	return lwtCollector{e: e, desc: prometheus.NewDesc("kvnode_coordinator_lwt_total",
		"Lightweight transactions this coordinator ran, by event: rounds (Paxos rounds begun, retries included), rate_limited (statements the limiter rejected before any round), contended (rounds lost to a competing ballot).",
		[]string{"event"}, nil)}
}

type lwtCollector struct {
	e    *Executor
	desc *prometheus.Desc
}

func (c lwtCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c lwtCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.e.LWTStats()
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(st.Rounds), "rounds")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(st.RateLimited), "rate_limited")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(st.Contended), "contended")
}

// casContentionTimeout bounds a lightweight transaction's Paxos rounds (prepares, proposals and
// contention backoff; the commit then has the statement's own deadline), as Cassandra 4.1's
// cas_contention_timeout (1 s) does: a statement that cannot win a round in that time gives up
// with a CAS write timeout rather than keep contending with the statements that came after it.
const casContentionTimeout = time.Second

// casKey names a partition of a table.
type casKey struct {
	table schema.TableID
	token int64
	key   string // the partition key, serialised
}

// casLine is one partition's line: ch holds the token of the statement running, users counts
// the statements running or waiting.
type casLine struct {
	ch    chan struct{}
	users int
}

// enter waits for the partition's turn on this coordinator, or for ctx to end, and returns the
// function that gives the turn to the next statement. A coordinator runs one lightweight
// transaction of a partition at a time, the others waiting in line: statements through the
// same coordinator never duel (each would make the other's ballot lose, over and over), and
// the partition's contention is between coordinators only.
func (l *lwtState) enter(ctx context.Context, k casKey) (leave func(), err error) {
	l.mu.Lock()
	if l.lines == nil {
		l.lines = map[casKey]*casLine{}
	}
	ln := l.lines[k]
	if ln == nil {
		ln = &casLine{ch: make(chan struct{}, 1)}
		l.lines[k] = ln
	}
	ln.users++
	l.mu.Unlock()
	out := func() {
		l.mu.Lock()
		if ln.users--; ln.users == 0 {
			delete(l.lines, k)
		}
		l.mu.Unlock()
	}
	select {
	case ln.ch <- struct{}{}:
		return func() { <-ln.ch; out() }, nil
	case <-ctx.Done():
		out()
		return nil, ctx.Err()
	}
}

// observe records d, how long a statement took to decide, for the contention backoff.
func (l *lwtState) observe(d time.Duration) {
	l.mu.Lock()
	l.lat[l.n%len(l.lat)] = d
	l.n++
	l.mu.Unlock()
}

// latencies returns the median and 95th percentile of the recent decided statements' latencies
// (zero when none were decided yet).
func (l *lwtState) latencies() (p50, p95 time.Duration) {
	var buf [len(lwtState{}.lat)]time.Duration
	l.mu.Lock()
	n := copy(buf[:], l.lat[:min(l.n, len(l.lat))])
	l.mu.Unlock()
	if n == 0 {
		return 0, 0
	}
	s := buf[:n]
	slices.Sort(s)
	return s[n/2], s[min(n-1, n*95/100)]
}

// nextBallot returns a ballot above every one this coordinator made and above seen.
func (e *Executor) nextBallot(seen int64) coordinator.Ballot {
	e.lwt.mu.Lock()
	defer e.lwt.mu.Unlock()
	e.lwt.last = coordinator.NextBallotMicros(e.now().UnixMicro(), e.lwt.last, seen)
	return coordinator.Ballot{Micros: e.lwt.last, Node: string(e.localID)}
}

func ballotProto(b coordinator.Ballot) *replicapb.SchemaBallot {
	return &replicapb.SchemaBallot{Counter: b.Micros, Node: b.Node}
}

func ballotOf(b *replicapb.SchemaBallot) coordinator.Ballot {
	if b == nil {
		return coordinator.Ballot{}
	}
	return coordinator.Ballot{Micros: b.Counter, Node: b.Node}
}

// casPartition is the partition a lightweight transaction runs on, and how.
type casPartition struct {
	t     *schema.Table
	token int64
	pk    [][]byte
	// read is the read folded into the prepare: the rows the condition or the SERIAL read needs.
	read *replicapb.ReadRequest
	// serialRead: the statement is a SERIAL read, counted as one read of the partition; else a
	// conditional write, counted as one write.
	serialRead bool
	// commitCL is the level the commit waits for.
	commitCL coordinator.Consistency
	// serial is the Paxos level: coordinator.Serial, or LocalSerial (Paxos over this data
	// center's replicas when the keyspace places them per data center).
	serial coordinator.Consistency
	// usingTimeout is the statement's USING TIMEOUT, 0 for none: with one, it bounds the rounds
	// instead of casContentionTimeout.
	usingTimeout time.Duration
}

// timeout is the error of the partition's lightweight transaction that ran out of time: a
// write timeout with the CAS write type (or a read timeout for a SERIAL read) at its serial
// level, acks the acceptances (or promises) received of required.
func (p casPartition) timeout(acks, required int) error {
	cl := cmp.Or(p.serial, coordinator.Serial)
	if p.serialRead {
		return &coordinator.TimeoutError{Op: coordinator.OpRead, Consistency: cl, Received: acks, Required: required}
	}
	return &coordinator.TimeoutError{Op: coordinator.OpWrite, Consistency: cl, Received: acks, Required: required, CAS: true}
}

// casPartitionOf is the casPartition of a conditional write to partition pk of t committed at
// cl: its token, and the prepare's read of the whole partition.
func casPartitionOf(t *schema.Table, pk [][]byte, cl coordinator.Consistency) casPartition {
	var keyBuf [64]byte
	token := partitioner.Token(partitioner.AppendKey(keyBuf[:0], pk))
	return casPartition{
		t: t, token: token, pk: pk, commitCL: cl,
		read: &replicapb.ReadRequest{TableId: uint64(t.ID), PartitionKey: pk, Token: token},
	}
}

// casDecision is what a conditional statement makes of the partition's current rows: the
// mutation to propose (nil: the condition does not hold, nothing is written) and the result.
// static is the partition's reconciled static row (nil: none, or a table without static
// columns).
type casDecision func(rows []coordinator.ClusteredRow, static *cell.Row, b coordinator.Ballot) (*replicapb.Mutation, error)

// casGroup is who takes part in the partition's Paxos rounds.
type casGroup struct {
	// live are the live natural replicas (the first natural of them) and then the live pending
	// ones that Paxos runs over; required is how many promises or acceptances make a quorum.
	live              []coordinator.NodeID
	natural, required int
	// remote are the live replicas, natural (the first remoteNatural) then pending, of the other
	// data centers under LOCAL_SERIAL: outside Paxos, they get the commit.
	remote        []coordinator.NodeID
	remoteNatural int
	// down are the replicas, natural or pending, of every data center the commit counts, that
	// are down: they get the commit as a hint.
	down []coordinator.NodeID
	// total counts every replica, live or not, natural or pending, of every data center.
	total int
	// localOnly: LOCAL_SERIAL on a keyspace placed per data center, Paxos over this one.
	localOnly bool
	// localTotal counts this data center's replicas, live or not, natural or pending; perDC
	// says the keyspace places replicas per data center (else LOCAL levels count them all).
	localTotal int
	perDC      bool
}

// casParticipants returns the replicas a round of the partition talks to: the live natural
// replicas and the pending ones, and how many promises or acceptances make a quorum: a
// majority of the natural replicas plus every pending one (as Cassandra counts them), so that
// quorums before and after a range moves intersect. Under LOCAL_SERIAL on a keyspace placed
// per data center (NetworkTopologyStrategy), as Cassandra 4.1: only this data center's
// replicas, the others getting the commit alone.
func (e *Executor) casParticipants(token int64, rf schema.Replication, serial coordinator.Consistency) (casGroup, error) {
	var replicaBuf [8]coordinator.Replica
	var pendingBuf [8]coordinator.NodeID
	replicas, pending := e.writeReplicaSet(replicaBuf[:0], pendingBuf[:0], token, rf)
	cl := cmp.Or(serial, coordinator.Serial)
	localOnly := serial == coordinator.LocalSerial && len(rf.DataCenters) > 0
	g := casGroup{localOnly: localOnly, perDC: len(rf.DataCenters) > 0}
	var nNatural, nPending int
	for _, r := range replicas {
		if r.DC == 0 {
			g.localTotal++
		}
		switch {
		case localOnly && r.DC != 0:
			if !r.Down {
				g.remote = append(g.remote, r.ID)
			} else {
				g.down = append(g.down, r.ID)
			}
		case !r.Down:
			g.live = append(g.live, r.ID)
			nNatural++
		default:
			g.down = append(g.down, r.ID)
			nNatural++
		}
	}
	g.natural, g.remoteNatural = len(g.live), len(g.remote)
	localDC := e.ring.DataCenter(e.localID)
	for _, id := range pending {
		live := id == e.localID || e.ring.IsLive(id)
		inDC := e.ring.DataCenter(id) == localDC
		if inDC {
			g.localTotal++
		}
		switch {
		case localOnly && !inDC:
			if live {
				g.remote = append(g.remote, id)
			} else {
				g.down = append(g.down, id)
			}
		case live:
			g.live = append(g.live, id)
			nPending++
		default:
			g.down = append(g.down, id)
			nPending++
		}
	}
	if nNatural == 0 {
		return casGroup{}, &coordinator.UnavailableError{Consistency: cl, Live: 0, Required: 1}
	}
	g.required = nNatural/2 + 1 + nPending
	g.total = len(replicas) + len(pending)
	if len(g.live) < g.required {
		return casGroup{}, &coordinator.UnavailableError{Consistency: cl, Live: len(g.live), Required: g.required}
	}
	return g, nil
}

// prepared is one replica's answer to a prepare.
type prepared struct {
	from coordinator.NodeID
	resp *replicapb.PaxosPrepareResponse
	err  error
}

// fanOut calls call for each of to concurrently, on goroutines of run (the executor's pool,
// whose grown stacks serve call after call), and hands the answers to take in arrival order
// until take returns true, every call answered, or ctx ends. It returns once every call it
// started has returned: the calls left running are canceled.
func fanOut[T any](ctx context.Context, run func(func()), to []coordinator.NodeID, call func(ctx context.Context, id coordinator.NodeID) T, take func(T) bool) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	answers := make(chan T, len(to))
	for _, id := range to {
		wg.Add(1)
		run(func() {
			defer wg.Done()
			answers <- call(ctx, id)
		})
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	for range to {
		select {
		case a := <-answers:
			if take(a) {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// runCAS runs Paxos rounds on the partition until one decides: it returns the rows the
// decision was made on, and whether decide's mutation was chosen and committed (applied). A
// SERIAL read passes a decide that returns nil. The rate limiter decides once, before the first
// prepare: on this node's counter when it is a replica (the prepares then only account), else
// on the prepare at each replica with one draw; a rejection ends the statement with the
// rate-limit error and no round follows.
func (e *Executor) runCAS(ctx context.Context, p casPartition, rf schema.Replication, dl time.Time, decide casDecision) ([]coordinator.ClusteredRow, bool, error) {
	pt, ok := e.transport.(PaxosTransport)
	if !ok {
		return nil, false, errors.New("coordinator: the transport does not carry lightweight transactions")
	}
	if fr, ok := e.ring.(FormatRing); ok {
		if older := fr.BelowFormat(schema.FormatLWT); len(older) > 0 {
			ids := make([]string, len(older))
			for i, id := range older {
				ids[i] = string(id)
			}
			return nil, false, &coordinator.InvalidError{Err: fmt.Errorf("lightweight transactions need every node on data format %d or later, and nodes %s still run a release of an older format, which does not take part in Paxos rounds; finish the rolling upgrade first (docs/operations.md, Upgrading)",
				schema.FormatLWT, strings.Join(ids, ", "))}
		}
	}
	g, err := e.casParticipants(p.token, rf, p.serial)
	if err != nil {
		return nil, false, err
	}
	live, required, natural := g.live, g.required, g.natural
	{
		// Refuse up front when too few replicas are live for the commit level, as a write
		// would (ALL with a replica down; under LOCAL_SERIAL the commit counts replicas
		// outside the Paxos group): the statement fails before any proposal, not applied.
		need, counts := e.commitNeed(p, g)
		up := 0
		for _, id := range slices.Concat(g.live, g.remote) {
			if counts(id) {
				up++
			}
		}
		if up < need {
			return nil, false, &coordinator.UnavailableError{Consistency: p.commitCL, Live: up, Required: need}
		}
	}
	op := coordinator.OpWrite
	if p.serialRead {
		op = coordinator.OpRead
	}
	// The limiter's one decision.
	limit := p.t.Limit(op)
	var lim *replicapb.Limiter // the first prepare's, for the replicas
	if limit > 0 {
		draw, stamp := e.draw(), e.now()
		self := e.local != nil && slices.Contains(live[:natural], e.localID)
		if self {
			d, err := e.local.Check(p.t.ID, p.token, op, draw, stamp)
			if err != nil {
				return nil, false, fmt.Errorf("coordinator: local limiter check: %w", err)
			}
			if !d.Admitted {
				// The other replicas never see a statement rejected here: they get it as a
				// plain write's local rejection reaches them, through account propagation, so
				// that every replica's counter measures the partition's whole load (without
				// it each coordinator-replica counted only its own rejections, and the
				// cluster admitted about twice the limit through three coordinators).
				if e.prop != nil {
					others := make([]coordinator.NodeID, 0, natural+g.remoteNatural)
					for _, id := range live[:natural] {
						if id != e.localID {
							others = append(others, id)
						}
					}
					others = append(others, g.remote[:g.remoteNatural]...)
					e.prop.add(others, p.t.ID, p.token, op)
				}
				e.lwt.rejected.Add(1)
				rl := coordinator.RateLimited{Op: op, RejectedBy: coordinator.RejectedByCoordinator, Limit: limit, Count: d.Count, RetryAfter: d.RetryAfter}
				return nil, false, e.outcomeErr(rl, p.t)
			}
			lim = &replicapb.Limiter{Mode: replicapb.Limiter_ACCOUNT_ONLY, StampUnixNanos: stampNanos(stamp)}
		} else {
			lim = &replicapb.Limiter{Mode: replicapb.Limiter_ACCOUNT_AND_ENFORCE, Draw: draw, StampUnixNanos: stampNanos(stamp)}
		}
		if e.prop != nil && g.remoteNatural > 0 {
			// LOCAL_SERIAL: the other data centers' replicas see no prepare; they account
			// the statement through propagation, as a write's are counted in every one.
			e.prop.add(g.remote[:g.remoteNatural], p.t.ID, p.token, op)
		}
	}
	// The rounds run until cdl, the contention deadline; a chosen proposal's commit until dl.
	start := e.now()
	cdl := dl
	if c := start.Add(cmp.Or(p.usingTimeout, casContentionTimeout)); c.Before(cdl) {
		cdl = c
	}
	decided := func() { e.lwt.observe(e.now().Sub(start)) }
	leave, err := e.enterLine(ctx, p, cdl, required)
	if err != nil {
		return nil, false, err
	}
	defer leave()
	var (
		seen    int64
		mine    []coordinator.Ballot // the ballots this statement proposed its own mutation at
		attempt int
		// uncertain: one of mine was accepted by some replicas but not a quorum, so a later
		// proposer may still choose it. From then on the statement ends applied (when it finds
		// its mutation chosen) or timed out, never not applied: Cassandra's rule too.
		uncertain bool
	)
	isMine := func(b coordinator.Ballot) bool {
		return slices.ContainsFunc(mine, func(m coordinator.Ballot) bool { return m.Compare(b) == 0 })
	}
	lost := func() error {
		attempt++
		e.lwt.contended.Add(1)
		return e.backoff(ctx, attempt, cdl, p, required)
	}
	for {
		if !e.now().Before(cdl) {
			return nil, false, p.timeout(0, required)
		}
		b := e.nextBallot(seen)
		e.lwt.rounds.Add(1)
		first := lim
		lim = nil // retries are not counted again
		promises, rows, static, rejected, highest, perr := e.prepareRound(ctx, pt, p, live, natural, required, b, first, cdl)
		if rejected != nil {
			e.lwt.rejected.Add(1)
			return nil, false, e.outcomeErr(*rejected, p.t)
		}
		if perr != nil {
			return nil, false, perr
		}
		if promises == nil { // outvoted
			seen = max(seen, highest)
			if err := lost(); err != nil {
				return nil, false, err
			}
			continue
		}
		if m := promises.maxMicros(); m >= b.Micros && !p.serialRead {
			// A ballot of the microsecond of one the quorum reports, or below a commit that
			// reached a replica without its promise: a proposal at b could sit below a
			// replica's committed ballot, where no later round would see it in progress
			// (coordinator.InProgress). Take a ballot of a later microsecond.
			seen = max(seen, m)
			continue
		}
		if len(mine) > 0 && isMine(promises.lastCommittedOrigin()) {
			decided()
			return nil, true, nil // an earlier round's own mutation, chosen and committed
		}
		if i, ok := coordinator.InProgress(promises.states); ok && !e.lwt.skipCompletion {
			acc := promises.accepted[i]
			origin := ballotOf(acc.GetOrigin())
			if origin.IsZero() {
				origin = ballotOf(acc.GetBallot())
			}
			done, _, err := e.proposeAndCommit(ctx, pt, p, g, promises.from(), b, origin, acc.GetMutation(), cdl, dl)
			if err != nil {
				return nil, false, err
			}
			if done && isMine(origin) {
				decided()
				return nil, true, nil // an earlier round's own mutation, completed now
			}
			if !done {
				if err := lost(); err != nil {
					return nil, false, err
				}
			}
			continue // prepare again at a new ballot, on the completed state
		}
		if uncertain {
			return nil, false, p.timeout(0, required)
		}
		// The write is stamped with the clock, or just above what the read returned when that
		// is newer (a plain write stamped ahead must not shadow it). Not with the ballot: a
		// ballot taken above a replica's refusal runs ahead of the clock (a restarted store's
		// promise fence is up to promiseWindow ahead; another coordinator's clock may be
		// fast), and a write stamped there would shadow the plain writes made after it. The
		// read covers the whole partition and, Paxos choosing each round's proposal after
		// the ones its quorum saw committed or completed, reads every conditional write
		// chosen before this one: the stamps still follow the order Paxos chose. Only the
		// write takes the stamp: a ballot taken that far ahead would carry it through the
		// ballot clock to every later conditional write of the coordinator, in every partition.
		stamp := b
		stamp.Micros = max(e.now().UnixMicro(), promises.maxWritten+1)
		m, err := decide(rows, static, stamp)
		if err != nil {
			return nil, false, err
		}
		if m == nil {
			decided()
			return rows, false, nil
		}
		mine = append(mine, b)
		done, accepted, err := e.proposeAndCommit(ctx, pt, p, g, promises.from(), b, b, m, cdl, dl)
		if err != nil {
			return nil, false, err
		}
		if done {
			decided()
			return rows, true, nil
		}
		uncertain = uncertain || accepted > 0
		if err := lost(); err != nil {
			return nil, false, err
		}
	}
}

// enterLine waits for the partition's turn on this coordinator (lwtState.enter) until cdl.
func (e *Executor) enterLine(ctx context.Context, p casPartition, cdl time.Time, required int) (func(), error) {
	wctx, cancel := context.WithTimeout(ctx, cdl.Sub(e.now())) // cdl is on the executor's clock
	defer cancel()
	var keyBuf [64]byte
	leave, err := e.lwt.enter(wctx, casKey{table: p.t.ID, token: p.token, key: string(partitioner.AppendKey(keyBuf[:0], p.pk))})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, p.timeout(0, required)
	}
	return leave, nil
}

// backoff waits before the next round after attempt lost ones (Cassandra 4.1's contention
// strategy, coordinator.ContentionWait, over this coordinator's recent LWT latencies), or
// returns the timeout when the deadline would pass first.
func (e *Executor) backoff(ctx context.Context, attempt int, dl time.Time, p casPartition, required int) error {
	p50, p95 := e.lwt.latencies()
	d := coordinator.ContentionWait(attempt, p50, p95, e.draw(), e.draw())
	if !e.now().Add(d).Before(dl) {
		return p.timeout(0, required)
	}
	return loop.Sleep(ctx, d)
}

// promiseSet is a quorum's promises: each replica's Paxos state and accepted proposal.
type promiseSet struct {
	states   []coordinator.Promise
	accepted []*replicapb.PaxosProposal
	origins  []coordinator.Ballot // of each promise's last committed proposal
	// maxWritten is the newest write timestamp in the promises' reads (cells, markers,
	// tombstones).
	maxWritten int64
}

// from returns the replicas whose promises ps holds.
func (ps *promiseSet) from() []coordinator.NodeID {
	ids := make([]coordinator.NodeID, len(ps.states))
	for i, st := range ps.states {
		ids[i] = st.From
	}
	return ids
}

// maxTimestamp returns the newest write timestamp in a read's answer: its tombstones, rows and
// static row.
func maxTimestamp(r *replicapb.ReadResponse) int64 {
	m := max(r.GetPartitionDeletion(), rowMaxTimestamp(r.GetStaticRow()))
	for _, rt := range r.GetRangeTombstones() {
		m = max(m, rt.GetTimestamp())
	}
	for _, row := range r.GetRows() {
		m = max(m, rowMaxTimestamp(row))
	}
	return m
}

// rowMaxTimestamp returns the newest write timestamp of a row: its marker, deletion, cells
// (tombstones too) and collection deletions; 0 for nil.
func rowMaxTimestamp(row *replicapb.Row) int64 {
	m := max(row.GetMarker(), row.GetDeletion())
	for _, c := range row.GetCells() {
		m = max(m, c.GetTimestamp())
	}
	for _, d := range row.GetCollections() {
		m = max(m, d.GetTimestamp())
	}
	return m
}

// maxMicros returns the highest ballot counter among the promises' accepted and committed ballots.
func (ps *promiseSet) maxMicros() int64 {
	var m int64
	for _, st := range ps.states {
		m = max(m, st.Accepted.Micros, st.Committed.Micros)
	}
	return m
}

// lastCommittedOrigin returns the origin of the newest committed proposal the promises report.
func (ps *promiseSet) lastCommittedOrigin() coordinator.Ballot {
	var last, origin coordinator.Ballot
	for i, st := range ps.states {
		if st.Committed.Compare(last) > 0 {
			last, origin = st.Committed, ps.origins[i]
		}
	}
	return origin
}

// prepareRound sends a prepare at ballot b to live and waits for required promises. It returns
// the promises and the partition's rows reconciled over them; nil promises when a competing
// ballot outvoted b (highest is the highest ballot counter seen); rejected when the limiter's
// rejections (lim, the first round's) made the quorum unreachable.
func (e *Executor) prepareRound(ctx context.Context, pt PaxosTransport, p casPartition, live []coordinator.NodeID, natural, required int, b coordinator.Ballot, lim *replicapb.Limiter, dl time.Time) (*promiseSet, []coordinator.ClusteredRow, *cell.Row, *coordinator.RateLimited, int64, error) {
	callCtx, cancel := context.WithTimeout(ctx, dl.Sub(e.now())) // dl is on the executor's clock
	defer cancel()
	var (
		ps                          promiseSet
		reads                       []prepared
		refused, failed, rateLimits int
		highest                     int64
		rl                          coordinator.RateLimited
		firstErr                    error
	)
	n := len(live)
	fanOut(callCtx, e.calls.Go, live, func(ctx context.Context, id coordinator.NodeID) prepared {
		base := p.read // the replicas share the read's slices, read-only
		rd := replicapb.ReadRequest{TableId: base.TableId, PartitionKey: base.PartitionKey, Token: base.Token, Filter: base.Filter, Limit: base.Limit}
		if lim != nil && (id != e.localID || lim.Mode != replicapb.Limiter_ACCOUNT_ONLY) && slices.Index(live, id) < natural {
			rd.Limiter = lim
		} else {
			rd.Limiter = nil
		}
		resp, err := pt.PaxosPrepare(ctx, id, &replicapb.PaxosPrepareRequest{Ballot: ballotProto(b), Read: &rd, SerialRead: p.serialRead})
		return prepared{from: id, resp: resp, err: err}
	}, func(a prepared) bool {
		switch {
		case a.err != nil:
			failed++
			firstErr = cmpErr(firstErr, transportError(a.from, a.err))
		case a.resp.GetStatus() == replicapb.Status_STATUS_RATE_LIMITED:
			rateLimits++
			r := a.resp.GetRateLimited()
			rl.Count = max(rl.Count, r.GetCount())
			rl.RetryAfter = max(rl.RetryAfter, time.Duration(r.GetRetryAfterMillis())*time.Millisecond)
		case a.resp.GetStatus() != replicapb.Status_STATUS_OK:
			failed++
			firstErr = cmpErr(firstErr, &coordinator.ReplicaError{Replica: a.from, Code: replicaErrorCode(a.resp.GetError().GetCode()), Message: a.resp.GetError().GetMessage()})
		case !a.resp.GetPromised():
			refused++
			highest = max(highest, a.resp.GetHighest().GetCounter())
		default:
			ps.states = append(ps.states, coordinator.Promise{From: a.from, Accepted: ballotOf(a.resp.GetAccepted().GetBallot()), Committed: ballotOf(a.resp.GetCommitted())})
			ps.accepted = append(ps.accepted, a.resp.GetAccepted())
			ps.origins = append(ps.origins, ballotOf(a.resp.GetCommittedOrigin()))
			ps.maxWritten = max(ps.maxWritten, maxTimestamp(a.resp.GetRead()))
			reads = append(reads, a)
		}
		return len(ps.states) >= required || refused+failed+rateLimits > n-required
	})
	switch {
	case len(ps.states) >= required:
	case rateLimits > 0 && rateLimits+failed > n-required:
		rl.Op, rl.RejectedBy, rl.Limit = coordinator.OpWrite, coordinator.RejectedByReplicas, p.t.Limit(coordinator.OpWrite)
		if p.serialRead {
			rl.Op, rl.Limit = coordinator.OpRead, p.t.Limit(coordinator.OpRead)
		}
		return nil, nil, nil, &rl, 0, nil
	case refused > 0:
		return nil, nil, nil, nil, highest, nil
	case failed > n-required:
		return nil, nil, nil, nil, 0, &coordinator.FailureError{Op: coordinator.OpWrite, Consistency: coordinator.Serial, Received: len(ps.states), Required: required, Failures: failed, Err: firstErr}
	default:
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, nil, 0, err
		}
		return nil, nil, nil, nil, 0, p.timeout(len(ps.states), required)
	}
	if p.serialRead {
		return &ps, nil, nil, nil, 0, nil // the read follows the prepare (executeSerialSelect)
	}
	m := coordinator.NewMerger(p.t, 0, false, e.now().Unix())
	resps := make([]coordinator.Response, len(reads))
	for i, r := range reads {
		resps[i] = coordinator.Response{From: r.from, Payload: r.resp.GetRead()}
		if err := addAnswer(m, p.t, resps[i], 0); err != nil {
			return nil, nil, nil, nil, 0, err
		}
	}
	if need := m.Merge(); len(need) > 0 {
		return nil, nil, nil, nil, 0, fmt.Errorf("coordinator: lightweight transaction's read of %s stopped early at a replica", p.t.QualifiedName())
	}
	rec := m.Result()
	return &ps, rec.Rows, readStatic(p.t, resps, &rec), nil, 0, nil
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// proposeAndCommit proposes m, first proposed at origin, at ballot b until cdl and, once
// required replicas accepted it, commits it at p.commitCL until dl. done is false when a competing ballot kept it
// from a quorum (the round is lost; the accepted replicas, when there are some, hold it for a
// later proposer to complete or supersede).
// proposeHedgeMin and proposeHedgeMax bound how long a proposal waits for the replicas whose
// promises made the prepare's quorum before it goes to the other live ones too.
const (
	proposeHedgeMin = 5 * time.Millisecond
	proposeHedgeMax = 100 * time.Millisecond
)

// proposeAndCommit proposes m at ballot b and, once a quorum accepted it, commits it. The
// proposal goes first to promised, the replicas whose promises made the prepare's quorum (all of
// live when nil): a quorum that just answered, so an uncontended round sends no proposal to the
// other replicas (which get the commit). Those get it too when one of promised fails or refuses,
// or has not answered after the hedge (the median LWT latency, within [5 ms, 100 ms]).
func (e *Executor) proposeAndCommit(ctx context.Context, pt PaxosTransport, p casPartition, g casGroup, promised []coordinator.NodeID, b, origin coordinator.Ballot, m *replicapb.Mutation, cdl, dl time.Time) (done bool, acceptedBy int, err error) {
	callCtx, cancel := context.WithTimeout(ctx, cdl.Sub(e.now())) // cdl is on the executor's clock
	defer cancel()
	prop := &replicapb.PaxosProposal{Ballot: ballotProto(b), Mutation: m, Origin: ballotProto(origin)}
	live, required := g.live, g.required
	first := func(id coordinator.NodeID) bool { return promised == nil || slices.Contains(promised, id) }
	p50, _ := e.lwt.latencies()
	hedge := min(max(p50, proposeHedgeMin), proposeHedgeMax)
	widen := make(chan struct{}) // closed when the others are to get the proposal now
	var widened bool
	widenNow := func() {
		if !widened {
			widened = true
			close(widen)
		}
	}
	var accepted, refused, failed, sent int
	var acceptors []coordinator.NodeID // hold prop: their commit goes by reference
	type proposed struct {
		from coordinator.NodeID
		resp *replicapb.PaxosProposeResponse
		sent bool
	}
	fanOut(callCtx, e.calls.Go, live, func(ctx context.Context, id coordinator.NodeID) proposed {
		if !first(id) {
			timer := time.NewTimer(hedge)
			defer timer.Stop()
			select {
			case <-widen:
			case <-timer.C:
			case <-ctx.Done():
				return proposed{from: id} // not sent: the others made the quorum
			}
		}
		resp, err := pt.PaxosPropose(ctx, id, &replicapb.PaxosProposeRequest{Proposal: prop})
		if err != nil {
			return proposed{from: id, sent: true}
		}
		return proposed{from: id, resp: resp, sent: true}
	}, func(a proposed) bool {
		if !a.sent {
			return false // the round is over
		}
		sent++
		switch r := a.resp; {
		case r == nil || r.GetStatus() != replicapb.Status_STATUS_OK:
			failed++
			widenNow()
		case r.GetAccepted():
			accepted++
			acceptors = append(acceptors, a.from)
		default:
			refused++
			widenNow()
		}
		// A lost proposal waits for every answer: a replica that has not answered may have
		// accepted it, which the proposer must know (runCAS: uncertain).
		return accepted >= required
	})
	if accepted < required {
		if refused > 0 && failed == 0 && refused+accepted == sent && ctx.Err() == nil && e.now().Before(cdl) {
			return false, accepted, nil
		}
		if err := ctx.Err(); err != nil {
			return false, accepted, err
		}
		return false, accepted, p.timeout(accepted, required)
	}
	// Chosen. The commit applies it on every replica (under LOCAL_SERIAL the other data
	// centers' too); the statement waits for the commit level's acks.
	commitTo := live
	if len(g.remote) > 0 {
		commitTo = slices.Concat(live, g.remote)
	}
	need, counts := e.commitNeed(p, g)
	full := &replicapb.PaxosCommitRequest{Proposal: prop}
	// The replicas that accepted prop get it by reference (ballot and partition, no rows),
	// the others in full; a replica that no longer holds it answers so and gets it in full.
	byRef := &replicapb.PaxosCommitRequest{
		Proposal:  &replicapb.PaxosProposal{Ballot: prop.Ballot, Origin: prop.Origin},
		Partition: &replicapb.Mutation{TableId: m.TableId, Token: m.Token, PartitionKey: m.PartitionKey},
	}
	commitFor := func(id coordinator.NodeID) *replicapb.PaxosCommitRequest {
		if slices.Contains(acceptors, id) {
			return byRef
		}
		return full
	}
	// The replicas down now, and those that fail the commit, get it as a hint, as Cassandra
	// hints a commit: the row reaches them when they are back, as a write's does.
	hint := func(coordinator.NodeID) {}
	if e.hints != nil && !emptyMutation(m) {
		hint = func(id coordinator.NodeID) {
			if id != e.localID {
				e.hints.StoreHint(id, m)
			}
		}
	}
	for _, id := range g.down {
		hint(id)
	}
	acks, err := e.commitAll(ctx, pt, commitTo, counts, commitFor, full, hint, need, dl)
	if err != nil {
		return false, accepted, err
	}
	if acks < need {
		if err := ctx.Err(); err != nil {
			return false, accepted, err
		}
		return false, accepted, p.timeout(acks, need)
	}
	return true, accepted, nil
}

// commitNeed returns how many acknowledgements of the commit the statement waits for, at its
// commit level, and which replicas' count: under a LOCAL level this data center's; under
// LOCAL_SERIAL placed per data center the others count towards QUORUM or ALL of every replica;
// else QUORUM is the Paxos quorum.
func (e *Executor) commitNeed(p casPartition, g casGroup) (int, func(coordinator.NodeID) bool) {
	all := func(coordinator.NodeID) bool { return true }
	switch {
	case p.commitCL.Local() && g.perDC:
		dc := e.ring.DataCenter(e.localID)
		local := func(id coordinator.NodeID) bool { return e.ring.DataCenter(id) == dc }
		return coordinator.BlockFor(p.commitCL, g.localTotal), local
	case g.localOnly:
		return coordinator.BlockFor(p.commitCL, g.total), all
	case p.commitCL == coordinator.Quorum || p.commitCL == coordinator.LocalQuorum: // LOCAL_QUORUM without data centers is QUORUM
		return g.required, all
	}
	return coordinator.BlockFor(p.commitCL, g.total), all
}

// commitAll sends commitFor(id) to every replica id of live and returns once need of those counts
// accepts applied it, or every one answered. A commit by reference that a replica does not
// answer as applied is sent again as full; a replica that does not apply either gets hint(id). The calls run detached from the client, as a write's do (a commit must
// reach every replica it can), bounded by dl and by Close; the executor owns them (await's
// flights).
func (e *Executor) commitAll(ctx context.Context, pt PaxosTransport, live []coordinator.NodeID, counts func(coordinator.NodeID) bool, commitFor func(coordinator.NodeID) *replicapb.PaxosCommitRequest, full *replicapb.PaxosCommitRequest, hint func(coordinator.NodeID), need int, dl time.Time) (int, error) {
	rpcCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dl.Sub(e.now()))
	f := &flight{cancel: cancel}
	f.pending.Store(1)
	if !e.register(f) {
		cancel()
		return 0, coordinator.ErrClosed
	}
	defer e.release(f)
	answers := make(chan bool, len(live))
	for _, id := range live {
		if !e.extend(f) {
			return 0, coordinator.ErrClosed
		}
		e.calls.Go(func() {
			defer e.wg.Done()
			defer e.release(f)
			commit := commitFor(id)
			resp, err := pt.PaxosCommit(rpcCtx, id, commit)
			if commit != full && (err != nil || resp.GetStatus() != replicapb.Status_STATUS_OK || resp.GetProposalMissing()) && rpcCtx.Err() == nil {
				// Not held (or a replica of a release without commits by reference, which
				// refuses one as malformed): the proposal itself.
				resp, err = pt.PaxosCommit(rpcCtx, id, full)
			}
			applied := err == nil && resp.GetStatus() == replicapb.Status_STATUS_OK && !resp.GetProposalMissing()
			if !applied {
				hint(id)
			}
			answers <- applied && counts(id)
		})
	}
	acks := 0
	for range live {
		select {
		case ok := <-answers:
			if ok {
				acks++
			}
			if acks >= need {
				return acks, nil
			}
		case <-ctx.Done():
			return acks, ctx.Err()
		case <-rpcCtx.Done():
			return acks, nil // the deadline: the caller reports the timeout
		}
	}
	return acks, nil
}

// serialLevel returns the Paxos level a conditional statement asked for: SERIAL when it did
// not say, and only SERIAL or LOCAL_SERIAL (Cassandra's error otherwise).
func serialLevel(cl coordinator.Consistency) (coordinator.Consistency, error) {
	switch {
	case cl == 0:
		return coordinator.Serial, nil
	case cl.IsSerial():
		return cl, nil
	}
	return 0, &coordinator.InvalidError{Err: fmt.Errorf("Invalid consistency for conditional update. Must be one of SERIAL or LOCAL_SERIAL (got %v as serial consistency)", cl)}
}

// executeConditional runs a conditional INSERT, UPDATE or DELETE (a lightweight transaction) at
// commit consistency cl and answers Cassandra's result: the [applied] column, and when not
// applied the current values (every column of the existing row for IF NOT EXISTS, the
// condition columns for IF conditions) when the row exists.
func (e *Executor) executeConditional(ctx context.Context, st cql.Statement, keyspace string, cl coordinator.Consistency, req *coordinator.Statement) (*schema.Table, coordinator.Result, error) {
	if cl.IsSerial() {
		return nil, coordinator.Result{}, &coordinator.InvalidError{Err: fmt.Errorf("%v is not supported as conditional update commit consistency; use ONE, QUORUM or ALL (the Paxos round runs at the serial consistency)", cl)}
	}
	serial, err := serialLevel(req.SerialConsistency)
	if err != nil {
		return nil, coordinator.Result{}, err
	}
	s := e.schema.Schema()
	now := e.now()
	w, err := s.BindWriteAt(st, keyspace, req.Values, now)
	if err != nil {
		return nil, coordinator.Result{}, invalid(st, err)
	}
	t := w.Table
	if w.HasTimestamp { // the Paxos round picks the timestamp: its ballot's
		return t, coordinator.Result{}, &coordinator.InvalidError{Err: errors.New("Cannot provide custom timestamp for conditional updates")}
	}
	conds, err := s.BindConditions(st, t, req.Values)
	if err != nil {
		return t, coordinator.Result{}, invalid(st, err)
	}
	c := cql.ConditionsOf(st)
	// staticOnly: a write of static columns alone that restricts the partition key only; its
	// conditions (IF EXISTS and IF NOT EXISTS too) are on the partition's static row.
	staticOnly := staticWrite(t, w)
	switch {
	case staticOnly:
		for _, cond := range conds {
			if !cond.Column.Static {
				return t, coordinator.Result{}, &coordinator.InvalidError{Pos: c.IfPos, Err: fmt.Errorf("Invalid restriction on clustering column %s since the %s statement modifies only static columns (its IF condition on %s needs the row's whole PRIMARY KEY)",
					cql.QuoteIdent(t.Clustering[0].Name), schema.StatementName(st), cql.QuoteIdent(cond.Column.Name))}
			}
		}
	case !w.Clustering.IsRow(t):
		return t, coordinator.Result{}, &coordinator.InvalidError{Pos: c.IfPos, Err: errors.New("a conditional statement must restrict every PRIMARY KEY column with = (it reads and writes one row), or only the partition key when it writes static columns alone")}
	}
	if err := e.checkFormat(st, w); err != nil {
		return t, coordinator.Result{}, err
	}
	if err := refuseListReads(w, st.Pos(), "in a conditional statement"); err != nil {
		return t, coordinator.Result{}, err
	}
	if err := checkWriteSize(w, st.Pos(), e.maxMutation); err != nil {
		return t, coordinator.Result{}, err
	}
	rf, err := replicationFactor(s, t)
	if err != nil {
		return t, coordinator.Result{}, err
	}
	var res coordinator.Result
	if err := e.judgeScopes(ctx, t.Keyspace, t.Name, coordinator.OpWrite, 1, &res.Warnings); err != nil {
		return t, coordinator.Result{}, err
	}
	p := casPartitionOf(t, w.PartitionKey, cl)
	p.serial, p.usingTimeout = serial, w.Timeout
	token := p.token
	switch {
	case staticOnly:
		p.read.Limit = 1 // the static row is all it needs; every answer carries it
	case len(w.Clustering.Prefix) > 0:
		p.read.Filter = &replicapb.ClusteringFilter{Equal: w.Clustering.Prefix}
	}
	var current *coordinator.ClusteredRow
	var static *cell.Row
	decide := func(rows []coordinator.ClusteredRow, st *cell.Row, b coordinator.Ballot) (*replicapb.Mutation, error) {
		current, static = nil, st
		if len(rows) > 0 && !staticOnly {
			current = &rows[0]
		}
		if !conditionsHold(c, conds, current, static, staticOnly, now.Unix()) {
			return nil, nil
		}
		m := &replicapb.Mutation{TableId: uint64(t.ID), PartitionKey: w.PartitionKey, Token: token}
		fillMutation(m, w, b.Micros, now.Unix(), nil) // no list read: refuseListReads
		return m, nil
	}
	dl := deadline(ctx, now, timeoutOr(e.writeTimeout, w.Timeout))
	_, applied, err := e.runCAS(ctx, p, rf, dl, decide)
	if err != nil {
		return t, coordinator.Result{}, err
	}
	out := casResult(t, w, c, conds, applied, current, static, staticOnly, e.now().Unix())
	out.Warnings = res.Warnings
	return t, out, nil
}

// staticWrite reports whether w writes (or deletes) static columns of t alone, restricting
// only the partition key: Cassandra's static-only modification.
func staticWrite(t *schema.Table, w *schema.Write) bool {
	if len(t.Clustering) == 0 || len(w.Clustering.Prefix) > 0 || w.Clustering.Lower != nil || w.Clustering.Upper != nil || len(w.Cells) == 0 {
		return false
	}
	for _, c := range w.Cells {
		if !c.Column.Static {
			return false
		}
	}
	return true
}

// conditionsHold evaluates an IF clause on the row's current state (nil: no live row) and the
// partition's static row (nil: none) at now, as Cassandra 4.1: a condition on a static column
// reads the static row; with staticOnly (a write of static columns alone) IF [NOT] EXISTS
// asks whether the static row has a live cell, else whether the row is live.
func conditionsHold(c *cql.Conditions, conds []schema.Condition, row *coordinator.ClusteredRow, static *cell.Row, staticOnly bool, now int64) bool {
	exists := row != nil
	if staticOnly {
		exists = staticLive(static, now)
	}
	switch {
	case c.NotExists:
		return !exists
	case c.Exists:
		return exists
	}
	for _, cond := range conds {
		if !cond.Applies(conditionValue(cond.Column, row, static, now)) {
			return false
		}
	}
	return true
}

// staticLive reports whether the static row holds a live cell at now.
func staticLive(static *cell.Row, now int64) bool {
	return static != nil && static.Live(now, cell.NoTimestamp)
}

// conditionValue returns the live value of col, whole (a non-frozen collection's or user type's
// assembled from its elements): from the static row for a static column, else from row; nil
// when there is none.
func conditionValue(col *schema.Column, row *coordinator.ClusteredRow, static *cell.Row, now int64) []byte {
	if col.Static {
		if static == nil {
			return nil
		}
		row = &coordinator.ClusteredRow{Row: *static}
	}
	if row == nil {
		return nil
	}
	if col.Type.MultiCell() {
		return collectionValue(col, row.Row, now)
	}
	return liveValue(row, col.Name, now)
}

// liveValue returns the live value of column name in row, nil when the row or the cell does
// not exist, is deleted or expired.
func liveValue(row *coordinator.ClusteredRow, name string, now int64) []byte {
	if row == nil {
		return nil
	}
	cl, ok := liveCell(row.Row, name, now)
	if !ok {
		return nil
	}
	return cl.Value
}

// appliedColumn is the first column of every lightweight transaction's result.
var appliedColumn = coordinator.RowColumn{Name: "[applied]", Type: schema.TypeBoolean}

// casResult builds a conditional statement's result, in Cassandra's shape: one row with
// [applied]; when not applied and the row (or, for a condition on static columns, the static
// row) exists, with its columns (IF NOT EXISTS: every column, in the table's order; IF
// conditions: the primary key and the condition columns), static values from the static row,
// clustering values null when the row does not exist.
func casResult(t *schema.Table, w *schema.Write, c *cql.Conditions, conds []schema.Condition, applied bool, row *coordinator.ClusteredRow, static *cell.Row, staticOnly bool, now int64) coordinator.Result {
	rows := &coordinator.Rows{Keyspace: t.Keyspace, Table: t.Name, Columns: []coordinator.RowColumn{appliedColumn}}
	vals := [][]byte{schema.EncodeBoolean(applied)}
	exists := row != nil
	if !exists && staticLive(static, now) {
		exists = staticOnly || slices.ContainsFunc(conds, func(cond schema.Condition) bool { return cond.Column.Static })
	}
	if !applied && exists {
		var cols []*schema.Column
		switch {
		case c.NotExists || c.Exists:
			for i := range t.Columns {
				cols = append(cols, &t.Columns[i])
			}
		default:
			seen := map[string]bool{}
			for _, cond := range conds {
				if !seen[cond.Column.Name] {
					seen[cond.Column.Name] = true
					cols = append(cols, cond.Column)
				}
			}
			slices.SortFunc(cols, func(a, b *schema.Column) int { return a.Index - b.Index })
		}
		npk := len(t.PartitionKey)
		for _, col := range cols {
			rows.Columns = append(rows.Columns, coordinator.RowColumn{Name: col.Name, Type: col.Type})
			switch col.Kind {
			case schema.PartitionKeyColumn:
				vals = append(vals, w.PartitionKey[col.Index])
			case schema.ClusteringColumn:
				if row == nil {
					vals = append(vals, nil)
				} else {
					vals = append(vals, row.Clustering[col.Index-npk])
				}
			default:
				vals = append(vals, conditionValue(col, row, static, now))
			}
		}
	}
	rows.Values = [][][]byte{vals}
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: rows}
}

// executeSerialSelect runs a SELECT at SERIAL: a Paxos prepare on its partition, which
// completes any lightweight transaction in progress there, then the read at QUORUM. The
// limiter counts it as one read of the partition, on the prepare; the read that follows is
// not counted again.
func (e *Executor) executeSerialSelect(ctx context.Context, st *cql.SelectStmt, keyspace string, serial coordinator.Consistency, req *coordinator.Statement) (*schema.Table, coordinator.Result, error) {
	s := e.schema.Schema()
	now := e.now()
	r, err := s.BindReadAt(st, keyspace, req.Values, now)
	if err != nil {
		return nil, coordinator.Result{}, invalid(st, err)
	}
	rf, err := replicationFactor(s, r.Table)
	if err != nil {
		return r.Table, coordinator.Result{}, err
	}
	var keyBuf [64]byte
	token := partitioner.Token(partitioner.AppendKey(keyBuf[:0], r.PartitionKey))
	p := casPartition{
		t: r.Table, token: token, pk: r.PartitionKey, serialRead: true, commitCL: coordinator.Quorum, serial: serial,
		read: &replicapb.ReadRequest{TableId: uint64(r.Table.ID), PartitionKey: r.PartitionKey, Token: token, Limit: 1},
	}
	p.usingTimeout = r.Timeout
	if serial == coordinator.LocalSerial && len(rf.DataCenters) > 0 {
		// The quorum the prepare ran over (every replica without data centers): the completion
		// of a proposal in progress commits at it, and the read reads at it.
		p.commitCL = coordinator.LocalQuorum
	}
	dl := deadline(ctx, now, timeoutOr(e.readTimeout, r.Timeout))
	if _, _, err := e.runCAS(ctx, p, rf, dl, func([]coordinator.ClusteredRow, *cell.Row, coordinator.Ballot) (*replicapb.Mutation, error) {
		return nil, nil
	}); err != nil {
		return r.Table, coordinator.Result{}, err
	}
	readCL := p.commitCL
	return e.executeSelect(context.WithValue(ctx, serialPreparedKey{}, true), st, keyspace, readCL, req)
}

// serialPreparedKey marks the context of a SERIAL read's QUORUM read, which its prepare counted.
type serialPreparedKey struct{}

// serialPrepared reports whether ctx is a SERIAL read's, whose read the limiter does not count
// again.
func serialPrepared(ctx context.Context) bool {
	v, _ := ctx.Value(serialPreparedKey{}).(bool)
	return v
}

// emptyMutation reports whether m writes nothing: no rows, static row or tombstones.
func emptyMutation(m *replicapb.Mutation) bool {
	return len(m.GetRows()) == 0 && m.GetStaticRow() == nil && m.PartitionDeletion == nil && len(m.GetRangeTombstones()) == 0
}
