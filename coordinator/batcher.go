package coordinator

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/kvnode/kvnode/schema"
)

// DefaultPropagationInterval is how often a coordinator flushes account-only deltas: the shell's
// ticker drains its Batcher at this interval.
const DefaultPropagationInterval = 20 * time.Millisecond

// DefaultLearnedCapacity is the number of partitions a coordinator remembers as hot when it
// learns them from replicas' rejections (Params.Learned, Request.Learn): the slots of the
// shell's small partitionlimit.Table of learned counters. Only partitions its replicas reject
// enter it, and the smallest counter of a full window is evicted, so a few thousand slots hold
// every partition hot enough to matter.
const DefaultLearnedCapacity = 4096

// LearnedLead is how far ahead of its own clock a coordinator keeps its learned copies of
// replicas' counters (LearnedTime). A replica's counter halves at the first second boundary
// of whichever coordinator's stamps run ahead; a copy on this coordinator's own clock would
// halve up to that lead later and, in between, hold twice the replica's count and reject
// operations the replicas would admit. Running the copy this much ahead makes it halve first,
// so it stays at most the replica's counter while the coordinators' clocks are within
// LearnedLead of each other (the KvnodeClockSkew alert fires at 0.5 s from the cluster's
// median); the price is a copy at half the count for the rest of the lead, which only
// forwards more operations for the replicas to decide.
const LearnedLead = 750 * time.Millisecond

// LearnedTime returns the time a coordinator accounts and decides an operation stamped stamp
// at on its learned copies: stamp plus LearnedLead.
func LearnedTime(stamp time.Time) time.Time { return stamp.Add(LearnedLead) }

// Copy returns what a coordinator's learned copy takes from l (partitionlimit.Table.Learn):
// the count and residual at LearnedTime(l.Stamp), which are the replicas' as of l.Stamp halved
// once for each second boundary between the two, since the copy runs ahead of the replicas'
// counter.
func (l Learned) Copy() (count, residual uint32, at time.Time) {
	at = LearnedTime(l.Stamp)
	d := at.Unix() - l.Stamp.Unix()
	if d >= 32 {
		return 0, 0, at
	}
	return l.Count >> uint(max(d, 0)), l.Residual >> uint(max(d, 0)), at
}

// Delta is a number of operations on one of a replica's counters that the replica did not see:
// account propagation sends it to the replica as account-only (docs/architecture.md, the limiter).
type Delta struct {
	Table schema.TableID
	Token int64
	Op    Op
	Count uint32
}

// Batch is the deltas owed to one replica, coalesced by (Table, Token, Op) and ordered by them.
type Batch struct {
	To     NodeID
	Deltas []Delta
}

// deltaKey names one counter on a replica.
type deltaKey struct {
	table schema.TableID
	token int64
	op    Op
}

// Batcher is account propagation's pure core. Replicas that did not count a limited operation
// (the coordinator rejected it locally, a read contacted fewer than all replicas) would count
// only part of a partition's load, and with coordinators spread over the replicas the admitted
// rate would climb toward RF × limit. A Batcher collects, per replica, the operations it missed,
// coalesced by counter; whoever drives it drains it on a timer and sends each batch. The zero
// Batcher is ready to use. It is not safe for concurrent use.
type Batcher struct {
	pending map[NodeID]map[deltaKey]uint32
}

// Add records that the replicas in to did not count one op on (table, token). Counts saturate
// at math.MaxUint32.
func (b *Batcher) Add(to []NodeID, table schema.TableID, token int64, op Op) {
	if len(to) == 0 {
		return
	}
	if b.pending == nil {
		b.pending = make(map[NodeID]map[deltaKey]uint32)
	}
	k := deltaKey{table: table, token: token, op: op}
	for _, id := range to {
		m := b.pending[id]
		if m == nil {
			m = make(map[deltaKey]uint32)
			b.pending[id] = m
		}
		if m[k] < math.MaxUint32 {
			m[k]++
		}
	}
}

// Pending reports whether any delta waits to be drained.
func (b *Batcher) Pending() bool { return len(b.pending) > 0 }

// Drain empties the batcher and returns one batch per replica for which live reports true, in
// NodeID order, each with its deltas ordered by (Table, Token, Op), so that a drain is
// deterministic. Deltas owed to replicas that are not live are dropped: a down replica's
// counters decay while it is away, and it would count them late.
func (b *Batcher) Drain(live func(NodeID) bool) []Batch {
	if len(b.pending) == 0 {
		return nil
	}
	out := make([]Batch, 0, len(b.pending))
	for id, deltas := range b.pending {
		if !live(id) {
			continue
		}
		batch := Batch{To: id, Deltas: make([]Delta, 0, len(deltas))}
		for k, n := range deltas {
			batch.Deltas = append(batch.Deltas, Delta{Table: k.table, Token: k.token, Op: k.op, Count: n})
		}
		slices.SortFunc(batch.Deltas, func(x, y Delta) int {
			return cmp.Or(cmp.Compare(x.Table, y.Table), cmp.Compare(x.Token, y.Token), cmp.Compare(x.Op, y.Op))
		})
		out = append(out, batch)
	}
	slices.SortFunc(out, func(x, y Batch) int { return cmp.Compare(x.To, y.To) })
	b.pending = nil
	return out
}
