package scopelimit

import (
	"fmt"
	"sync"
	"time"

	"github.com/kvnode/kvnode/partitionlimit"
)

// DefaultCapacity is the number of counters a Limiter keeps when Options.Capacity is zero: room
// for a thousand levels and keyspaces, each for reads and writes, with the table's probe
// windows far from full.
const DefaultCapacity = 8192

// Options configures a Limiter. The zero value of each field means its default.
type Options struct {
	// Capacity is the number of counters (scopes times ops) tracked at once; zero means
	// DefaultCapacity. Each takes partitionlimit's 24-byte slot.
	Capacity int
}

// Scope is one budget a request is judged by: ID names the level or keyspace, Label the
// caller's (kind, op) pair (a level's writes and a keyspace's writes have different labels),
// and Limit the rate in operations per second, cluster-wide. A Limit of 0 means the scope has no
// limit for this op: Decide skips it, counting nothing.
type Scope struct {
	ID    int64
	Label uint32
	Limit uint32
}

// Verdict is Decide's outcome for one request.
type Verdict struct {
	// Admitted reports whether every scope of the chain admitted the request.
	Admitted bool
	// Rejected is the index in the chain of the scope that rejected the request, -1 when it
	// was admitted.
	Rejected int
	// Decision is the rejecting scope's decision (its count, limit and retry hint), and the
	// zero Decision when the request was admitted.
	Decision partitionlimit.Decision
}

// Delta is a coordinator's own operations on one scope since its last Drain, which its peers
// add to their counters with Learn.
type Delta struct {
	ID    int64
	Label uint32
	N     uint32
}

type key struct {
	id    int64
	label uint32
}

// Limiter keeps one coordinator's counters of every scope's cluster-wide load, decides its own
// requests on them, and collects its own counts for its peers. It is safe for concurrent use and
// never reads the clock: every method takes now, the coordinator's own clock.
type Limiter struct {
	table *partitionlimit.Table

	mu      sync.Mutex
	pending map[key]uint32 // own operations per scope since the last Drain
}

// New returns a Limiter with the given options (zero fields take their defaults).
func New(opts Options) (*Limiter, error) {
	if opts.Capacity < 0 {
		return nil, fmt.Errorf("scopelimit: Options.Capacity is %d, want 0 (the default, %d) or more", opts.Capacity, DefaultCapacity)
	}
	if opts.Capacity == 0 {
		opts.Capacity = DefaultCapacity
	}
	t, err := partitionlimit.New(partitionlimit.Options{Capacity: opts.Capacity})
	if err != nil {
		return nil, fmt.Errorf("scopelimit: %w", err)
	}
	return &Limiter{table: t, pending: make(map[key]uint32, 64)}, nil
}

// Decide judges one request by chain, the most specific scope first (the client's level, the
// shared levels up its role graph, then the keyspace), at now on the coordinator's clock. Each
// scope counts the request and decides with its own draw, Draw(seed, i), by partitionlimit's
// rule and onset bound on its counter of the cluster's load; the first scope that rejects ends
// the chain, and no scope after it counts the request. seed is the request's random number,
// drawn once by the caller.
func (l *Limiter) Decide(chain []Scope, seed uint64, now time.Time) Verdict {
	for i, s := range chain {
		if s.Limit == 0 {
			continue
		}
		d := l.table.Decide(s.ID, s.Label, s.Limit, Draw(seed, i), now)
		l.mu.Lock()
		l.pending[key{s.ID, s.Label}]++
		l.mu.Unlock()
		if !d.Admitted {
			return Verdict{Rejected: i, Decision: d}
		}
	}
	return Verdict{Admitted: true, Rejected: -1}
}

// Drain appends to dst the coordinator's own operations per scope since the last Drain, one
// Delta per scope, and forgets them: the caller sends them to every peer coordinator (every
// propagation interval) and each peer adds them with Learn.
func (l *Limiter) Drain(dst []Delta) []Delta {
	l.mu.Lock()
	for k, n := range l.pending {
		dst = append(dst, Delta{ID: k.id, Label: k.label, N: n})
	}
	clear(l.pending)
	l.mu.Unlock()
	return dst
}

// Learn adds a peer's delta to the scope's counter at now, the receiving coordinator's own
// clock (never the sender's: each coordinator halves its counters on its own second
// boundaries, see the package documentation). limit is the scope's limit (0 if unknown), which
// says when a quiet counter starts a new onset, as Decide would.
func (l *Limiter) Learn(d Delta, limit uint32, now time.Time) {
	l.table.AccountNAt(d.ID, d.Label, d.N, limit, now, now)
}

// Peek returns the scope's counter at now without counting an operation: what a joining
// coordinator learns from a peer (Sync) and what metrics read as the scope's estimated load.
func (l *Limiter) Peek(id int64, label uint32, now time.Time) uint32 {
	return l.table.Peek(id, label, now)
}

// Sync raises the scope's counter to at least count, a peer's Peek, at now: a coordinator that
// joins learns the cluster's load of each limited scope before it judges requests, so that its
// first requests are not judged on an empty counter.
func (l *Limiter) Sync(id int64, label uint32, count uint32, now time.Time) {
	l.table.Learn(id, label, count, time.Time{}, 0, now)
}

// Draw returns the draw in [0, 1) that scope i of a chain uses for a request whose random
// number is seed: splitmix64 of seed and i, so that each scope's draw is uniform and
// independent of the others' (see "One draw per scope" in the package documentation).
func Draw(seed uint64, i int) float64 {
	z := seed + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}
