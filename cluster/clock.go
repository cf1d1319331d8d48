package cluster

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/memberlist"
)

// Clock offsets between nodes.
//
// Last-write-wins silently drops a write coordinated by a node whose clock is behind the clock
// of the node that coordinated the previous write to the same cell, and the rate limiter halves
// its counters at wall-clock second boundaries, so every node measures how far its peers' clocks
// are from its own. It rides on memberlist's failure detector: the answer (ack) to every direct
// probe carries the answering node's clock, and memberlist reports the probe's round trip. The
// ack was written about half a round trip before it arrived, so
//
//	offset ≈ remote − (local_now − rtt/2)
//
// with an error of at most about rtt/2 when the two directions are asymmetric (sub-millisecond
// on a LAN). A node keeps the last clockWindow samples per peer and reports their median, so a
// single ack that sat in a queue does not move the estimate. Indirect probes and probes over TCP
// carry no payload (memberlist's PingDelegate contract), and push/pull state exchanges are not
// used: their round trip is not visible to the delegate, so their error would be unbounded.

const (
	clockPayloadVersion = 1
	// clockPayloadSize is the ack payload's exact size: a version byte and the sender's clock in
	// nanoseconds since the Unix epoch, big endian.
	clockPayloadSize = 1 + 8
	// clockWindow is how many samples per peer the estimate is the median of. With memberlist's
	// LAN profile each peer of an n-node cluster is probed about every n seconds.
	clockWindow = 8
	// maxClockRTT bounds the round trip of a usable sample: its error is up to half of it.
	// memberlist's probe timeouts are far shorter, so only a broken report is refused.
	maxClockRTT = 10 * time.Second
)

// ClockOffset is the local node's estimate of one live peer's clock.
type ClockOffset struct {
	ID NodeID
	// Offset is how far the peer's clock is ahead of the local node's (negative: behind): the
	// median of the last samples.
	Offset time.Duration
	// RTT is the median round trip of the probes those samples came with; a sample's error is at
	// most about half its round trip.
	RTT time.Duration
	// Samples is how many samples the estimate is made of (at most 8).
	Samples int
}

// ClockOffsets returns the estimated clock offset of every live peer that has answered a direct
// probe, sorted by id. The local node is not included: its offset is zero by definition.
func (c *Cluster) ClockOffsets() []ClockOffset {
	live := *c.live.Load()
	c.clockMu.Lock()
	out := make([]ClockOffset, 0, len(c.clocks))
	for id, w := range c.clocks {
		if id == c.id || !live[id] || w.n == 0 {
			continue
		}
		offset, rtt := w.estimate()
		out = append(out, ClockOffset{ID: id, Offset: offset, RTT: rtt, Samples: w.n})
	}
	c.clockMu.Unlock()
	slices.SortFunc(out, func(a, b ClockOffset) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// forgetClock drops what is known of a peer's clock: it went down, and may come back with a
// corrected (or a different) clock.
func (c *Cluster) forgetClock(id NodeID) {
	c.clockMu.Lock()
	delete(c.clocks, id)
	c.clockMu.Unlock()
}

// recordClock adds one sample of peer id's clock.
func (c *Cluster) recordClock(id NodeID, offset, rtt time.Duration) {
	c.clockMu.Lock()
	defer c.clockMu.Unlock()
	w, ok := c.clocks[id]
	if !ok {
		w = &offsetWindow{}
		c.clocks[id] = w
	}
	w.add(offset, rtt)
}

// encodeClockPayload returns the ack payload carrying clock reading now.
func encodeClockPayload(now time.Time) []byte {
	b := make([]byte, clockPayloadSize)
	b[0] = clockPayloadVersion
	binary.BigEndian.PutUint64(b[1:], uint64(now.UnixNano()))
	return b
}

// decodeClockPayload returns the clock reading, in nanoseconds since the Unix epoch, of an ack
// payload. Anything but a well-formed payload of the current version with a positive reading is
// an error.
func decodeClockPayload(b []byte) (int64, error) {
	switch {
	case len(b) == 0:
		return 0, errors.New("no clock in the ack (a node without clock gossip)")
	case b[0] != clockPayloadVersion:
		return 0, fmt.Errorf("clock payload version %d, want %d", b[0], clockPayloadVersion)
	case len(b) != clockPayloadSize:
		return 0, fmt.Errorf("clock payload is %d bytes, want %d", len(b), clockPayloadSize)
	}
	ns := int64(binary.BigEndian.Uint64(b[1:]))
	if ns <= 0 {
		return 0, fmt.Errorf("clock payload reads %d ns since the epoch, want a positive time", ns)
	}
	return ns, nil
}

// offsetWindow holds the last clockWindow samples of one peer's clock offset.
type offsetWindow struct {
	offsets, rtts [clockWindow]time.Duration
	n, next       int
}

func (w *offsetWindow) add(offset, rtt time.Duration) {
	w.offsets[w.next], w.rtts[w.next] = offset, rtt
	w.next = (w.next + 1) % clockWindow
	w.n = min(w.n+1, clockWindow)
}

// estimate returns the median offset and the median round trip of the samples (n > 0).
func (w *offsetWindow) estimate() (offset, rtt time.Duration) {
	return median(w.offsets[:w.n]), median(w.rtts[:w.n])
}

// median returns the median of a non-empty set, the mean of the middle two for an even count.
func median(xs []time.Duration) time.Duration {
	s := make([]time.Duration, len(xs))
	copy(s, xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return s[m-1] + (s[m]-s[m-1])/2
}

// pingDelegate is memberlist's PingDelegate: it puts the local clock in every ack and turns the
// acks of the local node's probes into clock samples. It runs on memberlist's goroutines and
// never blocks.
type pingDelegate struct{ c *Cluster }

func (p pingDelegate) AckPayload() []byte { return encodeClockPayload(p.c.cfg.Now()) }

func (p pingDelegate) NotifyPingComplete(other *memberlist.Node, rtt time.Duration, payload []byte) {
	c := p.c
	local := c.cfg.Now().UnixNano()
	remote, err := decodeClockPayload(payload)
	if err != nil {
		c.log.Debug("ignoring a probe ack's clock", "peer", other.Name, "err", err)
		return
	}
	id := NodeID(other.Name)
	if id == c.id || !c.IsLive(id) {
		return
	}
	offset, ok := clockSample(local, remote, rtt)
	if !ok {
		c.log.Debug("ignoring a probe ack's clock", "peer", other.Name, "rtt", rtt)
		return
	}
	c.recordClock(id, offset, rtt)
}

// clockSample returns the offset of a remote clock that read remote (ns since the epoch, > 0)
// when the answer to a probe with round trip rtt arrived at local: the answer was written about
// rtt/2 earlier. It reports false for a round trip outside [0, maxClockRTT].
func clockSample(local, remote int64, rtt time.Duration) (time.Duration, bool) {
	if rtt < 0 || rtt > maxClockRTT || local <= 0 || remote <= 0 {
		return 0, false
	}
	// Both readings are positive, so the difference cannot overflow, and rtt/2 is small.
	return time.Duration(remote-local) + rtt/2, true
}
