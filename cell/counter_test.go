package cell

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// randomCounter returns a random version of a counter cell: mostly live
// shards of a few replicas, sometimes a deletion.
func randomCounter(r *rand.Rand) Cell {
	ts := r.Int64N(5)
	if r.IntN(8) == 0 {
		return Cell{Timestamp: ts, Tombstone: true, Counter: r.IntN(2) == 0}
	}
	var shards []Shard
	for _, id := range []string{"a", "b", "c", "d"} {
		if r.IntN(2) == 0 {
			clock := 1 + r.Int64N(4)
			// One leader never writes two values at one clock; the
			// value follows from the clock as it would.
			shards = append(shards, Shard{ID: id, Clock: clock, Value: clock * int64(len(id)) * 3})
		}
	}
	return CounterCell(ts, shards...)
}

func sameCell(a, b Cell) bool {
	return a.Timestamp == b.Timestamp && a.Tombstone == b.Tombstone && a.Counter == b.Counter && bytes.Equal(a.Value, b.Value)
}

func TestMergeCountersProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		a, b, c := randomCounter(r), randomCounter(r), randomCounter(r)
		if ab, ba := Merge(a, b), Merge(b, a); !sameCell(ab, ba) {
			t.Fatalf("Merge(%v, %v) = %v, but Merge(%v, %v) = %v: not commutative", a, b, ab, b, a, ba)
		}
		if l, rr := Merge(Merge(a, b), c), Merge(a, Merge(b, c)); !sameCell(l, rr) {
			t.Fatalf("Merge(Merge(%v, %v), %v) = %v, Merge(%v, Merge(%v, %v)) = %v: not associative", a, b, c, l, a, b, c, rr)
		}
		if aa := Merge(a, a); !sameCell(aa, a) {
			t.Fatalf("Merge(%v, %v) = %v: not idempotent", a, a, aa)
		}
		m := Merge(a, b)
		if Wins(a, m) || Wins(b, m) {
			t.Fatalf("Wins(part, Merge(%v, %v) = %v) = true: the merge lacks part of its inputs", a, b, m)
		}
		if !sameCell(Merge(m, a), m) {
			t.Fatalf("merging %v into %v again changed it", a, m)
		}
	}
}

func TestMergeCountersSumsNewestShards(t *testing.T) {
	a := CounterCell(10, Shard{"n1", 3, 30}, Shard{"n2", 1, -5})
	b := CounterCell(12, Shard{"n1", 2, 20}, Shard{"n3", 4, 7})
	m := Merge(a, b)
	got, err := CounterValue(m)
	if err != nil || got != 32 || m.Timestamp != 12 || !m.Counter {
		t.Fatalf("Merge(%v, %v) = %v value %d (err %v), want value 32 (30 - 5 + 7) at 12", a, b, m, got, err)
	}
	if s, ok, _ := ShardOf(m, "n1"); !ok || s.Clock != 3 || s.Value != 30 {
		t.Errorf("ShardOf(merged, n1) = %+v, %v; want clock 3 value 30", s, ok)
	}
	if _, ok, _ := ShardOf(m, "n9"); ok {
		t.Errorf("ShardOf(merged, n9) found a shard that no replica wrote")
	}
}

func TestMergeCountersDeletionWins(t *testing.T) {
	live := CounterCell(100, Shard{"n1", 1, 1})
	del := Cell{Timestamp: 5, Tombstone: true}
	for _, m := range []Cell{Merge(live, del), Merge(del, live)} {
		if !m.Tombstone || m.Timestamp != 5 {
			t.Errorf("a live counter at 100 merged with a deletion at 5 = %v, want the deletion: a deleted counter stays deleted", m)
		}
	}
	if !Wins(del, live) || Wins(live, del) {
		t.Errorf("Wins(deletion, live) = %v, Wins(live, deletion) = %v; want true, false", Wins(del, live), Wins(live, del))
	}
}

func TestShardsEncoding(t *testing.T) {
	in := []Shard{{"a", 1, -1}, {"bb", 1 << 40, 1 << 62}}
	out, err := DecodeShards(AppendShards(nil, in))
	if err != nil || len(out) != 2 || out[0] != in[0] || out[1] != in[1] {
		t.Fatalf("DecodeShards(AppendShards(%v)) = %v, %v", in, out, err)
	}
	for _, bad := range [][]byte{
		{0},
		{1, 'a', 0},
		AppendShards(nil, []Shard{{"b", 1, 1}, {"a", 1, 1}}),
		AppendShards(nil, []Shard{{"a", 1, 1}, {"a", 2, 1}}),
	} {
		if _, err := DecodeShards(bad); err == nil {
			t.Errorf("DecodeShards(%x) = nil error, want ErrBadShards", bad)
		}
	}
	// A malformed value loses to a good one in either order.
	good := CounterCell(1, Shard{"a", 1, 1})
	bad := Cell{Timestamp: 9, Counter: true, Value: []byte{0}}
	if m := Merge(bad, good); !sameCell(m, good) || !sameCell(Merge(good, bad), good) {
		t.Errorf("Merge(malformed, %v) = %v, want the well-formed cell", good, m)
	}
	if err := CheckShard(Shard{ID: "", Clock: 1}); err == nil {
		t.Errorf("CheckShard(empty id) = nil, want an error")
	}
	if err := CheckShard(Shard{ID: "n", Clock: 0}); err == nil {
		t.Errorf("CheckShard(clock 0) = nil, want an error")
	}
}

func TestFoldShardsIsMergeShards(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		a, b := randomCounter(r), randomCounter(r)
		if a.Tombstone || b.Tombstone {
			continue
		}
		as, _ := DecodeShards(a.Value)
		bs, _ := DecodeShards(b.Value)
		folded, err := FoldShards(append([]Shard(nil), as...), b.Value)
		if err != nil || !bytes.Equal(AppendShards(nil, folded), AppendShards(nil, MergeShards(as, bs))) {
			t.Fatalf("FoldShards(%v, %v) = %v, %v; want MergeShards' %v", as, bs, folded, err, MergeShards(as, bs))
		}
	}
	if _, err := FoldShards(nil, []byte{3, 'a'}); err == nil {
		t.Errorf("FoldShards of a malformed encoding = nil error")
	}
}
