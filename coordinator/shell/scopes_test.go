package shell_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/scopelimit"
)

// scopeSender delivers the budgets' counts between the cluster's executors, over the wire's
// encoding.
func (c *cluster) scopeSender(on bool) shell.ScopeSender {
	if !on {
		return nil
	}
	return scopeTransport{c}
}

type scopeTransport struct{ c *cluster }

func (s scopeTransport) ScopeCounts(ctx context.Context, to coordinator.NodeID, req *replicapb.ScopeCountsRequest) (*replicapb.ScopeCountsResponse, error) {
	e := s.c.executors[to]
	if e == nil {
		return nil, fmt.Errorf("no node %s", to)
	}
	resp, err := e.ScopeCounts(ctx, overTheWire(req))
	return overTheWire(resp), err
}

func (s scopeTransport) AppendNodes(dst []coordinator.NodeID) []coordinator.NodeID {
	return append(dst, s.c.ring.order...)
}

func level(name string, reads, writes uint32) scopelimit.Budget {
	return scopelimit.Budget{Kind: scopelimit.KindLevel, Name: name, ID: scopelimit.BudgetID(scopelimit.KindLevel, name), Reads: reads, Writes: writes}
}

func keyspaceBudget(name string, reads, writes uint32) scopelimit.Budget {
	return scopelimit.Budget{Kind: scopelimit.KindKeyspace, Name: name, ID: scopelimit.BudgetID(scopelimit.KindKeyspace, name), Reads: reads, Writes: writes}
}

// fixedBudgets is a BudgetsFunc answering bs for every request, and recording the keyspaces
// it was asked about.
func fixedBudgets(bs ...scopelimit.Budget) shell.BudgetsFunc {
	return func(context.Context, string) ([]scopelimit.Budget, error) { return bs, nil }
}

// writeMany runs n INSERTs of distinct partitions through node and returns how many were
// admitted and the rate-limit errors of the others.
func writeMany(t *testing.T, c *cluster, node coordinator.NodeID, n, from int) (admitted int, rejected []*coordinator.RateLimitError) {
	t.Helper()
	for i := range n {
		_, err := c.exec(node, one, fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('p%d', 1, 'x')", from+i))
		var rl *coordinator.RateLimitError
		switch {
		case err == nil:
			admitted++
		case errors.As(err, &rl):
			rejected = append(rejected, rl)
		default:
			t.Fatalf("write %d: %v", i, err)
		}
	}
	c.settle()
	return admitted, rejected
}

func TestBudgetsRejectAtTheFirstScopeThatRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		budgets []scopelimit.Budget
		want    coordinator.Scope
		refuser string
	}{
		{"client level", []scopelimit.Budget{level("client", 0, 10), level("org", 0, 1000), keyspaceBudget("ks", 0, 1000)}, coordinator.ScopeServiceLevel, "client"},
		{"shared level", []scopelimit.Budget{level("client", 0, 1000), level("org", 0, 10), keyspaceBudget("ks", 0, 1000)}, coordinator.ScopeServiceLevel, "org"},
		{"keyspace", []scopelimit.Budget{level("client", 0, 1000), level("org", 0, 0), keyspaceBudget("ks", 0, 10)}, coordinator.ScopeKeyspace, "ks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, options{budgets: fixedBudgets(tc.budgets...)})
			c.must(schemaRF3...)
			const n = 100
			admitted, rejected := writeMany(t, c, "n1", n, 0)
			// The clock stands still: the refusing budget admits what its rule allows up to
			// 2L (the onset bound), at least its limit, and hardly anything above.
			if admitted < 10 || admitted > 25 || len(rejected) != n-admitted {
				t.Fatalf("admitted %d of %d, rejected %d; want 10 to 25 admitted, the rest rejected", admitted, n, len(rejected))
			}
			for _, rl := range rejected {
				if rl.Scope != tc.want || rl.ScopeName != tc.refuser || rl.Limit != 10 || rl.Op != coordinator.OpWrite ||
					rl.RejectedBy != coordinator.RejectedByCoordinator || rl.RetryAfter <= 0 || rl.Table != "t" {
					t.Fatalf("rejected by %+v; want %v %s, limit 10, writes, with a retry hint", rl, tc.want, tc.refuser)
				}
			}
			what := map[coordinator.Scope]string{coordinator.ScopeServiceLevel: "service level", coordinator.ScopeKeyspace: "keyspace"}[tc.want]
			msg := rejected[0].Error()
			for _, part := range []string{"writes of " + what + " " + tc.refuser, "limit 10/s across the cluster", "retry after"} {
				if !strings.Contains(msg, part) {
					t.Errorf("message %q lacks %q", msg, part)
				}
			}
			// Each budget counts what reached it: all before the refuser, the admitted after it.
			e := c.executors["n1"]
			reached := n
			for _, b := range tc.budgets {
				if b.Writes == 0 {
					continue
				}
				if got := e.PeekScope(b.Kind, b.Name, coordinator.OpWrite); int(got) != reached {
					t.Errorf("%s %s counted %d writes, want %d", b.Kind, b.Name, got, reached)
				}
				if b.Name == tc.refuser {
					reached = admitted
				}
			}
		})
	}
}

func TestBudgetInShadowModeWarnsAndNeverRejects(t *testing.T) {
	b := level("trial", 0, 5)
	b.Shadow = true
	c := newCluster(t, options{budgets: fixedBudgets(b)})
	c.must(schemaRF3...)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.executors["n1"].ScopeCollector())
	warned := 0
	for i := range 40 {
		res, err := c.exec("n1", one, fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('p%d', 1, 'x')", i))
		if err != nil {
			t.Fatalf("write %d in shadow mode: %v", i, err)
		}
		for _, w := range res.Warnings {
			if strings.Contains(w, "service level trial in shadow mode") && strings.Contains(w, "limit 5 writes per second") {
				warned++
			}
		}
	}
	c.settle()
	if warned < 25 {
		t.Errorf("%d of 40 writes warned; want every one above 2L = 10", warned)
	}
	got := gather(t, reg)
	if got["kvnode_budget_would_reject_total service_level trial write"] != float64(warned) ||
		got["kvnode_budget_accepted_total service_level trial write"] != float64(40-warned) ||
		got["kvnode_budget_rejected_total service_level trial write"] != 0 {
		t.Errorf("metrics %v; want %d would-rejects, %d accepted, none rejected", got, warned, 40-warned)
	}
	if r := got["kvnode_budget_estimated_rate service_level trial write"]; r < 20 || r > 40 {
		t.Errorf("estimated rate %v, want the counter of 40 over 1.25 s", r)
	}
}

// gather returns the registry's samples as "name label-values..." → value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += " " + l.GetValue()
			}
			out[key] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}

func TestBudgetsCountOneUnitPerPartition(t *testing.T) {
	c := newCluster(t, options{budgets: fixedBudgets(level("org", 1000, 1000), keyspaceBudget("ks", 1000, 1000))})
	c.must(schemaRF3...)
	e := c.executors["n1"]
	// A BATCH counts one write per partition it writes (two statements on p1 are one).
	if _, err := c.exec("n1", quorum, "BEGIN UNLOGGED BATCH INSERT INTO t (k, c, v) VALUES ('p1', 1, 'x'); INSERT INTO t (k, c, v) VALUES ('p1', 2, 'x'); INSERT INTO t (k, c, v) VALUES ('p2', 1, 'x'); INSERT INTO t (k, c, v) VALUES ('p3', 1, 'x'); APPLY BATCH"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if got := e.PeekScope(scopelimit.KindLevel, "org", coordinator.OpWrite); got != 3 {
		t.Errorf("a BATCH of 3 partitions counted %d writes, want 3", got)
	}
	// A SELECT of one partition (kvnode has no multi-partition IN nor range scans yet) counts one
	// read per page.
	for range 2 {
		if _, err := c.exec("n1", one, "SELECT * FROM t WHERE k = 'p1'"); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.PeekScope(scopelimit.KindKeyspace, "ks", coordinator.OpRead); got != 2 {
		t.Errorf("2 SELECTs counted %d reads, want 2", got)
	}
	// An IN counts one read per partition, each once however many pages read it.
	st := coordinator.Statement{Text: "SELECT * FROM t WHERE k IN ('p1', 'p2', 'p3')", PageSize: 1}
	for pages := 0; ; pages++ {
		res, err := c.run("n1", st)
		if err != nil {
			t.Fatal(err)
		}
		if res.PagingState == nil {
			if pages < 3 {
				t.Fatalf("the IN took %d pages, want 4 (p1 has 2 rows)", pages+1)
			}
			break
		}
		st.PagingState = res.PagingState
	}
	if got := e.PeekScope(scopelimit.KindKeyspace, "ks", coordinator.OpRead); got != 5 {
		t.Errorf("after an IN of 3 partitions paged by 1 row, %d reads counted, want 2 + 3", got)
	}
}

func TestBudgetRejectsABatchAtTheUnitItRefuses(t *testing.T) {
	c := newCluster(t, options{budgets: fixedBudgets(level("client", 0, 1), keyspaceBudget("ks", 0, 1000))})
	c.must(schemaRF3...)
	var stmts []string
	for i := range 6 {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('p%d', 1, 'x')", i))
	}
	_, err := c.exec("n1", quorum, "BEGIN UNLOGGED BATCH "+strings.Join(stmts, "; ")+"; APPLY BATCH")
	var rl *coordinator.RateLimitError
	if !errors.As(err, &rl) || rl.ScopeName != "client" {
		t.Fatalf("a BATCH of 6 partitions over a level of 1 write/s: %v; want rejected by the level", err)
	}
	// The level counted the units up to the one it refused; the keyspace only those it
	// admitted, and nothing was written.
	e := c.executors["n1"]
	lv, ks := e.PeekScope(scopelimit.KindLevel, "client", coordinator.OpWrite), e.PeekScope(scopelimit.KindKeyspace, "ks", coordinator.OpWrite)
	if lv < 2 || lv > 3 || ks != lv-1 {
		t.Errorf("level counted %d, keyspace %d; want 2 or 3 (2L admitted at most), and one less", lv, ks)
	}
	if rows, err := c.query("n1", quorum, "SELECT * FROM t WHERE k = 'p0'"); err != nil || len(rows) != 0 {
		t.Errorf("the rejected BATCH wrote %v (%v)", rows, err) // reads have no budget here
	}
}

// TestLevelHeldAcrossCoordinators spreads a level's writes over three coordinators: with the
// counts propagated, the cluster admits what one coordinator would (at most 2L while the clock
// stands still); without, each coordinator admits that much on its own.
func TestLevelHeldAcrossCoordinators(t *testing.T) {
	for _, propagate := range []bool{true, false} {
		t.Run(fmt.Sprintf("propagate=%v", propagate), func(t *testing.T) {
			c := newCluster(t, options{budgets: fixedBudgets(level("org", 0, 10)), scopes: true})
			c.must(schemaRF3...)
			admitted := 0
			for i := range 90 {
				n, _ := writeMany(t, c, nodes[i%3], 1, i)
				admitted += n
				if propagate {
					c.executors[nodes[i%3]].FlushScopes()
				}
			}
			switch {
			case propagate && admitted > 25:
				t.Errorf("the cluster admitted %d writes of a level of 10/s with its counts propagated; want about 2L = 20", admitted)
			case !propagate && admitted < 40:
				t.Errorf("the cluster admitted %d writes without propagation; want about 3 × 2L (each coordinator alone)", admitted)
			}
			if propagate {
				for _, id := range nodes {
					if got := c.executors[id].PeekScope(scopelimit.KindLevel, "org", coordinator.OpWrite); got != 90 {
						t.Errorf("%s counts %d of the level's 90 writes, want all", id, got)
					}
				}
			}
		})
	}
}

func TestSyncScopesFillsAStartingCoordinator(t *testing.T) {
	c := newCluster(t, options{budgets: fixedBudgets(level("org", 0, 10)), scopes: true})
	c.must(schemaRF3...)
	writeMany(t, c, "n1", 300, 0)
	if got := c.executors["n2"].PeekScope(scopelimit.KindLevel, "org", coordinator.OpWrite); got != 0 {
		t.Fatalf("n2 counts %d before any flush", got)
	}
	from, err := c.executors["n2"].SyncScopes(context.Background())
	if err != nil || from != "n1" {
		t.Fatalf("SyncScopes: %q, %v; want synced from n1", from, err)
	}
	if got := c.executors["n2"].PeekScope(scopelimit.KindLevel, "org", coordinator.OpWrite); got != 300 {
		t.Errorf("n2 counts %d after syncing, want n1's 300", got)
	}
	// n2's first writes are judged on the cluster's count (each admitted with probability
	// about L/(300·ln2) = 5 %), not on an empty counter (which admits the first 1.44·L).
	if admitted, _ := writeMany(t, c, "n2", 10, 1000); admitted > 4 {
		t.Errorf("n2 admitted %d of its first 10 writes after syncing; want hardly any", admitted)
	}
}

func TestScopeCountsRefusesBadInput(t *testing.T) {
	c := newCluster(t, options{})
	e := c.executors["n1"]
	good := &replicapb.ScopeCount{Id: 7, Label: shell.ScopeLabel(scopelimit.KindLevel, coordinator.OpWrite), Count: 3, Limit: 10}
	many := make([]*replicapb.ScopeCount, shell.MaxScopeCounts+1)
	for i := range many {
		many[i] = good
	}
	for _, tc := range []struct {
		name string
		req  *replicapb.ScopeCountsRequest
		want string
	}{
		{"unknown label", &replicapb.ScopeCountsRequest{Deltas: []*replicapb.ScopeCount{good, {Id: 7, Label: 0x0301, Count: 1}}}, "count 1 (budget 7) has label 0x301"},
		{"unknown op", &replicapb.ScopeCountsRequest{Deltas: []*replicapb.ScopeCount{{Id: 7, Label: 0x0107, Count: 1}}}, "label 0x107"},
		{"zero count", &replicapb.ScopeCountsRequest{Deltas: []*replicapb.ScopeCount{{Id: 7, Label: good.Label}}}, "is 0"},
		{"sync with counts", &replicapb.ScopeCountsRequest{Sync: true, Deltas: []*replicapb.ScopeCount{good}}, "a sync carries no counts"},
		{"too many", &replicapb.ScopeCountsRequest{Deltas: many}, "more than the 4096"},
		{"empty count", &replicapb.ScopeCountsRequest{Deltas: []*replicapb.ScopeCount{nil}}, "count 0 is empty"},
	} {
		_, err := e.ScopeCounts(context.Background(), tc.req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want INVALID_ARGUMENT saying %q", tc.name, err, tc.want)
		}
	}
	// Nothing of a refused request was counted; a good one is, on the receiver's clock.
	if got := e.PeekScopeID(7, good.Label); got != 0 {
		t.Errorf("refused requests counted %d", got)
	}
	if _, err := e.ScopeCounts(context.Background(), &replicapb.ScopeCountsRequest{Deltas: []*replicapb.ScopeCount{good, good}}); err != nil {
		t.Fatal(err)
	}
	if got := e.PeekScopeID(7, good.Label); got != 6 {
		t.Errorf("two deltas of 3 counted %d", got)
	}
	resp, err := e.ScopeCounts(context.Background(), &replicapb.ScopeCountsRequest{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	// A sync answers the budgets this coordinator judged itself; it judged none.
	if len(resp.GetCounts()) != 0 {
		t.Errorf("sync answered %v", resp.GetCounts())
	}
}

func TestTopClientsRanksWhoSpendsEachBudget(t *testing.T) {
	c := newCluster(t, options{budgets: fixedBudgets(level("org", 0, 1000), keyspaceBudget("ks", 1000, 0))})
	c.must(schemaRF3...)
	e := c.executors["n1"]
	for i, who := range []string{"alice", "alice", "alice", "bob"} {
		ctx := auth.WithRole(context.Background(), who)
		for j := range 10 {
			if _, err := e.Execute(ctx, coordinator.Statement{Text: fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('p%d', %d, 'x')", i, j), Keyspace: "ks"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	anon := auth.WithClient(context.Background(), netip.MustParseAddr("10.0.0.7"))
	if _, err := e.Execute(anon, coordinator.Statement{Text: "SELECT * FROM t WHERE k = 'p1'", Keyspace: "ks"}); err != nil {
		t.Fatal(err)
	}
	c.settle()
	var got []string
	top, err := e.ClusterTopClients(context.Background(), "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range top.Budgets {
		for i, tc := range b.Clients {
			got = append(got, fmt.Sprintf("%s %s %s #%d %s %.0f/s %.2f", b.Scope, b.Budget, b.Op, i+1, tc.Client, tc.Rate, tc.Share))
		}
	}
	slices.Sort(got)
	// The clock stands at .25 s past a second: a count of 30 reads 24/s.
	want := []string{
		"keyspace ks read #1 client 10.0.0.7 1/s 1.00",
		"service_level org write #1 alice 24/s 0.75",
		"service_level org write #2 bob 8/s 0.25",
	}
	if !slices.Equal(got, want) {
		t.Errorf("TopClients:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStatementsJudgedByTheLevelsTheyCreate runs the whole path with the executors' own
// resolver: a level attached to a client's address and a keyspace's rate_limit, created by
// statements, hold that client's writes across three coordinators; an ALTER is judged by at
// once; a client outside the block is held by the keyspace alone.
func TestStatementsJudgedByTheLevelsTheyCreate(t *testing.T) {
	c := newCluster(t, options{scopes: true})
	c.must(schemaRF3...)
	c.must(
		"CREATE SERVICE LEVEL web WITH max_writes_per_second = 10",
		"ATTACH SERVICE LEVEL web TO ADDRESS '10.0.0.7'",
		"ALTER KEYSPACE ks WITH rate_limit = {'max_writes_per_second': 100000}",
	)
	web := fromClient("10.0.0.7")
	admitted := 0
	var last *coordinator.RateLimitError
	for i := range 60 {
		n := nodes[i%3]
		_, err := c.executors[n].Execute(web, coordinator.Statement{Text: fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('w%d', 1, 'x')", i), Keyspace: "ks"})
		var rl *coordinator.RateLimitError
		switch {
		case err == nil:
			admitted++
		case errors.As(err, &rl):
			last = rl
		default:
			t.Fatal(err)
		}
		c.executors[n].FlushScopes()
	}
	c.settle()
	if admitted > 25 || last == nil || last.Scope != coordinator.ScopeServiceLevel || last.ScopeName != "web" {
		t.Fatalf("admitted %d of 60 writes of level web (10/s) over 3 coordinators, last rejection %+v; want about 2L = 20, refused by web", admitted, last)
	}
	// Another client is held by the keyspace alone, which counted only what web admitted.
	if _, err := c.executors["n2"].Execute(fromClient("10.0.0.8"), coordinator.Statement{Text: "INSERT INTO t (k, c, v) VALUES ('o', 1, 'x')", Keyspace: "ks"}); err != nil {
		t.Fatalf("a client without a level: %v", err)
	}
	c.settle()
	if got := c.executors["n2"].PeekScope(scopelimit.KindKeyspace, "ks", coordinator.OpWrite); got != uint32(admitted)+1 {
		t.Errorf("the keyspace counted %d writes, want web's %d admitted and the other client's", got, admitted)
	}
	// Raised far above the count, the level admits the next write on any node at once.
	c.must("ALTER SERVICE LEVEL web WITH max_writes_per_second = 100000")
	if _, err := c.executors["n3"].Execute(web, coordinator.Statement{Text: "INSERT INTO t (k, c, v) VALUES ('after', 1, 'x')", Keyspace: "ks"}); err != nil {
		t.Errorf("a write right after ALTER raised the level: %v", err)
	}
	c.settle()
}
