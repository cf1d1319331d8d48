package catalog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

const ksRF3 = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}"

// raceDDL runs each node's statement at once and returns their outcomes, by node.
func (h *harness) raceDDL(stmts map[string]string) map[string]error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := map[string]error{}
	start := make(chan struct{})
	for id, stmt := range stmts {
		wg.Go(func() {
			<-start
			changed, _, err := h.ddl(id, stmt)
			if err == nil && !changed {
				err = fmt.Errorf("%s changed nothing", stmt)
			}
			mu.Lock()
			errs[id] = err
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// columnOf returns the one non-key column of table ks.name in node id's schema ("" without it).
func (h *harness) columnOf(id, name string) string {
	tb, ok := h.node(id).Schema().Table("ks", name)
	if !ok {
		return ""
	}
	for _, c := range tb.Columns {
		if c.Name != "k" {
			return c.Name
		}
	}
	return ""
}

// TestOneWinnerPerKeyspace: every node creates the same table with a column of its own, round
// after round: exactly one succeeds, the others fail saying it exists, and once the schema has
// spread every node holds the winner's column. Tables created at once in other keyspaces all
// succeed: each keyspace is a register of its own.
func TestOneWinnerPerKeyspace(t *testing.T) {
	ids := []string{"n1", "n2", "n3"}
	h := newHarness(t, ids...)
	h.mustDDL("n1", ksRF3)
	for round := range 10 {
		name := fmt.Sprintf("t%d", round)
		stmts := map[string]string{}
		for _, id := range ids {
			stmts[id] = fmt.Sprintf("CREATE TABLE ks.%s (k int PRIMARY KEY, by_%s int)", name, id)
		}
		errs := h.raceDDL(stmts)
		var winners []string
		for _, id := range ids {
			switch err := errs[id]; {
			case err == nil:
				winners = append(winners, id)
			case !errors.Is(err, schema.ErrExists):
				t.Errorf("round %d: %s's CREATE TABLE ks.%s: %v, want success or already exists", round, id, name, err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %v created ks.%s, want exactly one winner", round, winners, name)
		}
		h.sync()
		for _, id := range ids {
			if got, want := h.columnOf(id, name), "by_"+winners[0]; got != want {
				t.Errorf("round %d: node %s holds ks.%s with column %q, want the winner's %q", round, id, name, got, want)
			}
		}
	}

	stmts := map[string]string{}
	for _, id := range ids {
		stmts[id] = fmt.Sprintf("CREATE KEYSPACE ks_%s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", id)
	}
	for id, err := range h.raceDDL(stmts) {
		if err != nil {
			t.Errorf("%s's CREATE KEYSPACE ks_%s racing the others' keyspaces: %v, want success", id, id, err)
		}
	}
}

// TestOneWinnerDespiteLostAndDuplicatedMessages races the same CREATE TABLE while a fifth of the
// messages are lost, a fifth of the replies are lost and a tenth are duplicated: outcomes may
// be unknown (unavailable), but at most one node succeeds, and the table then holds its column.
func TestOneWinnerDespiteLostAndDuplicatedMessages(t *testing.T) {
	ids := []string{"n1", "n2", "n3", "n4", "n5"}
	h := newHarness(t, ids...)
	h.mustDDL("n1", ksRF3)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(28, 1))
	h.inject(func(_ context.Context, _ message) action {
		mu.Lock()
		defer mu.Unlock()
		switch x := rng.Float64(); {
		case x < 0.2:
			return lose
		case x < 0.4:
			return loseReply
		case x < 0.5:
			return duplicate
		}
		return deliver
	})
	won := map[string]string{} // table → the node that created it
	for round := range 10 {
		name := fmt.Sprintf("t%d", round)
		stmts := map[string]string{}
		for _, id := range ids {
			stmts[id] = fmt.Sprintf("CREATE TABLE ks.%s (k int PRIMARY KEY, by_%s int)", name, id)
		}
		errs := h.raceDDL(stmts)
		var winners []string
		for _, id := range ids {
			switch err := errs[id]; {
			case err == nil:
				winners = append(winners, id)
			case errors.Is(err, schema.ErrExists), errors.Is(err, ErrUnavailable):
			default:
				t.Errorf("round %d: %s: %v, want success, already exists or unavailable", round, id, err)
			}
		}
		if len(winners) > 1 {
			t.Fatalf("round %d: %v all created ks.%s, want one winner at most", round, winners, name)
		}
		if len(winners) == 1 {
			won[name] = winners[0]
		}
	}
	// Without faults, a round reads the agreed state: each table a node created holds its column.
	h.clearFaults()
	h.mustDDL("n3", "CREATE TABLE ks.final (k int PRIMARY KEY)")
	for name, id := range won {
		if got, want := h.columnOf("n3", name), "by_"+id; got != want {
			t.Errorf("the agreed ks.%s has column %q, want %q of %s, which created it", name, got, want, id)
		}
	}
	if len(won) == 0 {
		t.Errorf("no CREATE succeeded in 10 rounds; the faults leave a majority often enough for some")
	}
}

// TestMinorityDownDoesNotStopDDL: with two of five nodes down, DDL succeeds without sending them
// anything; with three down it fails at once as unavailable, naming them, and changes nothing.
func TestMinorityDownDoesNotStopDDL(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3", "n4", "n5")
	var toDown atomic.Int32
	h.inject(func(_ context.Context, m message) action {
		if m.to == "n4" || m.to == "n5" {
			toDown.Add(1)
		}
		return deliver
	})
	h.setDown("n4", true)
	h.setDown("n5", true)
	h.mustDDL("n1", ksRF3)
	if n := toDown.Load(); n != 0 {
		t.Errorf("the round sent %d messages to the down nodes, want none", n)
	}

	h.setDown("n3", true)
	before := h.acceptorState(t)
	_, _, err := h.ddl("n2", "CREATE TABLE ks.t (k int PRIMARY KEY)")
	var ue *coordinator.SchemaUnavailableError
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &ue) ||
		!strings.Contains(err.Error(), "needs 3 of the cluster's 5 nodes to agree, and only 2 are up (down: n3, n4, n5)") {
		t.Fatalf("DDL with 3 of 5 nodes down: %v, want an unavailable error naming n3, n4 and n5", err)
	}
	if after := h.acceptorState(t); after != before {
		t.Errorf("a DDL refused for want of a majority changed the acceptors' state")
	}

	h.setDown("n4", false)
	h.mustDDL("n2", "CREATE TABLE ks.t (k int PRIMARY KEY)")
}

// acceptorState renders every node's acceptor registers, to compare.
func (h *harness) acceptorState(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, id := range h.ids {
		a := h.node(id).Acceptor()
		a.mu.Lock()
		names := make([]string, 0, len(a.regs))
		for ks := range a.regs {
			names = append(names, ks)
		}
		slices.Sort(names)
		for _, ks := range names {
			r := a.regs[ks]
			fmt.Fprintf(&b, "%s %s promised %v accepted %v %x\n", id, ks, r.promised, r.accepted, r.value)
		}
		a.mu.Unlock()
	}
	return b.String()
}

// TestPartitionOnlyMajoritySideChanges: in a partition {n1, n2} | {n3, n4, n5} whose members
// all look up, the minority side's DDL fails naming the members it could not reach, the
// majority side's succeeds, and once healed the minority side sees it.
func TestPartitionOnlyMajoritySideChanges(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3", "n4", "n5")
	h.mustDDL("n1", ksRF3)
	h.partition("n1", "n2")
	_, _, err := h.ddl("n1", "CREATE TABLE ks.t (k int PRIMARY KEY, minority int)")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "in the prepare phase") ||
		!strings.Contains(err.Error(), "n3: ") || !strings.Contains(err.Error(), "n5: ") {
		t.Fatalf("DDL on the minority side: %v, want unavailable in the prepare phase naming n3 to n5", err)
	}
	h.mustDDL("n4", "CREATE TABLE ks.t (k int PRIMARY KEY, majority int)")
	h.heal()
	if _, _, err := h.ddl("n1", "CREATE TABLE ks.t (k int PRIMARY KEY, minority int)"); !errors.Is(err, schema.ErrExists) {
		t.Fatalf("the minority side's CREATE after healing: %v, want already exists", err)
	}
	if got := h.columnOf("n1", "t"); got != "majority" {
		t.Errorf("n1 holds ks.t with column %q after its failed CREATE, want the agreed %q", got, "majority")
	}
}

// TestLostAcceptRequestLeavesAMajority: an Accept lost on its way to one of three acceptors
// still leaves a majority: the change is chosen, and that acceptor never accepted it.
func TestLostAcceptRequestLeavesAMajority(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.inject(func(_ context.Context, m message) action {
		if m.to == "n3" && m.phase == "accept" {
			return lose
		}
		return deliver
	})
	h.mustDDL("n1", ksRF3)
	a := h.node("n3").Acceptor()
	a.mu.Lock()
	r := a.regs["ks"]
	a.mu.Unlock()
	if r == nil || r.promised.isZero() || !r.accepted.isZero() {
		t.Fatalf("n3's register after a lost Accept: %+v, want a promise and nothing accepted", r)
	}
}

// TestLostRepliesMayStillTakeEffect: when the Accept replies of two of three acceptors are lost,
// the proposer cannot tell whether its change was chosen and says so; it was, and the next
// round anywhere finds it.
func TestLostRepliesMayStillTakeEffect(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.mustDDL("n1", ksRF3)
	h.inject(func(_ context.Context, m message) action {
		if m.phase == "accept" && m.from == "n1" {
			return loseReply
		}
		return deliver
	})
	_, _, err := h.ddl("n1", "CREATE TABLE ks.t (k int PRIMARY KEY)")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "may still take effect") {
		t.Fatalf("CREATE TABLE whose Accept replies were lost: %v, want unavailable saying it may still take effect", err)
	}
	h.clearFaults()
	if _, _, err := h.ddl("n2", "CREATE TABLE ks.t (k int PRIMARY KEY, other int)"); !errors.Is(err, schema.ErrExists) {
		t.Fatalf("CREATE TABLE ks.t on n2 after n1's change was accepted unbeknown to it: %v, want already exists", err)
	}
}

// TestDuplicatedMessagesAreHarmless: every message delivered twice changes nothing of the
// outcome: acceptors answer a repeated Accept alike, and the rounds go on.
func TestDuplicatedMessagesAreHarmless(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.inject(func(context.Context, message) action { return duplicate })
	h.mustDDL("n1", ksRF3)
	h.mustDDL("n2", "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	h.mustDDL("n3", "ALTER TABLE ks.t WITH per_partition_rate_limit = {'max_reads_per_second': 10}")
	if _, _, err := h.ddl("n1", "CREATE TABLE ks.t (k int PRIMARY KEY)"); !errors.Is(err, schema.ErrExists) {
		t.Fatalf("CREATE of an existing table with duplicated messages: %v, want already exists", err)
	}
	if tb, ok := h.node("n1").Schema().Table("ks", "t"); !ok || tb.Limit(schema.OpRead) != 10 {
		t.Fatalf("n1's ks.t after the rounds: %v, want it with the altered read limit", tb)
	}
}

// TestStaleMessagesAreRefused replays an earlier round's Prepare and Accept to every acceptor
// after a later round: each refuses them naming the later ballot, and the agreed state keeps the
// later change.
func TestStaleMessagesAreRefused(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "n1", "n2", "n3")
	var mu sync.Mutex
	var sent []message
	h.inject(func(_ context.Context, m message) action {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, m)
		return deliver
	})
	h.mustDDL("n1", ksRF3)
	mu.Lock()
	first := slices.Clone(sent)
	mu.Unlock()
	h.mustDDL("n2", "CREATE TABLE ks.t (k int PRIMARY KEY)")

	for _, m := range first {
		a := h.node(m.to).Acceptor()
		switch req := m.req.(type) {
		case *replicapb.SchemaPrepareRequest:
			r, err := a.Prepare(ctx, req)
			if err != nil || r.GetPromised() || ballotOf(r.GetHighest()).compare(ballotOf(req.GetBallot())) <= 0 {
				t.Errorf("replayed Prepare(%v) to %s = %v, %v; want a refusal naming a higher ballot", ballotOf(req.GetBallot()), m.to, r, err)
			}
		case *replicapb.SchemaAcceptRequest:
			r, err := a.Accept(ctx, req)
			if err != nil || r.GetAccepted() || ballotOf(r.GetHighest()).compare(ballotOf(req.GetBallot())) <= 0 {
				t.Errorf("replayed Accept(%v) to %s = %v, %v; want a refusal naming a higher ballot", ballotOf(req.GetBallot()), m.to, r, err)
			}
		}
	}
	if len(first) == 0 {
		t.Fatal("the first round sent no message to replay")
	}
	if _, _, err := h.ddl("n3", "CREATE TABLE ks.t (k int PRIMARY KEY)"); !errors.Is(err, schema.ErrExists) {
		t.Fatalf("CREATE TABLE ks.t after the replays: %v, want already exists (the later change kept)", err)
	}
}

// TestSlowMinorityDoesNotHoldUpARound: messages to one of three nodes are held back
// indefinitely; the round completes with the other two, cancelling the held calls.
func TestSlowMinorityDoesNotHoldUpARound(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	gate := make(chan struct{})
	defer close(gate)
	var held, cancelled atomic.Int32
	h.inject(func(ctx context.Context, m message) action {
		if m.to != "n3" {
			return deliver
		}
		held.Add(1)
		select {
		case <-gate:
		case <-ctx.Done():
			cancelled.Add(1)
		}
		return deliver
	})
	h.mustDDL("n1", ksRF3)
	h.mustDDL("n2", "CREATE TABLE ks.t (k int PRIMARY KEY)")
	if held.Load() == 0 || cancelled.Load() != held.Load() {
		t.Errorf("%d calls to the slow node were held and %d cancelled when the rounds ended; want some, all cancelled", held.Load(), cancelled.Load())
	}
}

// TestPhaseTimesOutWithoutMajority: when two of three acceptors never answer, the phase gives
// up after its timeout with an unavailable error naming why each did not answer.
func TestPhaseTimesOutWithoutMajority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, "n1", "n2", "n3")
		h.inject(func(ctx context.Context, m message) action {
			if m.to != "n1" {
				<-ctx.Done()
			}
			return deliver
		})
		start := time.Now()
		_, _, err := h.ddl("n1", ksRF3)
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "only 1 did in the prepare phase") ||
			!strings.Contains(err.Error(), "n2: ") || !strings.Contains(err.Error(), "DeadlineExceeded") {
			t.Fatalf("DDL with two silent acceptors: %v, want unavailable in the prepare phase, n2 timing out", err)
		}
		if d := time.Since(start); d != defaultPhaseTimeout {
			t.Errorf("the phase gave up after %v, want its timeout %v", d, defaultPhaseTimeout)
		}
	})
}

// TestRestartKeepsTheAgreedState restarts every node with its clock set back and one node's
// schema file lost: the acceptors kept their word, so that node's CREATE of an agreed table
// fails as existing and brings the table back into its schema; a new change still succeeds,
// its ballot raised above the promises of before the restart.
func TestRestartKeepsTheAgreedState(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.mustDDL("n1", ksRF3)
	h.mustDDL("n2", "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	h.sync()
	digest := h.node("n3").Digest()

	h.clock.Store(startTime / 2)
	if err := removeFile(h.dirs["n1"], schemaFile); err != nil {
		t.Fatal(err)
	}
	for _, id := range h.ids {
		h.open(id)
	}
	if got := h.node("n3").Digest(); got != digest {
		t.Errorf("n3's digest after a restart is %s, want %s as before", got, digest)
	}
	if !h.node("n1").Schema().Empty() {
		t.Fatalf("n1 lost its schema file but holds a schema")
	}
	if _, _, err := h.ddl("n1", "CREATE TABLE ks.t (k int PRIMARY KEY)"); !errors.Is(err, schema.ErrExists) {
		t.Fatalf("CREATE TABLE ks.t through n1 after restarts: %v, want already exists", err)
	}
	if got := h.columnOf("n1", "t"); got != "v" {
		t.Errorf("n1 holds ks.t with column %q after its failed CREATE, want the agreed %q", got, "v")
	}
	h.mustDDL("n1", "CREATE TABLE ks.u (k int PRIMARY KEY)")
}
