package cluster

import (
	"bytes"
	"log"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// junkLogInterval spaces the log lines about junk on the gossip port.
const junkLogInterval = time.Minute

// junkMessages are how memberlist (v0.7.0, net.go, net_transport.go and label.go) begins its log
// line about an inbound UDP packet or TCP stream it could not accept: one that does not decode,
// carries another cluster's label (kvnode labels gossip with the cluster name), fails
// decryption or its checksum. Each is logged once per message at ERROR (a few at WARN): junk
// sent to the gossip port would write a line per packet.
var junkMessages = [][]byte{
	[]byte("failed to receive and remove the stream label header"),
	[]byte("unexpected double stream label header"),
	[]byte("discarding stream with unacceptable label"),
	[]byte("failed to receive: "),
	[]byte("Failed to receive user message"),
	[]byte("Failed to read remote state"),
	[]byte("Received invalid msgType"),
	[]byte("unexpected double packet label header"),
	[]byte("discarding packet with unacceptable label"),
	[]byte("cannot decode label"),
	[]byte("label header cannot be empty"),
	[]byte("Decrypt packet failed"),
	[]byte("Got invalid checksum for UDP packet"),
	[]byte("missing message type byte"),
	[]byte("msg type ("),     // "msg type (%d) not supported"
	[]byte("Message type ("), // "Message type (%d) not supported ... (packet handler)"
	[]byte("Failed to decode "),
	[]byte("Compound request had"),
	[]byte("Failed to decompress payload"),
	[]byte("UDP packet too short"),
}

// isJunk reports whether msg (a memberlist line without its level and prefix) is about an
// inbound message memberlist could not accept.
func isJunk(msg []byte) bool {
	for _, j := range junkMessages {
		if bytes.HasPrefix(msg, j) {
			return true
		}
	}
	return false
}

// memberlistLog is memberlist's log: its lines about junk on the gossip port become a count
// (Cluster.JunkMessages) and at most one WARN line per junkLogInterval, which says how many
// arrived since the last; every other line goes to slog as slogWriter maps it.
type memberlistLog struct {
	out      slogWriter
	now      func() time.Time
	interval time.Duration
	junk     atomic.Uint64

	mu       sync.Mutex
	logged   time.Time // when the last junk line was written; zero for never
	unlogged uint64    // junk messages since then
}

func newMemberlistLog(l *slog.Logger) *memberlistLog {
	return &memberlistLog{out: slogWriter{l.With("component", "memberlist")}, now: time.Now, interval: junkLogInterval}
}

// logger returns the *log.Logger memberlist writes to.
func (w *memberlistLog) logger() *log.Logger { return log.New(w, "", 0) }

func (w *memberlistLog) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	for _, tag := range [][]byte{[]byte("[ERR] memberlist: "), []byte("[WARN] memberlist: ")} {
		if msg, ok := bytes.CutPrefix(line, tag); ok && isJunk(msg) {
			w.junkLine(msg)
			return len(p), nil
		}
	}
	return w.out.Write(p)
}

// junkLine counts a junk message and logs it when the last junk line is junkLogInterval old.
func (w *memberlistLog) junkLine(line []byte) {
	w.junk.Add(1)
	now := w.now()
	w.mu.Lock()
	w.unlogged++
	if !w.logged.IsZero() && now.Sub(w.logged) < w.interval && !now.Before(w.logged) {
		w.mu.Unlock()
		return
	}
	n := w.unlogged
	w.logged, w.unlogged = now, 0
	w.mu.Unlock()
	w.out.log.Warn("junk on the gossip port: dropped messages that are not this cluster's gossip (another cluster's, unencrypted or under another key, or not memberlist at all); one such line a minute at most, counting those since the last",
		"count", n, "last", string(line))
}

// JunkMessages returns how many inbound gossip packets and streams memberlist dropped because
// they were not this cluster's gossip: undecodable, another cluster's label, a failed
// decryption or checksum.
func (c *Cluster) JunkMessages() uint64 { return c.mlog.junk.Load() }
