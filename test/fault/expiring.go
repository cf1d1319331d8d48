package fault

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gocql/gocql"
)

// Expiring is the expiring-register kind: registers like Registers (each write's value is its
// timestamp, timestamps grow), where half the writes carry USING TTL of a few seconds. It holds
// what issue 30 asks of expiring data under faults:
//
//   - an expired value is never read: a read that starts past a TTL write's latest possible
//     expiry does not return it;
//   - expired data never brings back an older value: a read never returns a value older than
//     the newest write acknowledged before it began, even once that write has expired (it is a
//     tombstone at its timestamp then, which read repair, repair and hints carry);
//   - a read may find nothing only when every write it must see may have expired, or a newer
//     expiring write may hide them.
//
// A write's expiry is the coordinator's clock at the write plus the TTL, in whole seconds: the
// checker knows it to within the write's [Start, End] and expirySlack (the nodes share the
// test's clock; the slack covers the second rounding and a clock read on another process).
type Expiring struct {
	t    table
	ts   *Timestamps
	keys int
	ttl  int // seconds
}

// expirySlack widens a TTL write's expiry window on each side.
const expirySlack = 2 * time.Second

// NewExpiring returns the kind over table name of keyspace ks with keys registers, every
// operation at cl, TTL writes expiring after ttl seconds.
func NewExpiring(ks, name string, cl gocql.Consistency, ts *Timestamps, keys, ttl int) *Expiring {
	return &Expiring{t: table{ks: ks, name: name, cl: cl}, ts: ts, keys: keys, ttl: ttl}
}

func (k *Expiring) Name() string     { return kindName("expiring", k.t.cl) }
func (k *Expiring) Schema() []string { return []string{k.t.schema()} }

func (k *Expiring) Generate(rng *rand.Rand) Op {
	key := rng.Int64N(int64(k.keys))
	switch rng.IntN(4) {
	case 0:
		ts := k.ts.Next()
		return ttlWriteOp{t: k.t, k: key, v: ts, ts: ts, ttl: k.ttl}
	case 1:
		ts := k.ts.Next()
		return ttlWriteOp{t: k.t, k: key, v: ts, ts: ts}
	}
	return readOp{t: k.t, k: key}
}

func (k *Expiring) ReadBack(ctx context.Context, s *gocql.Session, cl gocql.Consistency) (any, error) {
	return readBack(ctx, k.t, s, cl)
}

// ttlWriteOp updates row k to v at timestamp ts, with USING TTL ttl when ttl > 0.
type ttlWriteOp struct {
	t        table
	k, v, ts int64
	ttl      int
}

func (o ttlWriteOp) IsRead() bool { return false }

func (o ttlWriteOp) String() string {
	return fmt.Sprintf("update %s v=%d ts=%d ttl=%d", o.t.row(o.k), o.v, o.ts, o.ttl)
}

func (o ttlWriteOp) Apply(ctx context.Context, s *gocql.Session) (any, error) {
	stmt := fmt.Sprintf("UPDATE %s.%s USING TIMESTAMP ? AND TTL ? SET v = ? WHERE p = ? AND k = ?", o.t.ks, o.t.name)
	return nil, s.Query(stmt, o.ts, o.ttl, o.v, int(o.k%parts), o.k).Consistency(o.t.cl).WithContext(ctx).Exec()
}

// expWrite is one recorded write of the kind.
type expWrite struct {
	ts         int64
	ttl        time.Duration
	start, end time.Duration
	acked      bool
}

// expiredBy reports whether w has surely expired by t (on the events' clock).
func (w expWrite) expiredBy(t time.Duration) bool {
	// Written as a difference: a failed write's end is the largest Duration (it may land at any
	// time), and w.end+w.ttl would wrap around to a time long past.
	return w.ttl > 0 && t > w.end && t-w.end > w.ttl+expirySlack
}

// mayHaveExpiredBy reports whether w may have expired by t.
func (w expWrite) mayHaveExpiredBy(t time.Duration) bool {
	return w.ttl > 0 && t >= w.start+w.ttl-expirySlack
}

func (k *Expiring) Check(events []Event, finals []Final) Verdict {
	f := newFindings()
	byKey := map[int64][]expWrite{}
	written := map[int64]map[int64]expWrite{} // key → value → its write
	writes, reads := 0, 0
	for _, ev := range events {
		w, ok := ev.Op.(ttlWriteOp)
		if !ok {
			continue
		}
		writes++
		ew := expWrite{ts: w.ts, ttl: time.Duration(w.ttl) * time.Second, start: ev.Start, end: ev.End, acked: ev.Err == nil}
		if ev.Err != nil {
			ew.end = 1<<63 - 1 // a failed write may still land, and its coordinator set the expiry any time
		}
		byKey[w.k] = append(byKey[w.k], ew)
		if written[w.k] == nil {
			written[w.k] = map[int64]expWrite{}
		}
		written[w.k][w.v] = ew
	}
	// latest is the newest write of key acknowledged before t.
	latest := func(key int64, t time.Duration) (expWrite, bool) {
		var best expWrite
		found := false
		for _, w := range byKey[key] {
			if w.acked && w.end < t && (!found || w.ts > best.ts) {
				best, found = w, true
			}
		}
		return best, found
	}
	// mayBeGone reports whether a read from start to end may find key empty although base, its
	// newest acknowledged write, must be seen: base may have expired, or a newer write with a
	// TTL that may have landed by end may have expired.
	mayBeGone := func(key int64, base expWrite, start, end time.Duration) bool {
		if base.mayHaveExpiredBy(end) {
			return true
		}
		for _, w := range byKey[key] {
			if w.ts > base.ts && w.start < end && w.mayHaveExpiredBy(end) {
				return true
			}
		}
		return false
	}
	judge := func(key int64, found bool, v int64, start, end time.Duration, who string) {
		if found {
			w, ok := written[key][v]
			switch {
			case !ok:
				f.add(f.unexpected, k.t.row(key), "%s returned v=%d, never written", who, v)
				return
			case w.expiredBy(start):
				f.add(f.resurrected, k.t.row(key), "%s at %v returned v=%d, written with TTL %v by %v: expired", who, start, v, w.ttl, w.end)
				return
			}
		}
		base, ok := latest(key, start)
		switch {
		case !ok:
		case found && v < base.ts && base.ttl > 0:
			f.add(f.resurrected, k.t.row(key), "%s at %v returned v=%d, older than ts=%d (ttl %v) acknowledged at %v: came back from under an expiring write", who, start, v, base.ts, base.ttl, base.end)
		case found && v < base.ts:
			f.add(f.stale, k.t.row(key), "%s at %v returned v=%d, older than ts=%d acknowledged at %v", who, start, v, base.ts, base.end)
		case !found && !mayBeGone(key, base, start, end):
			f.add(f.lost, k.t.row(key), "%s at %v found nothing, but ts=%d (ttl %v) acknowledged at %v cannot have expired", who, start, base.ts, base.ttl, base.end)
		}
	}
	for _, ev := range events {
		r, ok := ev.Op.(readOp)
		if !ok || ev.Err != nil {
			continue
		}
		reads++
		got := ev.Result.(rowValue)
		judge(r.k, got.Found, got.V, ev.Start, ev.End, fmt.Sprintf("read through n%d", ev.Node+1))
	}
	for _, fin := range finals {
		rows := fin.Rows.(map[int64]int64)
		who := fmt.Sprintf("the read-back at %v through n%d", fin.CL, fin.Node+1)
		for key := range byKey {
			v, found := rows[key]
			judge(key, found, v, fin.At, fin.End, who)
		}
	}
	return f.verdict(k.Name(), writes, reads)
}
