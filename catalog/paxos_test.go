package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

func emptyLocal(string) *schema.Schema { return schema.New() }

func mustBuild(t *testing.T, src string) *schema.Schema {
	t.Helper()
	s, err := schema.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const ksRF1 = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};"

func TestAcceptorKeepsItsWordAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a, err := openAcceptor(dir, emptyLocal)
	if err != nil {
		t.Fatal(err)
	}
	b5 := &replicapb.SchemaBallot{Counter: 5, Node: "n1"}
	value := mustBuild(t, ksRF1).Restrict("ks").Encode()
	if r, err := a.Prepare(ctx, &replicapb.SchemaPrepareRequest{Keyspace: "ks", Ballot: b5}); err != nil || !r.Promised || r.Accepted != nil {
		t.Fatalf("first Prepare(5@n1) = %v, %v; want a promise with nothing accepted", r, err)
	}
	if r, err := a.Accept(ctx, &replicapb.SchemaAcceptRequest{Keyspace: "ks", Ballot: b5, Value: value}); err != nil || !r.Accepted {
		t.Fatalf("Accept(5@n1) after its promise = %v, %v; want accepted", r, err)
	}

	a, err = openAcceptor(dir, emptyLocal) // a restart
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Prepare(ctx, &replicapb.SchemaPrepareRequest{Keyspace: "ks", Ballot: &replicapb.SchemaBallot{Counter: 5, Node: "n0"}})
	if err != nil || r.Promised || r.Highest.GetCounter() != 5 || r.Highest.GetNode() != "n1" {
		t.Fatalf("Prepare(5@n0) after a restart = %v, %v; want a refusal naming 5@n1", r, err)
	}
	r, err = a.Prepare(ctx, &replicapb.SchemaPrepareRequest{Keyspace: "ks", Ballot: &replicapb.SchemaBallot{Counter: 6, Node: "n0"}})
	if err != nil || !r.Promised || r.Accepted.GetCounter() != 5 || string(r.Value) != string(value) {
		t.Fatalf("Prepare(6@n0) after a restart = %v, %v; want a promise carrying the value accepted at 5@n1", r, err)
	}
	if r, err := a.Accept(ctx, &replicapb.SchemaAcceptRequest{Keyspace: "ks", Ballot: b5, Value: value}); err != nil || r.Accepted || r.Highest.GetCounter() != 6 {
		t.Fatalf("Accept(5@n1) after promising 6@n0 = %v, %v; want a refusal naming 6", r, err)
	}
	// Another keyspace's register is independent.
	if r, err := a.Prepare(ctx, &replicapb.SchemaPrepareRequest{Keyspace: "other", Ballot: &replicapb.SchemaBallot{Counter: 1, Node: "n0"}}); err != nil || !r.Promised {
		t.Fatalf("Prepare(1@n0) on another keyspace = %v, %v; want a promise", r, err)
	}
}

func TestAcceptorRejectsBadRequests(t *testing.T) {
	ctx := context.Background()
	a, err := openAcceptor(t.TempDir(), emptyLocal)
	if err != nil {
		t.Fatal(err)
	}
	ok := &replicapb.SchemaBallot{Counter: 1, Node: "n1"}
	two := mustBuild(t, ksRF1+"CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};")
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"empty keyspace", func() error {
			_, err := a.Prepare(ctx, &replicapb.SchemaPrepareRequest{Ballot: ok})
			return err
		}, "keyspace name \"\" is empty"},
		{"keyspace with a slash", func() error {
			_, err := a.Prepare(ctx, &replicapb.SchemaPrepareRequest{Keyspace: "../x", Ballot: ok})
			return err
		}, "may contain only letters"},
		{"no ballot", func() error {
			_, err := a.Prepare(ctx, &replicapb.SchemaPrepareRequest{Keyspace: "ks"})
			return err
		}, "ballot counter 0"},
		{"huge ballot", func() error {
			_, err := a.Prepare(ctx, &replicapb.SchemaPrepareRequest{Keyspace: "ks", Ballot: &replicapb.SchemaBallot{Counter: 1 << 62, Node: "n"}})
			return err
		}, "outside (0, 2^62)"},
		{"ballot without node", func() error {
			_, err := a.Accept(ctx, &replicapb.SchemaAcceptRequest{Keyspace: "ks", Ballot: &replicapb.SchemaBallot{Counter: 3}, Value: schema.New().Encode()})
			return err
		}, "node id is empty"},
		{"garbage value", func() error {
			_, err := a.Accept(ctx, &replicapb.SchemaAcceptRequest{Keyspace: "ks", Ballot: ok, Value: []byte("garbage")})
			return err
		}, "value for keyspace ks"},
		{"value of two keyspaces", func() error {
			_, err := a.Accept(ctx, &replicapb.SchemaAcceptRequest{Keyspace: "ks", Ballot: ok, Value: two.Encode()})
			return err
		}, "holds entries of other keyspaces"},
	}
	for _, tt := range tests {
		err := tt.call()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want InvalidArgument containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(a.path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bad requests persisted acceptor state (%v); want nothing written", err)
	}
}

func TestAcceptorRefusesACorruptStateFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, paxosFile), []byte("\xff\xff\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openAcceptor(dir, emptyLocal); err == nil || !strings.Contains(err.Error(), "is corrupt") {
		t.Fatalf("openAcceptor on a corrupt file: %v, want an error saying it is corrupt", err)
	}
}

// fakePeers are in-process acceptors, some of which can be made to fail.
type fakePeers struct {
	mu      sync.Mutex
	ids     []string
	accs    map[string]*Acceptor
	failing map[string]func(method string) bool // fails the calls it returns true for
}

func newFakePeers(t *testing.T, ids ...string) *fakePeers {
	p := &fakePeers{ids: ids, accs: map[string]*Acceptor{}, failing: map[string]func(string) bool{}}
	for _, id := range ids {
		a, err := openAcceptor(t.TempDir(), emptyLocal)
		if err != nil {
			t.Fatal(err)
		}
		p.accs[id] = a
	}
	return p
}

func (p *fakePeers) Voters() ([]Voter, error) {
	vs := make([]Voter, len(p.ids))
	for i, id := range p.ids {
		vs[i] = Voter{ID: id, Live: true}
	}
	return vs, nil
}

func (p *fakePeers) fail(id string, f func(method string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failing[id] = f
}

func (p *fakePeers) failed(id, method string) error {
	p.mu.Lock()
	f := p.failing[id]
	p.mu.Unlock()
	if f != nil && f(method) {
		return status.Error(codes.Unavailable, "injected failure")
	}
	return nil
}

func (p *fakePeers) Prepare(ctx context.Context, id string, req *replicapb.SchemaPrepareRequest) (*replicapb.SchemaPrepareResponse, error) {
	if err := p.failed(id, "prepare"); err != nil {
		return nil, err
	}
	return p.accs[id].Prepare(ctx, req)
}

func (p *fakePeers) Accept(ctx context.Context, id string, req *replicapb.SchemaAcceptRequest) (*replicapb.SchemaAcceptResponse, error) {
	if err := p.failed(id, "accept"); err != nil {
		return nil, err
	}
	return p.accs[id].Accept(ctx, req)
}

// ddlProposal is the proposal ApplyDDL makes for one statement, on a version clock of its own.
func ddlProposal(t *testing.T, src string, clock *int64, node string) proposal {
	st, err := cql.ParseStatement(src)
	if err != nil {
		t.Fatal(err)
	}
	ks, table, err := schema.StatementTarget(st, "")
	if err != nil {
		t.Fatal(err)
	}
	var mine []schema.Version
	return proposal{
		keyspace: ks,
		apply: func(base *schema.Schema) (*schema.Schema, error) {
			*clock++
			next, err := base.Apply(st, "", schema.Change{Version: schema.Version{Timestamp: *clock, Node: node}})
			if err != nil {
				return nil, err
			}
			if v, ok := next.EntryVersion(ks, table); ok && next != base {
				mine = append(mine, v)
			}
			return next, nil
		},
		mine: func(base *schema.Schema) bool {
			v, ok := base.EntryVersion(ks, table)
			if !ok {
				return false
			}
			for _, m := range mine {
				if m == v {
					return true
				}
			}
			return false
		},
	}
}

// TestProposalCompletedByAnotherIsReportedOnce: a proposer whose CREATE TABLE reached only one
// acceptor before the others failed finds, on retrying, that another proposer completed its
// value. It reports success, not "already exists" about its own table.
func TestProposalCompletedByAnotherIsReportedOnce(t *testing.T) {
	ctx := context.Background()
	peers := newFakePeers(t, "n1", "n2", "n3")
	var clock int64
	now := func() time.Time { return time.UnixMicro(1000) }
	p1 := &proposer{self: "n1", local: peers.accs["n1"], peers: peers, now: now}
	p2 := &proposer{self: "n2", local: peers.accs["n2"], peers: peers, now: now}

	if _, _, err := p2.propose(ctx, ddlProposal(t, ksRF1, &clock, "n2")); err != nil {
		t.Fatal(err)
	}
	// p1's accepts reach only itself; its round fails with the outcome unknown.
	peers.fail("n2", func(m string) bool { return m == "accept" })
	peers.fail("n3", func(string) bool { return true })
	create := ddlProposal(t, "CREATE TABLE ks.t (k text PRIMARY KEY, v int)", &clock, "n1")
	_, _, err := p1.propose(ctx, create)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "may still take effect") {
		t.Fatalf("CREATE TABLE accepted by 1 of 3: %v, want ErrUnavailable saying it may still take effect", err)
	}
	peers.fail("n2", nil)

	// p2 changes another table with n3 unreachable: its majority, n1 and n2, includes n1, so it
	// sees p1's accepted value (the highest ballot among the answers) and builds on it.
	chosen, _, err := p2.propose(ctx, ddlProposal(t, "CREATE TABLE ks.u (k text PRIMARY KEY)", &clock, "n2"))
	if err != nil {
		t.Fatal(err)
	}
	peers.fail("n3", nil)
	if _, ok := chosen.Table("ks", "t"); !ok {
		t.Fatalf("p2's round did not carry p1's partly accepted ks.t: %v", chosen.Tables("ks"))
	}
	// p1 retries its CREATE: it finds its own table and succeeds.
	chosen, changed, err := p1.propose(ctx, create)
	if err != nil || !changed {
		t.Fatalf("p1 retrying its CREATE TABLE after another proposer completed it: changed %v, err %v; want success", changed, err)
	}
	if _, ok := chosen.Table("ks", "u"); !ok {
		t.Errorf("p1's chosen state lost ks.u: %v", chosen.Tables("ks"))
	}
	// A different proposer's CREATE of the same name fails.
	_, _, err = p2.propose(ctx, ddlProposal(t, "CREATE TABLE ks.t (k text PRIMARY KEY, w text)", &clock, "n2"))
	if !errors.Is(err, schema.ErrExists) {
		t.Errorf("another CREATE TABLE ks.t: %v, want already exists", err)
	}
}

// TestConcurrentProposalsOnOneKeyspaceAreLinearised runs many proposers creating distinct
// tables and the same table in one keyspace at once: every distinct table is created, and
// exactly one of the same-name CREATEs succeeds.
func TestConcurrentProposalsOnOneKeyspaceAreLinearised(t *testing.T) {
	ctx := context.Background()
	ids := []string{"n1", "n2", "n3", "n4", "n5"}
	peers := newFakePeers(t, ids...)
	var clockMu sync.Mutex
	var clock int64
	proposers := map[string]*proposer{}
	for _, id := range ids {
		proposers[id] = &proposer{self: id, local: peers.accs[id], peers: peers, now: time.Now}
	}
	if _, _, err := proposers["n1"].propose(ctx, ddlProposal(t, ksRF1, &clock, "n1")); err != nil {
		t.Fatal(err)
	}
	const each = 4
	var wg sync.WaitGroup
	var mu sync.Mutex
	sameWins, sameExists := 0, 0
	var errs []error
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				for _, src := range []string{
					fmt.Sprintf("CREATE TABLE ks.%s_%d (k text PRIMARY KEY)", id, i),
					fmt.Sprintf("CREATE TABLE ks.same_%d (k text PRIMARY KEY, by_%s int)", i, id),
				} {
					clockMu.Lock()
					var c int64
					clock += 1000
					c = clock
					clockMu.Unlock()
					_, _, err := proposers[id].propose(ctx, ddlProposal(t, src, &c, id))
					mu.Lock()
					switch {
					case err == nil && strings.Contains(src, "same_"):
						sameWins++
					case errors.Is(err, schema.ErrExists) && strings.Contains(src, "same_"):
						sameExists++
					case err != nil:
						errs = append(errs, fmt.Errorf("%s: %s: %w", id, src, err))
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if sameWins != each || sameExists != each*(len(ids)-1) {
		t.Errorf("same-name CREATEs: %d succeeded and %d found the table, want %d and %d", sameWins, sameExists, each, each*(len(ids)-1))
	}
	// Read the register through one more round: every table is there.
	final, _, err := proposers["n3"].propose(ctx, ddlProposal(t, "CREATE TABLE IF NOT EXISTS ks.n1_0 (k text PRIMARY KEY)", &clock, "n3"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(final.Tables("ks")), len(ids)*each+each; got != want {
		t.Errorf("the keyspace holds %d tables after the race, want %d", got, want)
	}
}

// TestBallotOrder: ballots order by counter, then node id; the zero ballot is below all.
func TestBallotOrder(t *testing.T) {
	ascending := []ballot{{}, {1, "a"}, {1, "b"}, {2, "a"}, {maxBallotCounter - 1, "a"}}
	for i, a := range ascending {
		for j, b := range ascending {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := a.compare(b); got != want {
				t.Errorf("%v.compare(%v) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// TestNextBallotRisesAboveClockAndObserved: a proposer's ballots follow its clock, never repeat
// when the clock stands still or goes back, and jump above every ballot it has seen.
func TestNextBallotRisesAboveClockAndObserved(t *testing.T) {
	clock := int64(100)
	p := &proposer{self: "n1", now: func() time.Time { return time.UnixMicro(clock) }}
	steps := []struct {
		clock, observe int64
		want           int64
	}{
		{clock: 100, want: 100},
		{clock: 100, want: 101},               // the clock stood still
		{clock: 100, observe: 500, want: 501}, // a higher ballot seen
		{clock: 1000, want: 1000},             // the clock overtook
		{clock: 10, want: 1001},               // the clock went back
	}
	for _, s := range steps {
		clock = s.clock
		if s.observe != 0 {
			p.observe(ballot{counter: s.observe, node: "n2"})
		}
		if b := p.nextBallot(); b != (ballot{counter: s.want, node: "n1"}) {
			t.Fatalf("nextBallot at clock %d after observing %d = %v, want %d@n1", s.clock, s.observe, b, s.want)
		}
	}
}

// TestProposerWithALaggingClockCatchesUp: a proposer whose clock is far behind another's is
// refused at first, learns the higher ballot from the refusals and gets its change through.
func TestProposerWithALaggingClockCatchesUp(t *testing.T) {
	ctx := context.Background()
	peers := newFakePeers(t, "n1", "n2", "n3")
	var clock int64
	ahead := &proposer{self: "n1", local: peers.accs["n1"], peers: peers, now: func() time.Time { return time.UnixMicro(1 << 50) }}
	behind := &proposer{self: "n2", local: peers.accs["n2"], peers: peers, now: func() time.Time { return time.UnixMicro(1) }}
	if _, _, err := ahead.propose(ctx, ddlProposal(t, ksRF1, &clock, "n1")); err != nil {
		t.Fatal(err)
	}
	chosen, changed, err := behind.propose(ctx, ddlProposal(t, "CREATE TABLE ks.t (k text PRIMARY KEY)", &clock, "n2"))
	if err != nil || !changed {
		t.Fatalf("a proposer with a lagging clock: changed %v, err %v; want its change through", changed, err)
	}
	if _, ok := chosen.Keyspace("ks"); !ok {
		t.Errorf("the lagging proposer's chosen state lost keyspace ks: %v", chosen)
	}
	if behind.highest <= 1<<50 {
		t.Errorf("the lagging proposer's highest ballot is %d, want above the other's %d", behind.highest, int64(1<<50))
	}
}
