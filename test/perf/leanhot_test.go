package main

import (
	"bufio"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/tool/bench"
)

// fakeHotServer is a native-protocol server that answers STARTUP, PREPARE and EXECUTE: every
// third EXECUTE is accepted, the others rejected by the rate limiter (the first of each three
// by the coordinator, the second by replicas). It records the EXECUTEs' partition keys.
type fakeHotServer struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	keys map[string]int
}

func startFakeHotServer(t *testing.T) *fakeHotServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeHotServer{ln: ln, keys: map[string]int{}}
	s.wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.serve(nc) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *fakeHotServer) serve(nc net.Conn) {
	defer nc.Close()
	fr := cqlwire.NewFrameReader(bufio.NewReader(nc), cqlwire.ReaderOptions{})
	n := 0
	for {
		h, body, err := fr.ReadFrame()
		if err != nil {
			return
		}
		f, err := cqlwire.DecodeFrame(h, body)
		if err != nil {
			return
		}
		var answer cqlwire.Message
		switch m := f.Message.(type) {
		case *cqlwire.Startup:
			answer = cqlwire.Ready{}
		case *cqlwire.Prepare:
			answer = &cqlwire.PreparedResult{ID: []byte("id")}
		case *cqlwire.Execute:
			s.mu.Lock()
			s.keys[string(m.Params.Values[0].Bytes)]++
			s.mu.Unlock()
			n++
			if n%3 == 0 {
				answer = cqlwire.VoidResult{}
			} else {
				answer = &cqlwire.Error{Code: cqlwire.ErrRateLimit, Message: "rate limit exceeded", RateLimitOp: cqlwire.RateLimitWrite,
					RejectedByCoordinator: n%3 == 1}
			}
		default:
			return
		}
		if _, err := nc.Write(cqlwire.AppendFrame(nil, h.Stream, answer, cqlwire.FrameOptions{})); err != nil {
			return
		}
	}
}

// TestLeanHotCountsEveryOperation checks that the lean hot client offers the rate it is given,
// writes the hot partition's key, counts every answer once (accepted ones by the second,
// rejections by who rejected), and writes each frame alone without a coalescing window and
// many to a write with one.
func TestLeanHotCountsEveryOperation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rate     float64
		coalesce time.Duration
	}{
		{"a write per frame", 1000, 0},
		// Each connection is due a frame every 100 µs: about ten to a 1-ms window, and more
		// when the scheduler runs late.
		{"coalesced", 20_000, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := startFakeHotServer(t), startFakeHotServer(t)
			ctx := context.Background()
			lh, err := openLeanHot(ctx, []string{a.ln.Addr().String(), b.ln.Addr().String()}, "INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?)", tc.coalesce, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer lh.Close()
			sum, err := lh.run(ctx, tc.rate, 300*time.Millisecond, 2)
			if err != nil {
				t.Fatal(err)
			}
			offered := int64(tc.rate * 0.3)
			perServer := offered / 2
			if sum.Offered != offered {
				t.Errorf("offered %d, want %d (%v/s for 300 ms)", sum.Offered, offered, tc.rate)
			}
			if sum.Failed() != 0 {
				t.Errorf("errors %v, want none", sum.Errors)
			}
			if got := sum.Accepted + sum.Rejected(); got != sum.Offered {
				t.Errorf("accepted %d + rejected %d = %d, want every offered operation (%d)", sum.Accepted, sum.Rejected(), got, sum.Offered)
			}
			if sum.Accepted != offered/3 || sum.RejectedByCoordinator == 0 || sum.RejectedByReplicas == 0 {
				t.Errorf("accepted %d, rejected by coordinator %d, by replicas %d; want %d (every third per server) and rejections of both kinds",
					sum.Accepted, sum.RejectedByCoordinator, sum.RejectedByReplicas, offered/3)
			}
			var perSecond int64
			for _, n := range sum.Hot.AcceptedPerSecond {
				perSecond += n
			}
			if perSecond != sum.Accepted || sum.Hot.Accepted != sum.Accepted || sum.Hot.Rejected != sum.Rejected() {
				t.Errorf("hot: %+v, want every operation hot and the seconds summing to %d", sum.Hot, sum.Accepted)
			}
			for _, s := range []*fakeHotServer{a, b} {
				s.mu.Lock()
				if n := s.keys[bench.HotTextKey]; int64(n) != perServer || len(s.keys) != 1 {
					t.Errorf("a server got the keys %v, want %q %d times (the nodes in turn)", s.keys, bench.HotTextKey, perServer)
				}
				s.mu.Unlock()
			}
			for i, lc := range lh.conns {
				switch {
				case tc.coalesce == 0 && int64(lc.writes) != perServer:
					t.Errorf("connection %d: %d writes for %d frames, want one each", i, lc.writes, perServer)
				case tc.coalesce > 0 && int64(lc.writes) > perServer/4:
					t.Errorf("connection %d: %d writes for %d frames, want at most a quarter as many (coalesced)", i, lc.writes, perServer)
				}
			}
		})
	}
}
