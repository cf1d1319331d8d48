package shell

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/scopelimit"
)

// BudgetsFunc lists the budgets a request on keyspace is held by, most specific first: its
// client's service level, the shared levels up its role graph, then the keyspace's rate_limit
// (scopelimit.Budget). The request's role and client address are in ctx (auth.RoleFrom,
// auth.ClientFrom). It is called once per statement (once per keyspace of a BATCH), on the
// request's goroutine: it must be cheap and safe for concurrent use. No budgets is a nil slice.
type BudgetsFunc func(ctx context.Context, keyspace string) ([]scopelimit.Budget, error)

// Cardinality bounds of the budgets' metrics and of system.top_clients.
const (
	// MaxNamedBudgets is how many budgets of each kind (service levels, keyspaces) the metrics
	// name, the first this coordinator meets; the others are summed under name="other".
	MaxNamedBudgets = 100
	// maxTrackedBudgets bounds the budgets this coordinator keeps statistics of (metrics, the
	// spenders of system.top_clients, the counters a starting peer syncs): beyond it a budget
	// is still judged, and counted under name="other".
	maxTrackedBudgets = 1024
	// spendersPerBudget is how many spenders (roles or client addresses) each budget and op
	// tracks for system.top_clients: the heaviest recent ones, by a count halved every second.
	spendersPerBudget = 16
)

// unitStride separates the seeds of the units of one request (see scopes.judge): odd, and far
// from scopelimit.Draw's own stride, so that no unit's scope i draws another's scope j.
const unitStride = 0xd1b54a32d192ed03

// goldenStride is scopelimit.Draw's stride: Decide of a one-scope chain with seed s+i·golden
// draws Draw(s, i), so that judging the chain one scope at a time (for shadow budgets) draws as
// Decide of the whole chain would.
const goldenStride = 0x9e3779b97f4a7c15

// scopes is the executor's side of the budgets held cluster-wide: its scopelimit.Limiter, the
// per-budget statistics the metrics and system.top_clients read, and the propagation of its
// counts to its peers (scopeprop.go).
type scopes struct {
	lim  *scopelimit.Limiter
	now  func() time.Time
	seed func() uint64

	// byID holds stats' entries for the requests' lookups, which take no lock.
	byID   sync.Map // Budget.ID → *budgetStats
	mu     sync.RWMutex
	stats  map[int64]*budgetStats // by Budget.ID; at most maxTrackedBudgets
	named  [3]int                 // named budgets per kind
	others [3]*budgetStats        // name="other", per kind

	prop *scopeProp // nil without a ScopeSender
}

func newScopes(now func() time.Time, seed func() uint64) (*scopes, error) {
	lim, err := scopelimit.New(scopelimit.Options{})
	if err != nil {
		return nil, err
	}
	if seed == nil {
		seed = rand.Uint64
	}
	s := &scopes{lim: lim, now: now, seed: seed, stats: make(map[int64]*budgetStats)}
	for k := scopelimit.KindLevel; k <= scopelimit.KindKeyspace; k++ {
		s.others[k] = &budgetStats{kind: k, name: "other"}
	}
	return s, nil
}

// budgetStats is one budget's statistics on this coordinator, by op (index 0 reads, 1 writes).
type budgetStats struct {
	kind    scopelimit.Kind
	name    string
	id      int64
	tracked bool // false for the "other" sums
	named   bool

	limit                         [2]atomic.Uint32
	accepted, rejected, wouldRjct [2]atomic.Uint64

	mu       sync.Mutex
	spenders [2][spendersPerBudget]spender
}

// spender is one role or client address spending a budget, with its decaying count.
type spender struct {
	who   spenderID
	count float64
	sec   int64 // the second count was last halved to
}

// spenderID names who spends a budget: the request's role, or its client's address when it
// has no role (authentication off), or neither.
type spenderID struct {
	role string
	addr netip.Addr
}

// String returns the role, "client 10.0.0.7", or "anonymous".
func (w spenderID) String() string {
	switch {
	case w.role != "":
		return w.role
	case w.addr.IsValid():
		return "client " + w.addr.String()
	}
	return "anonymous"
}

func spenderOf(ctx context.Context) spenderID {
	var w spenderID
	w.role, _ = auth.RoleFrom(ctx)
	if w.role == "" {
		w.addr, _ = auth.ClientFrom(ctx)
	}
	return w
}

// opIndex is op's index in budgetStats' arrays.
func opIndex(op coordinator.Op) int {
	if op == coordinator.OpWrite {
		return 1
	}
	return 0
}

// scopeLabel is the scopelimit label of a budget of kind k for op: kind << 8 | op.
func scopeLabel(k scopelimit.Kind, op coordinator.Op) uint32 { return uint32(k)<<8 | uint32(op) }

// labelParts splits a label, reporting false for one no budget has.
func labelParts(label uint32) (scopelimit.Kind, coordinator.Op, bool) {
	k, op := scopelimit.Kind(label>>8), coordinator.Op(label&0xff)
	ok := label>>16 == 0 && (k == scopelimit.KindLevel || k == scopelimit.KindKeyspace) && (op == coordinator.OpRead || op == coordinator.OpWrite)
	return k, op, ok
}

// statsOf returns b's statistics, making them the first time b is met (or the sum of its
// kind's "other" budgets once maxTrackedBudgets are kept).
func (s *scopes) statsOf(b *scopelimit.Budget) *budgetStats {
	if st, ok := s.byID.Load(b.ID); ok {
		return st.(*budgetStats)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats[b.ID]
	if st != nil {
		return st
	}
	if len(s.stats) >= maxTrackedBudgets {
		return s.others[b.Kind]
	}
	st = &budgetStats{kind: b.Kind, name: b.Name, id: b.ID, tracked: true, named: s.named[b.Kind] < MaxNamedBudgets}
	if st.named {
		s.named[b.Kind]++
	}
	s.stats[b.ID] = st
	s.byID.Store(b.ID, st)
	return st
}

// scopeOf is the error's scope of a budget of kind k.
func scopeOf(k scopelimit.Kind) coordinator.Scope {
	if k == scopelimit.KindKeyspace {
		return coordinator.ScopeKeyspace
	}
	return coordinator.ScopeServiceLevel
}

// judgeScopes judges a statement's units operations of op on keyspace (one per partition it
// touches) by the request's budgets, after node admission and before any partition's limit:
// nil when every enforced budget admitted them, else the *RateLimitError of the first budget
// that refused. warnings receives a warning per budget in shadow mode that would have refused.
// It does nothing without a BudgetsFunc or when the request has no budgets.
func (e *Executor) judgeScopes(ctx context.Context, keyspace, table string, op coordinator.Op, units int, warnings *[]string) error {
	if e.budgetsOf == nil || units <= 0 {
		return nil
	}
	budgets, err := e.budgetsOf(ctx, keyspace)
	if err != nil {
		return fmt.Errorf("coordinator: the budgets of a request on keyspace %s: %w", keyspace, err)
	}
	if len(budgets) == 0 {
		return nil
	}
	return e.scopes.judge(ctx, budgets, keyspace, table, op, units, warnings)
}

// judge judges units operations by budgets, the most specific first. Each unit goes down the
// chain, each budget counting it and deciding with its own draw (scopelimit.Draw of the unit's
// seed, derived from the request's one seed), until a budget refuses it; a budget in shadow
// mode that refuses counts a would-reject and lets the unit go on. The first enforced refusal
// rejects the whole request: the units before it were counted by every budget, the refused
// one by the budgets up to the refusing one, and the units after it by none.
func (s *scopes) judge(ctx context.Context, budgets []scopelimit.Budget, keyspace, table string, op coordinator.Op, units int, warnings *[]string) error {
	var buf [8]*budgetStats
	sts := buf[:0]
	for i := range budgets {
		b := &budgets[i]
		if b.Kind != scopelimit.KindLevel && b.Kind != scopelimit.KindKeyspace {
			return fmt.Errorf("coordinator: budget %q of this request has kind %d, neither a service level nor a keyspace", b.Name, b.Kind)
		}
		sts = append(sts, s.statsOf(b))
	}
	oi := opIndex(op)
	now := s.now()
	seed := s.seed()
	var warned uint64 // budgets (by index, the first 64) already warned about
	for u := range units {
		su := seed + uint64(u)*unitStride
		for i := range budgets {
			b := &budgets[i]
			limit := b.Limit(op)
			if limit == 0 {
				continue
			}
			st := sts[i]
			st.limit[oi].Store(limit)
			chain := [1]scopelimit.Scope{{ID: b.ID, Label: scopeLabel(b.Kind, op), Limit: limit}}
			v := s.lim.Decide(chain[:], su+uint64(i)*goldenStride, now)
			if v.Admitted {
				st.accepted[oi].Add(1)
				continue
			}
			if b.Shadow {
				st.wouldRjct[oi].Add(1)
				if warnings != nil && (i >= 64 || warned&(1<<i) == 0) {
					if i < 64 {
						warned |= 1 << i
					}
					*warnings = append(*warnings, fmt.Sprintf("%s %s in shadow mode: this %s would have been rejected (limit %d %ss per second across the cluster); it was not, since the limit is not enforced",
						b.Kind, b.Name, op, limit, op))
				}
				continue
			}
			st.rejected[oi].Add(1)
			s.spent(ctx, budgets, sts, op, now, u, i)
			return &coordinator.RateLimitError{
				Keyspace: keyspace, Table: table, Op: op, RejectedBy: coordinator.RejectedByCoordinator,
				Scope: scopeOf(b.Kind), ScopeName: b.Name,
				Limit: limit, Count: v.Decision.Count, RetryAfter: v.Decision.RetryAfter,
			}
		}
	}
	s.spent(ctx, budgets, sts, op, now, units, -1)
	return nil
}

// spent records who spent the budgets: units operations counted by every budget, and one more
// by the budgets up to index last (the refused unit) when last is not -1.
func (s *scopes) spent(ctx context.Context, budgets []scopelimit.Budget, sts []*budgetStats, op coordinator.Op, now time.Time, units, last int) {
	who := spenderOf(ctx)
	oi := opIndex(op)
	for i, st := range sts {
		n := units
		if i <= last {
			n++
		}
		if n == 0 || budgets[i].Limit(op) == 0 || !st.tracked {
			continue
		}
		st.spend(oi, who, float64(n), now)
	}
}

// spend adds n operations of who to the budget's spenders of op oi: who's slot, else the
// lightest one's, which who takes over (so the heaviest recent spenders stay, as in Space-Saving
// without its overestimate).
func (st *budgetStats) spend(oi int, who spenderID, n float64, now time.Time) {
	sec := now.Unix()
	st.mu.Lock()
	defer st.mu.Unlock()
	slots := &st.spenders[oi]
	light := 0
	for j := range slots {
		sp := &slots[j]
		sp.decay(sec)
		if sp.count > 0 && sp.who == who {
			sp.count += n
			return
		}
		if sp.count < slots[light].count {
			light = j
		}
	}
	slots[light] = spender{who: who, count: n, sec: sec}
}

// decay halves the count once per second boundary passed since it was last halved.
func (sp *spender) decay(sec int64) {
	if d := sec - sp.sec; d > 0 && sp.count > 0 {
		if d > 60 {
			sp.count = 0
		} else {
			sp.count /= float64(uint64(1) << d)
		}
	}
	sp.sec = max(sp.sec, sec)
}
