package bench

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/gocql/gocql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/client"
)

// The error kinds of Summary.Errors besides "grpc_<code>" for a gRPC status the client does not
// type (grpc_internal, grpc_unavailable for a lost connection, ...).
const (
	ErrorUnavailable = "unavailable" // *client.UnavailableError: too few live replicas
	ErrorTimeout     = "timeout"     // *client.TimeoutError: replicas did not answer in time
	ErrorFailed      = "failed"      // *client.FailureError: replicas failed
	ErrorInvalid     = "invalid"     // *client.InvalidError: the server refused the statement
	// ErrorOverloaded: the node's admission control shed the request (native Overloaded 0x1001,
	// gRPC RESOURCE_EXHAUSTED).
	ErrorOverloaded = "overloaded"
	ErrorCanceled   = "canceled" // the run was cancelled, or the drain timeout passed, first
	ErrorDropped    = "dropped"  // open loop: the queue of waiting operations was full
	ErrorOther      = "other"    // anything else
	// ErrorNoConnections: the native driver had no connection to any node it may send to.
	ErrorNoConnections = "no_connections"
)

// DrainTimeout is how long operations still in flight (or queued, in open loop) when Duration
// ends may take to finish before they are cancelled and counted as ErrorCanceled.
const DrainTimeout = 5 * time.Second

// MaxQueue bounds the open-loop queue of operations whose start time has come while every
// worker is busy: the queue holds one second of offered load (at least Concurrency, at most
// MaxQueue operations). An operation that finds it full is not sent and counts as ErrorDropped,
// so an overloaded run shows its overload instead of growing memory without bound. Queued
// operations measure their latency from their intended start, queueing included.
const MaxQueue = 100_000

// stats are the counters of a run, updated by every worker and read by the progress reporter.
type stats struct {
	offered, accepted, rejCoord, rejRepl, failed atomic.Int64
	hotAccepted, hotRejected                     atomic.Int64
	coldAccepted, coldRejected                   atomic.Int64
	// hotPerSecond[i] counts hot accepted operations that completed in second i of the run;
	// completions after the last second count in the last entry.
	hotPerSecond []atomic.Int64
	// hists are latency histograms of accepted operations, sharded to spread contention: worker
	// w records into hists[w % len(hists)].
	hists []histogram

	mu   sync.Mutex
	errs map[string]int64
}

func (s *stats) fail(kind string) {
	s.failed.Add(1)
	s.mu.Lock()
	s.errs[kind]++
	s.mu.Unlock()
}

// histogramShards is the most latency histograms a run keeps (each is about 29 KiB).
const histogramShards = 16

// sender sends one operation to the cluster and returns its error.
type sender interface {
	send(ctx context.Context, o *op) error
}

// grpcSender sends literal statements over gRPC clients, one per address in Addrs order,
// choosing the coordinator by cfg.Coordinator.
type grpcSender struct {
	cfg   Config
	execs []executor
	rr    atomic.Uint64 // round-robin position
}

// pick returns the coordinator of the next operation.
func (g *grpcSender) pick() executor {
	if g.cfg.Coordinator == Fixed || len(g.execs) == 1 {
		return g.execs[0]
	}
	return g.execs[(g.rr.Add(1)-1)%uint64(len(g.execs))]
}

func (g *grpcSender) send(ctx context.Context, o *op) error {
	_, err := g.pick().Execute(ctx, g.cfg.Consistency, o.stmt)
	return err
}

// runner runs one benchmark over a workload and a sender.
type runner struct {
	cfg    Config
	wl     *workload
	sender sender
	st     stats
	start  time.Time
}

// run runs cfg's load through s until cfg.Duration has passed or ctx is cancelled, and returns
// what ran. progress (nil for none) gets the progress display.
func run(ctx context.Context, cfg Config, wl *workload, s sender, progress io.Writer) *Summary {
	r := &runner{cfg: cfg, wl: wl, sender: s}
	r.st.errs = make(map[string]int64)
	r.st.hotPerSecond = make([]atomic.Int64, max(1, int(math.Ceil(cfg.Duration.Seconds()))))
	r.st.hists = make([]histogram, min(cfg.Concurrency, histogramShards))

	r.start = time.Now()
	end := r.start.Add(cfg.Duration)
	opCtx, cancelOps := context.WithDeadline(ctx, end.Add(DrainTimeout))
	defer cancelOps()

	stopProgress := startProgress(progress, &r.st, r.start, cfg.Duration)
	var wg sync.WaitGroup
	var queue chan time.Duration
	if cfg.Rate > 0 {
		queue = make(chan time.Duration, min(max(int(math.Ceil(cfg.Rate)), cfg.Concurrency), MaxQueue))
		wg.Go(func() { r.schedule(ctx, queue) })
	}
	for w := range cfg.Concurrency {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(w)))
		h := &r.st.hists[w%len(r.st.hists)]
		if queue != nil {
			wg.Go(func() { r.openLoop(opCtx, rng, h, queue) })
		} else {
			wg.Go(func() { r.closedLoop(ctx, opCtx, rng, h, end) })
		}
	}
	wg.Wait()
	elapsed := time.Since(r.start)
	stopProgress(elapsed)
	window := cfg.Duration // the open loop's last operation may finish before the end
	if ctx.Err() != nil {
		window = min(elapsed, cfg.Duration)
	}
	return r.summary(window)
}

// schedule issues the open-loop start times: operation n is due at n/Rate seconds after the
// start, for every n with that time inside Duration. The times are exact whatever the timer's
// precision: after a late wake-up every operation already due is issued at once. It stops early
// when ctx ends, and closes queue when done.
func (r *runner) schedule(ctx context.Context, queue chan<- time.Duration) {
	defer close(queue)
	interval := float64(time.Second) / r.cfg.Rate
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for n := 0; ; n++ {
		at := time.Duration(float64(n) * interval)
		if at >= r.cfg.Duration {
			return
		}
		if wait := time.Until(r.start.Add(at)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		r.st.offered.Add(1)
		select {
		case queue <- at:
		default:
			r.st.fail(ErrorDropped)
		}
	}
}

// openLoop runs the operations the scheduler queues, each timed from its intended start. Once
// ctx has ended, queued operations are not sent but counted as cancelled.
func (r *runner) openLoop(ctx context.Context, rng *rand.Rand, h *histogram, queue <-chan time.Duration) {
	for at := range queue {
		if ctx.Err() != nil {
			r.st.fail(ErrorCanceled)
			continue
		}
		r.do(ctx, rng, h, r.start.Add(at))
	}
}

// closedLoop issues one operation after another until end or until runCtx ends; opCtx bounds
// each operation.
func (r *runner) closedLoop(runCtx, opCtx context.Context, rng *rand.Rand, h *histogram, end time.Time) {
	for runCtx.Err() == nil {
		now := time.Now()
		if !now.Before(end) {
			return
		}
		r.st.offered.Add(1)
		r.do(opCtx, rng, h, now)
	}
}

// do runs one operation and records its outcome; latency counts from intended.
func (r *runner) do(ctx context.Context, rng *rand.Rand, h *histogram, intended time.Time) {
	o := r.wl.next(rng)
	err := r.sender.send(ctx, &o)
	done := time.Now()
	st := &r.st
	if err == nil {
		st.accepted.Add(1)
		h.record(done.Sub(intended))
		if o.hot {
			st.hotAccepted.Add(1)
			sec := min(int(done.Sub(r.start)/time.Second), len(st.hotPerSecond)-1)
			st.hotPerSecond[max(sec, 0)].Add(1)
		} else {
			st.coldAccepted.Add(1)
		}
		return
	}
	if rejected, byCoordinator := rateLimited(err); rejected {
		if byCoordinator {
			st.rejCoord.Add(1)
		} else {
			st.rejRepl.Add(1)
		}
		if o.hot {
			st.hotRejected.Add(1)
		} else {
			st.coldRejected.Add(1)
		}
		return
	}
	if r.cfg.Protocol == ProtocolGRPC {
		st.fail(errorKind(err, ctx.Err() != nil))
	} else {
		st.fail(nativeErrorKind(err, ctx.Err() != nil))
	}
}

// rateLimited reports whether err is a rate-limit rejection (gRPC's *client.RateLimitError or
// gocql's *gocql.RequestErrRateLimitReached), and whether the coordinator rejected on its own.
func rateLimited(err error) (rejected, byCoordinator bool) {
	var rl *client.RateLimitError
	if errors.As(err, &rl) {
		return true, rl.RejectedBy == client.RejectedByCoordinator
	}
	var nrl *gocql.RequestErrRateLimitReached
	if errors.As(err, &nrl) {
		return true, nrl.RejectedByCoordinator
	}
	return false, false
}

// errorKind names the kind of a failed operation's error; canceled says the operation's context
// had ended, which makes any error a cancellation.
func errorKind(err error, canceled bool) string {
	var (
		un  *client.UnavailableError
		to  *client.TimeoutError
		fe  *client.FailureError
		inv *client.InvalidError
	)
	switch {
	case canceled || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return ErrorCanceled
	case errors.As(err, &un):
		return ErrorUnavailable
	case errors.As(err, &to):
		return ErrorTimeout
	case errors.As(err, &fe):
		return ErrorFailed
	case errors.As(err, &inv):
		return ErrorInvalid
	}
	if st, ok := status.FromError(err); ok && st != nil {
		if st.Code() == codes.ResourceExhausted {
			return ErrorOverloaded
		}
		return "grpc_" + snakeCase(st.Code().String())
	}
	return ErrorOther
}

// snakeCase turns a gRPC code name such as "DeadlineExceeded" into "deadline_exceeded".
func snakeCase(s string) string {
	out := make([]rune, 0, len(s)+4)
	for i, c := range s {
		if unicode.IsUpper(c) {
			if i > 0 {
				out = append(out, '_')
			}
			c = unicode.ToLower(c)
		}
		out = append(out, c)
	}
	return string(out)
}

// summary collects the counters once every worker has stopped; window is how long operations
// were issued.
func (r *runner) summary(window time.Duration) *Summary {
	st := &r.st
	s := &Summary{
		Protocol:              string(r.cfg.Protocol),
		Coordinator:           string(r.cfg.Coordinator),
		Offered:               st.offered.Load(),
		Accepted:              st.accepted.Load(),
		RejectedByCoordinator: st.rejCoord.Load(),
		RejectedByReplicas:    st.rejRepl.Load(),
		Errors:                make(map[string]int64, len(st.errs)),
		DurationS:             window.Seconds(),
		Hot:                   HotSummary{Accepted: st.hotAccepted.Load(), Rejected: st.hotRejected.Load()},
		Cold:                  ColdSummary{Accepted: st.coldAccepted.Load(), Rejected: st.coldRejected.Load()},
	}
	for k, v := range st.errs {
		s.Errors[k] = v
	}
	counts := make([]int64, numBuckets)
	for i := range st.hists {
		st.hists[i].addTo(counts)
	}
	ms := func(q float64) float64 {
		return math.Round(float64(quantile(counts, q))/1e3) / 1e3 // ms with µs resolution
	}
	s.LatencyMS = Latency{P50: ms(0.50), P90: ms(0.90), P99: ms(0.99), P999: ms(0.999)}

	// One entry per second of the window; completions past it (draining in-flight operations,
	// or finishing after a cancel) count in the last entry, so the entries sum to Hot.Accepted.
	n := min(max(1, int(math.Ceil(window.Seconds()))), len(st.hotPerSecond))
	s.Hot.AcceptedPerSecond = make([]int64, n)
	for i := range st.hotPerSecond {
		s.Hot.AcceptedPerSecond[min(i, n-1)] += st.hotPerSecond[i].Load()
	}
	return s
}
