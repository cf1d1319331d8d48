package cluster

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

func TestClockPayloadRoundTrip(t *testing.T) {
	now := time.Unix(1_700_000_000, 123_456_789)
	b := encodeClockPayload(now)
	if len(b) != clockPayloadSize {
		t.Fatalf("encodeClockPayload returned %d bytes, want %d", len(b), clockPayloadSize)
	}
	if ns, err := decodeClockPayload(b); err != nil || ns != now.UnixNano() {
		t.Fatalf("decodeClockPayload(encodeClockPayload(%v)) = %d, %v; want %d", now, ns, err, now.UnixNano())
	}
}

func TestClockPayloadRejectsGarbage(t *testing.T) {
	good := encodeClockPayload(time.Unix(1_700_000_000, 0))
	tests := []struct {
		name    string
		payload []byte
	}{
		{"absent (a peer without clock gossip)", nil},
		{"empty", []byte{}},
		{"version 0", append([]byte{0}, good[1:]...)},
		{"version 2", append([]byte{2}, good[1:]...)},
		{"truncated", good[:clockPayloadSize-1]},
		{"version byte only", good[:1]},
		{"a trailing byte", append(append([]byte{}, good...), 0)},
		{"oversized", append(append([]byte{}, good...), make([]byte, 1<<16)...)},
		{"zero time", []byte{clockPayloadVersion, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"negative time", []byte{clockPayloadVersion, 0x80, 0, 0, 0, 0, 0, 0, 0}},
		{"minus one", []byte{clockPayloadVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, tt := range tests {
		if ns, err := decodeClockPayload(tt.payload); err == nil {
			t.Errorf("decodeClockPayload(%s) = %d, nil; want an error", tt.name, ns)
		}
	}
	// Random bytes never panic, and whatever they decode to is a positive time.
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		b := make([]byte, r.IntN(2*clockPayloadSize))
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		if r.IntN(2) == 0 && len(b) > 0 {
			b[0] = clockPayloadVersion
		}
		if ns, err := decodeClockPayload(b); err == nil && (ns <= 0 || len(b) != clockPayloadSize) {
			t.Fatalf("decodeClockPayload(%x) = %d, nil; want an error", b, ns)
		}
	}
}

func FuzzDecodeClockPayload(f *testing.F) {
	f.Add(encodeClockPayload(time.Unix(1_700_000_000, 0)))
	f.Add([]byte{})
	f.Add([]byte{clockPayloadVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		ns, err := decodeClockPayload(b)
		if err == nil && (ns <= 0 || len(b) != clockPayloadSize) {
			t.Fatalf("decodeClockPayload(%x) = %d, nil; want an error", b, ns)
		}
	})
}

func TestClockSample(t *testing.T) {
	const local = int64(1_700_000_000_000_000_000)
	tests := []struct {
		remote int64
		rtt    time.Duration
		want   time.Duration
		ok     bool
	}{
		{local, 0, 0, true},
		{local + int64(2*time.Second), 4 * time.Millisecond, 2*time.Second + 2*time.Millisecond, true},
		{local - int64(time.Second), 0, -time.Second, true},
		{math.MaxInt64, maxClockRTT, time.Duration(math.MaxInt64-local) + maxClockRTT/2, true},
		{1, 0, time.Duration(1 - local), true},
		{local, -time.Nanosecond, 0, false},
		{local, maxClockRTT + 1, 0, false},
		{local, math.MaxInt64, 0, false},
		{0, 0, 0, false},
		{-1, 0, 0, false},
	}
	for _, tt := range tests {
		got, ok := clockSample(local, tt.remote, tt.rtt)
		if got != tt.want || ok != tt.ok {
			t.Errorf("clockSample(local, remote=%d, rtt=%v) = %v, %v; want %v, %v", tt.remote, tt.rtt, got, ok, tt.want, tt.ok)
		}
	}
}

func TestOffsetWindowIsTheMedianOfRecentSamples(t *testing.T) {
	var w offsetWindow
	w.add(2*time.Second, time.Millisecond)
	if off, rtt := w.estimate(); off != 2*time.Second || rtt != time.Millisecond {
		t.Fatalf("one sample: estimate %v, %v; want 2s, 1ms", off, rtt)
	}
	w.add(3*time.Second, 3*time.Millisecond)
	if off, _ := w.estimate(); off != 2500*time.Millisecond {
		t.Fatalf("samples 2s, 3s: estimate %v, want their mean 2.5s", off)
	}
	// One ack delayed in a queue reads far off; the median does not follow it.
	for range 5 {
		w.add(2*time.Second, time.Millisecond)
	}
	w.add(-40*time.Second, 900*time.Millisecond)
	if off, rtt := w.estimate(); off != 2*time.Second || rtt != time.Millisecond || w.n != clockWindow {
		t.Fatalf("7 good samples and a delayed one: estimate %v, %v over %d samples; want 2s, 1ms over %d", off, rtt, w.n, clockWindow)
	}
	// A clock that was stepped (NTP fixed it) is followed within a window.
	for range clockWindow/2 + 1 {
		w.add(0, time.Millisecond)
	}
	if off, _ := w.estimate(); off != 0 {
		t.Fatalf("after %d samples at 0: estimate %v, want 0", clockWindow/2+1, off)
	}
}

// startWithClock starts a node whose clock runs skew ahead of the real one.
func (tc *testCluster) startWithClock(skew time.Duration, seeds ...string) *testNode {
	tc.t.Helper()
	cfg := tc.config(tc.t.TempDir(), newFakeSchema(), seeds...)
	cfg.Now = func() time.Time { return time.Now().Add(skew) }
	c, err := Start(context.Background(), cfg)
	if err != nil {
		tc.t.Fatalf("Start with a clock %v ahead: %v", skew, err)
	}
	tc.t.Cleanup(func() { c.Close() })
	return &testNode{Cluster: c, dir: cfg.DataDir, schema: cfg.Schema.(*fakeSchema)}
}

// offsetsNear returns "" when n estimates each peer's clock offset within tol of want, from at
// least min samples, and lists no other peer.
func offsetsNear(n *testNode, want map[NodeID]time.Duration, tol time.Duration, minSamples int) func() string {
	return func() string {
		got := n.ClockOffsets()
		if len(got) != len(want) {
			return fmt.Sprintf("node %s has clock offsets %+v, want one for each of %v", n.LocalID(), got, want)
		}
		for _, o := range got {
			w, ok := want[o.ID]
			if !ok || o.Samples < minSamples || (o.Offset-w).Abs() > tol {
				return fmt.Sprintf("node %s estimates %s's clock offset %v from %d samples, want %v ± %v from at least %d", n.LocalID(), o.ID, o.Offset, o.Samples, w, tol, minSamples)
			}
		}
		return ""
	}
}

// TestClockOffsetsMeasureASkewedPeer runs three real nodes on loopback, one of them with a clock
// 2 s ahead, and checks what each measures of the others.
func TestClockOffsetsMeasureASkewedPeer(t *testing.T) {
	tc := newTestCluster(t)
	a := tc.start()
	b := tc.start(a.GossipAddr())
	c := tc.startWithClock(2*time.Second, a.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(a, b, c))

	// The tolerance covers scheduling delays on a loaded machine; loopback round trips are
	// microseconds.
	const skew, tol = 2 * time.Second, 250 * time.Millisecond
	waitFor(t, 20*time.Second, offsetsNear(a, map[NodeID]time.Duration{b.LocalID(): 0, c.LocalID(): skew}, tol, 3))
	waitFor(t, 20*time.Second, offsetsNear(b, map[NodeID]time.Duration{a.LocalID(): 0, c.LocalID(): skew}, tol, 3))
	waitFor(t, 20*time.Second, offsetsNear(c, map[NodeID]time.Duration{a.LocalID(): -skew, b.LocalID(): -skew}, tol, 3))
	for _, n := range []*testNode{a, b, c} {
		t.Logf("node %s measures %+v", n.LocalID(), n.ClockOffsets())
	}

	// A peer that goes down leaves the estimates at once.
	c.crash()
	waitFor(t, 10*time.Second, seesDown(c.LocalID(), a, b))
	for _, n := range []*testNode{a, b} {
		for _, o := range n.ClockOffsets() {
			if o.ID == c.LocalID() {
				t.Errorf("node %s still reports the clock offset of %s, which is down: %+v", n.LocalID(), o.ID, o)
			}
		}
	}
}

// TestPingDelegateIgnoresBadAcks feeds the ping delegate of a real node acks a peer could send:
// garbage, none, and acks from nodes it does not know. None is recorded and none panics.
func TestPingDelegateIgnoresBadAcks(t *testing.T) {
	tc := newTestCluster(t)
	a := tc.start()
	b := tc.start(a.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(a, b))
	// Stop a's own probes from adding samples of b: b leaves, and the acks below name it
	// and a stranger.
	b.Close()
	waitFor(t, 10*time.Second, seesDown(b.LocalID(), a))
	p := pingDelegate{a.Cluster}
	good := encodeClockPayload(time.Now())
	for _, ack := range []struct {
		name    string
		peer    string
		rtt     time.Duration
		payload []byte
	}{
		{"no payload", string(b.LocalID()), time.Millisecond, nil},
		{"garbage", string(b.LocalID()), time.Millisecond, []byte("not a clock at all")},
		{"a down peer", string(b.LocalID()), time.Millisecond, good},
		{"an unknown node", "stranger", time.Millisecond, good},
		{"itself", string(a.LocalID()), time.Millisecond, good},
	} {
		p.NotifyPingComplete(&memberlist.Node{Name: ack.peer}, ack.rtt, ack.payload)
		a.clockMu.Lock()
		n := len(a.clocks)
		a.clockMu.Unlock()
		if n != 0 || len(a.ClockOffsets()) != 0 {
			t.Errorf("after an ack with %s: %d peers' clocks recorded (%+v), want none", ack.name, n, a.ClockOffsets())
		}
	}
	if got := p.AckPayload(); len(got) != clockPayloadSize {
		t.Errorf("AckPayload is %d bytes, want %d", len(got), clockPayloadSize)
	}
}
