package partitionlimit

import (
	"fmt"
	"math"
	"math/bits"
	"sync"
	"time"
)

const (
	// DefaultCapacity is the number of slots a Table has when Options.Capacity is zero:
	// 2^20 = 1,048,576 tracked partitions in 24 MiB.
	DefaultCapacity = 1 << 20

	// MaxCapacity is the largest Options.Capacity accepted (2^30 slots, 24 GiB).
	MaxCapacity = 1 << 30

	// DefaultShards is the largest shard count chosen when Options.Shards is zero. Small tables
	// get fewer shards so that every shard keeps at least 64 slots.
	DefaultShards = 256

	// MaxShards is the largest Options.Shards accepted.
	MaxShards = 1 << 16

	// Window is the number of consecutive slots (wrapping within a shard) in which a key may
	// live. A lookup stops at the key's slot and examines all Window slots only for a key the
	// table does not track: at most 192 bytes, three or four adjacent cache lines. Filling the
	// default table to 95% with distinct keys, about 10% of inserts find their window full and
	// evict the smallest count there (a count of 1 in that test); a wider window lowers that
	// at the cost of scanning more memory for every new key.
	Window = 8

	// minDefaultShardSlots is the smallest shard the default shard count will create.
	minDefaultShardSlots = 64

	// labelBits is how many bits of a slot's label word hold the label; the two above them hold
	// the second of the counter's birth modulo 4 (see slot).
	labelBits = 30

	// backStepTolerance is how many seconds `now` may lag behind an entry's stamp and still be
	// treated as an out-of-order caller (keep the stamp, do not decay) rather than a clock that
	// was stepped back (adopt the new clock's second as the stamp). See decay.
	backStepTolerance = 10
)

// MaxLabel is the largest label a Table keeps apart from the others: a slot's 32-bit label word
// holds the label in its low 30 bits and, in the two above, the second its counter's onset began
// in (see slot). Every method takes a label modulo 2^30 (label & MaxLabel), so labels above it
// share counters with lower ones; Apply and ApplyAt refuse them with an error. Callers hand
// labels out from 0 up (replica.Service one per (table, op) pair, the coordinator's budgets
// kind<<8 | op) and stop before MaxLabel.
const MaxLabel = 1<<labelBits - 1

// Options configures a Table. The zero value of each field means its default (EnsureDefaults).
// The YAML tag names Capacity's key in kvnode's configuration file (node.Config nests Options);
// the fields tagged "-" are set in code.
type Options struct {
	// Capacity is the number of counter slots, that is the most partitions tracked at once.
	// Zero means DefaultCapacity. It is rounded up to a multiple of Shards; Table.Capacity
	// reports the result. Each slot takes 24 bytes, allocated once by New.
	Capacity int `yaml:"limiter_capacity"`

	// Shards is the number of independently locked parts of the table; it must be a power of
	// two. Zero means DefaultShards, reduced for small capacities so that each shard has at
	// least 64 slots. More shards mean less lock contention between cores.
	Shards int `yaml:"-"`

	// NoOnsetBound turns off the onset bound (see the package documentation, "The onset"):
	// Decide then applies Admit to the counter as it stands, and a partition that turns hot
	// admits 2L + (L/ln2)·ln(V/2L) operations in its first second. It exists to measure the
	// limiter as ScyllaDB designs it (test/sim's "scylla" configuration); a server never sets it.
	NoOnsetBound bool `yaml:"-"`

	// NoNoiseBound turns off the noise bound (see the package documentation, "Noise under the
	// limit"): Decide then judges a count above 2L by the rule alone at any phase of the
	// second, and a partition offered a little under its limit has a few operations rejected
	// when Poisson noise carries its count past 2L. Like NoOnsetBound it exists for test/sim's
	// "scylla" configuration; a server never sets it.
	NoNoiseBound bool `yaml:"-"`

	// LearnedCopies makes a table of copies of other tables' counters, which a coordinator
	// that is not a replica of a partition fills with Learn from the replicas' rejections and
	// decides on with Decide. A copy's onset (its birth and leftover count) is only ever what
	// Learn gave it: the table's own operations, a subset of what the replicas count, never
	// start a new one (see "Turning hot again" in the package documentation), so the copy
	// judges an operation as the replica it learned from would.
	LearnedCopies bool `yaml:"-"`
}

// EnsureDefaults replaces zero fields with their defaults and returns o. A nil o is treated as
// the zero Options.
func (o *Options) EnsureDefaults() *Options {
	if o == nil {
		o = &Options{}
	}
	if o.Capacity == 0 {
		o.Capacity = DefaultCapacity
	}
	if o.Shards == 0 {
		shards := DefaultShards
		for shards > 1 && o.Capacity/shards < minDefaultShardSlots {
			shards /= 2
		}
		o.Shards = shards
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, describes a table New can build. Each error
// names the field (and Capacity's configuration key) and the values allowed.
func (o *Options) Validate() error {
	switch {
	case o.Capacity < Window || o.Capacity > MaxCapacity:
		return fmt.Errorf("partitionlimit: Options.Capacity (limiter_capacity) is %d, want %d to %d", o.Capacity, Window, MaxCapacity)
	case o.Shards < 1 || o.Shards > MaxShards:
		return fmt.Errorf("partitionlimit: Options.Shards is %d, want 1 to %d", o.Shards, MaxShards)
	case o.Shards&(o.Shards-1) != 0:
		return fmt.Errorf("partitionlimit: Options.Shards is %d, want a power of two", o.Shards)
	case o.Capacity/o.Shards < Window:
		return fmt.Errorf("partitionlimit: Options.Capacity (limiter_capacity) %d over Options.Shards %d leaves fewer than %d slots per shard",
			o.Capacity, o.Shards, Window)
	}
	return nil
}

// slot is one counter. The token is stored as two uint32 halves so the struct has 4-byte
// alignment and takes 24 bytes instead of the 28 (padded to 32) an int64 field would cost.
//
// count is the counter as of second sec (the low 32 bits of floor(unix seconds)); it saturates
// at math.MaxUint32. A slot whose count, decayed to the current second, is zero is free. A slot
// that has never been used is all zeros, which is free by the same rule.
//
// born is when the counter's onset began, on the clock of the table's node (the local time
// passed to AccountNAt and DecideAt, which is now for the methods without one), as the low 16
// bits of unix milliseconds with the lowest bit set, while the counter is in its onset (younger
// than onsetHorizon); 0 once it is older, or when the table has no onset bound. It is measured
// on the node's own clock rather than on the stamps because a counter's age is an interval: on
// one clock it is exact, while stamps from coordinators whose clocks differ would make a
// counter look up to their skew older (see "The onset" in the package documentation). The
// 16 bits wrap every 65.5 seconds, and an age is never ambiguous: a live counter is touched at
// least every 32 seconds (a count halves to zero in 32), every touch past the horizon clears
// born, so a counter that still has a birth is at most 8 + 32 seconds past it. A clock stepped
// back behind the birth reads as the step's complement modulo 65.5 seconds: past the horizon,
// which ends the onset, unless it lands within it, where the onset runs its course on an age
// that is wrong for at most 8 seconds.
//
// label holds the key's label in its low labelBits bits (MaxLabel) and, while the counter has a
// birth, the counter's second at its birth (its sec then) modulo 4 in the two bits above: with
// it the onset bound counts the second boundaries the counter really passed since its birth,
// sec − that second, rather than those the clock of an operation's stamp passed in the same
// time (the birth read as now − age on that clock), which differ when the stamp that started
// the onset came from a clock ahead or behind (see "The onset" in the package documentation).
// Four values tell them apart: the boundaries passed in an age a are within one second of a
// on one clock, and within two of it between clocks less than a second apart.
//
// resid is the part of count that the counter held when its onset began: zero for a counter
// that started from zero, the leftover count of a partition that turns hot again (see
// "Turning hot again" in the package documentation). It halves with count, at the same
// second boundaries, in the 16-bit floating form of packResidual; it is kept only with a
// birth.
type slot struct {
	tokLo, tokHi uint32
	label        uint32 // the label, and the birth's second modulo 4 above MaxLabel
	count        uint32
	sec          uint32
	born         uint16
	resid        uint16
}

// shard is one independently locked part of a Table.
type shard struct {
	mu    sync.Mutex
	slots []slot // len is the shard's slot count, at least Window

	// Counters, guarded by mu.
	lookups   uint64
	inserts   uint64
	evictions uint64

	// The padding keeps the mutex and counters of neighbouring shards out of one cache line.
	_ [64]byte
}

// Table counts operations per (token, label) with counters that halve at every wall-clock
// second boundary. A label is an opaque uint32 up to MaxLabel the caller assigns to a (table,
// op) pair.
//
// The table has a fixed number of slots set by New and never allocates afterwards. A key lives
// in one of Window consecutive slots chosen by a hash of (token, label). When all of them hold
// other live keys, the key with the smallest decayed count is evicted, so a hot partition keeps
// its counter however many cold partitions pass through.
//
// A Table is safe for concurrent use. It never reads the clock: every method takes `now`.
type Table struct {
	shards    []shard
	shift     uint // shard index = hash >> shift
	shardSize int
	onset     bool // apply the onset bound (not Options.NoOnsetBound)
	noise     bool // apply the noise bound (not Options.NoNoiseBound)
	rebirthOn bool // start new onsets for counters that turn hot again (onset, not Options.LearnedCopies)
}

// New returns a table with the given options (zero fields take their defaults).
func New(opts Options) (*Table, error) {
	o := opts
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	size := (o.Capacity + o.Shards - 1) / o.Shards
	// One allocation of pointer-free memory: the garbage collector never scans it.
	all := make([]slot, size*o.Shards)
	t := &Table{
		shards:    make([]shard, o.Shards),
		shift:     uint(64 - bits.TrailingZeros(uint(o.Shards))),
		shardSize: size,
		onset:     !o.NoOnsetBound,
		noise:     !o.NoNoiseBound,
		rebirthOn: !o.NoOnsetBound && !o.LearnedCopies,
	}
	for i := range t.shards {
		t.shards[i].slots = all[i*size : (i+1)*size : (i+1)*size]
	}
	return t, nil
}

// Capacity returns the number of slots: the most partitions the table tracks at once.
func (t *Table) Capacity() int { return t.shardSize * len(t.shards) }

// Account counts one operation on (token, label) at time now and returns the counter after
// the increment, decayed to now's second. Pass the result to Admit.
func (t *Table) Account(token int64, label uint32, now time.Time) uint32 {
	return t.AccountN(token, label, 1, now)
}

// AccountN counts n operations on (token, label) at time now and returns the counter after
// adding them, decayed to now's second. The counter saturates at math.MaxUint32. AccountN with
// n = 0 is Peek. It serves batched account-only deltas, which carry a count for operations
// this replica did not see. AccountN is AccountNAt with now as the node's own clock.
func (t *Table) AccountN(token int64, label uint32, n uint32, now time.Time) uint32 {
	if n == 0 {
		return t.Peek(token, label, now)
	}
	label &= MaxLabel
	h := hash(token, label)
	s := &t.shards[h>>t.shift]
	sec, ms := second(now), t.milli(now)
	s.mu.Lock()
	c, _, _, _, _ := s.account(h, token, label, n, sec, now.UnixMilli(), ms, t.rebirth(0))
	s.mu.Unlock()
	return c
}

// AccountNAt is AccountN for a node that accounts at a coordinator's stamp (now, bounded by
// Stamp) rather than at its own clock, local: the stamp decides the counter's second
// boundaries, so that every replica halves it alike, and local measures how long ago a young
// counter started (see slot), which the onset bound needs on one clock. limit is the
// partition's limit (0 if unknown), which says when a quiet counter starts a new onset, as
// Decide would with the same limit (see "Turning hot again" in the package documentation), so
// that replicas that account an operation and replicas that decide it keep the same onset.
// (AccountN repeats its body rather than calling it, so that Account's hot path passes no
// more than it always did.)
func (t *Table) AccountNAt(token int64, label uint32, n, limit uint32, now, local time.Time) uint32 {
	if n == 0 {
		return t.Peek(token, label, now)
	}
	label &= MaxLabel
	h := hash(token, label)
	s := &t.shards[h>>t.shift]
	sec, ms := second(now), t.milli(local)
	s.mu.Lock()
	c, _, _, _, _ := s.account(h, token, label, n, sec, now.UnixMilli(), ms, t.rebirth(limit))
	s.mu.Unlock()
	return c
}

// Learn raises the counter of (token, label) to at least count at now, and gives it the onset
// born (the zero time: past its onset) with the leftover count resid, on the clock of now,
// without counting an operation. It is how a coordinator that is not a replica of a partition
// learns the partition's counter from a replica's rejection (Decision.Count, Decision.Born and
// Decision.Residual, as of the operation's stamp now): afterwards its own Decide on this table
// judges the partition's operations with the replica's rule on a count that is at most the
// replica's (the replica also counts every operation the coordinator counts here), so it
// rejects only operations the replica would reject too. Such a table is made with
// Options.LearnedCopies. Learn never lowers a counter; a key the table does not track takes a
// slot as Account would, evicting the smallest count of its window when the window is full.
func (t *Table) Learn(token int64, label uint32, count uint32, born time.Time, resid uint32, now time.Time) {
	if count == 0 {
		return
	}
	var b uint16
	if t.onset && !born.IsZero() && now.Sub(born) < onsetHorizon*time.Millisecond {
		b = uint16(born.UnixMilli()) | 1
	} else {
		resid = 0
	}
	label &= MaxLabel
	h := hash(token, label)
	s := &t.shards[h>>t.shift]
	sec := second(now)
	s.mu.Lock()
	// The copy's birth second is born's, on the clock of the stamps it is learned and
	// decided at: a copy counts the boundaries its own stamps put since the birth.
	s.learn(h, token, label, count, sec, b, second(born), packResidual(min(resid, count)))
	s.mu.Unlock()
}

// milli returns the birth stamp an onset beginning at local (the node's clock) carries: the
// low 16 bits of unix milliseconds with the lowest bit set (so it is never 0, which means no
// onset, and reads back a millisecond early at most), or 0 when the table has no onset bound.
func (t *Table) milli(local time.Time) uint16 {
	if !t.onset {
		return 0
	}
	return uint16(local.UnixMilli()) | 1
}

// rebirth returns the limit account judges a quiet counter on, to start a new onset when the
// partition turns hot again (see "Turning hot again" in the package documentation): limit
// itself (0 when unknown, which leaves only the whole quiet second), or −1 for a table that
// starts no new onsets (no onset bound, or learned copies).
func (t *Table) rebirth(limit uint32) int64 {
	if !t.rebirthOn {
		return -1
	}
	return int64(limit)
}

// Peek returns the counter of (token, label) decayed to now's second without counting an
// operation. It returns 0 for a key the table does not track, and never changes the table.
func (t *Table) Peek(token int64, label uint32, now time.Time) uint32 {
	label &= MaxLabel
	h := hash(token, label)
	s := &t.shards[h>>t.shift]
	sec := second(now)
	s.mu.Lock()
	c := s.peek(h, token, label, sec)
	s.mu.Unlock()
	return c
}

// Stats describes a Table's occupancy and activity.
type Stats struct {
	// Capacity is the number of slots.
	Capacity int
	// Entries is the number of keys whose counter, decayed to the time passed to Stats, is
	// above zero: the partitions tracked now.
	Entries int
	// Lookups counts calls to Account, AccountN and Peek. Each examines at most Window slots:
	// it stops at the key's slot, and examines all Window only for a key not tracked.
	Lookups uint64
	// Inserts counts keys that began to be tracked: accounted while their decayed count was 0.
	Inserts uint64
	// Evictions counts live keys displaced because every slot of a window was live; each
	// displaced the key with the smallest decayed count in that window.
	Evictions uint64
}

// Stats returns the table's statistics with Entries counted at now. It examines every slot,
// locking one shard at a time (a few milliseconds per million slots), so call it at metrics
// scrape frequency, not per operation.
func (t *Table) Stats(now time.Time) Stats {
	sec := second(now)
	st := Stats{Capacity: t.Capacity()}
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		st.Lookups += s.lookups
		st.Inserts += s.inserts
		st.Evictions += s.evictions
		for j := range s.slots {
			if c, _ := decay(s.slots[j].count, s.slots[j].sec, sec); c != 0 {
				st.Entries++
			}
		}
		s.mu.Unlock()
	}
	return st
}

// account implements AccountNAt for n > 0 with s.mu held. now is the second of the stamp,
// nowMs the stamp in unix milliseconds (the phase a counter's age is read at), and ms the
// birth stamp an onset beginning at this moment of the node's clock takes (0 for a
// table without an onset bound, see Table.milli); limit is the partition's limit as
// Table.rebirth gives it, which says when a counter that is not at zero starts a new onset.
// account returns the counter after the increment, its birth stamp (0 for a counter past its
// onset), the part of the count that predates the birth, the second boundaries the counter
// passed since its birth modulo 4, and whether the counter's second is ahead of now (an
// operation stamped by a clock behind the one that last halved it).
func (s *shard) account(h uint64, token int64, label uint32, n uint32, now uint32, nowMs int64, ms uint16, limit int64) (uint32, uint16, uint32, uint32, bool) {
	s.lookups++
	lo, hi := uint32(token), uint32(uint64(token)>>32)
	e, c, stamp, j := s.probe(h, lo, hi, label, now)
	if e == nil {
		s.slots[j] = slot{tokLo: lo, tokHi: hi, label: label | now<<labelBits, count: n, sec: now, born: ms}
		return n, ms, 0, 0, false
	}
	if c == 0 {
		s.inserts++
	}
	var r uint32
	if ms != 0 {
		age := uint16(ms - e.born)
		if e.born != 0 {
			if age > onsetHorizon {
				e.born, e.resid = 0, 0
			} else if e.resid != 0 {
				// A packed residual halves exactly (see packResidual).
				r, _ = decay(unpackResidual(e.resid), e.sec, now)
				e.resid = packResidual(r)
			}
		}
		switch {
		case c == 0:
			e.born, e.resid, r = ms, 0, 0
			e.label = label | stamp<<labelBits
		case limit < 0:
			// A learned copy: its onset is what Learn gave it.
		case int32(now-e.sec) >= 2, int64(c) <= limit/2 && (e.born == 0 || int64(c-r)*2000*sinceBirth(age) <= limit*int64(age) &&
			(age < 1000 || float64(c-r)*2 <= float64(limit)*steadySpan(int64(age), nowMs, boundaries(stamp-e.label>>labelBits, int64(age))))):
			// Turning hot again: after a whole second without an operation, or while the
			// count is at most half the limit and what came since the onset began is
			// explained by a rate of at most half the limit (a trickle), a new onset starts,
			// with the count so far as its residual. A rate of L/2 since the birth leaves
			// (L/2)·age in the first second, of which a boundary may have halved half
			// (sinceBirth), and (L/2)·steadySpan after it, where more boundaries have.
			e.born, e.resid = ms, packResidual(c)
			e.label = label | stamp<<labelBits
			r = unpackResidual(e.resid)
		}
	}
	c = saturatingAdd(c, n)
	e.count, e.sec = c, stamp
	return c, e.born, r, (stamp - e.label>>labelBits) & 3, stamp != now
}

// sinceBirth returns how many times its count since the birth (count − residual) a counter
// born age milliseconds ago within the first second may have counted since: up to twice,
// as its one boundary may have halved what came before it (a count of L/2 just after it may
// stand for L since the birth, and a new onset there would let the first second take its
// limit twice). After the first second account holds the count against steadySpan, which
// counts the boundaries passed; 1 is returned there, and the age test alone is the weaker.
func sinceBirth(age uint16) int64 {
	if age < 1000 {
		return 2
	}
	return 1
}

// probe looks for the key (lo, hi, label) in its window of slots at now, with s.mu held. When
// the key holds a slot, probe returns it with its count decayed to now and the second of that
// count; otherwise e is nil and j is the slot a new counter takes: the first empty one, else the
// one with the smallest count (an eviction), and probe counts the insert.
func (s *shard) probe(h uint64, lo, hi, label, now uint32) (e *slot, c, stamp uint32, j int) {
	size := uint32(len(s.slots))
	i := start(h, size)
	free, victim := -1, -1
	var victimCount uint32
	for range Window {
		sl := &s.slots[i]
		c, stamp := decay(sl.count, sl.sec, now)
		if sl.count != 0 && sl.tokLo == lo && sl.tokHi == hi && sl.label&MaxLabel == label {
			return sl, c, stamp, int(i)
		}
		switch {
		case c == 0:
			if free < 0 {
				free = int(i)
			}
		case victim < 0 || c < victimCount:
			victim, victimCount = int(i), c
		}
		if i++; i == size {
			i = 0
		}
	}
	j = free
	if j < 0 {
		j = victim
		s.evictions++
	}
	s.inserts++
	return nil, 0, 0, j
}

// learn implements Learn with s.mu held: the key's counter becomes the larger of its decayed
// count and count, its birth born in second bornSec and its residual resid (packed).
func (s *shard) learn(h uint64, token int64, label uint32, count, now uint32, born uint16, bornSec uint32, resid uint16) {
	lo, hi := uint32(token), uint32(uint64(token)>>32)
	e, c, stamp, j := s.probe(h, lo, hi, label, now)
	if e == nil {
		s.slots[j] = slot{tokLo: lo, tokHi: hi, label: label | bornSec<<labelBits, count: count, sec: now, born: born, resid: resid}
		return
	}
	e.count, e.sec, e.born, e.resid = max(c, count), stamp, born, resid
	e.label = label | bornSec<<labelBits
}

// peek implements Peek with s.mu held.
func (s *shard) peek(h uint64, token int64, label uint32, now uint32) uint32 {
	s.lookups++
	lo, hi := uint32(token), uint32(uint64(token)>>32)
	size := uint32(len(s.slots))
	i := start(h, size)
	for range Window {
		e := &s.slots[i]
		if e.count != 0 && e.tokLo == lo && e.tokHi == hi && e.label&MaxLabel == label {
			c, _ := decay(e.count, e.sec, now)
			return c
		}
		if i++; i == size {
			i = 0
		}
	}
	return 0
}

// decay returns a counter stored as count at second stamp, seen at second now, and the stamp
// the slot should carry afterwards. Seconds are the low 32 bits of unix seconds and are
// compared as a signed 32-bit difference, which is exact for stamps less than 68 years apart.
//
//   - now after stamp by d seconds: the count halves d times (count >> d, which Go defines as
//     0 for d ≥ 32) and the stamp becomes now.
//   - now before stamp by at most backStepTolerance seconds: an operation whose caller read
//     the clock before another caller that has already accounted (goroutines racing across a
//     second boundary, a queued request). The count does not decay and the stamp stays, so the
//     next halving happens once, at the stamp's next boundary. Adopting the older second
//     instead would halve the counter a second time at the boundary already passed.
//   - now before stamp by more: the clock was stepped back. The count does not decay, but the
//     stamp becomes now so that halving resumes on the new clock; keeping the stamp would
//     freeze the counter (and keep rejecting a hot partition) for as long as the step.
//
// In no case does the count increase.
func decay(count, stamp, now uint32) (uint32, uint32) {
	d := int32(now - stamp)
	switch {
	case d > 0:
		return count >> uint32(d), now
	case d >= -backStepTolerance:
		return count, stamp
	default:
		return count, now
	}
}

// second returns the low 32 bits of floor(unix seconds) of t. time.Time.Unix rounds towards
// negative infinity because a Time's nanosecond part is always in [0, 1e9).
func second(t time.Time) uint32 { return uint32(t.Unix()) }

// hash mixes token and label into 64 well-distributed bits. Tokens from the Murmur3 partitioner
// are already uniform, but labels are small dense integers and a key's shard and window must
// depend on both; the murmur3 fmix64 finalizer does this in a few cycles.
func hash(token int64, label uint32) uint64 {
	h := uint64(token) ^ uint64(label)*0x9e3779b97f4a7c15
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// start maps the low 32 bits of h onto [0, size) with a multiply and a shift (Lemire's
// fast range reduction), so shard sizes need not be powers of two. The shard index uses the
// high bits of h, so the two are independent.
func start(h uint64, size uint32) uint32 {
	return uint32((h & math.MaxUint32) * uint64(size) >> 32)
}

// packResidual stores a residual count in 16 bits: an 11-bit mantissa and a 5-bit shift,
// v = m·2^e, rounded down (exact below 2048, within 1/1024 above). Halving it d times is exact
// on the stored value: (m·2^e) >> d is m·2^(e−d) or m >> (d−e), which pack again unchanged, so
// a residual decays with its counter as an integer would.
func packResidual(v uint32) uint16 {
	if v < 1<<11 {
		return uint16(v)
	}
	e := bits.Len32(v) - 11
	return uint16(e)<<11 | uint16(v>>e)
}

// unpackResidual returns the count packResidual stored.
func unpackResidual(r uint16) uint32 { return uint32(r&(1<<11-1)) << (r >> 11) }

// saturatingAdd returns a + b, or math.MaxUint32 if that overflows.
func saturatingAdd(a, b uint32) uint32 {
	c := a + b
	if c < a {
		return math.MaxUint32
	}
	return c
}
