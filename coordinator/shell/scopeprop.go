package shell

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/scopelimit"
)

// ScopeSender sends a coordinator's budget counts to a peer coordinator (an internode
// scope_counts request) and lists the cluster's nodes. The node's transport implements it.
type ScopeSender interface {
	ScopeCounts(ctx context.Context, to coordinator.NodeID, req *replicapb.ScopeCountsRequest) (*replicapb.ScopeCountsResponse, error)
	// AppendNodes appends every member of the cluster, live or not, to dst.
	AppendNodes(dst []coordinator.NodeID) []coordinator.NodeID
}

// DefaultScopeInterval is how often a coordinator sends its peers the operations it counted on
// each budget: the partitions' propagation interval, whose error scopelimit's documentation
// derives (under 1 % of the limit).
const DefaultScopeInterval = 20 * time.Millisecond

// MaxScopeCounts bounds the counts of one scope_counts message, sent or received: a flush with
// more budgets sends several messages. 4096 counts are at most about 100 KiB.
const MaxScopeCounts = 4096

// scopeProp sends the executor's budget counts to every live peer every interval, on a loop of
// its own: requests never wait for it.
type scopeProp struct {
	s      *scopes
	send   ScopeSender
	self   coordinator.NodeID
	live   func(coordinator.NodeID) bool
	logger *slog.Logger
	loop   *loop.Loop

	mu     sync.Mutex // one flush at a time (the loop's, or a test's)
	deltas []scopelimit.Delta
}

func newScopeProp(s *scopes, send ScopeSender, self coordinator.NodeID, live func(coordinator.NodeID) bool, interval time.Duration, logger *slog.Logger) *scopeProp {
	p := &scopeProp{s: s, send: send, self: self, live: live, logger: logger}
	if interval > 0 {
		p.loop = loop.Start(loop.Options{Every: interval, Delay: true}, func(ctx context.Context) time.Duration {
			p.flush(ctx)
			return 0
		})
	}
	return p
}

func (p *scopeProp) close() {
	if p.loop != nil {
		p.loop.Stop()
	}
}

// peers returns the live members other than this node.
func (p *scopeProp) peers() []coordinator.NodeID {
	ids := p.send.AppendNodes(nil)
	live := ids[:0]
	for _, id := range ids {
		if id != p.self && p.live(id) {
			live = append(live, id)
		}
	}
	return live
}

// flush drains the limiter's own counts and sends them, with each budget's limit, to every live
// peer: one message per MaxScopeCounts, all peers concurrently, each bounded by
// propagationTimeout. Counts a peer does not take in time are lost to it (its counter runs a
// little low), as for account propagation.
func (p *scopeProp) flush(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deltas = p.s.lim.Drain(p.deltas[:0])
	if len(p.deltas) == 0 {
		return
	}
	counts := make([]*replicapb.ScopeCount, len(p.deltas))
	for i, d := range p.deltas {
		counts[i] = &replicapb.ScopeCount{Id: d.ID, Label: d.Label, Count: d.N, Limit: p.s.limitOf(d.ID, d.Label)}
	}
	var reqs []*replicapb.ScopeCountsRequest
	for len(counts) > 0 {
		n := min(len(counts), MaxScopeCounts)
		reqs, counts = append(reqs, &replicapb.ScopeCountsRequest{Deltas: counts[:n]}), counts[n:]
	}
	var wg sync.WaitGroup
	for _, to := range p.peers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer recovered(p.logger, "a budget count", to, nil)
			for _, req := range reqs {
				cctx, cancel := context.WithTimeout(ctx, propagationTimeout)
				_, err := p.send.ScopeCounts(cctx, to, req)
				cancel()
				if err != nil {
					p.logger.Debug("budget counts not delivered", "node", to, "counts", len(req.Deltas), "err", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// limitOf returns the last limit this coordinator applied to the budget id for the op of label,
// 0 when it keeps no statistics of it.
func (s *scopes) limitOf(id int64, label uint32) uint32 {
	_, op, _ := labelParts(label)
	st, ok := s.byID.Load(id)
	if !ok {
		return 0
	}
	return st.(*budgetStats).limit[opIndex(op)].Load()
}

// ScopeCounts serves an internode scope_counts request: it adds a peer's counts to this
// coordinator's budget counters, on this coordinator's own clock (never the sender's: see
// package scopelimit), or, for a sync, answers with its counters of every budget it knows. A
// malformed request is refused whole with INVALID_ARGUMENT naming what is wrong, and nothing
// of it is counted.
func (e *Executor) ScopeCounts(_ context.Context, req *replicapb.ScopeCountsRequest) (*replicapb.ScopeCountsResponse, error) {
	s := e.scopes
	ds := req.GetDeltas()
	switch {
	case len(ds) > MaxScopeCounts:
		return nil, status.Errorf(codes.InvalidArgument, "scope_counts: %d counts, more than the %d one message may carry", len(ds), MaxScopeCounts)
	case req.GetSync() && len(ds) > 0:
		return nil, status.Errorf(codes.InvalidArgument, "scope_counts: a sync carries no counts, this one carries %d", len(ds))
	}
	for i, d := range ds {
		if d == nil {
			return nil, status.Errorf(codes.InvalidArgument, "scope_counts: count %d is empty", i)
		}
		if _, _, ok := labelParts(d.GetLabel()); !ok {
			return nil, status.Errorf(codes.InvalidArgument, "scope_counts: count %d (budget %d) has label %#x, not a service level's or a keyspace's reads or writes", i, d.GetId(), d.GetLabel())
		}
		if d.GetCount() == 0 {
			return nil, status.Errorf(codes.InvalidArgument, "scope_counts: count %d (budget %d) is 0; a delta counts at least one operation", i, d.GetId())
		}
	}
	now := s.now()
	if req.GetSync() {
		return &replicapb.ScopeCountsResponse{Counts: s.counts(now)}, nil
	}
	for _, d := range ds {
		s.lim.Learn(scopelimit.Delta{ID: d.GetId(), Label: d.GetLabel(), N: d.GetCount()}, d.GetLimit(), now)
	}
	return &replicapb.ScopeCountsResponse{}, nil
}

// counts returns this coordinator's counters of the budgets it keeps statistics of (at most
// maxTrackedBudgets, for both ops: within MaxScopeCounts), skipping empty ones.
func (s *scopes) counts(now time.Time) []*replicapb.ScopeCount {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*replicapb.ScopeCount
	for _, st := range s.stats {
		for oi, op := range []coordinator.Op{coordinator.OpRead, coordinator.OpWrite} {
			label := scopeLabel(st.kind, op)
			if c := s.lim.Peek(st.id, label, now); c > 0 {
				out = append(out, &replicapb.ScopeCount{Id: st.id, Label: label, Count: c, Limit: st.limit[oi].Load()})
			}
		}
	}
	return out
}

// SyncScopes fills this coordinator's budget counters from the first live peer that answers
// (scopelimit.Limiter.Sync with the peer's counters), so that a coordinator that starts or
// rejoins judges its first limited requests on the cluster's load rather than on empty
// counters. The node calls it before it serves clients; it returns the peer it synced from
// ("" when none answered, or no peer is live: the counters then start empty, under the
// onset bound).
func (e *Executor) SyncScopes(ctx context.Context) (coordinator.NodeID, error) {
	p := e.scopes.prop
	if p == nil {
		return "", nil
	}
	var errs []error
	for _, to := range p.peers() {
		resp, err := p.send.ScopeCounts(ctx, to, &replicapb.ScopeCountsRequest{Sync: true})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", to, err))
			continue
		}
		cs := resp.GetCounts()
		if len(cs) > MaxScopeCounts {
			errs = append(errs, fmt.Errorf("%s answered %d counts, more than %d", to, len(cs), MaxScopeCounts))
			continue
		}
		now := e.scopes.now()
		for _, c := range cs {
			if _, _, ok := labelParts(c.GetLabel()); ok {
				e.scopes.lim.Sync(c.GetId(), c.GetLabel(), c.GetCount(), now)
			}
		}
		return to, nil
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("coordinator: no peer gave its budget counts: %v", errs)
	}
	return "", nil
}

// scopeCollector exports the budgets' metrics (see docs/operations.md).
type scopeCollector struct {
	s                                  *scopes
	accepted, rejected, would, rateDsc *prometheus.Desc
}

// ScopeCollector returns the metrics of the budgets this coordinator judged, for the node to
// register: per budget (kind, name, op) the operations accepted, rejected and that shadow mode
// let through, and the budget's estimated rate across the cluster from this coordinator's
// counter. At most MaxNamedBudgets budgets of each kind are named; the rest are summed under
// name="other", which is always exported (zero without budgets).
func (e *Executor) ScopeCollector() prometheus.Collector {
	labels := []string{"kind", "name", "op"}
	return &scopeCollector{
		s:        e.scopes,
		accepted: prometheus.NewDesc("kvnode_budget_accepted_total", "Operations a service level's or keyspace's budget admitted on this coordinator.", labels, nil),
		rejected: prometheus.NewDesc("kvnode_budget_rejected_total", "Operations a service level's or keyspace's budget rejected on this coordinator (the request was refused).", labels, nil),
		would:    prometheus.NewDesc("kvnode_budget_would_reject_total", "Operations a budget in shadow mode would have rejected on this coordinator (admitted, with a warning).", labels, nil),
		rateDsc:  prometheus.NewDesc("kvnode_budget_estimated_rate", "A budget's offered rate across the cluster, in operations per second, as this coordinator's counter estimates it.", labels, nil),
	}
}

func (c *scopeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.accepted
	ch <- c.rejected
	ch <- c.would
	ch <- c.rateDsc
}

func (c *scopeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	now := s.now()
	type sum struct {
		acc, rej, would [2]uint64
		rate            [2]float64
	}
	f := 1 + float64(now.Nanosecond())/1e9
	var others [3]sum
	s.mu.RLock()
	all := make([]*budgetStats, 0, len(s.stats))
	for _, st := range s.stats {
		all = append(all, st)
	}
	s.mu.RUnlock()
	ops := [2]coordinator.Op{coordinator.OpRead, coordinator.OpWrite}
	for _, st := range all {
		if !st.named {
			o := &others[st.kind]
			for oi, op := range ops {
				o.acc[oi] += st.accepted[oi].Load()
				o.rej[oi] += st.rejected[oi].Load()
				o.would[oi] += st.wouldRjct[oi].Load()
				if st.limit[oi].Load() > 0 {
					o.rate[oi] += float64(s.lim.Peek(st.id, scopeLabel(st.kind, op), now)) / f
				}
			}
			continue
		}
		kind := scopeOf(st.kind).String()
		for oi, op := range ops {
			if st.limit[oi].Load() == 0 && st.accepted[oi].Load() == 0 {
				continue // never limited for this op
			}
			c.emit(ch, kind, st.name, op.String(), st.accepted[oi].Load(), st.rejected[oi].Load(), st.wouldRjct[oi].Load())
			count := s.lim.Peek(st.id, scopeLabel(st.kind, op), now)
			ch <- prometheus.MustNewConstMetric(c.rateDsc, prometheus.GaugeValue, float64(count)/f, kind, st.name, op.String())
		}
	}
	for k := scopelimit.KindLevel; k <= scopelimit.KindKeyspace; k++ {
		o, st := &others[k], s.others[k]
		for oi, op := range ops {
			// Always exported (zero without budgets), so that dashboards and alerts find the
			// series: 2 kinds × 2 ops.
			acc, rej, would := o.acc[oi]+st.accepted[oi].Load(), o.rej[oi]+st.rejected[oi].Load(), o.would[oi]+st.wouldRjct[oi].Load()
			c.emit(ch, scopeOf(k).String(), "other", op.String(), acc, rej, would)
			ch <- prometheus.MustNewConstMetric(c.rateDsc, prometheus.GaugeValue, o.rate[oi], scopeOf(k).String(), "other", op.String())
		}
	}
}

func (c *scopeCollector) emit(ch chan<- prometheus.Metric, kind, name, op string, acc, rej, would uint64) {
	ch <- prometheus.MustNewConstMetric(c.accepted, prometheus.CounterValue, float64(acc), kind, name, op)
	ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(rej), kind, name, op)
	ch <- prometheus.MustNewConstMetric(c.would, prometheus.CounterValue, float64(would), kind, name, op)
}
