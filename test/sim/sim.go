package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/schema"
)

// epoch is the wall-clock time, in unix nanoseconds, of simulated time zero: a whole second, so
// that with no skew every node's second boundaries fall on whole simulated seconds.
const epoch = 1_700_000_000 * int64(time.Second)

// Limiter labels of the simulated table's two counters, as a replica assigns them to (table, op).
const (
	labelWrite uint32 = 1
	labelRead  uint32 = 2
)

// Result is what one scenario measured. Counts are over the operations that arrived in the
// measurement window (after the warm-up, before the end of the run); each is followed to its
// end, even past the end of the window.
type Result struct {
	Scenario Scenario
	// Limit is L, Window the length of the measurement window.
	Limit  uint32
	Window time.Duration

	// The hot partition. Offered = Accepted + Rejected + Failed.
	Offered        int
	Accepted       int
	AcceptedReads  int
	AcceptedWrites int
	Rejected       int // ended with the rate-limit error
	Failed         int // ended unavailable, timed out or failed
	// Wasted counts replica operations performed (a write applied or a read served, by a
	// replica) for hot-partition operations that were rejected or failed in the end.
	Wasted int
	// Enforced counts hot-partition operations that at least two replicas decided with
	// account-and-enforce; Disagreed those among them that some replicas admitted and others
	// rejected.
	Enforced  int
	Disagreed int

	// The cold partitions (background traffic and flood together).
	ColdOffered  int
	ColdRejected int
	ColdFailed   int
	// Evictions is the number of live counters the nodes' tables evicted during the window.
	Evictions uint64

	// PartialWrites counts hot-partition writes that ended rejected or failed although some
	// replica applied them: the client got an error, yet the write exists on those replicas
	// (and read repair would spread it). ReplicaVersions is, per node, how many hot-partition
	// writes it applied over the whole run, and ReplicaOps how many operations it performed.
	PartialWrites int
	// AckedRejected counts hot-partition writes that succeeded although some replica rejected
	// them: that replica lacks a row the client was told is written (until hints or repair).
	AckedRejected   int
	ReplicaVersions []uint64
	ReplicaOps      []uint64

	// LearnedRejected counts hot-partition operations rejected by a coordinator that is not a
	// replica, on the counter it learned from replicas' rejections (kvnode only): rejections
	// that cost no replica request.
	LearnedRejected int

	// FirstSecond is, for an onset scenario, the hot partition's operations accepted among
	// those that arrived in the first second from the onset (the window then starts after it).
	FirstSecond int
	// Clamped counts stamps the replicas clamped (partitionlimit.Stamp) over the whole run.
	Clamped int

	// Events is the number of events the run processed, warm-up included.
	Events int
}

// FirstSecondOverLimit returns FirstSecond over L.
func (r Result) FirstSecondOverLimit() float64 { return float64(r.FirstSecond) / float64(r.Limit) }

// AcceptedOverLimit returns the hot partition's accepted rate over the window divided by the
// limit. For a mix of reads and writes it is the sum of both ops' rates over L.
func (r Result) AcceptedOverLimit() float64 {
	return float64(r.Accepted) / r.Window.Seconds() / float64(r.Limit)
}

// WastedPerAccepted returns Wasted/Accepted: replica operations performed for operations that
// were rejected or failed, per accepted operation. When nothing was accepted it returns Wasted.
func (r Result) WastedPerAccepted() float64 {
	return float64(r.Wasted) / float64(max(r.Accepted, 1))
}

// Disagreement returns Disagreed/Enforced, the fraction of operations decided by two or more
// enforcing replicas on which those replicas disagreed; 0 when no operation was (see
// HasDisagreement).
func (r Result) Disagreement() float64 {
	if r.Enforced == 0 {
		return 0
	}
	return float64(r.Disagreed) / float64(r.Enforced)
}

// HasDisagreement reports whether any operation was decided by two or more enforcing replicas,
// that is whether Disagreement measures anything. It does not on the local-check path (a
// replica coordinator decides alone), at RF=1, and for reads at ONE.
func (r Result) HasDisagreement() bool { return r.Enforced > 0 }

// node is one simulated node: its limiter table and its clock.
type node struct {
	table *partitionlimit.Table
	// learned is the coordinator's table of partitions it learned are hot from its replicas'
	// rejections, as the shell keeps it (kvnode only).
	learned *partitionlimit.Table
	offset  int64 // clock offset in nanoseconds: local time = epoch + sim time + offset
	crashed bool  // the node crashed before the run; it drops every message

	// The replica's in-memory state, in place of storage: how many writes to the hot partition
	// it applied (the partition's version on this replica), and how many operations of any
	// partition it performed.
	hotVersion uint64
	performed  uint64
}

// Outcome classes of an operation.
const (
	outNone uint8 = iota
	outSuccess
	outRateLimited
	outFailed
)

// opState is one client operation in flight: its coordinator state machine and what the
// simulator measures about it.
type opState struct {
	req      *coordinator.Request
	gen      uint32
	coord    int32
	token    int64
	label    uint32
	draw     float64
	hot      bool
	measured bool
	first    bool  // an onset row's operation that arrived in the first second from the onset
	learned  bool  // the coordinator checked its learned copy of the replicas' counter
	ticking  bool  // an evTick is scheduled for the deadline
	pending  int32 // Sends delivered or in flight whose Response has not reached the coordinator
	applied  int32 // replicas that performed the operation
	// rejected: some replica rejected the operation (any mode), which it then lacks.
	rejected bool
	admits   int32 // enforcing replicas that admitted
	rejects  int32 // enforcing replicas that rejected
}

// simTable is the table id of the simulated partitions; they all belong to one table.
const simTable schema.TableID = 1

// opOf returns the operation a limiter label counts, and labelOf the label of an operation.
func opOf(label uint32) coordinator.Op {
	if label == labelRead {
		return coordinator.OpRead
	}
	return coordinator.OpWrite
}

func labelOf(op coordinator.Op) uint32 {
	if op == coordinator.OpRead {
		return labelRead
	}
	return labelWrite
}

// stream is one arrival process.
type stream struct {
	kind eventKind
	rate float64 // operations per second
	next float64 // arrival time of the next operation, in simulated nanoseconds
}

// sim is the state of one scenario's run. It is driven by one goroutine.
type sim struct {
	sc  Scenario
	o   Options
	rng *rand.Rand
	q   queue

	nodes []node
	ids   []coordinator.NodeID

	end, warm   int64 // simulated nanoseconds
	onset       int64 // an onset row's onset, in simulated nanoseconds; measured from onset+1s
	hotToken    int64
	coldTokens  []int64
	rrHot       int // round-robin position of outside coordinators for the hot partition
	rrCold      int // and for cold partitions
	streams     [3]stream
	ops         []opState
	free        []int32
	evictStart  uint64
	res         Result
	err         error
	replicaBuf  []int
	candBuf     []int
	paramsReps  []coordinator.Replica
	paramsOrder []coordinator.NodeID

	// Account propagation: batchers[i] is coordinator i's propagation batcher, the shell's own
	// (coordinator.Batcher); batches holds batches in flight (evDeltas), freeBatches their free
	// indices.
	batchers    []coordinator.Batcher
	batches     [][]coordinator.Delta
	freeBatches []int32
	// urgent[i] is set while coordinator i has an evUrgent drain scheduled.
	urgent []bool
}

// Run simulates scenario sc with options o (zero fields take their defaults) and returns what it
// measured. The run is deterministic: its only randomness is one PCG generator seeded with
// o.Seed and a digest of sc, so the same (sc, o) always gives the same Result.
func Run(sc Scenario, o Options) (Result, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	if err := sc.Validate(o); err != nil {
		return Result{}, err
	}
	s, err := newSim(sc, o)
	if err != nil {
		return Result{}, err
	}
	return s.run()
}

func newSim(sc Scenario, o Options) (*sim, error) {
	s := &sim{
		sc:   sc,
		o:    o,
		rng:  rand.New(rand.NewPCG(o.Seed, sc.key())),
		end:  int64(o.Duration),
		warm: int64(o.Warmup),
	}
	n := o.Nodes
	if sc.Routing == LocalDC {
		n = 2 * sc.RF // two data centers of RF nodes: every node replicates every partition
	}
	s.nodes = make([]node, n)
	s.ids = make([]coordinator.NodeID, n)
	for i := range s.nodes {
		t, err := partitionlimit.New(partitionlimit.Options{Capacity: o.Capacity, NoOnsetBound: sc.Configuration != Kvnode, NoNoiseBound: sc.Configuration != Kvnode})
		if err != nil {
			return nil, fmt.Errorf("sim: node %d: %w", i, err)
		}
		s.nodes[i] = node{table: t, offset: int64(skewFactor(i) * float64(sc.Skew))}
		if sc.Configuration == Kvnode && !o.NoLearning {
			if s.nodes[i].learned, err = partitionlimit.New(partitionlimit.Options{Capacity: coordinator.DefaultLearnedCapacity, LearnedCopies: true}); err != nil {
				return nil, fmt.Errorf("sim: node %d: %w", i, err)
			}
		}
		s.ids[i] = coordinator.NodeID(fmt.Sprintf("n%d", i))
	}
	if sc.ReplicaDown {
		s.nodes[sc.RF-1].crashed = true
	}
	s.hotToken = int64(s.rng.Uint64())
	s.coldTokens = make([]int64, o.ColdPartitions)
	for i := range s.coldTokens {
		s.coldTokens[i] = int64(s.rng.Uint64())
	}
	s.streams[0] = stream{kind: evHot, rate: sc.Offered * float64(o.Limit)}
	s.streams[1] = stream{kind: evCold, rate: max(o.ColdRate, 0)}
	if sc.Flood {
		s.streams[2] = stream{kind: evFlood, rate: o.FloodRate}
	}
	if sc.Configuration == Kvnode {
		s.batchers = make([]coordinator.Batcher, n)
		s.urgent = make([]bool, n)
	}
	s.res = Result{Scenario: sc, Limit: o.Limit, Window: o.Duration - o.Warmup}
	if sc.Onset {
		s.onset = s.warm + int64(s.rng.Float64()*float64(time.Second))
		s.res.Window = time.Duration(s.end - s.onset - int64(time.Second))
	}
	return s, nil
}

func (s *sim) run() (Result, error) {
	for i := range s.streams {
		st := &s.streams[i]
		if st.rate <= 0 {
			continue
		}
		if s.o.Arrival == Smooth {
			st.next = s.rng.Float64() * 1e9 / st.rate
		} else {
			st.next = s.rng.ExpFloat64() * 1e9 / st.rate
		}
		if st.kind == evHot && !s.sc.Again {
			st.next += float64(s.onset) // idle until the onset (0 but in onset rows)
		}
		if int64(st.next) < s.end {
			s.q.push(event{at: int64(st.next), kind: st.kind})
		}
	}
	s.q.push(event{at: s.warm, kind: evWarm})
	if s.batchers != nil {
		// Each coordinator's propagation ticker starts at its own phase.
		for i := range s.nodes {
			s.q.push(event{at: int64(s.rng.Float64() * float64(s.o.PropagationInterval)), kind: evFlush, node: int32(i)})
		}
	}
	for s.q.len() > 0 && s.err == nil {
		e := s.q.pop()
		s.res.Events++
		switch e.kind {
		case evHot, evCold, evFlood:
			s.arrival(e)
		case evDeliver:
			s.deliver(e)
		case evRespond:
			s.respond(e)
		case evTick:
			s.tick(e)
		case evFlush:
			s.flush(e)
		case evUrgent:
			s.urgent[e.node] = false
			s.drain(e)
		case evDeltas:
			s.applyDeltas(e)
		case evWarm:
			s.evictStart = s.evictions(e.at)
		}
	}
	if s.err != nil {
		return Result{}, s.err
	}
	s.res.Evictions = s.evictions(s.end) - s.evictStart
	for _, n := range s.nodes {
		s.res.ReplicaVersions = append(s.res.ReplicaVersions, n.hotVersion)
		s.res.ReplicaOps = append(s.res.ReplicaOps, n.performed)
	}
	return s.res, nil
}

// evictions returns the evictions of all tables so far.
func (s *sim) evictions(at int64) uint64 {
	var n uint64
	for i := range s.nodes {
		n += s.nodes[i].table.Stats(s.clock(i, at)).Evictions
	}
	return n
}

// clock returns node i's local wall-clock time at simulated time at.
func (s *sim) clock(i int, at int64) time.Time {
	return time.Unix(0, epoch+at+s.nodes[i].offset)
}

// detectedDown reports whether the failure detector (and so every coordinator and driver)
// considers node i down at simulated time at.
func (s *sim) detectedDown(i int, at int64) bool {
	return s.nodes[i].crashed && at >= int64(max(s.o.DetectAfter, 0))
}

// dc returns node i's data center: 0, or 1 for the second half of a LocalDC cluster.
func (s *sim) dc(i int) int {
	if s.sc.Routing == LocalDC && i >= s.sc.RF {
		return 1
	}
	return 0
}

// latency samples one network hop from node a to node b; a node's messages to itself are free,
// and one between data centers crosses the WAN.
func (s *sim) latency(a, b int) int64 {
	if a == b {
		return 0
	}
	if s.dc(a) != s.dc(b) {
		return int64(s.o.WANMinLatency) + int64(s.rng.Float64()*float64(s.o.WANMaxLatency-s.o.WANMinLatency))
	}
	return int64(s.o.MinLatency) + int64(s.rng.ExpFloat64()*float64(s.o.MeanExtraLatency))
}

// nodeIndex returns the index of the node named id.
func (s *sim) nodeIndex(id coordinator.NodeID) int {
	for i := range s.ids {
		if s.ids[i] == id {
			return i
		}
	}
	return -1
}

// arrival starts the operation a stream's event announces and schedules the stream's next one.
func (s *sim) arrival(e event) {
	st := &s.streams[e.kind-evHot]
	token := s.hotToken
	switch e.kind {
	case evCold:
		token = s.coldTokens[s.rng.IntN(len(s.coldTokens))]
	case evFlood:
		token = int64(s.rng.Uint64())
	}
	s.start(e.at, e.kind == evHot, e.kind == evFlood, token)
	if s.o.Arrival == Smooth {
		st.next += 1e9 / st.rate
	} else {
		st.next += s.rng.ExpFloat64() * 1e9 / st.rate
	}
	if burst := float64(AgainBurst(s.o.Warmup)); e.kind == evHot && s.sc.Again && st.next >= burst && st.next < float64(s.onset) {
		st.next += float64(s.onset) - burst // the pause: the rest of the stream moves to the onset
	}
	if at := int64(st.next); at < s.end {
		s.q.push(event{at: max(at, e.at), kind: e.kind})
	}
}

// replicasOf returns the replica nodes of a partition in ring order: nodes 0 … RF−1 for the hot
// partition, RF consecutive nodes from a position the token picks for a cold one.
func (s *sim) replicasOf(hot bool, token int64) []int {
	r := s.replicaBuf[:0]
	if s.sc.Routing == LocalDC {
		for k := range s.nodes {
			r = append(r, k)
		}
		s.replicaBuf = r
		return r
	}
	first := 0
	if !hot {
		first = int(mix64(uint64(token)) % uint64(len(s.nodes)))
	}
	for k := range s.sc.RF {
		r = append(r, (first+k)%len(s.nodes))
	}
	s.replicaBuf = r
	return r
}

// route returns the coordinator the driver picks for an operation on a partition with the given
// replicas. Drivers notice a crashed node at once (its connections fail), before the cluster's
// failure detector does. A driver that finds no live node of the kind its routing wants (every
// replica down) falls back to the live nodes outside the replica set, round-robin; -1 means no
// node is live.
func (s *sim) route(hot bool, replicas []int) int {
	rr := &s.rrCold
	if hot {
		rr = &s.rrHot
	}
	live := s.candBuf[:0]
	switch s.sc.Routing {
	case FixedFirst:
		for _, r := range replicas {
			if !s.nodes[r].crashed {
				return r
			}
		}
	case RandomReplica, LocalDC:
		dc := -1 // any
		if s.sc.Routing == LocalDC {
			dc = s.rng.IntN(2) // the client's data center
		}
		for _, r := range replicas {
			if !s.nodes[r].crashed && (dc < 0 || s.dc(r) == dc) {
				live = append(live, r)
			}
		}
		if len(live) > 0 {
			s.candBuf = live
			return live[s.rng.IntN(len(live))]
		}
	}
	live = live[:0]
	for i := range s.nodes {
		if !s.nodes[i].crashed && !contains(replicas, i) {
			live = append(live, i)
		}
	}
	s.candBuf = live
	if len(live) == 0 {
		return -1
	}
	*rr++
	return live[*rr%len(live)]
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// start runs the driver and the coordinator for one operation arriving at simulated time at: a
// write when write is set, else a read or a write as the scenario's read fraction draws.
func (s *sim) start(at int64, hot, write bool, token int64) {
	read := !write && (s.sc.ReadFraction == 1 || (s.sc.ReadFraction > 0 && s.rng.Float64() < s.sc.ReadFraction))
	replicas := s.replicasOf(hot, token)
	coord := s.route(hot, replicas)
	i := s.alloc()
	op := &s.ops[i]
	op.hot, op.measured, op.token = hot, at >= s.warm, token
	if s.sc.Onset && hot {
		op.first = at >= s.onset && at < s.onset+int64(time.Second)
		op.measured = at >= s.onset+int64(time.Second)
	}
	op.label, op.draw = labelWrite, s.rng.Float64()
	if read {
		op.label = labelRead
	}
	if coord < 0 {
		// No live node to send the request to: the client sees a connection failure.
		s.finish(i, outFailed)
		return
	}
	op.coord = int32(coord)
	p := coordinator.Params{
		Op:          coordinator.OpWrite,
		Consistency: s.sc.Consistency,
		Self:        s.ids[coord],
		Limit:       s.o.Limit,
		Draw:        op.draw,
		Deadline:    s.clock(coord, at).Add(s.o.Timeout),
	}
	if read {
		p.Op = coordinator.OpRead
	}
	if s.sc.Configuration == Kvnode {
		// The coordinator stamps the operation with its own clock (the shell's newRequest).
		p.Stamp = s.clock(coord, at)
		// A coordinator outside the replica set checks the partitions it learned are hot
		// itself (the shell's learner).
		if s.nodes[coord].learned != nil && !contains(replicas, coord) && s.nodes[coord].learned.Peek(token, op.label, coordinator.LearnedTime(p.Stamp)) > 0 {
			p.Learned, op.learned = true, true
		}
	}
	reps := s.paramsReps[:0]
	for _, r := range replicas {
		rep := coordinator.Replica{ID: s.ids[r], Down: s.detectedDown(r, at)}
		if s.dc(r) != s.dc(coord) {
			rep.DC = 1
		}
		reps = append(reps, rep)
	}
	p.PerDC = s.sc.Routing == LocalDC
	s.paramsReps, p.Replicas = reps, reps
	if s.o.SpreadReads && read && s.sc.Consistency != coordinator.All && !contains(replicas, coord) {
		// A coordinator outside the replica set that spreads its reads over the replicas asks
		// them in a random order. Without it, as in the coordinator shell, the core reads from
		// the first live replicas in ring order.
		order := s.paramsOrder[:0]
		for _, r := range replicas {
			order = append(order, s.ids[r])
		}
		s.rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		s.paramsOrder, p.ReadOrder = order, order
	}
	req, err := coordinator.NewRequest(p)
	if err != nil {
		s.err = fmt.Errorf("sim: %v: building the request at %v: %w", s.sc, time.Duration(at), err)
		return
	}
	op.req = req
	s.handle(i, req.Start(s.clock(coord, at)), at)
	s.maybeDone(i)
}

// handle carries out one Step of operation i's coordinator at simulated time at.
func (s *sim) handle(i int32, st coordinator.Step, at int64) {
	op := &s.ops[i]
	coord := int(op.coord)
	if st.LocalCheck {
		// The shell checks its local counter at the operation's stamp, which is its own clock:
		// its replica counter, or, outside the replica set, its learned copy.
		t, now := s.nodes[coord].table, s.clock(coord, at)
		if op.learned {
			t, now = s.nodes[coord].learned, coordinator.LearnedTime(now)
		}
		d := t.Decide(op.token, op.label, s.o.Limit, op.draw, now)
		st = op.req.OnLocalCheck(coordinator.CheckResult{Admitted: d.Admitted, Count: d.Count, RetryAfter: d.RetryAfter, Born: d.Born})
	}
	for _, snd := range st.Sends {
		to := s.nodeIndex(snd.To)
		if s.nodes[to].crashed {
			// The message is lost; only the deadline ends the wait for its answer.
			if !op.ticking {
				op.ticking = true
				s.q.push(event{at: at + int64(s.o.Timeout), kind: evTick, op: i, gen: op.gen})
			}
			continue
		}
		op.pending++
		s.q.push(event{
			at: at + s.latency(coord, to), kind: evDeliver, node: int32(to), op: i, gen: op.gen,
			send: int32(snd.Seq), mode: snd.Mode, stamp: stampNanos(snd.Stamp),
		})
	}
	if st.Outcome != nil && s.batchers != nil {
		// The shell hands the finished request's uncounted replicas to its propagator, and
		// learns the partition's counter from the replicas' rejections.
		s.batchers[coord].Add(st.Unaccounted, simTable, op.token, opOf(op.label))
		if st.Urgent && !s.urgent[coord] {
			// A young partition counting faster than the limit: its deltas go within
			// coordinator.UrgentPropagationDelay rather than at the next tick.
			s.urgent[coord] = true
			s.q.push(event{at: at + int64(coordinator.UrgentPropagationDelay), kind: evUrgent, node: int32(coord)})
		}
		if l, ok := op.req.Learn(); ok && s.nodes[coord].learned != nil {
			c, resid, at := l.Copy()
			s.nodes[coord].learned.Learn(op.token, op.label, c, l.Born, resid, at)
		}
	}
}

// flush drains coordinator e.node's batcher and sends each live replica its batch, as the
// shell's propagator does on every tick; deltas owed to a replica the failure detector considers
// down are dropped. The ticker keeps running until the end of the arrivals.
func (s *sim) flush(e event) {
	s.drain(e)
	if next := e.at + int64(s.o.PropagationInterval); next < s.end {
		s.q.push(event{at: next, kind: evFlush, node: e.node})
	}
}

// drain drains coordinator e.node's batcher and sends each live replica its batch.
func (s *sim) drain(e event) {
	i := int(e.node)
	stamp := s.clock(i, e.at).UnixNano() // the shell stamps each batch with its clock at the drain
	for _, batch := range s.batchers[i].Drain(func(id coordinator.NodeID) bool { return !s.detectedDown(s.nodeIndex(id), e.at) }) {
		b := s.allocBatch()
		s.batches[b] = append(s.batches[b][:0], batch.Deltas...)
		j := s.nodeIndex(batch.To)
		s.q.push(event{at: e.at + s.latency(i, j), kind: evDeltas, node: int32(j), op: b, stamp: stamp})
	}
}

// applyDeltas adds a batch of account-only deltas to a replica's counters, at the batch's stamp
// bounded against the replica's clock (and with that clock for a young counter's age), as
// replica.Service does. A crashed replica loses the
// batch.
func (s *sim) applyDeltas(e event) {
	j := int(e.node)
	if !s.nodes[j].crashed {
		now := s.replicaTime(j, e.at, e.stamp)
		for _, d := range s.batches[e.op] {
			s.nodes[j].table.AccountNAt(d.Token, labelOf(d.Op), d.Count, s.o.Limit, now, s.clock(j, e.at))
		}
	}
	s.freeBatches = append(s.freeBatches, e.op)
}

// allocBatch returns the index of a free batch buffer.
func (s *sim) allocBatch() int32 {
	if n := len(s.freeBatches); n > 0 {
		b := s.freeBatches[n-1]
		s.freeBatches = s.freeBatches[:n-1]
		return b
	}
	s.batches = append(s.batches, nil)
	return int32(len(s.batches) - 1)
}

// deliver performs a Send at its replica, on the replica's own clock, and sends the answer.
func (s *sim) deliver(e event) {
	op := &s.ops[e.op]
	n := int(e.node)
	r := event{kind: evRespond, node: e.node, op: e.op, gen: e.gen, send: e.send, status: coordinator.StatusOK}
	// The replica's admission decision, as replica.Service makes it (partitionlimit's
	// Table.ApplyAt at the coordinator's stamp bounded against the replica's clock, with the
	// replica's clock for the age of a young counter).
	d, err := s.nodes[n].table.ApplyAt(e.mode, op.token, op.label, s.o.Limit, op.draw, s.replicaTime(n, e.at, e.stamp), s.clock(n, e.at))
	switch {
	case err != nil:
		s.err = fmt.Errorf("sim: %v: replica %d at %v: %w", s.sc, n, time.Duration(e.at), err)
		return
	case !d.Admitted:
		op.rejected = true
		if e.mode == coordinator.ModeAccountAndEnforce {
			op.rejects++
		}
		r.status, r.count, r.retryAfter = coordinator.StatusRateLimited, d.Count, d.RetryAfter
		if !d.Born.IsZero() {
			r.born, r.resid = d.Born.UnixNano(), d.Residual
		}
	default:
		if e.mode == coordinator.ModeAccountAndEnforce {
			op.admits++
		}
		s.perform(n, op)
	}
	if op.req.Done() {
		// The coordinator already answered the client and ignores late answers: skip the
		// message (and its latency draw) and just note that this replica has answered.
		op.pending--
		s.maybeDone(e.op)
		return
	}
	r.at = e.at + s.latency(n, int(op.coord))
	s.q.push(r)
}

// replicaTime returns the time replica n accounts a message stamped stamp (unix nanoseconds, 0
// for none) at, at simulated time at: replica.Service's rule, partitionlimit.Stamp against the
// replica's own clock with the default bound. Clamped stamps are counted.
func (s *sim) replicaTime(n int, at, stamp int64) time.Time {
	local := s.clock(n, at)
	if stamp == 0 {
		return local
	}
	t, clamped := partitionlimit.Stamp(time.Unix(0, stamp), local, partitionlimit.DefaultMaxStampSkew)
	if clamped {
		s.res.Clamped++
	}
	return t
}

// stampNanos returns a Send's stamp in unix nanoseconds, 0 for none (the shell's encoding).
func stampNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// perform applies a write or serves a read at replica n.
func (s *sim) perform(n int, op *opState) {
	op.applied++
	nd := &s.nodes[n]
	nd.performed++
	if op.hot && op.label == labelWrite {
		nd.hotVersion++
	}
}

// respond feeds a replica's answer to the coordinator.
func (s *sim) respond(e event) {
	op := &s.ops[e.op]
	op.pending--
	resp := coordinator.Response{
		Seq: int(e.send), From: s.ids[e.node], Status: e.status, Count: e.count, RetryAfter: e.retryAfter,
	}
	if e.born != 0 {
		resp.Born, resp.Residual = time.Unix(0, e.born), e.resid
	}
	st := op.req.OnResponse(resp)
	s.handle(e.op, st, e.at)
	s.maybeDone(e.op)
}

// tick tells an operation's coordinator that its deadline has come.
func (s *sim) tick(e event) {
	op := &s.ops[e.op]
	if op.gen != e.gen || op.req == nil {
		return // the operation ended and its slot was reused
	}
	s.handle(e.op, op.req.Tick(s.clock(int(op.coord), e.at)), e.at)
	s.maybeDone(e.op)
}

// maybeDone finishes operation i once its coordinator has the outcome and every replica that
// received it has answered (so that all replica work is counted).
func (s *sim) maybeDone(i int32) {
	op := &s.ops[i]
	if op.req == nil || !op.req.Done() || op.pending > 0 {
		return
	}
	switch op.req.Outcome().(type) {
	case coordinator.Success:
		s.finish(i, outSuccess)
	case coordinator.RateLimited:
		s.finish(i, outRateLimited)
	default:
		s.finish(i, outFailed)
	}
}

// finish records operation i's measurements and frees its slot.
func (s *sim) finish(i int32, out uint8) {
	op := &s.ops[i]
	if op.first && out == outSuccess {
		s.res.FirstSecond++
	}
	if op.measured {
		r := &s.res
		if op.hot {
			r.Offered++
			switch out {
			case outSuccess:
				r.Accepted++
				if op.label == labelRead {
					r.AcceptedReads++
				} else {
					r.AcceptedWrites++
				}
			case outRateLimited:
				r.Rejected++
				r.Wasted += int(op.applied)
				if op.learned && op.req.Outcome().(coordinator.RateLimited).RejectedBy == coordinator.RejectedByCoordinator {
					r.LearnedRejected++
				}
			default:
				r.Failed++
				r.Wasted += int(op.applied)
			}
			if out != outSuccess && op.applied > 0 && op.label == labelWrite {
				r.PartialWrites++
			}
			if out == outSuccess && op.rejected && op.label == labelWrite {
				r.AckedRejected++
			}
			if op.admits+op.rejects >= 2 {
				r.Enforced++
				if op.admits > 0 && op.rejects > 0 {
					r.Disagreed++
				}
			}
		} else {
			r.ColdOffered++
			switch out {
			case outRateLimited:
				r.ColdRejected++
			case outFailed:
				r.ColdFailed++
			}
		}
	}
	gen := op.gen + 1
	*op = opState{gen: gen}
	s.free = append(s.free, i)
}

// alloc returns a free operation slot.
func (s *sim) alloc() int32 {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return i
	}
	s.ops = append(s.ops, opState{})
	return int32(len(s.ops) - 1)
}

// mix64 is the splitmix64 finalizer: it spreads cold tokens over the nodes.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
