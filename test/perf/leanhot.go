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

// leanStreams bounds a lean connection's requests in flight, as bench's Concurrency bounds a
// driver's: an operation due while every stream is taken is dropped (ErrorDropped).
const leanStreams = 128

// leanHot writes one partition over the native protocol at a fixed offered rate, with none of
// a driver's per-request work: one connection per node, the INSERT prepared once on each, one
// EXECUTE frame per clustering row encoded in advance (only its stream id is patched per
// request), one write system call per request from the scheduling goroutine, and one reader
// goroutine per connection that classifies each answer from its opcode and error code. The
// hot partition is a bug's or a bot's load, whose client runs elsewhere; on this machine the
// load generator shares the cores with the servers, and a driver's client CPU per rejected
// write (more than the server's) would be charged to the limiter. Requests go to the nodes in
// turn; with RF=3 on 3 nodes every node is a replica (the coordinator path), as under gocql's
// token-aware routing. Close it when done.
type leanHot struct {
	conns []*leanConn
	wg    sync.WaitGroup // the readers
}

// leanConn is one lean connection.
type leanConn struct {
	addr   string
	nc     net.Conn
	fr     *cqlwire.FrameReader
	frames [][]byte // the EXECUTE of each row, stream id 0; written only by the scheduler

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
// on each connection. seed draws the rows' values.
func openLeanHot(ctx context.Context, addrs []string, insert string, seed uint64) (*leanHot, error) {
	lh := &leanHot{}
	rng := rand.New(rand.NewPCG(seed, 0))
	values := make([][]byte, bench.RowsPerPartition)
	for j := range values {
		v := make([]byte, 16)
		for i := range v {
			v[i] = 'a' + byte(rng.IntN(26))
		}
		values[j] = v
	}
	for _, addr := range addrs {
		lc, err := dialLean(ctx, addr, insert, values)
		if err != nil {
			lh.Close()
			return nil, err
		}
		lh.conns = append(lh.conns, lc)
		lh.wg.Go(lc.read)
	}
	return lh, nil
}

// dialLean opens one lean connection: STARTUP with ScyllaDB's rate-limit error extension (a
// rejection then says who rejected), PREPARE, and the rows' EXECUTE frames.
func dialLean(ctx context.Context, addr, insert string, values [][]byte) (*leanConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("lean hot client: %s: %w", addr, err)
	}
	fail := func(err error) (*leanConn, error) {
		nc.Close()
		return nil, fmt.Errorf("lean hot client: %s: %w", addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	fr := cqlwire.NewFrameReader(bufio.NewReader(nc), cqlwire.ReaderOptions{Responses: true})
	ask := func(m cqlwire.Message) (cqlwire.Message, error) {
		if _, err := nc.Write(cqlwire.AppendFrame(nil, 0, m, cqlwire.FrameOptions{})); err != nil {
			return nil, err
		}
		h, body, err := fr.ReadFrame()
		if err != nil {
			return nil, err
		}
		f, err := cqlwire.DecodeFrame(h, body)
		if err != nil {
			return nil, err
		}
		if e, ok := f.Message.(*cqlwire.Error); ok {
			return nil, fmt.Errorf("%s answered ERROR %#x: %s", m.Opcode(), int32(e.Code), e.Message)
		}
		return f.Message, nil
	}
	if _, err := ask(&cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0", "SCYLLA_RATE_LIMIT_ERROR": ""}}); err != nil {
		return fail(err)
	}
	m, err := ask(&cqlwire.Prepare{Query: insert})
	if err != nil {
		return fail(err)
	}
	p, ok := m.(*cqlwire.PreparedResult)
	if !ok {
		return fail(fmt.Errorf("PREPARE answered with %s, want RESULT Prepared", m.Opcode()))
	}
	nc.SetDeadline(time.Time{})
	lc := &leanConn{addr: addr, nc: nc}
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
	for id := range leanStreams {
		lc.free = append(lc.free, int16(id))
	}
	lc.fr = fr // the reader's from here
	return lc, nil
}

// Close closes the connections and waits for the readers.
func (lh *leanHot) Close() {
	for _, lc := range lh.conns {
		lc.nc.Close()
	}
	lh.wg.Wait()
}

// run offers writes at rate for d, operation n due at n/rate seconds after the start, and
// waits for their answers (at most bench.DrainTimeout after d); it returns them as a bench
// Summary of a run whose every operation is hot.
func (lh *leanHot) run(ctx context.Context, rate float64, d time.Duration, seed uint64) (*bench.Summary, error) {
	if rate <= 0 || len(lh.conns) == 0 {
		return nil, errors.New("lean hot client: no rate or no connections")
	}
	r := &leanRun{start: time.Now(), errs: map[string]int64{}, drained: make(chan struct{})}
	r.perSecond = make([]atomic.Int64, max(1, int(math.Ceil(d.Seconds()))))
	rng := rand.New(rand.NewPCG(seed, 1))
	interval := float64(time.Second) / rate
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	next := 0
	for n := 0; ; n++ {
		at := time.Duration(float64(n) * interval)
		if at >= d {
			break
		}
		if wait := time.Until(r.start.Add(at)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-timer.C:
			}
		}
		r.offered.Add(1)
		lc := lh.conns[next%len(lh.conns)]
		next++
		lc.send(r, rng.IntN(len(lc.frames)))
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

// send writes row's EXECUTE on a free stream, or counts the operation dropped when none is.
func (lc *leanConn) send(r *leanRun, row int) {
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
	lc.slots[id] = leanSlot{sent: time.Now(), run: r}
	r.outstanding.Add(1)
	lc.mu.Unlock()
	frame := lc.frames[row]
	binary.BigEndian.PutUint16(frame[2:4], uint16(id))
	if _, err := lc.nc.Write(frame); err != nil {
		// The reader fails every request in flight when the connection ends.
		lc.nc.Close()
	}
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
		now := time.Now()
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
		s.run.record(h, body, now, now.Sub(s.sent))
		s.run.done()
	}
}

// record counts one answer.
func (r *leanRun) record(h cqlwire.Header, body []byte, now time.Time, latency time.Duration) {
	switch {
	case h.Opcode == cqlwire.OpResult:
		r.accepted.Add(1)
		sec := min(max(int(now.Sub(r.start)/time.Second), 0), len(r.perSecond)-1)
		r.perSecond[sec].Add(1)
		r.mu.Lock()
		r.latencies = append(r.latencies, latency)
		r.mu.Unlock()
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
