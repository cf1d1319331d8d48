package catalog

// Schema consensus (CASPaxos, one register per keyspace): the package documentation explains
// the rounds and why they linearise the changes to a keyspace.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internal/atomicfile"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// paxosFile is where a node persists its acceptor state.
const paxosFile = "schema-paxos.bin"

// Bounds on what an acceptor takes from the wire.
const (
	maxBallotCounter = 1 << 62 // far above any clock in microseconds; keeps counter+1 from overflowing
	maxNodeIDLen     = 256
	maxKeyspaceLen   = 48
)

// ballot orders proposals: by counter, then node. The zero ballot is none.
type ballot struct {
	counter int64
	node    string
}

func (b ballot) compare(o ballot) int {
	if c := cmp.Compare(b.counter, o.counter); c != 0 {
		return c
	}
	return cmp.Compare(b.node, o.node)
}

func (b ballot) isZero() bool { return b.counter == 0 && b.node == "" }

func (b ballot) String() string { return fmt.Sprintf("%d@%s", b.counter, b.node) }

func (b ballot) proto() *replicapb.SchemaBallot {
	if b.isZero() {
		return nil
	}
	return &replicapb.SchemaBallot{Counter: b.counter, Node: b.node}
}

func ballotOf(p *replicapb.SchemaBallot) ballot {
	return ballot{counter: p.GetCounter(), node: p.GetNode()}
}

// checkBallot validates a ballot from the wire.
func checkBallot(what string, b ballot) error {
	if b.counter <= 0 || b.counter >= maxBallotCounter {
		return fmt.Errorf("%s ballot counter %d is outside (0, 2^62)", what, b.counter)
	}
	if b.node == "" || len(b.node) > maxNodeIDLen {
		return fmt.Errorf("%s ballot node id is empty or longer than %d bytes", what, maxNodeIDLen)
	}
	return nil
}

// checkKeyspaceName validates a register name from the wire: a keyspace name as the schema
// accepts them.
func checkKeyspaceName(name string) error {
	if name == "" || len(name) > maxKeyspaceLen {
		return fmt.Errorf("keyspace name %q is empty or longer than %d characters", name, maxKeyspaceLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return fmt.Errorf("keyspace name %q may contain only letters, digits and underscores", name)
		}
	}
	return nil
}

// decodeKeyspaceValue decodes a register value and checks that it holds only keyspace ks.
func decodeKeyspaceValue(ks string, b []byte) (*schema.Schema, error) {
	s, err := schema.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("value for keyspace %s: %w", ks, err)
	}
	if !s.HoldsOnly(ks) {
		return nil, fmt.Errorf("value for keyspace %s holds entries of other keyspaces", ks)
	}
	return s, nil
}

// register is an acceptor's state for one keyspace name.
type register struct {
	promised, accepted ballot
	value              []byte // accepted's value
}

// Acceptor is a node's acceptor for schema consensus: it answers the schema_prepare and
// schema_accept requests (package internode serves them). It persists every promise and accept
// before answering, so a restarted node keeps its word.
type Acceptor struct {
	path string
	// local returns the keyspace's part of the node's schema: what the acceptor answers for a
	// keyspace it never accepted a value of (a schema from before consensus, or none).
	local func(keyspace string) *schema.Schema

	mu   sync.Mutex
	regs map[string]*register
}

// openAcceptor loads the acceptor state persisted in dir, or starts empty.
func openAcceptor(dir string, local func(string) *schema.Schema) (*Acceptor, error) {
	a := &Acceptor{path: filepath.Join(dir, paxosFile), local: local, regs: map[string]*register{}}
	data, err := os.ReadFile(a.path)
	if errors.Is(err, fs.ErrNotExist) {
		return a, nil
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: schema consensus state: %w", err)
	}
	var st replicapb.SchemaAcceptorState
	if err := proto.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("catalog: schema consensus state %s is corrupt: %w", a.path, err)
	}
	for _, r := range st.Registers {
		ks := r.GetKeyspace()
		if err := checkKeyspaceName(ks); err != nil {
			return nil, fmt.Errorf("catalog: schema consensus state %s is corrupt: %w", a.path, err)
		}
		reg := &register{promised: ballotOf(r.Promised), accepted: ballotOf(r.Accepted), value: r.Value}
		if !reg.accepted.isZero() {
			if _, err := decodeKeyspaceValue(ks, reg.value); err != nil {
				return nil, fmt.Errorf("catalog: schema consensus state %s is corrupt: %w", a.path, err)
			}
		}
		a.regs[ks] = reg
	}
	return a, nil
}

// persistLocked writes the acceptor state atomically. a.mu must be held.
func (a *Acceptor) persistLocked() error {
	names := make([]string, 0, len(a.regs))
	for ks := range a.regs {
		names = append(names, ks)
	}
	slices.Sort(names)
	st := &replicapb.SchemaAcceptorState{}
	for _, ks := range names {
		r := a.regs[ks]
		st.Registers = append(st.Registers, &replicapb.SchemaRegister{
			Keyspace: ks, Promised: r.promised.proto(), Accepted: r.accepted.proto(), Value: r.value,
		})
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(st)
	if err != nil {
		return fmt.Errorf("catalog: encode schema consensus state: %w", err)
	}
	if err := atomicfile.Write(a.path, data); err != nil {
		return fmt.Errorf("catalog: persist schema consensus state: %w", err)
	}
	return nil
}

func (r *register) highest() ballot {
	if r.accepted.compare(r.promised) > 0 {
		return r.accepted
	}
	return r.promised
}

// Prepare answers a schema_prepare request.
func (a *Acceptor) Prepare(_ context.Context, req *replicapb.SchemaPrepareRequest) (*replicapb.SchemaPrepareResponse, error) {
	ks, b := req.GetKeyspace(), ballotOf(req.GetBallot())
	if err := checkKeyspaceName(ks); err != nil {
		return nil, status.Error(codes.InvalidArgument, "schema prepare: "+err.Error())
	}
	if err := checkBallot("schema prepare", b); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.regs[ks]
	if r == nil {
		r = &register{}
	}
	if h := r.highest(); b.compare(h) <= 0 {
		return &replicapb.SchemaPrepareResponse{Promised: false, Highest: h.proto()}, nil
	}
	prev := *r
	r.promised = b
	a.regs[ks] = r
	if err := a.persistLocked(); err != nil {
		*r = prev
		return nil, status.Error(codes.Internal, err.Error())
	}
	resp := &replicapb.SchemaPrepareResponse{Promised: true, Accepted: r.accepted.proto(), Value: r.value}
	if r.accepted.isZero() {
		resp.Value = a.local(ks).Encode()
	}
	return resp, nil
}

// Accept answers a schema_accept request.
func (a *Acceptor) Accept(_ context.Context, req *replicapb.SchemaAcceptRequest) (*replicapb.SchemaAcceptResponse, error) {
	ks, b := req.GetKeyspace(), ballotOf(req.GetBallot())
	if err := checkKeyspaceName(ks); err != nil {
		return nil, status.Error(codes.InvalidArgument, "schema accept: "+err.Error())
	}
	if err := checkBallot("schema accept", b); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if _, err := decodeKeyspaceValue(ks, req.GetValue()); err != nil {
		return nil, status.Error(codes.InvalidArgument, "schema accept: "+err.Error())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.regs[ks]
	if r == nil {
		r = &register{}
	}
	if h := r.highest(); b.compare(h) < 0 {
		return &replicapb.SchemaAcceptResponse{Accepted: false, Highest: h.proto()}, nil
	}
	prev := *r
	r.promised, r.accepted, r.value = b, b, req.GetValue()
	a.regs[ks] = r
	if err := a.persistLocked(); err != nil {
		*r = prev
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &replicapb.SchemaAcceptResponse{Accepted: true}, nil
}

// Voter is a member taking part in schema consensus, as the proposer sees it.
type Voter struct {
	ID   string
	Live bool // the member is up: the proposer sends to it; it counts in the majority either way
}

// Peers is the cluster as schema consensus sees it: who votes, and how to reach each of them.
// The node implements it over its membership and internode transport; the proposer calls it
// from several goroutines at once.
type Peers interface {
	// Voters returns every known member of the ring, this node included, or an error when
	// the node cannot tell who its cluster is (it has not joined yet).
	Voters() ([]Voter, error)
	// Prepare sends phase 1 of a round to member id and returns its answer.
	Prepare(ctx context.Context, id string, req *replicapb.SchemaPrepareRequest) (*replicapb.SchemaPrepareResponse, error)
	// Accept sends phase 2 of a round to member id and returns its answer.
	Accept(ctx context.Context, id string, req *replicapb.SchemaAcceptRequest) (*replicapb.SchemaAcceptResponse, error)
}

// Bounds of a proposal: the time a phase may take (proposer.phaseTimeout overrides it),
// the rounds it may lose to concurrent proposals, and the backoff between those.
const (
	defaultPhaseTimeout = 5 * time.Second
	maxRounds           = 30
	backoffBase         = 5 * time.Millisecond
	backoffMax          = 250 * time.Millisecond
)

// proposer runs consensus rounds for the local node's DDL.
type proposer struct {
	self         string
	local        *Acceptor
	peers        Peers
	now          func() time.Time
	phaseTimeout time.Duration

	mu      sync.Mutex
	highest int64 // the highest ballot counter seen
}

// ErrUnavailable is wrapped by the errors of schema changes that could not reach a
// majority of the cluster's members.
var ErrUnavailable = errors.New("schema change unavailable")

// unavailableError is a schema change that a majority did not answer: the coordinator's
// domain error (front ends answer it as unavailable), which also matches ErrUnavailable.
type unavailableError struct {
	coordinator.SchemaUnavailableError
}

func newUnavailable(msg string) *unavailableError {
	return &unavailableError{coordinator.SchemaUnavailableError{Message: msg}}
}

func (e *unavailableError) Unwrap() []error {
	return []error{&e.SchemaUnavailableError, ErrUnavailable}
}

func (p *proposer) nextBallot() ballot {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := max(p.now().UnixMicro(), p.highest+1)
	p.highest = c
	return ballot{counter: c, node: p.self}
}

func (p *proposer) observe(b ballot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.highest = max(p.highest, b.counter)
}

// proposal is one schema change to agree on.
type proposal struct {
	keyspace string
	// apply returns the keyspace's state after the change, given its current state; a state
	// equal to base (the same pointer) means the change is a no-op. An error leaves the state
	// as it is and is the change's outcome.
	apply func(base *schema.Schema) (*schema.Schema, error)
	// mine reports whether base already holds a state apply returned in an earlier round of
	// this proposal: a value this proposer got accepted by some members, which another
	// proposer then completed.
	mine func(base *schema.Schema) bool
}

// propose runs rounds until the proposal's change, or its failure, is chosen: it returns the
// chosen state of the keyspace, whether the change changed it, and the change's error. The
// chosen state is non-nil whenever the round completed, even with the change's error.
func (p *proposer) propose(ctx context.Context, pr proposal) (*schema.Schema, bool, error) {
	for round := 0; ; round++ {
		if round == maxRounds {
			return nil, false, newUnavailable(fmt.Sprintf(
				"schema change on keyspace %s lost to concurrent changes %d times in a row; retry it", pr.keyspace, maxRounds))
		}
		if round > 0 {
			d := min(backoffBase<<min(round, 10), backoffMax)
			t := time.NewTimer(rand.N(d) + d/2)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, false, ctx.Err()
			case <-t.C:
			}
		}
		chosen, changed, err, retry := p.round(ctx, pr)
		if !retry {
			return chosen, changed, err
		}
	}
}

// phaseResult is one member's answer in a phase.
type phaseResult struct {
	id       string
	ok       bool // promised or accepted
	highest  ballot
	accepted ballot
	value    []byte
	err      error
}

// round runs one prepare and accept. retry is true when a higher ballot got in the way.
func (p *proposer) round(ctx context.Context, pr proposal) (chosen *schema.Schema, changed bool, outcome error, retry bool) {
	voters, err := p.peers.Voters()
	if err != nil {
		return nil, false, newUnavailable(err.Error()), false
	}
	need := len(voters)/2 + 1
	var live, down []string
	for _, v := range voters {
		if v.Live || v.ID == p.self {
			live = append(live, v.ID)
		} else {
			down = append(down, v.ID)
		}
	}
	if len(live) < need {
		return nil, false, newUnavailable(fmt.Sprintf(
			"a schema change needs %d of the cluster's %d nodes to agree, and only %d %s up (down: %s); start the down nodes, or remove the dead ones with kvnode removenode",
			need, len(voters), len(live), plural(len(live), "is", "are"), strings.Join(down, ", "))), false
	}
	b := p.nextBallot()

	// Phase 1: prepare.
	promises, others := p.phase(ctx, live, need, func(ctx context.Context, id string) phaseResult {
		req := &replicapb.SchemaPrepareRequest{Keyspace: pr.keyspace, Ballot: b.proto()}
		var resp *replicapb.SchemaPrepareResponse
		var err error
		if id == p.self {
			resp, err = p.local.Prepare(ctx, req)
		} else {
			resp, err = p.peers.Prepare(ctx, id, req)
		}
		if err != nil {
			return phaseResult{id: id, err: err}
		}
		return phaseResult{id: id, ok: resp.GetPromised(), highest: ballotOf(resp.GetHighest()),
			accepted: ballotOf(resp.GetAccepted()), value: resp.GetValue()}
	})
	if len(promises) < need {
		return nil, false, p.shortfall("prepare", pr.keyspace, need, len(voters), promises, others, down), p.outvoted(others)
	}

	// The keyspace's current state: the value accepted under the highest ballot, or, where no
	// promising member ever accepted one, the union of their schemas' parts for the keyspace.
	var base *schema.Schema
	var top ballot
	for _, r := range promises {
		v, err := decodeKeyspaceValue(pr.keyspace, r.value)
		if err != nil {
			return nil, false, fmt.Errorf("catalog: schema consensus: node %s answered a corrupt %w", r.id, err), false
		}
		switch {
		case r.accepted.isZero() && top.isZero():
			if base == nil {
				base = v
			} else {
				base = base.Merge(v)
			}
		case r.accepted.compare(top) > 0:
			base, top = v, r.accepted
		}
	}

	next, outcome := base, error(nil)
	if pr.mine(base) {
		changed = true // an earlier round's value, completed by another proposer: make sure it is chosen
	} else {
		n, err := pr.apply(base)
		switch {
		case err != nil:
			outcome = err
		default:
			next, changed = n, n != base
		}
	}

	// Phase 2: accept.
	value := next.Encode()
	accepts, others := p.phase(ctx, live, need, func(ctx context.Context, id string) phaseResult {
		req := &replicapb.SchemaAcceptRequest{Keyspace: pr.keyspace, Ballot: b.proto(), Value: value}
		var resp *replicapb.SchemaAcceptResponse
		var err error
		if id == p.self {
			resp, err = p.local.Accept(ctx, req)
		} else {
			resp, err = p.peers.Accept(ctx, id, req)
		}
		if err != nil {
			return phaseResult{id: id, err: err}
		}
		return phaseResult{id: id, ok: resp.GetAccepted(), highest: ballotOf(resp.GetHighest())}
	})
	if len(accepts) < need {
		if p.outvoted(others) {
			return nil, false, nil, true
		}
		err := p.shortfall("accept", pr.keyspace, need, len(voters), accepts, others, down)
		if changed {
			err = newUnavailable(err.Error() + "; the change may still take effect: check with DESCRIBE before retrying")
		}
		return nil, false, err, false
	}
	return next, changed, outcome, false
}

// outvoted reports whether a member refused because it had seen a higher ballot (and records
// that ballot): the round must be retried above it.
func (p *proposer) outvoted(others []phaseResult) bool {
	out := false
	for _, r := range others {
		if r.err == nil && !r.ok {
			p.observe(r.highest)
			out = true
		}
	}
	return out
}

// shortfall describes a phase that a majority did not answer.
func (p *proposer) shortfall(phase, ks string, need, total int, oks, others []phaseResult, down []string) error {
	var why []string
	for _, r := range others {
		if r.err != nil {
			why = append(why, fmt.Sprintf("%s: %v", r.id, r.err))
		} else if !r.ok {
			why = append(why, fmt.Sprintf("%s: holds a higher ballot %v", r.id, r.highest))
		}
	}
	for _, id := range down {
		why = append(why, id+": down")
	}
	return newUnavailable(fmt.Sprintf(
		"schema change on keyspace %s needs %d of the cluster's %d nodes to agree, and only %d did in the %s phase (%s)",
		ks, need, total, len(oks), phase, strings.Join(why, "; ")))
}

// phase calls send for every member in ids at once and returns the positive answers and the
// others. It returns as soon as need members said yes or too many failed for that to happen,
// cancelling the calls still running (and waiting for them).
func (p *proposer) phase(ctx context.Context, ids []string, need int, send func(context.Context, string) phaseResult) (oks, others []phaseResult) {
	timeout := p.phaseTimeout
	if timeout <= 0 {
		timeout = defaultPhaseTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	results := make(chan phaseResult, len(ids))
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- send(ctx, id)
		}()
	}
	for range ids {
		r := <-results
		if r.ok {
			oks = append(oks, r)
		} else {
			others = append(others, r)
		}
		if len(oks) >= need || len(ids)-len(others) < need {
			break
		}
	}
	slices.SortFunc(others, func(a, b phaseResult) int { return cmp.Compare(a.id, b.id) })
	return oks, others
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
