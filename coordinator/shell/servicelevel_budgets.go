package shell

import (
	"context"
	"net/netip"
	"sync"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/schema"
	"github.com/kvnode/kvnode/scopelimit"
)

// maxBudgetCacheEntries bounds Budgets' cache: past it, the cache starts over (its keys are
// roles, client addresses under an address attachment, and limited keyspaces; few in practice,
// and this only stops a flood of addresses from growing it).
const maxBudgetCacheEntries = 1 << 16

// budgetCache holds Budgets' answers computed from one schema: a new schema (any change, a
// level's or not) starts a new cache, so an answer never outlives the state it came from.
type budgetCache struct {
	schema *schema.Schema

	mu sync.RWMutex
	m  map[budgetKey][]scopelimit.Budget
}

// budgetKey is what a request's budgets depend on.
type budgetKey struct {
	role     string
	addr     netip.Addr
	keyspace string
}

// Budgets returns the budgets a request on keyspace holds, most specific first: the levels
// attached to its client's address (the most specific block first), then its role's chain of
// levels (schema.EffectiveLevels: its own, then those of the roles granted to it breadth-first,
// ties by role name), then the keyspace's rate_limit; each level once, and levels without a
// limit left out. The role is auth.RoleFrom(ctx), the address auth.ClientFrom(ctx).
//
// It is called on every request: when no level is attached and no keyspace is limited it returns
// nil at the cost of one atomic load; otherwise it answers from a cache of the current schema
// (no system_auth read, no allocation once warm). The slice returned is shared: callers must not
// modify it. Since levels and grants are agreed schema entities, the answer changes on every
// node as soon as the statement that changed them returned.
func (e *Executor) Budgets(ctx context.Context, keyspace string) ([]scopelimit.Budget, error) {
	s := e.schema.Schema()
	if !s.HasBudgets() {
		return nil, nil
	}
	c := e.budgets.Load()
	if c == nil || c.schema != s {
		fresh := &budgetCache{schema: s, m: make(map[budgetKey][]scopelimit.Budget)}
		if e.budgets.CompareAndSwap(c, fresh) {
			c = fresh
		} else if c = e.budgets.Load(); c.schema != s {
			c = fresh // a racing request installed another schema's cache: answer uncached
		}
	}
	k := budgetKey{addr: addressOf(ctx, s)}
	k.role, _ = auth.RoleFrom(ctx)
	if ks, ok := s.Keyspace(keyspace); ok && !ks.RateLimit.IsZero() {
		k.keyspace = keyspace
	}
	c.mu.RLock()
	b, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return b, nil
	}
	b = resolveBudgets(s, k)
	c.mu.Lock()
	if len(c.m) >= maxBudgetCacheEntries {
		clear(c.m)
	}
	c.m[k] = b
	c.mu.Unlock()
	return b, nil
}

// resolveBudgets computes the budgets of a request with key k in schema s.
func resolveBudgets(s *schema.Schema, k budgetKey) []scopelimit.Budget {
	var out []scopelimit.Budget
	add := func(l *schema.ServiceLevel) {
		if l.Limit.MaxReadsPerSecond == 0 && l.Limit.MaxWritesPerSecond == 0 {
			return
		}
		for _, b := range out {
			if b.Name == l.Name {
				return
			}
		}
		out = append(out, levelBudget(l))
	}
	if k.addr.IsValid() {
		for _, a := range s.AddressLevels(k.addr) {
			if l, ok := s.Level(a.Level); ok {
				add(l)
			}
		}
	}
	if k.role != "" {
		for _, el := range s.EffectiveLevels(k.role) {
			add(el.Level)
		}
	}
	if ks, ok := s.Keyspace(k.keyspace); ok && !ks.RateLimit.IsZero() {
		out = append(out, scopelimit.Budget{
			Kind: scopelimit.KindKeyspace, Name: ks.Name, ID: scopelimit.BudgetID(scopelimit.KindKeyspace, ks.Name),
			Reads: ks.RateLimit.MaxReadsPerSecond, Writes: ks.RateLimit.MaxWritesPerSecond, Shadow: ks.RateLimit.Mode == schema.Shadow,
		})
	}
	return out
}

func levelBudget(l *schema.ServiceLevel) scopelimit.Budget {
	return scopelimit.Budget{
		Kind: scopelimit.KindLevel, Name: l.Name, ID: scopelimit.BudgetID(scopelimit.KindLevel, l.Name),
		Reads: l.Limit.MaxReadsPerSecond, Writes: l.Limit.MaxWritesPerSecond, Shadow: l.Limit.Mode == schema.Shadow,
	}
}
