package shell

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

// This file keeps a score per replica, as Cassandra's dynamic snitch does, so that reads at ONE
// and QUORUM prefer the replicas that answer (Params.ReadOrder). A replica that is paused or
// cut off while the failure detector still calls it live pushes a table's 99th percentile
// toward the timeout, so speculation alone would keep waiting on it for every read that asks
// it first; the score stops asking it first after its first misses, and asks it again once
// they have decayed.

// The score of a replica, lower being better, is
//
//	latency × (1 + outstanding) + penalty × scorePenaltyCost
//
// with latency the moving average of its answers' latencies (weight scoreAlpha for the newest),
// outstanding its calls in flight from this coordinator, and penalty its recent failures and
// misses (a read that finished, or timed out, without its answer), each adding one, halving
// every scorePenaltyHalfLife, at most scorePenaltyCap.
const (
	scoreAlpha           = 0.2
	scorePenaltyCost     = 100 * time.Millisecond
	scorePenaltyHalfLife = time.Second
	scorePenaltyCap      = 10
	// A replica's score is far worse than the best one's when it is more than scoreBadness
	// times it plus scoreSlack (so that differences of a few hundred microseconds between
	// healthy replicas reorder nothing).
	scoreBadness = 2
	scoreSlack   = time.Millisecond
	// maxScoredReplicas bounds the replicas with a score; beyond it they all start over.
	maxScoredReplicas = 4096
)

// replicaScore is one replica's score. It is safe for concurrent use.
type replicaScore struct {
	outstanding atomic.Int32
	mu          sync.Mutex
	latency     float64       // moving average of answer latencies, in seconds; 0 before the first
	penalty     float64       // failures and misses, decayed to at
	at          time.Duration // when penalty was last decayed (monotonic)
}

// decayLocked brings penalty to now.
func (s *replicaScore) decayLocked(now time.Duration) {
	if now > s.at {
		if s.penalty > 0 {
			s.penalty *= halve(now - s.at)
		}
		s.at = now
	}
}

// halve returns the factor the penalty keeps after d: 2^(-d / scorePenaltyHalfLife).
func halve(d time.Duration) float64 {
	return math.Exp2(-float64(d) / float64(scorePenaltyHalfLife))
}

// answered records an answer after latency d.
func (s *replicaScore) answered(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latency == 0 {
		s.latency = d.Seconds()
		return
	}
	s.latency += scoreAlpha * (d.Seconds() - s.latency)
}

// penalize records a failure or a miss at now.
func (s *replicaScore) penalize(now time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decayLocked(now)
	s.penalty = min(s.penalty+1, scorePenaltyCap)
}

// score returns the replica's score at now, in seconds.
func (s *replicaScore) score(now time.Duration) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decayLocked(now)
	return s.latency*float64(1+max(s.outstanding.Load(), 0)) + s.penalty*scorePenaltyCost.Seconds()
}

// replicaScores holds the scores of the replicas this coordinator reads from.
type replicaScores struct {
	m sync.Map // coordinator.NodeID → *replicaScore
	n atomic.Int32
}

// of returns replica id's score, creating it on its first read.
func (r *replicaScores) of(id coordinator.NodeID) *replicaScore {
	if s, ok := r.m.Load(id); ok {
		return s.(*replicaScore)
	}
	if r.n.Load() >= maxScoredReplicas {
		r.m.Clear()
		r.n.Store(0)
	}
	s, loaded := r.m.LoadOrStore(id, new(replicaScore))
	if !loaded {
		r.n.Add(1)
	}
	return s.(*replicaScore)
}

// order returns the order a read should prefer the live replicas of replicas in (for
// Params.ReadOrder), appended to dst, or nil for the core's default order: local first when it
// is a replica (data locality), then ring order. The default order stands while no live
// replica's score is far worse than the best one's (see scoreBadness); otherwise the
// replicas that are not far worse come first in the default order, and the others follow,
// best first.
func (r *replicaScores) order(dst []coordinator.NodeID, replicas []coordinator.Replica, local coordinator.NodeID, now time.Duration) []coordinator.NodeID {
	type scored struct {
		id    coordinator.NodeID
		score float64
	}
	var buf [8]scored
	live := buf[:0]
	add := func(rep coordinator.Replica) {
		if !rep.Down || rep.ID == local {
			live = append(live, scored{rep.ID, r.of(rep.ID).score(now)})
		}
	}
	for _, rep := range replicas {
		if rep.ID == local {
			add(rep)
		}
	}
	for _, rep := range replicas {
		if rep.ID != local {
			add(rep)
		}
	}
	if len(live) < 2 {
		return nil
	}
	best := slices.MinFunc(live, func(a, b scored) int { return cmp.Compare(a.score, b.score) }).score
	bad := func(s scored) bool { return s.score > scoreBadness*best+scoreSlack.Seconds() }
	if !slices.ContainsFunc(live, bad) {
		return nil
	}
	for _, s := range live {
		if !bad(s) {
			dst = append(dst, s.id)
		}
	}
	worse := slices.DeleteFunc(live, func(s scored) bool { return !bad(s) })
	slices.SortStableFunc(worse, func(a, b scored) int { return cmp.Compare(a.score, b.score) })
	for _, s := range worse {
		dst = append(dst, s.id)
	}
	return dst
}
