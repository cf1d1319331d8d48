package loginguard

import (
	"cmp"
	"hash/maphash"
	"math"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// shardCount is the number of independently locked shards of the policy's tables; an address
// and its (address, role) pairs live in one shard.
const shardCount = 16

// policy is the guard's pure part: it counts failed logins per address and per (address,
// role), decays them, decides each attempt's delay before its check, bounds the attempts that
// wait, and spaces the log lines of one address. Time is always a parameter; it never sleeps.
type policy struct {
	threshold         float64
	delay, maxDelay   time.Duration
	halfLife          time.Duration
	maxWaitingPerHost int
	maxWaiting        int
	capPerShard       int
	logInterval       time.Duration
	seed              maphash.Seed
	shards            [shardCount]shard
	waitingMu         sync.Mutex
	waiting           int // attempts waiting, every address together
}

// shard holds the addresses (and their pairs) whose hash falls in it.
type shard struct {
	mu    sync.Mutex
	hosts map[netip.Prefix]*hostState
	pairs map[pairKey]*decayed
}

// pairKey is an address and a role: the role by its hash, so that an entry's size does not
// depend on the username a client sends.
type pairKey struct {
	host netip.Prefix
	role uint64
}

// hostState is what the policy knows of one address.
type hostState struct {
	failures decayed
	waiting  int       // attempts from it waiting now
	logged   time.Time // when its last log line was written; zero for never
	unlogged int       // failures and refusals since then that were not logged
}

// decayed is a count that halves every half-life.
type decayed struct {
	v  float64
	at time.Time
}

// value returns the count at now: a clock that went back decays nothing.
func (d *decayed) value(now time.Time, halfLife time.Duration) float64 {
	dt := now.Sub(d.at)
	if d.v == 0 || dt <= 0 {
		return d.v
	}
	return d.v * math.Exp2(-float64(dt)/float64(halfLife))
}

// add adds x at now.
func (d *decayed) add(now time.Time, halfLife time.Duration, x float64) {
	d.v = d.value(now, halfLife) + x
	if now.After(d.at) {
		d.at = now
	}
}

func newPolicy(cfg *Config) *policy {
	p := &policy{
		threshold:         float64(cfg.Threshold),
		delay:             cfg.Delay,
		maxDelay:          cfg.MaxDelay,
		halfLife:          cfg.HalfLife,
		maxWaitingPerHost: cfg.MaxWaitingPerHost,
		maxWaiting:        cfg.MaxWaiting,
		capPerShard:       max(1, cfg.MaxEntries/shardCount),
		logInterval:       cfg.LogInterval,
		seed:              maphash.MakeSeed(),
	}
	for i := range p.shards {
		p.shards[i].hosts = map[netip.Prefix]*hostState{}
		p.shards[i].pairs = map[pairKey]*decayed{}
	}
	return p
}

// roleKey returns role's key in the pairs table.
func (p *policy) roleKey(role string) uint64 { return maphash.String(p.seed, role) }

func (p *policy) shard(host netip.Prefix) *shard {
	return &p.shards[maphash.Comparable(p.seed, host)%shardCount]
}

// refusal says why an attempt is refused without a check: too many attempts waiting.
type refusal uint8

const (
	admitted    refusal = iota
	hostWaiting         // MaxWaitingPerHost attempts from the address wait already
	allWaiting          // MaxWaiting attempts wait already
)

// decision is what the policy decides of a login attempt before its check.
type decision struct {
	// delay is how long the attempt waits before its check; 0 for none. When it is not 0 and
	// the attempt is not refused, it counts as waiting until done.
	delay time.Duration
	// failures is the larger of the address's and the (address, role)'s recent failures.
	failures float64
	refused  refusal
}

// begin decides the attempt of role (its roleKey) from host at now.
func (p *policy) begin(now time.Time, host netip.Prefix, role uint64) decision {
	s := p.shard(host)
	s.mu.Lock()
	defer s.mu.Unlock()
	var f float64
	hs := s.hosts[host]
	if hs != nil {
		f = hs.failures.value(now, p.halfLife)
	}
	if pf := s.pairs[pairKey{host, role}]; pf != nil {
		f = max(f, pf.value(now, p.halfLife))
	}
	// Counts decay continuously: the attempt after the Threshold-th failure in quick
	// succession sees a little under Threshold.
	if f < p.threshold-0.5 {
		return decision{failures: f}
	}
	d := decision{delay: p.delayFor(f), failures: f}
	if hs != nil && hs.waiting >= p.maxWaitingPerHost {
		d.refused = hostWaiting
		return d
	}
	p.waitingMu.Lock()
	if p.waiting >= p.maxWaiting {
		p.waitingMu.Unlock()
		d.refused = allWaiting
		return d
	}
	p.waiting++
	p.waitingMu.Unlock()
	if hs == nil {
		hs = p.hostLocked(s, now, host)
	}
	hs.waiting++
	return d
}

// delayFor returns the delay of an attempt after f recent failures (f ≥ threshold): delay,
// doubled for every further threshold failures, at most maxDelay.
func (p *policy) delayFor(f float64) time.Duration {
	d := p.delay
	for n := math.Floor(max(0, f+0.5-p.threshold) / p.threshold); n > 0 && d < p.maxDelay; n-- {
		d *= 2
	}
	return min(d, p.maxDelay)
}

// done ends the wait of an attempt begin delayed.
func (p *policy) done(host netip.Prefix) {
	s := p.shard(host)
	s.mu.Lock()
	if hs := s.hosts[host]; hs != nil && hs.waiting > 0 {
		hs.waiting--
	}
	s.mu.Unlock()
	p.waitingMu.Lock()
	p.waiting--
	p.waitingMu.Unlock()
}

// outcome is what the policy says of a failure or refusal it was told of.
type outcome struct {
	failures float64 // the address's recent failures, this one included
	log      bool    // write a line for it
	unlogged int     // failures and refusals of the address not logged since its last line
}

// failed counts a failed login of role from host at now; counted false records it for the
// log alone (a malformed login, a refusal: no password was tried).
func (p *policy) failed(now time.Time, host netip.Prefix, role uint64, counted bool) outcome {
	s := p.shard(host)
	s.mu.Lock()
	defer s.mu.Unlock()
	hs := p.hostLocked(s, now, host)
	if counted {
		hs.failures.add(now, p.halfLife, 1)
		pk := pairKey{host, role}
		pf := s.pairs[pk]
		if pf == nil {
			if len(s.pairs) >= p.capPerShard {
				p.evictPairsLocked(s, now)
			}
			pf = &decayed{}
			s.pairs[pk] = pf
		}
		pf.add(now, p.halfLife, 1)
	}
	o := outcome{failures: hs.failures.value(now, p.halfLife)}
	if hs.logged.IsZero() || now.Sub(hs.logged) >= p.logInterval || now.Before(hs.logged) {
		o.log, o.unlogged = true, hs.unlogged
		hs.logged, hs.unlogged = now, 0
	} else {
		hs.unlogged++
	}
	return o
}

// unlog takes back the log line failed granted (the node-wide bound on log lines refused it):
// the failure counts as not logged.
func (p *policy) unlog(host netip.Prefix, o outcome) {
	s := p.shard(host)
	s.mu.Lock()
	defer s.mu.Unlock()
	if hs := s.hosts[host]; hs != nil {
		hs.logged = time.Time{}
		hs.unlogged += o.unlogged + 1
	}
}

// succeeded forgets the failures of host, and those of role from host: the client knows the
// password. Other roles' failures from host stay counted, so that one role's logins from an
// address shared with an attacker (NAT) do not let the attacker try another role's passwords
// unthrottled.
func (p *policy) succeeded(host netip.Prefix, role uint64) {
	s := p.shard(host)
	s.mu.Lock()
	defer s.mu.Unlock()
	if hs := s.hosts[host]; hs != nil {
		hs.failures = decayed{}
	}
	delete(s.pairs, pairKey{host, role})
}

// hostLocked returns host's state, making room for it when it is new. s.mu is held.
func (p *policy) hostLocked(s *shard, now time.Time, host netip.Prefix) *hostState {
	hs := s.hosts[host]
	if hs == nil {
		if len(s.hosts) >= p.capPerShard {
			p.evictHostsLocked(s, now)
		}
		hs = &hostState{}
		s.hosts[host] = hs
	}
	return hs
}

// evictHostsLocked forgets the quarter of s's addresses with the fewest recent failures (never
// one with attempts waiting), so that an attacker cycling through addresses cannot push out
// the count of one that keeps failing. The order is total (ties by address): which entries go
// never depends on map order. s.mu is held.
func (p *policy) evictHostsLocked(s *shard, now time.Time) {
	type entry struct {
		host netip.Prefix
		v    float64
	}
	es := make([]entry, 0, len(s.hosts))
	for h, hs := range s.hosts {
		if hs.waiting == 0 {
			es = append(es, entry{h, hs.failures.value(now, p.halfLife)})
		}
	}
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.v, b.v), comparePrefix(a.host, b.host))
	})
	for _, e := range es[:min(len(es), max(1, len(s.hosts)/4))] {
		delete(s.hosts, e.host)
	}
}

// evictPairsLocked is evictHostsLocked for the (address, role) pairs. s.mu is held.
func (p *policy) evictPairsLocked(s *shard, now time.Time) {
	type entry struct {
		k pairKey
		v float64
	}
	es := make([]entry, 0, len(s.pairs))
	for k, d := range s.pairs {
		es = append(es, entry{k, d.value(now, p.halfLife)})
	}
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.v, b.v), comparePrefix(a.k.host, b.k.host), cmp.Compare(a.k.role, b.k.role))
	})
	for _, e := range es[:max(1, len(es)/4)] {
		delete(s.pairs, e.k)
	}
}

func comparePrefix(a, b netip.Prefix) int {
	return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
}

// sizes returns the addresses and pairs the policy remembers, and the attempts waiting.
func (p *policy) sizes() (hosts, pairs, waiting int) {
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		hosts += len(s.hosts)
		pairs += len(s.pairs)
		s.mu.Unlock()
	}
	p.waitingMu.Lock()
	waiting = p.waiting
	p.waitingMu.Unlock()
	return hosts, pairs, waiting
}
