package cluster

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/lockedbuf"
	"github.com/kvnode/kvnode/internal/poll"
)

// TestMemberlistJunkLines: memberlist's lines about messages it could not accept are counted
// and logged at WARN at most once per interval, saying how many came since the last line;
// its other lines are logged as they were.
func TestMemberlistJunkLines(t *testing.T) {
	var buf bytes.Buffer
	w := newMemberlistLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return now }
	l := w.logger()
	junk := []string{
		`[ERR] memberlist: discarding packet with unacceptable label "": from=10.0.0.9:4000`,
		`[ERR] memberlist: discarding stream with unacceptable label "": from=10.0.0.9:4001`,
		`[ERR] memberlist: cannot decode label; packet has been truncated from=10.0.0.9:4000`,
		`[ERR] memberlist: Decrypt packet failed: no installed keys could decrypt the message from=10.0.0.9:4000`,
		`[ERR] memberlist: Failed to decode ping request: msgpack decode error from=10.0.0.9:4000`,
		`[ERR] memberlist: msg type (99) not supported from=10.0.0.9:4000`,
		`[WARN] memberlist: Got invalid checksum for UDP packet: 1, 2`,
		`[ERR] memberlist: failed to receive: read tcp: i/o timeout from=10.0.0.9:4001`,
	}
	for i := range 1000 {
		l.Print(junk[i%len(junk)])
		now = now.Add(10 * time.Millisecond) // 1000 in 10 s
	}
	if got := w.junk.Load(); got != 1000 {
		t.Errorf("1000 junk lines counted %d", got)
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 || !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "count=1 ") {
		t.Fatalf("1000 junk lines in 10 s logged %d lines, want 1 WARN with count=1:\n%s", n, buf.String())
	}
	now = now.Add(time.Minute)
	buf.Reset()
	l.Print(junk[0])
	if !strings.Contains(buf.String(), "count=1000 ") || !strings.Contains(buf.String(), `last="discarding packet with unacceptable label`) {
		t.Errorf("the line a minute later: %q, want count=1000 (999 not logged and this one) and the last message", buf.String())
	}
	// Lines that are not junk are logged as before.
	buf.Reset()
	l.Print("[ERR] memberlist: Conflicting address for n1. Mine: 10.0.0.1:7946 Theirs: 10.0.0.2:7946 Old state: 0")
	l.Print("[ERR] memberlist: Push/Pull with n2 failed: dial tcp: connection refused")
	if n := strings.Count(buf.String(), "level=ERROR"); n != 2 || w.junk.Load() != 1001 {
		t.Errorf("two other ERROR lines became %q (junk %d), want both logged at ERROR and not counted", buf.String(), w.junk.Load())
	}
}

// TestGossipJunkCounted sends 1,000 junk UDP packets and 20 junk TCP streams to a real member's
// gossip port: each is counted, the log has one line about them (not one per packet), and the
// members' own gossip counts as none.
func TestGossipJunkCounted(t *testing.T) {
	tc := newTestCluster(t)
	var logs lockedbuf.Buffer
	tc.logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	start := time.Now()
	a := tc.start()
	b := tc.start(a.GossipAddr())
	waitFor(t, 10*time.Second, allSeeAllLive(a, b))
	if got := a.JunkMessages(); got != 0 {
		t.Fatalf("a counted %d junk messages from its peer's gossip, want 0", got)
	}

	udp, err := net.Dial("udp", a.GossipAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	const packets = 1000
	for batch := 0; batch < packets; batch += 100 {
		for range 100 {
			p := make([]byte, 1+rng.IntN(200))
			for i := range p {
				p[i] = byte(rng.UintN(256))
			}
			if _, err := udp.Write(p); err != nil {
				t.Fatal(err)
			}
		}
		// In batches, so that the kernel's receive buffer never overflows and drops any.
		want := uint64(batch + 100)
		poll.Must(t, 20*time.Second, fmt.Sprintf("%d junk packets counted", want), poll.Bool(func() bool { return a.JunkMessages() >= want }))
	}
	const streams = 20
	for i := range streams {
		c, err := net.Dial("tcp", a.GossipAddr())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
		c.Close()
	}
	poll.Must(t, 20*time.Second, "the junk streams counted", poll.Bool(func() bool { return a.JunkMessages() >= packets+streams }))
	if got := a.JunkMessages(); got != packets+streams {
		t.Errorf("JunkMessages = %d, want %d", got, packets+streams)
	}
	out := logs.String()
	lines := strings.Count(out, "junk on the gossip port")
	if most := 1 + int(time.Since(start)/junkLogInterval); lines < 1 || lines > most {
		t.Errorf("%d log lines about %d junk messages, want 1 to %d (one per %v)", lines, packets+streams, most, junkLogInterval)
	}
	if n := strings.Count(out, "unacceptable label"); n > lines {
		t.Errorf("memberlist's own line per junk message was logged %d times:\n%.2000s", n, out)
	}
	// The members still gossip.
	waitFor(t, 10*time.Second, allSeeAllLive(a, b))
}
