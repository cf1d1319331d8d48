package sim

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/kvnode/kvnode/scopelimit"
)

// The scope rows measure how closely a service level's or a keyspace's budget is held across
// coordinators (issue 31): the production decision, scopelimit.Limiter, on every coordinator,
// its deltas drained every ScopePropagation and learned by every peer ScopeDeltaLatency later,
// against two baselines fed the same requests in the same run. Only coordinators are modelled:
// a request is decided by its coordinator's scopes and goes no further (the partition scope,
// measured by the rows above, comes after them). Time is virtual; one PCG generator per row
// and seed draws the arrivals, the coordinators and the requests' seeds, in time order.

// ScopeKind is the budget a scope row limits.
type ScopeKind uint8

// The scope kinds.
const (
	// KeyspaceScope: one keyspace limit L; every request is judged by it alone.
	KeyspaceScope ScopeKind = iota
	// LevelScope: an organization's level of limit L over ScopeClients clients, each with a
	// client level of limit L; a request (from a client picked uniformly) is judged by its
	// client's level, then the organization's. Accepted means admitted by both.
	LevelScope
)

func (k ScopeKind) String() string {
	if k == LevelScope {
		return "level (4 clients, each ≤ L)"
	}
	return "keyspace"
}

// ScopeCase is what happens to the load in a scope row.
type ScopeCase uint8

// The scope cases. In each, 90 % of the load arrives at one coordinator (the driver's
// favourite) and 10 % is spread evenly over the others.
const (
	// Moved: at ScopeEventAt the 90 % moves from coordinator 0 to coordinator 1.
	Moved ScopeCase = iota
	// Killed: coordinator 0, which takes the 90 %, dies at ScopeEventAt; drivers spread its
	// load over the survivors at once, its undrained deltas are lost, and the reservation's
	// controller notices after ScopeDetectAfter.
	Killed
	// SkewedMove: Moved with coordinator clocks at ±500 ms (skewFactor's pattern).
	SkewedMove
)

func (c ScopeCase) String() string {
	switch c {
	case Killed:
		return "90/10, its coordinator killed"
	case SkewedMove:
		return "90/10 moved, skew ±500 ms"
	}
	return "90/10 moved"
}

// The scope rows' constants.
const (
	ScopeLimit        = 100 // L, operations per second
	ScopeClients      = 4
	ScopeDuration     = 120 * time.Second
	ScopeEventAt      = 60 * time.Second
	ScopePropagation  = 20 * time.Millisecond
	ScopeDeltaLatency = time.Millisecond
	ScopeReserve      = 5 * time.Second // the reservation's refresh period
	ScopeDetectAfter  = time.Second
	ScopeSkew         = 500 * time.Millisecond
	ScopeOnsetSeeds   = 10 // seeds whose first second the rows report the highest of
)

// ScopeScenario is one scope row.
type ScopeScenario struct {
	Kind         ScopeKind
	Coordinators int
	Case         ScopeCase
	Offered      float64 // V/L
	Limit        int     // L in operations per second
	// WAN, when positive, puts the coordinators in two data centers (even-numbered ones in
	// the first, odd-numbered in the second, so that the 90 % moves, or is spread after the
	// death, across data centers) and delays the deltas between them by this much instead of
	// ScopeDeltaLatency; zero is one data center.
	WAN time.Duration
}

// ScopeDCMatrix returns the scope rows of two data centers: both kinds, 6 coordinators (3 in
// each), the moved and the killed case, V from 0.9·L to 20·L at L = ScopeLimit, WAN delays of
// 50 and 150 ms each way.
func ScopeDCMatrix() []ScopeScenario {
	var out []ScopeScenario
	for _, wan := range []time.Duration{50 * time.Millisecond, 150 * time.Millisecond} {
		for _, k := range []ScopeKind{KeyspaceScope, LevelScope} {
			for _, c := range []ScopeCase{Moved, Killed} {
				for _, v := range []float64{0.9, 2, 5, 20} {
					out = append(out, ScopeScenario{Kind: k, Coordinators: 6, Case: c, Offered: v, Limit: ScopeLimit, WAN: wan})
				}
			}
		}
	}
	return out
}

// ScopeMatrix returns the scope rows: both kinds, 3 and 9 coordinators, every case, V from
// 0.8·L to 100·L at L = ScopeLimit, then the rows up to 5·L again at L = 10·ScopeLimit, where
// a count's Poisson noise is a third as large against 2·L.
func ScopeMatrix() []ScopeScenario {
	var out []ScopeScenario
	for _, lim := range []int{ScopeLimit, 10 * ScopeLimit} {
		for _, k := range []ScopeKind{KeyspaceScope, LevelScope} {
			for _, n := range []int{3, 9} {
				for _, c := range []ScopeCase{Moved, Killed, SkewedMove} {
					for _, v := range []float64{0.8, 0.9, 2, 5, 20, 100} {
						if lim > ScopeLimit && v > 5 {
							continue
						}
						out = append(out, ScopeScenario{Kind: k, Coordinators: n, Case: c, Offered: v, Limit: lim})
					}
				}
			}
		}
	}
	return out
}

// ScopeMethod is one limiter's measurement in a scope row.
type ScopeMethod struct {
	// Steady is the accepted rate over L from the second second after the onset (t = 0) and
	// after the event (ScopeEventAt): seconds 1–59 and 61–119.
	Steady float64
	// First is the highest first second (accepted over L in [0, 1 s)) over ScopeOnsetSeeds
	// seeds; AfterEvent the second [ScopeEventAt, +1 s) of the row's seed.
	First, AfterEvent float64
	// Rejected is the fraction of the row's requests rejected.
	Rejected float64
}

// ScopeResult is one scope row's measurement: kvnode's scopelimit and the two baselines.
type ScopeResult struct {
	ScopeScenario
	Kvnode, PerNode, Reserved ScopeMethod
}

// scopeRun is one simulated row: per method, the accepted requests per second.
type scopeRun struct {
	accepted [3][]int
	offered  int
	rejected [3]int
}

// tokenBucket is the reservation baseline's per-coordinator, per-scope bucket.
type tokenBucket struct {
	tokens float64
	last   time.Duration
}

func (b *tokenBucket) take(now time.Duration, rate float64) bool {
	b.tokens = min(rate, b.tokens+rate*(now-b.last).Seconds())
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}

func (s ScopeScenario) chains(limit uint32) [][]scopelimit.Scope {
	if s.Kind == KeyspaceScope {
		return [][]scopelimit.Scope{{{ID: 100, Label: 2, Limit: limit}}}
	}
	out := make([][]scopelimit.Scope, ScopeClients)
	for c := range out {
		out[c] = []scopelimit.Scope{{ID: int64(c + 1), Label: 1, Limit: limit}, {ID: 50, Label: 1, Limit: limit}}
	}
	return out
}

// coordinatorFor returns the coordinator of a request with uniform u at time t.
func (s ScopeScenario) coordinatorFor(u float64, t time.Duration) int {
	n := s.Coordinators
	if s.Case == Killed && t >= ScopeEventAt {
		c := 1 + int(u*float64(n-1))
		return min(c, n-1)
	}
	fav := 0
	if s.Case != Killed && t >= ScopeEventAt {
		fav = 1
	}
	if u < 0.9 {
		return fav
	}
	c := int((u - 0.9) / 0.1 * float64(n-1))
	c = min(c, n-2)
	if c >= fav {
		c++
	}
	return c
}

// runScope simulates one row for d with the given seed.
func runScope(s ScopeScenario, seed uint64, d time.Duration) (scopeRun, error) {
	n := s.Coordinators
	epoch := time.Unix(1_800_000_000, 0)
	skew := make([]time.Duration, n)
	if s.Case == SkewedMove {
		for i := range skew {
			skew[i] = time.Duration(skewFactor(i) * float64(ScopeSkew))
		}
	}
	kv := make([]*scopelimit.Limiter, n)
	own := make([]*scopelimit.Limiter, n)
	for i := range n {
		var err error
		if kv[i], err = scopelimit.New(scopelimit.Options{Capacity: 256}); err != nil {
			return scopeRun{}, err
		}
		if own[i], err = scopelimit.New(scopelimit.Options{Capacity: 256}); err != nil {
			return scopeRun{}, err
		}
	}
	lim := float64(s.Limit)
	chains := s.chains(uint32(s.Limit))
	perNode := s.chains(uint32(math.Round(lim / float64(n))))
	buckets := make([][]tokenBucket, n) // per coordinator, per scope index (client levels, then the shared one)
	for i := range buckets {
		buckets[i] = make([]tokenBucket, ScopeClients+1)
	}
	bucketOf := func(chain, i int) int {
		if s.Kind == LevelScope && i == 0 {
			return chain
		}
		return ScopeClients
	}
	live, rate := n, lim/float64(n)

	type delivery struct {
		at    time.Duration
		from  int
		delta scopelimit.Delta
	}
	// inflight holds the deltas on their way to the coordinators of their sender's data
	// center (every coordinator, with one data center), remote those on their way to the other
	// data center's: each in time order, as each has one latency.
	var inflight, remote []delivery
	sameDC := func(i, j int) bool { return s.WAN <= 0 || i%2 == j%2 }
	var buf []scopelimit.Delta
	secs := int(d / time.Second)
	r := scopeRun{}
	for m := range r.accepted {
		r.accepted[m] = make([]int, secs)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(s.Kind)<<48|uint64(s.Coordinators)<<40|uint64(s.Case)<<32|uint64(s.Offered*1000)<<8|uint64(s.Limit)^uint64(s.WAN.Milliseconds())<<56))
	v := s.Offered * lim
	nextArrival := time.Duration(rng.ExpFloat64() / v * float64(time.Second))
	drainTick := time.Duration(0) // drains of coordinator i at k·ScopePropagation + i·ScopePropagation/n
	nextDrain := func(k time.Duration, i int) time.Duration {
		return k + time.Duration(i)*ScopePropagation/time.Duration(n)
	}
	drainIdx := 0
	nextRefresh := ScopeReserve
	dead := -1
	for nextArrival < d {
		// Deliveries, drains, the death and refreshes due before the next arrival, in time order.
		for {
			t := nextArrival
			kind := 0
			if len(inflight) > 0 && inflight[0].at < t {
				t, kind = inflight[0].at, 1
			}
			if len(remote) > 0 && remote[0].at < t {
				t, kind = remote[0].at, 5
			}
			if dt := nextDrain(drainTick, drainIdx); dt < t {
				t, kind = dt, 2
			}
			if s.Case == Killed && dead < 0 && ScopeEventAt < t {
				t, kind = ScopeEventAt, 3
			}
			if nextRefresh < t {
				t, kind = nextRefresh, 4
			}
			if kind == 0 {
				break
			}
			switch kind {
			case 1, 5:
				q := &inflight
				if kind == 5 {
					q = &remote
				}
				dl := (*q)[0]
				*q = (*q)[1:]
				for j := range n {
					if j != dl.from && j != dead && sameDC(j, dl.from) == (kind == 1) {
						kv[j].Learn(dl.delta, uint32(s.Limit), epoch.Add(t+skew[j]))
					}
				}
			case 2:
				if drainIdx != dead {
					buf = kv[drainIdx].Drain(buf[:0])
					for _, dd := range buf {
						inflight = append(inflight, delivery{t + ScopeDeltaLatency, drainIdx, dd})
						if s.WAN > 0 {
							remote = append(remote, delivery{t + s.WAN, drainIdx, dd})
						}
					}
				}
				if drainIdx++; drainIdx == n {
					drainIdx, drainTick = 0, drainTick+ScopePropagation
				}
			case 3:
				dead = 0
				kv[0].Drain(buf[:0]) // its undrained deltas die with it
				buf = buf[:0]
			case 4:
				if dead >= 0 && t-ScopeEventAt >= ScopeDetectAfter {
					live = n - 1
				}
				rate = lim / float64(live)
				nextRefresh += ScopeReserve
			}
		}
		t := nextArrival
		nextArrival += time.Duration(rng.ExpFloat64() / v * float64(time.Second))
		c := s.coordinatorFor(rng.Float64(), t)
		ch := 0
		if s.Kind == LevelScope {
			ch = rng.IntN(ScopeClients)
		}
		reqSeed := rng.Uint64()
		sec := int(t / time.Second)
		r.offered++
		now := epoch.Add(t + skew[c])
		if kv[c].Decide(chains[ch], reqSeed, now).Admitted {
			r.accepted[0][sec]++
		} else {
			r.rejected[0]++
		}
		if own[c].Decide(perNode[ch], reqSeed, now).Admitted {
			r.accepted[1][sec]++
		} else {
			r.rejected[1]++
		}
		ok := true
		for i := range chains[ch] {
			if !buckets[c][bucketOf(ch, i)].take(t, rate) {
				ok = false
				break
			}
		}
		if ok {
			r.accepted[2][sec]++
		} else {
			r.rejected[2]++
		}
	}
	return r, nil
}

// RunScope measures one scope row: ScopeDuration with seed, and the first second of
// ScopeOnsetSeeds seeds (seed, seed+1, …).
func RunScope(s ScopeScenario, seed uint64) (ScopeResult, error) {
	run, err := runScope(s, seed, ScopeDuration)
	if err != nil {
		return ScopeResult{}, err
	}
	res := ScopeResult{ScopeScenario: s}
	lim := float64(s.Limit)
	ms := [3]*ScopeMethod{&res.Kvnode, &res.PerNode, &res.Reserved}
	ev := int(ScopeEventAt / time.Second)
	for m, out := range ms {
		sum, secs := 0, 0
		for sec, a := range run.accepted[m] {
			if sec == 0 || sec == ev {
				continue
			}
			sum += a
			secs++
		}
		out.Steady = float64(sum) / float64(secs) / lim
		out.AfterEvent = float64(run.accepted[m][ev]) / lim
		out.Rejected = float64(run.rejected[m]) / float64(run.offered)
		out.First = float64(run.accepted[m][0]) / lim
	}
	for k := uint64(1); k < ScopeOnsetSeeds; k++ {
		short, err := runScope(s, seed+k, time.Second)
		if err != nil {
			return ScopeResult{}, err
		}
		for m, out := range ms {
			out.First = max(out.First, float64(short.accepted[m][0])/lim)
		}
	}
	return res, nil
}

// RunScopes runs the rows on workers goroutines; each row has its own generators, so the
// results depend on neither.
func RunScopes(ctx context.Context, rows []ScopeScenario, seed uint64, workers int) ([]ScopeResult, error) {
	out := make([]ScopeResult, len(rows))
	errs := make([]error, len(rows))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = RunScope(rows[i], seed)
			}
		})
	}
	for i := range rows {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("scope row %d: %w", i, err)
		}
	}
	return out, nil
}

// WriteScopeMarkdown writes the scope report: what it is, a summary against the issue's
// bounds, and one row per scenario.
func WriteScopeMarkdown(w io.Writer, seed uint64, results []ScopeResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# scope limits: seed %d, %v rows\n\n", seed, ScopeDuration)
	b.WriteString(`Levels and keyspaces held across coordinators (package test/sim, scopes.go), three limiters fed
the same requests in one run: kvnode (scopelimit on every coordinator, deltas every 20 ms), each
coordinator on its own at L/N (per node), and a token reservation of L/N per coordinator, refilled
continuously and re-split every 5 s among the coordinators its controller sees alive (reserved).
Steady: accepted/L over seconds 1–59 and 61–119 (from the second second after the onset and after
the event at 60 s); first s: the highest first second of 10 seeds; event s: the second after the
move or the death; rejected: the fraction of all requests. Regenerate with
go test ./test/sim -run TestScopeReport -update-scopes.

`)
	for _, lim := range []int{ScopeLimit, 10 * ScopeLimit} {
		lo, hi, first := math.Inf(1), math.Inf(-1), 0.0
		var rej8, rej9 float64
		for _, r := range results {
			switch {
			case r.Limit != lim:
			case r.Offered >= 2:
				lo, hi, first = min(lo, r.Kvnode.Steady), max(hi, r.Kvnode.Steady), max(first, r.Kvnode.First)
			case r.Offered == 0.8:
				rej8 = max(rej8, r.Kvnode.Rejected)
			default:
				rej9 = max(rej9, r.Kvnode.Rejected)
			}
		}
		if !math.IsInf(lo, 1) {
			fmt.Fprintf(&b, "- kvnode at L = %d/s, V ≥ 2L: steady %.3f–%.3f × L, first second at most %.2f × L; rejected at most %.3f %% at 0.8 L and %.3f %% at 0.9 L.\n",
				lim, lo, hi, first, 100*rej8, 100*rej9)
		}
	}
	b.WriteString("\n| L/s | scope | coordinators | load | V/L | kvnode steady | first s | event s | rejected | per node steady | first s | event s | rejected | reserved steady | first s | event s | rejected |\n")
	b.WriteString("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %d | %s | %d | %s | %g |", r.Limit, r.Kind, r.Coordinators, r.Case, r.Offered)
		for _, m := range []ScopeMethod{r.Kvnode, r.PerNode, r.Reserved} {
			fmt.Fprintf(&b, " %.3f | %.2f | %.2f | %.3f %% |", m.Steady, m.First, m.AfterEvent, 100*m.Rejected)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteScopeDCMarkdown writes the report of the two-data-center scope rows (ScopeDCMatrix):
// what they are, a summary against the bounds, and one row per scenario.
func WriteScopeDCMarkdown(w io.Writer, seed uint64, results []ScopeResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# scope limits across two data centers: seed %d, %v rows\n\n", seed, ScopeDuration)
	b.WriteString(`Levels and keyspaces held across the coordinators of two data centers (package test/sim,
scopes.go, ScopeDCMatrix): as results/scopes.md, with 6 coordinators, the even-numbered in one data
center and the odd-numbered in the other, and every delta reaching the other data center's
coordinators a WAN delay (50 or 150 ms) after its drain instead of 1 ms. The 90 % moves at 60 s from
coordinator 0 to coordinator 1, from one data center to the other; after a death it is spread over
the five survivors of both. Regenerate with go test ./test/sim -run TestScopeDCReport -update-scopes.

`)
	for _, wan := range []time.Duration{50 * time.Millisecond, 150 * time.Millisecond} {
		lo, hi, first, rej9 := math.Inf(1), math.Inf(-1), 0.0, 0.0
		for _, r := range results {
			switch {
			case r.WAN != wan:
			case r.Offered >= 2:
				lo, hi, first = min(lo, r.Kvnode.Steady), max(hi, r.Kvnode.Steady), max(first, r.Kvnode.First)
			default:
				rej9 = max(rej9, r.Kvnode.Rejected)
			}
		}
		if !math.IsInf(lo, 1) {
			fmt.Fprintf(&b, "- kvnode, WAN %v, V ≥ 2L: steady %.3f–%.3f × L, first second at most %.2f × L; rejected at most %.3f %% at 0.9 L.\n",
				wan, lo, hi, first, 100*rej9)
		}
	}
	b.WriteString("\n| WAN | scope | coordinators | load | V/L | kvnode steady | first s | event s | rejected | per node steady | first s | event s | rejected | reserved steady | first s | event s | rejected |\n")
	b.WriteString("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %v | %s | %d | %s | %g |", r.WAN, r.Kind, r.Coordinators, r.Case, r.Offered)
		for _, m := range []ScopeMethod{r.Kvnode, r.PerNode, r.Reserved} {
			fmt.Fprintf(&b, " %.3f | %.2f | %.2f | %.3f %% |", m.Steady, m.First, m.AfterEvent, 100*m.Rejected)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
