package shell

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/scopelimit"
)

// TopClientsSender asks a peer coordinator who spends the budgets through it (an internode
// top_clients request). A ScopeSender that also implements it makes ClusterTopClients, and so
// system.top_clients, answer for the whole cluster; the node's transport does.
type TopClientsSender interface {
	TopClients(ctx context.Context, to coordinator.NodeID, req *replicapb.TopClientsRequest) (*replicapb.TopClientsResponse, error)
}

// Bounds of the top_clients exchange.
const (
	// MaxTopClientsSpenders bounds the spenders of one top_clients answer, sent or received
	// (with names of at most maxTopClientsName bytes, about 4 MiB at the very worst, 200 KiB
	// with the usual short role names): a coordinator with more lists whole budgets up to it
	// and says the answer is truncated.
	MaxTopClientsSpenders = 4096
	// maxTopClientsName bounds a budget's or a spender's name on the wire; longer spender
	// names are cut (at a character boundary), longer budget names refused.
	maxTopClientsName = 1024
	// TopClientsTimeout bounds how long ClusterTopClients waits for the peers: one that has not
	// answered by then is left out, and named.
	TopClientsTimeout = 2 * time.Second
)

// budgetSpenders lists who spends each budget through this coordinator, of kind and named
// budget when they are not empty: per budget and op with spenders, the ones tracked with their
// recent rates, heaviest first (ties by name), in (kind, budget, op) order.
func (s *scopes) budgetSpenders(kind, budget string) []coordinator.BudgetSpenders {
	now := s.now()
	sec := now.Unix()
	// The counts are halved every second: a count read f seconds into one is about f times
	// the last second's rate (f in [1, 2)).
	f := 1 + float64(now.Nanosecond())/1e9
	s.mu.RLock()
	all := make([]*budgetStats, 0, len(s.stats))
	for _, st := range s.stats {
		if (kind == "" || scopeOf(st.kind).String() == kind) && (budget == "" || st.name == budget) {
			all = append(all, st)
		}
	}
	s.mu.RUnlock()
	var out []coordinator.BudgetSpenders
	for _, st := range all {
		for oi, op := range []coordinator.Op{coordinator.OpRead, coordinator.OpWrite} {
			b := coordinator.BudgetSpenders{Scope: scopeOf(st.kind), Budget: st.name, Op: op, Limit: st.limit[oi].Load()}
			st.mu.Lock()
			for j := range st.spenders[oi] {
				sp := &st.spenders[oi][j]
				sp.decay(sec)
				if sp.count >= 0.5 {
					b.Spenders = append(b.Spenders, coordinator.Spender{Client: sp.who.String(), Rate: sp.count / f})
				}
			}
			st.mu.Unlock()
			if len(b.Spenders) == 0 {
				continue
			}
			slices.SortFunc(b.Spenders, func(x, y coordinator.Spender) int {
				if x.Rate != y.Rate {
					if x.Rate > y.Rate {
						return -1
					}
					return 1
				}
				return strings.Compare(x.Client, y.Client)
			})
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(x, y coordinator.BudgetSpenders) int {
		if x.Scope != y.Scope {
			return int(x.Scope) - int(y.Scope)
		}
		if c := strings.Compare(x.Budget, y.Budget); c != 0 {
			return c
		}
		return int(x.Op) - int(y.Op)
	})
	return out
}

// checkTopClientsFilter reports what is wrong with a top_clients request's kind or budget.
func checkTopClientsFilter(kind, budget string) error {
	if kind != "" && kind != coordinator.ScopeServiceLevel.String() && kind != coordinator.ScopeKeyspace.String() {
		return fmt.Errorf("kind %.64q is neither %q nor %q", kind, coordinator.ScopeServiceLevel, coordinator.ScopeKeyspace)
	}
	if len(budget) > maxTopClientsName {
		return fmt.Errorf("budget name of %d bytes is longer than %d", len(budget), maxTopClientsName)
	}
	return nil
}

// TopClients serves an internode top_clients request: who spends each budget through this
// coordinator (of the request's kind and budget, when set), at most MaxTopClientsSpenders in
// all. A request with a kind other than "service_level" or "keyspace", or a budget name over
// 1024 bytes, is refused with INVALID_ARGUMENT.
func (e *Executor) TopClients(_ context.Context, req *replicapb.TopClientsRequest) (*replicapb.TopClientsResponse, error) {
	if err := checkTopClientsFilter(req.GetKind(), req.GetBudget()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "coordinator: top_clients request: %v", err)
	}
	resp := &replicapb.TopClientsResponse{}
	n := 0
	for _, b := range e.scopes.budgetSpenders(req.GetKind(), req.GetBudget()) {
		if n+len(b.Spenders) > MaxTopClientsSpenders {
			resp.Truncated = true
			break
		}
		n += len(b.Spenders)
		kind := scopelimit.KindLevel
		if b.Scope == coordinator.ScopeKeyspace {
			kind = scopelimit.KindKeyspace
		}
		tb := &replicapb.TopClientsBudget{Label: scopeLabel(kind, b.Op), Budget: b.Budget, Limit: b.Limit}
		for _, sp := range b.Spenders {
			tb.Spenders = append(tb.Spenders, &replicapb.TopClientSpender{Client: clipName(sp.Client), OpsPerSecond: sp.Rate})
		}
		resp.Budgets = append(resp.Budgets, tb)
	}
	return resp, nil
}

// clipName cuts name to at most maxTopClientsName bytes, at a character boundary.
func clipName(name string) string {
	if len(name) <= maxTopClientsName {
		return name
	}
	i := maxTopClientsName
	for i > 0 && !utf8.RuneStart(name[i]) {
		i--
	}
	return name[:i]
}

// topClientsAnswer checks a peer's top_clients answer and converts it, or reports what is
// wrong with it: a label no budget has, more spenders than a budget tracks or an answer holds,
// a name too long or empty, a spender listed twice, a rate not finite or negative.
func topClientsAnswer(resp *replicapb.TopClientsResponse) ([]coordinator.BudgetSpenders, error) {
	out := make([]coordinator.BudgetSpenders, 0, len(resp.GetBudgets()))
	n := 0
	for i, tb := range resp.GetBudgets() {
		kind, op, ok := labelParts(tb.GetLabel())
		if !ok {
			return nil, fmt.Errorf("budget %d has label %#x, no budget's", i, tb.GetLabel())
		}
		if tb.GetBudget() == "" || len(tb.GetBudget()) > maxTopClientsName {
			return nil, fmt.Errorf("budget %d has a name of %d bytes (1 to %d)", i, len(tb.GetBudget()), maxTopClientsName)
		}
		sps := tb.GetSpenders()
		if len(sps) > spendersPerBudget {
			return nil, fmt.Errorf("budget %s lists %d spenders, more than the %d a budget tracks", tb.GetBudget(), len(sps), spendersPerBudget)
		}
		if n += len(sps); n > MaxTopClientsSpenders {
			return nil, fmt.Errorf("more than %d spenders", MaxTopClientsSpenders)
		}
		b := coordinator.BudgetSpenders{Scope: scopeOf(kind), Budget: tb.GetBudget(), Op: op, Limit: tb.GetLimit(), Spenders: make([]coordinator.Spender, 0, len(sps))}
		for _, sp := range sps {
			name, rate := sp.GetClient(), sp.GetOpsPerSecond()
			switch {
			case name == "" || len(name) > maxTopClientsName:
				return nil, fmt.Errorf("budget %s lists a spender whose name has %d bytes (1 to %d)", tb.GetBudget(), len(name), maxTopClientsName)
			case math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0:
				return nil, fmt.Errorf("budget %s lists spender %s at %g operations per second", tb.GetBudget(), name, rate)
			case slices.ContainsFunc(b.Spenders, func(s coordinator.Spender) bool { return s.Client == name }):
				return nil, fmt.Errorf("budget %s lists spender %s twice", tb.GetBudget(), name)
			}
			b.Spenders = append(b.Spenders, coordinator.Spender{Client: name, Rate: rate})
		}
		out = append(out, b)
	}
	return out, nil
}

// ClusterTopClients is who spends each budget across the cluster (system.top_clients): this
// coordinator's spenders and every live peer's, asked in parallel over internode (when the
// ScopeSender is also a TopClientsSender), merged by coordinator.MergeTopClients with at most k
// spenders per budget and op (0: all). kind and budget, when not empty, keep only that kind's
// ("service_level" or "keyspace") or that budget's. A peer that does not answer within
// TopClientsTimeout, or answers wrongly, is left out and named in the result's Unreachable.
func (e *Executor) ClusterTopClients(ctx context.Context, kind, budget string, k int) (coordinator.TopClients, error) {
	if err := checkTopClientsFilter(kind, budget); err != nil {
		return coordinator.TopClients{}, fmt.Errorf("coordinator: top clients: %w", err)
	}
	answers := []coordinator.NodeTopClients{{Node: e.localID, Budgets: e.scopes.budgetSpenders(kind, budget)}}
	var peers []coordinator.NodeID
	var send TopClientsSender
	if p := e.scopes.prop; p != nil {
		if send, _ = p.send.(TopClientsSender); send != nil {
			for _, id := range p.send.AppendNodes(nil) {
				if id != e.localID {
					peers = append(peers, id)
				}
			}
		}
	}
	if len(peers) == 0 {
		return coordinator.MergeTopClients(answers, k), nil
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, TopClientsTimeout)
	defer cancel()
	req := &replicapb.TopClientsRequest{Kind: kind, Budget: budget}
	got := make(chan coordinator.NodeTopClients, len(peers)) // room for every answer: no sender blocks
	asked := 0
	for _, to := range peers {
		if !e.isLive(to) {
			answers = append(answers, coordinator.NodeTopClients{Node: to, Unreachable: true})
			continue
		}
		asked++
		go func() { // ends when the call returns, at the latest at ctx's deadline
			var err error
			a := coordinator.NodeTopClients{Node: to}
			defer func() {
				if err != nil {
					e.logger.Warn("a node did not list who spends its budgets", "node", to, "err", err)
					a = coordinator.NodeTopClients{Node: to, Unreachable: true}
				}
				got <- a
			}()
			defer recovered(e.logger, "a top_clients request", to, &err)
			var resp *replicapb.TopClientsResponse
			if resp, err = send.TopClients(ctx, to, req); err != nil {
				return
			}
			if a.Budgets, err = topClientsAnswer(resp); err != nil {
				err = fmt.Errorf("its top_clients answer: %w", err)
				return
			}
			a.Truncated = resp.GetTruncated()
		}()
	}
	for range asked {
		answers = append(answers, <-got)
	}
	if err := parent.Err(); err != nil { // the caller gave up: its error, not a partial answer
		return coordinator.TopClients{}, err
	}
	return coordinator.MergeTopClients(answers, k), nil
}
