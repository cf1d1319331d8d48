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
// writes the hot partition's key, and counts every answer once: accepted ones by the second,
// rejections by who rejected.
func TestLeanHotCountsEveryOperation(t *testing.T) {
	a, b := startFakeHotServer(t), startFakeHotServer(t)
	ctx := context.Background()
	lh, err := openLeanHot(ctx, []string{a.ln.Addr().String(), b.ln.Addr().String()}, "INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?)", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer lh.Close()
	sum, err := lh.run(ctx, 1000, 300*time.Millisecond, 2)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Offered != 300 {
		t.Errorf("offered %d, want 300 (1000/s for 300 ms)", sum.Offered)
	}
	if sum.Failed() != 0 {
		t.Errorf("errors %v, want none", sum.Errors)
	}
	if got := sum.Accepted + sum.Rejected(); got != sum.Offered {
		t.Errorf("accepted %d + rejected %d = %d, want every offered operation (%d)", sum.Accepted, sum.Rejected(), got, sum.Offered)
	}
	if sum.Accepted != 100 || sum.RejectedByCoordinator == 0 || sum.RejectedByReplicas == 0 {
		t.Errorf("accepted %d, rejected by coordinator %d, by replicas %d; want 100 (every third per server) and rejections of both kinds",
			sum.Accepted, sum.RejectedByCoordinator, sum.RejectedByReplicas)
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
		if n := s.keys[bench.HotTextKey]; n != 150 || len(s.keys) != 1 {
			t.Errorf("a server got the keys %v, want %q 150 times (the nodes in turn)", s.keys, bench.HotTextKey)
		}
		s.mu.Unlock()
	}
}
