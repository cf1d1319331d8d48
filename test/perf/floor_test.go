package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cqlwire"
)

// TestMain lets the test binary be the floor server too: the floor part of a run inside the
// tests (TestQuickRun, TestFloorPart) re-executes the running binary with floorServerArg.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == floorServerArg {
		if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "perf:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// lineWriter hands each write to a test through lines.
type lineWriter struct{ lines chan string }

func (w lineWriter) Write(b []byte) (int, error) {
	w.lines <- string(b)
	return len(b), nil
}

// TestFloorServerAnswersStartupAndOptions checks the floor server's answers: READY to STARTUP,
// the SUPPORTED kvnode lists to OPTIONS on the request's stream, pipelined frames answered in
// order, and that it stops with its context.
func TestFloorServerAnswersStartupAndOptions(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := lineWriter{lines: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- serveFloor(ctx, out) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveFloor returned %v after its context ended, want nil", err)
		}
	}()
	addr := strings.TrimSpace(<-out.lines)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	var req []byte
	req = cqlwire.AppendFrame(req, 3, &cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}, cqlwire.FrameOptions{})
	for i := range 4 {
		req = cqlwire.AppendFrame(req, int16(10+i), cqlwire.Options{}, cqlwire.FrameOptions{})
	}
	if _, err := nc.Write(req); err != nil {
		t.Fatal(err)
	}
	fr := cqlwire.NewFrameReader(bufio.NewReader(nc), cqlwire.ReaderOptions{Responses: true})
	h, _, err := fr.ReadFrame()
	if err != nil || h.Opcode != cqlwire.OpReady || h.Stream != 3 {
		t.Fatalf("STARTUP on stream 3 answered %v on stream %d (%v), want READY on 3", h.Opcode, h.Stream, err)
	}
	want := floorSupported().AppendBody(nil)
	for i := range 4 {
		h, body, err := fr.ReadFrame()
		if err != nil || h.Opcode != cqlwire.OpSupported || h.Stream != int16(10+i) || !bytes.Equal(body, want) {
			t.Fatalf("OPTIONS on stream %d answered %v on stream %d (%v), want kvnode's SUPPORTED", 10+i, h.Opcode, h.Stream, err)
		}
	}
}

// TestFloorTargets checks that the floor part's ratios come out as the JSON headline fields
// and are judged against the targets.
func TestFloorTargets(t *testing.T) {
	r := &Result{Settings: settings{Parts: []string{"floor"}}, Floor: &floorResult{
		CPUUS: map[string]float64{"kvnode": 6, "floor": 4}, CPUUSPipelined: map[string]float64{"kvnode": 0.5, "floor": 0.4},
		Over: 1.5, OverPipelined: 1.25}}
	r.headline()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["native_noop_over_floor"] != 1.5 || m["native_noop_over_floor_pipelined"] != 1.25 {
		t.Errorf("JSON native_noop_over_floor %v, _pipelined %v; want 1.5 and 1.25", m["native_noop_over_floor"], m["native_noop_over_floor_pipelined"])
	}
	if len(r.Targets) != 2 || !r.Targets[0].Met || r.Targets[1].Met {
		t.Errorf("targets %+v; want two, the first (1.5 ≤ 1.5) met and the second (1.25 > 1.2) not", r.Targets)
	}
}

// TestLeanOptionsAgainstTheFloorServer checks the floor part's open-loop mode: a lean
// connection offering OPTIONS at a fixed rate to the floor server, every one answered SUPPORTED
// and counted accepted.
func TestLeanOptionsAgainstTheFloorServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := lineWriter{lines: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- serveFloor(ctx, out) }()
	defer func() {
		cancel()
		<-done
	}()
	addr := strings.TrimSpace(<-out.lines)
	lh, err := openLeanOptions(ctx, addr, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer lh.Close()
	sum, err := lh.run(ctx, 5000, 200*time.Millisecond, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Offered != 1000 || sum.Accepted != sum.Offered || sum.Failed() != 0 {
		t.Errorf("offered %d, accepted %d, errors %v; want 1000 offered (5,000/s for 200 ms), all accepted", sum.Offered, sum.Accepted, sum.Errors)
	}
	if w := lh.conns[0].writes; w == 0 || w > 500 {
		t.Errorf("%d writes for 1000 OPTIONS in 1-ms windows, want at least 1 and at most 500", w)
	}
}
