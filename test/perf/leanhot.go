package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/tool/bench"
)

// Hot clients: how the native target's hot partition is written (--hot-client).
const (
	// hotClientLean writes the hot partition through leanHot: pre-encoded EXECUTE frames on
	// raw connections, a few µs of client CPU per write.
	hotClientLean = "lean"
	// hotClientGocql writes it through gocql, as the background is (13–24 µs per write).
	hotClientGocql = "gocql"
)

// driverCoalesce is the lean hot client's coalescing window by default: gocql's
// WriteCoalesceWaitTime, with which the background's driver writes.
var driverCoalesce = gocql.NewCluster().WriteCoalesceWaitTime

// leanStreams bounds a lean connection's requests in flight, as bench's Concurrency bounds a
// driver's: an operation due while every stream is taken is dropped (ErrorDropped).
const leanStreams = 128

// leanHot writes one partition over the native protocol at a fixed offered rate, with none of
// a driver's per-request work: one connection per node, the INSERT prepared once on each, one
// EXECUTE frame per clustering row encoded in advance (only its stream id is patched per
// request), written by the scheduling goroutine, and one reader goroutine per connection that
// classifies each answer from its opcode and error code. On the wire it is a driver: the
// frames due on a connection within a coalescing window of the first go out in one write
// system call at the window's end, as gocql's write coalescer sends them (its
// WriteCoalesceWaitTime, 200 µs by default); a window of 0 writes each frame alone. The
// hot partition is a bug's or a bot's load, whose client runs elsewhere; on this machine the
// load generator shares the cores with the servers, and a driver's client CPU per rejected
// write (more than the server's) would be charged to the limiter. Requests go to the nodes in
// turn; with RF=3 on 3 nodes every node is a replica (the coordinator path), as under gocql's
// token-aware routing. Close it when done.
type leanHot struct {
	conns    []*leanConn
	coalesce time.Duration  // the coalescing window; 0: a write per frame
	wg       sync.WaitGroup // the readers
}

// leanConn is one lean connection.
type leanConn struct {
	addr   string
	nc     net.Conn
	fr     *cqlwire.FrameReader
	frames [][]byte // the EXECUTE of each row, stream id 0; written only by the scheduler

	// The scheduler's coalescing window: frames due since the window opened, written at
	// flushAt.
	window  []byte
	flushAt time.Time
	writes  int // the write system calls made, for tests

	mu    sync.Mutex
	slots [leanStreams]leanSlot // by stream id
	free  []int16               // stream ids not in flight
	err   error                 // the reader's, once it has stopped
}

// leanSlot is one request in flight: when it was written and the run it counts in.
type leanSlot struct {
	sent time.Time
	run  *leanRun
}

// leanRun counts one run's outcomes.
type leanRun struct {
	start       time.Time
	offered     atomic.Int64
	accepted    atomic.Int64
	rejCoord    atomic.Int64
	rejRepl     atomic.Int64
	outstanding atomic.Int64
	perSecond   []atomic.Int64

	mu        sync.Mutex
	errs      map[string]int64
	latencies []time.Duration // of accepted writes
	scheduled bool            // every operation has been issued
	drained   chan struct{}   // closed once scheduled and nothing is outstanding
}

// openLeanHot connects to addrs and prepares insert (an INSERT binding k text, c int, v text)
// on each connection, whose frames it coalesces over windows of coalesce. seed draws the rows'
// values.
func openLeanHot(ctx context.Context, addrs []string, insert string, coalesce time.Duration, seed uint64) (*leanHot, error) {
	rng := rand.New(rand.NewPCG(seed, 0))
	values := make([][]byte, bench.RowsPerPartition)
	for j := range values {
		v := make([]byte, 16)
		for i := range v {
			v[i] = 'a' + byte(rng.IntN(26))
		}
		values[j] = v
	}
	return openLean(addrs, coalesce, func(addr string) (*leanConn, error) { return dialLean(ctx, addr, insert, values) })
}

// openLeanOptions connects to addr with a lean connection whose every request is an OPTIONS,
// which any server of the native protocol answers: the floor part's open-loop load, sent as
// the hot client sends its writes.
func openLeanOptions(ctx context.Context, addr string, coalesce time.Duration) (*leanHot, error) {
	return openLean([]string{addr}, coalesce, func(addr string) (*leanConn, error) {
		lc, _, err := startLean(ctx, addr)
		if err != nil {
			return nil, err
		}
		lc.frames = [][]byte{cqlwire.AppendFrame(nil, 0, cqlwire.Options{}, cqlwire.FrameOptions{})}
		lc.nc.SetDeadline(time.Time{})
		return lc, nil
	})
}

// openLean opens a connection to each of addrs with dial and starts its reader.
func openLean(addrs []string, coalesce time.Duration, dial func(addr string) (*leanConn, error)) (*leanHot, error) {
	if coalesce < 0 {
		return nil, fmt.Errorf("lean hot client: coalescing window %v: want 0 or more", coalesce)
	}
	lh := &leanHot{coalesce: coalesce}
	for _, addr := range addrs {
		lc, err := dial(addr)
		if err != nil {
			lh.Close()
			return nil, err
		}
		lh.conns = append(lh.conns, lc)
		lh.wg.Go(lc.read)
	}
	return lh, nil
}

// startLean dials addr and sends STARTUP with ScyllaDB's rate-limit error extension (a
// rejection then says who rejected). It returns the connection, without frames yet, and ask,
// which sends a setup request and waits for its answer (an ERROR is an error); on an error
// the connection is closed.
func startLean(ctx context.Context, addr string) (*leanConn, func(cqlwire.Message) (cqlwire.Message, error), error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("lean hot client: %s: %w", addr, err)
	}
	fr := cqlwire.NewFrameReader(bufio.NewReader(nc), cqlwire.ReaderOptions{Responses: true})
	setup := &nativeConn{nc: nc, fr: fr}
	ask := func(m cqlwire.Message) (cqlwire.Message, error) {
		a, err := setup.ask(ctx, 0, m)
		if e, ok := a.(*cqlwire.Error); ok && err == nil {
			return nil, fmt.Errorf("%s answered ERROR %#x: %s", m.Opcode(), int32(e.Code), e.Message)
		}
		return a, err
	}
	if _, err := ask(&cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0", "SCYLLA_RATE_LIMIT_ERROR": ""}}); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("lean hot client: %s: %w", addr, err)
	}
	lc := &leanConn{addr: addr, nc: nc, fr: fr} // fr is the reader's once it starts
	for id := range leanStreams {
		lc.free = append(lc.free, int16(id))
	}
	return lc, ask, nil
}

// dialLean opens one lean connection: STARTUP, PREPARE of insert, and the rows' EXECUTE
// frames.
func dialLean(ctx context.Context, addr, insert string, values [][]byte) (*leanConn, error) {
	lc, ask, err := startLean(ctx, addr)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*leanConn, error) {
		lc.nc.Close()
		return nil, fmt.Errorf("lean hot client: %s: %w", addr, err)
	}
	m, err := ask(&cqlwire.Prepare{Query: insert})
	if err != nil {
		return fail(err)
	}
	p, ok := m.(*cqlwire.PreparedResult)
	if !ok {
		return fail(fmt.Errorf("PREPARE answered with %s, want RESULT Prepared", m.Opcode()))
	}
	lc.nc.SetDeadline(time.Time{})
	key := []byte(bench.HotTextKey)
	for j, v := range values {
		var row [4]byte
		binary.BigEndian.PutUint32(row[:], uint32(j))
		ex := &cqlwire.Execute{ID: p.ID, Params: cqlwire.QueryParams{
			Consistency: cqlwire.Quorum,
			Values:      []cqlwire.Value{{Bytes: key}, {Bytes: row[:]}, {Bytes: v}},
		}}
		lc.frames = append(lc.frames, cqlwire.AppendFrame(nil, 0, ex, cqlwire.FrameOptions{}))
	}
	return lc, nil
}

// Close closes the connections and waits for the readers.
func (lh *leanHot) Close() {
	for _, lc := range lh.conns {
		lc.nc.Close()
	}
	lh.wg.Wait()
}

// run offers writes at rate for d, operation n due at n/rate seconds after the start on
// connection n mod the connections, and waits for their answers (at most bench.DrainTimeout
// after d); it returns them as a bench Summary of a run whose every operation is hot.
//
// With a coalescing window the scheduler wakes only when a window closes: it then puts every
// operation due by then into its connection's window (a window opens at its first frame's due
// time and takes the frames due before it closes) and writes the windows that have closed.
// The wire sees what a driver coalescing as it goes would send, and a request's latency counts
// from its due time.
func (lh *leanHot) run(ctx context.Context, rate float64, d time.Duration, seed uint64) (*bench.Summary, error) {
	if rate <= 0 || len(lh.conns) == 0 {
		return nil, errors.New("lean hot client: no rate or no connections")
	}
	r := &leanRun{start: time.Now(), errs: map[string]int64{}, drained: make(chan struct{})}
	r.perSecond = make([]atomic.Int64, max(1, int(math.Ceil(d.Seconds()))))
	rng := rand.New(rand.NewPCG(seed, 1))
	interval := float64(time.Second) / rate
	total := int(math.Ceil(float64(d) / interval)) // operations 0..total-1 are due within d
	dueAt := func(n int) time.Time { return r.start.Add(time.Duration(float64(n) * interval)) }
	conn := func(n int) *leanConn { return lh.conns[n%len(lh.conns)] }
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	n := 0 // the next operation to issue
	for n < total || lh.windowOpen() {
		// Wake at the first window to close, or at the due time of the first operation
		// that would open a window (one on a connection with none open), or at once to
		// write each frame alone.
		wake := time.Time{}
		for _, lc := range lh.conns {
			if len(lc.window) > 0 && (wake.IsZero() || lc.flushAt.Before(wake)) {
				wake = lc.flushAt
			}
		}
		for i := n; i < min(total, n+len(lh.conns)); i++ {
			if lc := conn(i); len(lc.window) == 0 {
				if at := dueAt(i).Add(lh.coalesce); wake.IsZero() || at.Before(wake) {
					wake = at
				}
				break
			}
		}
		if w := time.Until(wake); w > 0 {
			timer.Reset(w)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-timer.C:
			}
		}
		now := time.Now()
		for ; n < total; n++ {
			due := dueAt(n)
			if due.After(now) {
				break
			}
			lc := conn(n)
			if len(lc.window) > 0 && !due.Before(lc.flushAt) {
				lc.flush() // the window closed before this frame was due
			}
			r.offered.Add(1)
			lc.send(r, rng.IntN(len(lc.frames)), due, lh.coalesce)
		}
		for _, lc := range lh.conns {
			if len(lc.window) > 0 && !lc.flushAt.After(now) {
				lc.flush()
			}
		}
	}
	r.mu.Lock()
	r.scheduled = true
	if r.outstanding.Load() == 0 {
		close(r.drained)
	}
	r.mu.Unlock()
	drain := time.NewTimer(bench.DrainTimeout)
	defer drain.Stop()
	select {
	case <-r.drained:
	case <-drain.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return r.summary(d), nil
}

// windowOpen reports whether a connection has frames waiting in its coalescing window.
func (lh *leanHot) windowOpen() bool {
	for _, lc := range lh.conns {
		if len(lc.window) > 0 {
			return true
		}
	}
	return false
}

// send puts row's EXECUTE, due at due, on a free stream into the connection's coalescing
// window, opening one that closes coalesce after due when none is open; it counts the
// operation dropped when no stream is free.
func (lc *leanConn) send(r *leanRun, row int, due time.Time, coalesce time.Duration) {
	lc.mu.Lock()
	if lc.err != nil || len(lc.free) == 0 {
		kind := bench.ErrorDropped
		if lc.err != nil {
			kind = bench.ErrorOther
		}
		lc.mu.Unlock()
		r.fail(kind)
		return
	}
	id := lc.free[len(lc.free)-1]
	lc.free = lc.free[:len(lc.free)-1]
	lc.slots[id] = leanSlot{sent: due, run: r}
	r.outstanding.Add(1)
	lc.mu.Unlock()
	if len(lc.window) == 0 {
		lc.flushAt = due.Add(coalesce)
	}
	at := len(lc.window)
	lc.window = append(lc.window, lc.frames[row]...)
	binary.BigEndian.PutUint16(lc.window[at+2:at+4], uint16(id))
}

// flush writes the coalescing window's frames in one write and closes the window.
func (lc *leanConn) flush() {
	lc.writes++
	if _, err := lc.nc.Write(lc.window); err != nil {
		// The reader fails every request in flight when the connection ends.
		lc.nc.Close()
	}
	lc.window = lc.window[:0]
}

// read takes the answers until the connection ends, then fails what is still in flight.
func (lc *leanConn) read() {
	fr := lc.fr
	for {
		h, body, err := fr.ReadFrame()
		if err != nil {
			lc.mu.Lock()
			lc.err = err
			var stuck []*leanRun
			for id := range lc.slots {
				if s := lc.slots[id]; s.run != nil {
					stuck = append(stuck, s.run)
					lc.slots[id] = leanSlot{}
				}
			}
			lc.mu.Unlock()
			for _, r := range stuck {
				r.fail(bench.ErrorOther)
				r.done()
			}
			return
		}
		id := h.Stream
		if id < 0 || int(id) >= leanStreams {
			continue // an event; none is registered for
		}
		lc.mu.Lock()
		s := lc.slots[id]
		lc.slots[id] = leanSlot{}
		if s.run != nil {
			lc.free = append(lc.free, id)
		}
		lc.mu.Unlock()
		if s.run == nil {
			continue
		}
		s.run.record(h, body, s.sent)
		s.run.done()
	}
}

// record counts one answer to a request sent at sent: a RESULT, or the SUPPORTED of an
// OPTIONS (openLeanOptions), is accepted.
func (r *leanRun) record(h cqlwire.Header, body []byte, sent time.Time) {
	by := notRateLimited
	if h.Opcode == cqlwire.OpError && h.Flags == 0 {
		by = rejectedBy(body)
	}
	switch {
	case h.Opcode == cqlwire.OpResult, h.Opcode == cqlwire.OpSupported:
		now := time.Now()
		r.accepted.Add(1)
		sec := min(max(int(now.Sub(r.start)/time.Second), 0), len(r.perSecond)-1)
		r.perSecond[sec].Add(1)
		r.mu.Lock()
		r.latencies = append(r.latencies, now.Sub(sent))
		r.mu.Unlock()
	case by == rejectedByCoordinator:
		r.rejCoord.Add(1)
	case by == rejectedByReplicas:
		r.rejRepl.Add(1)
	case h.Opcode == cqlwire.OpError:
		f, err := cqlwire.DecodeFrame(h, body)
		if err != nil {
			r.fail(bench.ErrorOther)
			return
		}
		e, _ := f.Message.(*cqlwire.Error)
		switch {
		case e != nil && e.Code == cqlwire.ErrRateLimit && e.RejectedByCoordinator:
			r.rejCoord.Add(1)
		case e != nil && e.Code == cqlwire.ErrRateLimit:
			r.rejRepl.Add(1)
		case e != nil && e.Code == cqlwire.ErrOverloaded:
			r.fail(bench.ErrorOverloaded)
		case e != nil && (e.Code == cqlwire.ErrWriteTimeout || e.Code == cqlwire.ErrReadTimeout):
			r.fail(bench.ErrorTimeout)
		case e != nil && e.Code == cqlwire.ErrUnavailable:
			r.fail(bench.ErrorUnavailable)
		default:
			r.fail(bench.ErrorOther)
		}
	default:
		r.fail(bench.ErrorOther)
	}
}

// Who rejected a write, as rejectedBy reads it from an error's body.
const (
	notRateLimited = iota
	rejectedByCoordinator
	rejectedByReplicas
)

// rejectedBy reads an ERROR body with ScyllaDB's rate-limit extension without decoding it:
// [int code][string message][byte op_type][byte rejected_by_coordinator]. It returns
// notRateLimited for any other error, or a body it cannot read, for DecodeFrame to judge.
func rejectedBy(body []byte) int {
	if len(body) < 6 || cqlwire.ErrorCode(binary.BigEndian.Uint32(body)) != cqlwire.ErrRateLimit {
		return notRateLimited
	}
	rest := body[6:]
	n := int(binary.BigEndian.Uint16(body[4:6]))
	if len(rest) != n+2 {
		return notRateLimited
	}
	if rest[n+1] != 0 {
		return rejectedByCoordinator
	}
	return rejectedByReplicas
}

func (r *leanRun) fail(kind string) {
	r.mu.Lock()
	r.errs[kind]++
	r.mu.Unlock()
}

// done marks one outstanding operation answered.
func (r *leanRun) done() {
	if r.outstanding.Add(-1) != 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.scheduled && r.outstanding.Load() == 0 {
		select {
		case <-r.drained:
		default:
			close(r.drained)
		}
	}
}

// summary returns the run's outcomes; operations still unanswered count as timed out.
func (r *leanRun) summary(d time.Duration) *bench.Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := maps.Clone(r.errs)
	if n := r.outstanding.Load(); n > 0 {
		errs[bench.ErrorCanceled] += n // unanswered within the drain timeout, as bench counts them
	}
	s := &bench.Summary{
		Protocol: string(bench.ProtocolCQL), Coordinator: string(bench.RoundRobin),
		Offered: r.offered.Load(), Accepted: r.accepted.Load(),
		RejectedByCoordinator: r.rejCoord.Load(), RejectedByReplicas: r.rejRepl.Load(),
		Errors: errs, DurationS: d.Seconds(),
	}
	s.Hot.Accepted, s.Hot.Rejected = s.Accepted, s.Rejected()
	for i := range r.perSecond {
		s.Hot.AcceptedPerSecond = append(s.Hot.AcceptedPerSecond, r.perSecond[i].Load())
	}
	lat := slices.Clone(r.latencies)
	slices.Sort(lat)
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / 1e6
	}
	s.LatencyMS = bench.Latency{P50: q(0.50), P90: q(0.90), P99: q(0.99), P999: q(0.999)}
	return s
}
