package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cqlwire"
)

// floorServerArg is the hidden first argument that makes this program the floor server
// (serveFloor) instead of a perf run: the floor part re-executes itself with it.
const floorServerArg = "floor-server"

// floorSettings are the sizes of the floor part.
type floorSettings struct {
	Rounds  int `json:"rounds"`   // rounds of phases, the servers' order rotating by round
	PhaseMS int `json:"phase_ms"` // each measured phase, per server and mode
	WarmMS  int `json:"warm_ms"`  // unmeasured, before the rounds, per server and mode
	Depth   int `json:"pipelined_depth"`
	// OpenRate is the OPTIONS per second of the open-loop mode, on one connection coalesced
	// as the hot part's lean client writes (driverCoalesce): what each node gets of a hot
	// partition offered 13,800/s.
	OpenRate float64 `json:"open_rate"`
}

// floorMode is how the floor part sends OPTIONS: depth at a time in one write, each batch
// answered before the next, or open loop at Floor.OpenRate.
type floorMode struct {
	depth int
	open  bool
}

// floorSupported returns what the floor server answers OPTIONS with: the options kvnode lists
// (frontend/native's SUPPORTED), so that both write the same bytes.
func floorSupported() *cqlwire.Supported {
	return &cqlwire.Supported{Options: map[string][]string{
		"CQL_VERSION":             {"3.3.1"},
		"COMPRESSION":             {"lz4", "snappy"},
		"SCYLLA_RATE_LIMIT_ERROR": {fmt.Sprintf("ERROR_CODE=%d", cqlwire.ErrRateLimit)},
	}}
}

// serveFloor is the floor server: a minimal Go server of the native protocol, a goroutine per
// connection reading frames and answering STARTUP with READY and OPTIONS with SUPPORTED (any
// other request ends the connection), the answers to the frames read at once written
// together. It listens on a free loopback port, prints its address on out and serves until
// ctx ends.
func serveFloor(ctx context.Context, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	if _, err := fmt.Fprintln(out, ln.Addr().String()); err != nil {
		ln.Close()
		return err
	}
	supported := floorSupported().AppendBody(nil)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go floorConn(nc, supported)
	}
}

// floorConn serves one connection of the floor server until the client closes it.
func floorConn(nc net.Conn, supported []byte) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	fr := cqlwire.NewFrameReader(br, cqlwire.ReaderOptions{})
	var out []byte
	for {
		h, _, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch h.Opcode {
		case cqlwire.OpOptions:
			out = cqlwire.AppendFrame(out, h.Stream, rawBody{cqlwire.OpSupported, supported}, cqlwire.FrameOptions{})
		case cqlwire.OpStartup:
			out = cqlwire.AppendFrame(out, h.Stream, cqlwire.Ready{}, cqlwire.FrameOptions{})
		default:
			return
		}
		if br.Buffered() == 0 {
			if _, err := nc.Write(out); err != nil {
				return
			}
			out = out[:0]
		}
	}
}

// rawBody is a message whose body is encoded already.
type rawBody struct {
	op   cqlwire.Opcode
	body []byte
}

func (m rawBody) Opcode() cqlwire.Opcode       { return m.op }
func (m rawBody) AppendBody(dst []byte) []byte { return append(dst, m.body...) }

// floorServer is one server the floor part measures: its name, native address and process.
type floorServer struct {
	name string
	addr string
	pid  int
	idle float64 // CPU ns per second of wall time at rest
	conn net.Conn
	fr   *cqlwire.FrameReader
	lean *leanHot // the open-loop mode's connection
}

// floorPhase is one measured phase: a server, one request in flight, Depth pipelined or open
// loop.
type floorPhase struct {
	Round     int     `json:"round"`
	Server    string  `json:"server"` // "floor", "kvnode" or "parent"
	Pipelined bool    `json:"pipelined"`
	OpenLoop  bool    `json:"open_loop,omitempty"`
	Requests  int64   `json:"requests"`
	ElapsedS  float64 `json:"elapsed_s"`
	CPUNS     float64 `json:"cpu_ns_per_request"`
}

// floorResult is the floor part: OPTIONS on a started connection answered by a kvnode node
// and by the floor server, server CPU per request, per round and the medians.
type floorResult struct {
	Phases []floorPhase `json:"phases"`
	// Medians over rounds of CPU per request, in µs, by server.
	CPUUS          map[string]float64 `json:"cpu_us"`
	CPUUSPipelined map[string]float64 `json:"cpu_us_pipelined"`
	CPUUSOpenLoop  map[string]float64 `json:"cpu_us_open_loop"`
	// Medians over rounds of the per-round ratios.
	Over          float64 `json:"native_noop_over_floor"`
	OverPipelined float64 `json:"native_noop_over_floor_pipelined"`
	OverOpenLoop  float64 `json:"native_noop_over_floor_open_loop"`
	// The same for the parent kvnode binary (--parent-kvnode), and kvnode over it.
	ParentOver          float64 `json:"parent_noop_over_floor,omitempty"`
	ParentOverPipelined float64 `json:"parent_noop_over_floor_pipelined,omitempty"`
	OverParent          float64 `json:"native_noop_over_parent,omitempty"`
	OverParentPipelined float64 `json:"native_noop_over_parent_pipelined,omitempty"`
}

// floorPart measures the floor: one kvnode node (bin; and one of parentBin beside it when
// set) and the floor server (this program re-executed), each sent OPTIONS on one started
// connection by this process, one request in flight, then s.Floor.Depth pipelined, then open
// loop at s.Floor.OpenRate on a lean connection of its own, in rounds whose server order
// rotates; CPU from /proc, less each server's idle CPU.
func floorPart(ctx context.Context, s settings, bin, parentBin, root string, res *Result, log io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(fctx, self, floorServerArg)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("floor server: %w", err)
	}
	defer func() {
		cancel()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("floor server: reading its address: %w", err)
	}
	servers := []*floorServer{{name: "floor", addr: strings.TrimSpace(line), pid: cmd.Process.Pid}}
	run := func() error { return measureFloor(ctx, s, servers, res, log) }
	withNode := func(name, b string, next func() error) func() error {
		return func() error {
			return withCluster(ctx, b, root, "floor-"+name, 1, false, nil, log, func(c *testCluster) error {
				servers = append(servers, &floorServer{name: name, addr: c.cqlAddrs()[0], pid: c.servers[0].Proc().Pid()})
				return next()
			})
		}
	}
	if parentBin != "" {
		run = withNode("parent", parentBin, run)
	}
	return withNode("kvnode", bin, run)()
}

// measureFloor runs the floor part's rounds over servers.
func measureFloor(ctx context.Context, s settings, servers []*floorServer, res *Result, log io.Writer) error {
	fs := s.Floor
	modes := []floorMode{{depth: 1}, {depth: fs.Depth}, {open: true}}
	for _, sv := range servers {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", sv.addr)
		if err != nil {
			return fmt.Errorf("%s: %w", sv.name, err)
		}
		defer nc.Close()
		sv.conn, sv.fr = nc, cqlwire.NewFrameReader(bufio.NewReader(nc), cqlwire.ReaderOptions{Responses: true})
		startup := cqlwire.AppendFrame(nil, 0, &cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}, cqlwire.FrameOptions{})
		if _, err := nc.Write(startup); err != nil {
			return fmt.Errorf("%s: STARTUP: %w", sv.name, err)
		}
		h, _, err := sv.fr.ReadFrame()
		if err != nil || h.Opcode != cqlwire.OpReady {
			return fmt.Errorf("%s: STARTUP answered with %v (%v), want READY", sv.name, h.Opcode, err)
		}
		if sv.lean, err = openLeanOptions(ctx, sv.addr, driverCoalesce); err != nil {
			return fmt.Errorf("%s: %w", sv.name, err)
		}
		defer sv.lean.Close()
		for _, m := range modes {
			if _, _, err := sv.load(ctx, fs, m, time.Duration(fs.WarmMS)*time.Millisecond); err != nil {
				return fmt.Errorf("%s: %w", sv.name, err)
			}
		}
	}
	// Idle CPU, each server alone: the least of idleWindows windows.
	for _, sv := range servers {
		least := -1.0
		for range idleWindows {
			before, err := readCPU(sv.pid)
			if err != nil {
				return err
			}
			t := time.Now()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(s.Idle):
			}
			after, err := readCPU(sv.pid)
			if err != nil {
				return err
			}
			v := float64(after.Run-before.Run) / time.Since(t).Seconds()
			if least < 0 || v < least {
				least = v
			}
		}
		sv.idle = least
	}
	fr := &floorResult{CPUUS: map[string]float64{}, CPUUSPipelined: map[string]float64{}, CPUUSOpenLoop: map[string]float64{}}
	phase := time.Duration(fs.PhaseMS) * time.Millisecond
	for round := range fs.Rounds {
		for i := range servers {
			sv := servers[(i+round)%len(servers)]
			for _, m := range modes {
				before, err := readCPU(sv.pid)
				if err != nil {
					return err
				}
				n, elapsed, err := sv.load(ctx, fs, m, phase)
				if err != nil {
					return fmt.Errorf("%s: %w", sv.name, err)
				}
				after, err := readCPU(sv.pid)
				if err != nil {
					return err
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				used := float64(after.Run-before.Run) - sv.idle*elapsed.Seconds()
				fr.Phases = append(fr.Phases, floorPhase{Round: round, Server: sv.name, Pipelined: m.depth > 1, OpenLoop: m.open,
					Requests: n, ElapsedS: elapsed.Seconds(), CPUNS: ratio(used, float64(n))})
			}
		}
	}
	median := func(server, over string, m floorMode) float64 {
		var vs []float64
		for round := range fs.Rounds {
			a, b := fr.cpu(round, server, m), fr.cpu(round, over, m)
			if over == "" {
				vs = append(vs, a)
			} else if a > 0 && b > 0 {
				vs = append(vs, a/b)
			}
		}
		return median(vs)
	}
	for _, sv := range servers {
		fr.CPUUS[sv.name] = median(sv.name, "", modes[0]) / 1e3
		fr.CPUUSPipelined[sv.name] = median(sv.name, "", modes[1]) / 1e3
		fr.CPUUSOpenLoop[sv.name] = median(sv.name, "", modes[2]) / 1e3
	}
	fr.Over, fr.OverPipelined = median("kvnode", "floor", modes[0]), median("kvnode", "floor", modes[1])
	fr.OverOpenLoop = median("kvnode", "floor", modes[2])
	if len(servers) > 2 {
		fr.ParentOver, fr.ParentOverPipelined = median("parent", "floor", modes[0]), median("parent", "floor", modes[1])
		fr.OverParent, fr.OverParentPipelined = median("kvnode", "parent", modes[0]), median("kvnode", "parent", modes[1])
	}
	res.Floor = fr
	fmt.Fprintf(log, "perf: floor: OPTIONS, server CPU µs per request, one in flight %v, %d pipelined %v, open loop at %.0f/s %v; kvnode/floor %.2f, pipelined %.2f, open loop %.2f\n",
		fr.CPUUS, fs.Depth, fr.CPUUSPipelined, fs.OpenRate, fr.CPUUSOpenLoop, fr.Over, fr.OverPipelined, fr.OverOpenLoop)
	return nil
}

// cpu returns the CPU per request of server's phase of mode m in round (0 if none).
func (fr *floorResult) cpu(round int, server string, m floorMode) float64 {
	for _, p := range fr.Phases {
		if p.Round == round && p.Server == server && p.Pipelined == (m.depth > 1) && p.OpenLoop == m.open {
			return p.CPUNS
		}
	}
	return 0
}

// load sends OPTIONS to sv for d in mode m and returns how many were answered and the time
// taken.
func (sv *floorServer) load(ctx context.Context, fs floorSettings, m floorMode, d time.Duration) (int64, time.Duration, error) {
	if !m.open {
		return floorLoad(sv, m.depth, d)
	}
	start := time.Now()
	sum, err := sv.lean.run(ctx, fs.OpenRate, d, 1)
	if err != nil {
		return 0, 0, err
	}
	if sum.Accepted == 0 || sum.Accepted < sum.Offered*95/100 {
		return 0, 0, fmt.Errorf("open loop: %d of %d OPTIONS answered (errors %v)", sum.Accepted, sum.Offered, sum.Errors)
	}
	return sum.Accepted, time.Since(start), nil
}

// floorLoad sends OPTIONS to sv for d, depth at a time in one write, reading every answer
// before sending the next, and returns how many were answered and the time taken.
func floorLoad(sv *floorServer, depth int, d time.Duration) (int64, time.Duration, error) {
	var batch []byte
	for i := range depth {
		batch = cqlwire.AppendFrame(batch, int16(i+1), cqlwire.Options{}, cqlwire.FrameOptions{})
	}
	sv.conn.SetDeadline(time.Now().Add(d + 10*time.Second))
	start := time.Now()
	var n int64
	for time.Since(start) < d {
		if _, err := sv.conn.Write(batch); err != nil {
			return n, 0, err
		}
		for range depth {
			h, _, err := sv.fr.ReadFrame()
			if err != nil {
				return n, 0, err
			}
			if h.Opcode != cqlwire.OpSupported {
				return n, 0, fmt.Errorf("OPTIONS answered with %v, want SUPPORTED", h.Opcode)
			}
		}
		n += int64(depth)
	}
	if n == 0 {
		return 0, 0, errors.New("no OPTIONS answered")
	}
	return n, time.Since(start), nil
}

// The floor part's targets (issue 36).
const (
	targetFloor          = 1.5 // native_noop_over_floor
	targetFloorPipelined = 1.2 // native_noop_over_floor_pipelined
)

// targets lists issue 36's targets on the native front end's floor.
func (fr *floorResult) targets() []target {
	parent := func(over, overParent float64) string {
		if over == 0 {
			return ""
		}
		return fmt.Sprintf("; parent commit %.2f, this over parent %.2f", over, overParent)
	}
	return []target{
		{"native OPTIONS server CPU ≤ 1.5 × a minimal Go server's, one request in flight",
			fmt.Sprintf("%.2f (%.1f / %.1f µs%s)", fr.Over, fr.CPUUS["kvnode"], fr.CPUUS["floor"], parent(fr.ParentOver, fr.OverParent)),
			fr.Over > 0 && fr.Over <= targetFloor},
		{"native OPTIONS server CPU ≤ 1.2 × a minimal Go server's, 16 pipelined on one connection",
			fmt.Sprintf("%.2f (%.1f / %.1f µs%s)", fr.OverPipelined, fr.CPUUSPipelined["kvnode"], fr.CPUUSPipelined["floor"], parent(fr.ParentOverPipelined, fr.OverParentPipelined)),
			fr.OverPipelined > 0 && fr.OverPipelined <= targetFloorPipelined},
	}
}
