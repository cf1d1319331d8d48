package coordinator

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func TestBatcherDrainsInOrderAndSaturates(t *testing.T) {
	var b Batcher
	if b.Pending() || b.Drain(func(NodeID) bool { return true }) != nil {
		t.Fatal("a zero Batcher has something to drain")
	}
	b.Add([]NodeID{"n3", "n1"}, 2, 5, OpWrite)
	b.Add([]NodeID{"n1"}, 1, 9, OpRead)
	b.Add([]NodeID{"n1"}, 1, 9, OpRead)
	b.Add([]NodeID{"n2"}, 1, 1, OpWrite) // n2 is down when drained: dropped
	b.pending["n3"][deltaKey{2, 5, OpWrite}] = math.MaxUint32 - 1
	b.Add([]NodeID{"n3"}, 2, 5, OpWrite)
	b.Add([]NodeID{"n3"}, 2, 5, OpWrite) // saturates
	got := b.Drain(func(id NodeID) bool { return id != "n2" })
	want := []Batch{
		{To: "n1", Deltas: []Delta{{Table: 1, Token: 9, Op: OpRead, Count: 2}, {Table: 2, Token: 5, Op: OpWrite, Count: 1}}},
		{To: "n3", Deltas: []Delta{{Table: 2, Token: 5, Op: OpWrite, Count: math.MaxUint32}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Drain = %+v, want %+v", got, want)
	}
	if b.Pending() || b.Drain(func(NodeID) bool { return true }) != nil {
		t.Error("a drained Batcher still has deltas")
	}
}

// TestLearnedCopy: a learned count moves to LearnedTime, halved once if that crosses a second
// boundary, since the replicas' counter halves there too.
func TestLearnedCopy(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	cases := []struct {
		stamp time.Duration
		want  uint32
	}{
		{0, 1000},                       // 0.75 s: same second
		{200 * time.Millisecond, 1000},  // 0.95 s
		{250 * time.Millisecond, 500},   // 1.0 s: the next second
		{900 * time.Millisecond, 500},   // 1.65 s
		{-800 * time.Millisecond, 1000}, // -0.8 s → -0.05 s: same second
		{-300 * time.Millisecond, 500},  // -0.3 s → 0.45 s: past the boundary at 0
	}
	for _, c := range cases {
		l := Learned{Count: 1000, Residual: 100, Stamp: base.Add(c.stamp)}
		got, resid, at := l.Copy()
		if want := 100 * c.want / 1000; got != c.want || resid != want || !at.Equal(l.Stamp.Add(LearnedLead)) {
			t.Errorf("Learned{Count: 1000, Residual: 100, Stamp: t0%+v}.Copy() = %d, %d at t0%+v, want %d, %d at t0%+v",
				c.stamp, got, resid, at.Sub(base), c.want, want, (c.stamp + LearnedLead))
		}
	}
}
