package replica

import (
	"bytes"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/kvnode/kvnode/partitioner"
)

// HotK is the number of partitions the service tracks as hot per (table, op).
const HotK = 32

// rejecter says who made a rejection, for metrics and the hot set.
type rejecter uint8

const (
	// byCoordinator: Check, the coordinator's local decision before it contacts anyone.
	byCoordinator rejecter = iota
	// byReplica: a Mutate or Read in ACCOUNT_AND_ENFORCE mode.
	byReplica
	numRejecters

	// noRejection marks an admitted or account-only operation.
	noRejection rejecter = numRejecters
	// wouldRejectBy + r marks an operation admitted because its table's limit is in shadow
	// mode, which enforce mode would have rejected with r (byCoordinator or byReplica) as
	// the rejecter.
	wouldRejectBy rejecter = numRejecters + 1
)

func (r rejecter) String() string {
	if r == byCoordinator {
		return "coordinator"
	}
	return "replica"
}

// hotSet is the bounded set of the hottest partitions of one (table, op): at most HotK of
// them, keyed by token. Only operations whose counter is above twice the limit reach it (the
// only ones the limiter can reject), so traffic within its limits never touches it.
//
// It is Space-Saving (Metwally, Agrawal and El Abbadi, 2005) with exact weights: the weight of
// a partition is its partitionlimit counter, which the table already keeps exactly (decayed by
// halving every second), so no count has to be inherited from an evicted entry and no entry
// carries an overestimate. When the set is full, a partition enters by displacing the entry
// with the smallest counter, decayed to now, if its own counter is larger.
//
// Each entry also counts the partition's rejections by rejecter, decayed like the counters, and
// remembers the partition key, copied into a buffer the entry reuses, when the operation that
// updates it carries one (Mutate and Read do; Check and account deltas know only the token).
type hotSet struct {
	mu      sync.Mutex
	n       int
	tokens  [HotK]int64 // scanned on every update: kept apart from the entries
	entries [HotK]hotEntry
}

type hotEntry struct {
	count uint32 // the partition's counter at its last update, as of second sec
	sec   uint32 // low 32 bits of the unix second count and rejected are as of
	// rejected counts rejections by rejecter, halved every second like count, and
	// wouldReject the shadow mode's would-be rejections.
	rejected    [numRejecters]uint32
	wouldReject [numRejecters]uint32
	// key is the serialized partition key (partitioner.AppendKey); empty while unknown (a
	// partition key is never empty).
	key []byte
}

// decayTo halves e's counts once per second boundary between e.sec and sec. A clock that went
// back leaves them as they are.
func (e *hotEntry) decayTo(sec uint32) {
	d := int32(sec - e.sec)
	if d <= 0 {
		return
	}
	e.count = shiftDown(e.count, d)
	for i := range e.rejected {
		e.rejected[i] = shiftDown(e.rejected[i], d)
		e.wouldReject[i] = shiftDown(e.wouldReject[i], d)
	}
	e.sec = sec
}

// decayedCount is e.count as of second sec, without changing e.
func (e *hotEntry) decayedCount(sec uint32) uint32 {
	if d := int32(sec - e.sec); d > 0 {
		return shiftDown(e.count, d)
	}
	return e.count
}

func shiftDown(v uint32, d int32) uint32 {
	if d >= 32 {
		return 0
	}
	return v >> uint32(d)
}

// isHot reports whether a counter of count under limit makes a partition a candidate for the
// hot set: above 2·limit, where rejections begin.
func isHot(count, limit uint32) bool { return uint64(count) > 2*uint64(limit) }

// HotSample is the sampling stride of the hot sets: of the operations on a hot partition, only
// those whose counter after the increment is a multiple of HotSample update the set, and a
// sampled rejection counts HotSample times. Each operation increments the counter by one, so
// exactly one operation in HotSample is sampled, and since a rejection depends on the draw and
// not on the counter's residue, the scaled rejection counts are unbiased estimates. Sampling
// keeps the set's lock off three rejections in four: on a rejection-bound partition it is most
// of what watching costs.
const HotSample = 4

// sampled reports whether an operation whose counter is count after the increment updates the
// hot set.
func sampled(count uint32) bool { return count%HotSample == 0 }

// update records a sample of HotSample operations on the partition with token whose counter is
// count after the sampled one was accounted at now; by is the rejecter when that operation was
// rejected, noRejection otherwise. pk is the partition key's components when the caller has
// them, else nil.
func (h *hotSet) update(token int64, count uint32, by rejecter, pk [][]byte, now time.Time) {
	sec := uint32(now.Unix())
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.Index(h.tokens[:h.n], token)
	if i < 0 {
		if i = h.victim(count, sec); i < 0 {
			return
		}
		h.tokens[i] = token
		e := &h.entries[i]
		e.count, e.sec, e.rejected, e.wouldReject, e.key = 0, sec, [numRejecters]uint32{}, [numRejecters]uint32{}, e.key[:0]
	}
	e := &h.entries[i]
	e.decayTo(sec)
	e.count = count
	switch {
	case by < numRejecters:
		e.rejected[by] = uint32(min(uint64(e.rejected[by])+HotSample, math.MaxUint32))
	case by >= wouldRejectBy && by < wouldRejectBy+numRejecters:
		i := by - wouldRejectBy
		e.wouldReject[i] = uint32(min(uint64(e.wouldReject[i])+HotSample, math.MaxUint32))
	}
	if len(e.key) == 0 && pk != nil {
		e.key = partitioner.AppendKey(e.key[:0], pk)
	}
}

// victim returns the slot a new partition with counter count takes at second sec: a free one,
// or the entry with the smallest decayed counter when that is below count; -1 when the new
// partition is not hotter than any tracked one. h.mu must be held.
func (h *hotSet) victim(count uint32, sec uint32) int {
	if h.n < HotK {
		h.n++
		return h.n - 1
	}
	least, at := ^uint32(0), -1
	for i := range h.entries {
		if c := h.entries[i].decayedCount(sec); c < least {
			least, at = c, i
		}
	}
	if least >= count {
		return -1
	}
	return at
}

// appendTokens appends the tokens of the tracked partitions to dst.
func (h *hotSet) appendTokens(dst []int64) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(dst, h.tokens[:h.n]...)
}

// hotSnapshot is one entry of a hotSet as of a second.
type hotSnapshot struct {
	token       int64
	count       uint32 // the counter at the last update, decayed
	rejected    [numRejecters]uint32
	wouldReject [numRejecters]uint32
	key         []byte // a copy; nil when unknown
}

// snapshot appends copies of the entries, decayed to now's second, that still count anything.
func (h *hotSet) snapshot(dst []hotSnapshot, now time.Time) []hotSnapshot {
	sec := uint32(now.Unix())
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.n {
		e := h.entries[i] // a copy: snapshots never decay the stored entries
		e.decayTo(sec)
		if e.count == 0 && e.rejected == [numRejecters]uint32{} && e.wouldReject == [numRejecters]uint32{} {
			continue
		}
		s := hotSnapshot{token: h.tokens[i], count: e.count, rejected: e.rejected, wouldReject: e.wouldReject}
		if len(e.key) > 0 {
			s.key = bytes.Clone(e.key)
		}
		dst = append(dst, s)
	}
	return dst
}

// EstimateRate estimates a steady rate, in events per second, from a count that is halved at
// every second boundary and incremented by each event, read at now. A steady rate of V per
// second keeps such a count at V right after a boundary and lets it grow to 2V by the next, so
// at the elapsed fraction f of the current second the count is about V·(1+f), and the estimate
// is count / (1+f). It is exact for a steady rate once the count has settled (after a few
// seconds) and lags a changing one by about a second.
func EstimateRate(count uint32, now time.Time) float64 {
	f := float64(now.Nanosecond()) / 1e9
	return float64(count) / (1 + f)
}
