package replica

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestHotSetKeepsTheHottestPartitions(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var h hotSet
	// HotK partitions with counters 101..100+HotK, then a hotter one and a colder one.
	for i := range HotK {
		h.update(int64(i), uint32(101+i), noRejection, nil, now)
	}
	h.update(1000, 500, byReplica, [][]byte{[]byte("hot")}, now)
	h.update(2000, 50, byReplica, [][]byte{[]byte("cold")}, now)
	got := map[int64]hotSnapshot{}
	for _, s := range h.snapshot(nil, now) {
		got[s.token] = s
	}
	if len(got) != HotK {
		t.Fatalf("the set holds %d partitions, want HotK = %d", len(got), HotK)
	}
	if _, ok := got[0]; ok {
		t.Errorf("token 0 (the smallest counter, 101) is still tracked, want it displaced by the hotter token 1000")
	}
	if s, ok := got[1000]; !ok || s.count != 500 || s.rejected[byReplica] != HotSample || string(s.key) != "hot" {
		t.Errorf("token 1000 = %+v (tracked %v), want count 500, one sampled replica rejection (%d), key \"hot\"", s, ok, HotSample)
	}
	if _, ok := got[2000]; ok {
		t.Errorf("token 2000 (counter 50, below every tracked one) entered the set")
	}
}

func TestHotSetDecaysAndCountsRejections(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var h hotSet
	// Eight sampled coordinator rejections and one replica rejection, each standing for
	// HotSample (4) operations.
	for range 8 {
		h.update(7, 300, byCoordinator, nil, now)
	}
	h.update(7, 301, byReplica, nil, now)
	h.update(7, 302, noRejection, [][]byte{[]byte("a"), []byte("b")}, now)
	tests := []struct {
		after             time.Duration
		count, coord, rep uint32
	}{
		{0, 302, 32, 4},
		{time.Second, 151, 16, 2},
		{3 * time.Second, 37, 4, 0},
		{40 * time.Second, 0, 0, 0},
	}
	for _, tt := range tests {
		snaps := h.snapshot(nil, now.Add(tt.after))
		if tt.count == 0 && tt.coord == 0 {
			if len(snaps) != 0 {
				t.Errorf("snapshot %v later = %+v, want nothing: every count has decayed to zero", tt.after, snaps)
			}
			continue
		}
		if len(snaps) != 1 {
			t.Fatalf("snapshot %v later has %d entries, want 1", tt.after, len(snaps))
		}
		s := snaps[0]
		if s.count != tt.count || s.rejected[byCoordinator] != tt.coord || s.rejected[byReplica] != tt.rep {
			t.Errorf("snapshot %v later: count %d, rejections %v; want count %d, coordinator %d, replica %d",
				tt.after, s.count, s.rejected, tt.count, tt.coord, tt.rep)
		}
		if want := "\x00\x01a\x00\x00\x01b\x00"; string(s.key) != want {
			t.Errorf("snapshot %v later: key %q, want the composite key %q", tt.after, s.key, want)
		}
	}
	// A snapshot does not decay the stored entry: the second is still as it was.
	if s := h.snapshot(nil, now); len(s) != 1 || s[0].count != 302 {
		t.Errorf("after later snapshots, the snapshot at the original second = %+v, want count 302", s)
	}
}

func TestHotSetReusesKeyBuffers(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var h hotSet
	for i := range HotK {
		h.update(int64(i), 1000, noRejection, [][]byte{[]byte(fmt.Sprintf("key-%02d", i))}, now)
	}
	// Each new partition displaces the coldest entry and reuses its key buffer.
	c := uint32(2000)
	pk := [][]byte{[]byte("key-xx")}
	allocs := testing.AllocsPerRun(100, func() {
		c++
		h.update(int64(c), c, byReplica, pk, now)
	})
	if allocs != 0 {
		t.Errorf("a partition entering a full set allocates %v times, want 0 (the displaced entry's key buffer is reused)", allocs)
	}
	allocs = testing.AllocsPerRun(100, func() { h.update(int64(c), c, byReplica, pk, now) })
	if allocs != 0 {
		t.Errorf("updating a tracked partition allocates %v times, want 0", allocs)
	}
}

func TestEstimateRate(t *testing.T) {
	sec := time.Unix(1_700_000_000, 0)
	tests := []struct {
		count uint32
		at    time.Duration // into the second
		want  float64
	}{
		{100, 0, 100},
		{150, 500 * time.Millisecond, 100},
		{199, 990 * time.Millisecond, 100},
		{0, 300 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		if got := EstimateRate(tt.count, sec.Add(tt.at)); math.Abs(got-tt.want) > 0.5 {
			t.Errorf("EstimateRate(%d, %v into the second) = %.2f, want %.0f", tt.count, tt.at, got, tt.want)
		}
	}
}

func TestSplitPartitionKey(t *testing.T) {
	tests := []struct {
		key  string
		n    int
		want []string
	}{
		{"abc", 1, []string{"abc"}},
		{"\x00\x01a\x00\x00\x02bc\x00", 2, []string{"a", "bc"}},
		{"\x00\x01a\x00", 2, []string{"\x00\x01a\x00"}},   // too few components: whole
		{"\x00\x05a\x00", 2, []string{"\x00\x05a\x00"}},   // truncated: whole
		{"\x00\x00\x00\x00\x00\x00", 2, []string{"", ""}}, // empty components
	}
	for _, tt := range tests {
		got := splitPartitionKey([]byte(tt.key), tt.n)
		var s []string
		for _, c := range got {
			s = append(s, string(c))
		}
		if fmt.Sprint(s) != fmt.Sprint(tt.want) || len(s) != len(tt.want) {
			t.Errorf("splitPartitionKey(%q, %d) = %q, want %q", tt.key, tt.n, s, tt.want)
		}
	}
}
