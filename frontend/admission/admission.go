// Package admission bounds the client requests one node executes at once and the ones waiting
// for their turn (a node sheds load instead of falling over). Both client front
// ends (the CQL native protocol and the gRPC API) share one Controller per node; internal
// traffic (replica requests, schema, hints, streaming, repair) never passes through it.
//
// A request takes an execution slot if one is free. Otherwise it waits in its client's queue,
// for at most the queue timeout, and freed slots go round-robin to the clients waiting, so that
// a low-rate client is not stuck behind a flood (Controller says how the queue is shared); a
// request that finds the queue full, or its client's share of it, or whose wait times out, is
// refused at once with an *OverloadedError carrying a retry hint, which the front ends answer as
// Overloaded (native protocol 0x1001, which drivers retry on another node) or
// RESOURCE_EXHAUSTED with RetryInfo (gRPC). Refusing fast keeps the node's latency and memory
// bounded when it is offered more than it can serve: the work it admits still finishes in time,
// and clients learn at once to go elsewhere or back off.
package admission

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the zero Options fields, derived from the machine. Client requests mostly wait
// (for replicas, for the disk), so many more run at once than there are cores; the bound is
// there to stop a flood, not to keep the cores busy.
const (
	// DefaultConcurrentPerCPU is MaxConcurrent's default per GOMAXPROCS.
	DefaultConcurrentPerCPU = 128
	// DefaultQueuedPerConcurrent is MaxQueued's default per execution slot.
	DefaultQueuedPerConcurrent = 2
	// DefaultQueueTimeout is QueueTimeout's default: a request that waited this long for a
	// slot is better sent to another node than run late (the default write timeout is 2 s).
	DefaultQueueTimeout = 500 * time.Millisecond
)

// Options configures a Controller. The zero value of each field means its default
// (EnsureDefaults). The YAML tags are the keys of kvnode's configuration file (node.Config
// nests Options).
type Options struct {
	// MaxConcurrent bounds the client requests executing at once. Default
	// DefaultConcurrentPerCPU × GOMAXPROCS.
	MaxConcurrent int `yaml:"max_concurrent_requests"`
	// MaxQueued bounds the client requests waiting for an execution slot. Default
	// DefaultQueuedPerConcurrent × MaxConcurrent. Negative means no queue: a request that
	// finds every slot taken is refused at once.
	MaxQueued int `yaml:"max_queued_requests"`
	// QueueTimeout bounds a request's wait in the queue. Default DefaultQueueTimeout.
	QueueTimeout time.Duration `yaml:"request_queue_timeout"`
	// Scans paces the node's scans while other requests execute (pace.go).
	Scans ScanPacing `yaml:",inline"`
}

// EnsureDefaults replaces zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = DefaultConcurrentPerCPU * runtime.GOMAXPROCS(0)
	}
	if o.MaxQueued == 0 {
		o.MaxQueued = DefaultQueuedPerConcurrent * o.MaxConcurrent
	}
	if o.QueueTimeout == 0 {
		o.QueueTimeout = DefaultQueueTimeout
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, describes a controller New can build. Each
// error names the field, its configuration key and the values allowed.
func (o *Options) Validate() error {
	switch {
	case o.MaxConcurrent < 1:
		return fmt.Errorf("admission: Options.MaxConcurrent (max_concurrent_requests) is %d, want ≥ 1", o.MaxConcurrent)
	case o.QueueTimeout <= 0:
		return fmt.Errorf("admission: Options.QueueTimeout (request_queue_timeout) is %v, want a positive duration", o.QueueTimeout)
	}
	return nil
}

// Reasons a request is shed, the values of kvnode_admission_shed_total's reason label.
const (
	ReasonQueueFull    = "queue_full"
	ReasonQueueTimeout = "queue_timeout"
)

// OverloadedError refuses a client request the node has no room for. Its message says why, and
// when to retry.
type OverloadedError struct {
	// Reason is ReasonQueueFull or ReasonQueueTimeout.
	Reason string
	// InFlight and Queued are the bounds that were reached.
	MaxConcurrent, MaxQueued int
	// RetryAfter is the hint: about how long the queue takes to move on.
	RetryAfter time.Duration
	// ClientShare is set when the request's client held its share of the queue (or more), which
	// is divided between the clients queuing: the queue as a whole may have room for others.
	ClientShare bool

	// msg is Error's message, made once for the refusals a Controller shares, so that refusing
	// a request formats and allocates nothing.
	msg string
}

func (e *OverloadedError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.message()
}

// message formats Error's message from the fields.
func (e *OverloadedError) message() string {
	why := fmt.Sprintf("%d requests are executing and %d waiting, the most it takes", e.MaxConcurrent, max(e.MaxQueued, 0))
	switch {
	case e.Reason == ReasonQueueTimeout:
		why = fmt.Sprintf("the request waited %v for one of its %d execution slots", e.RetryAfter, e.MaxConcurrent)
	case e.ClientShare:
		why = fmt.Sprintf("its %d execution slots are taken and this client holds its share of the %d places in the queue, divided between the clients waiting", e.MaxConcurrent, max(e.MaxQueued, 0))
	}
	return fmt.Sprintf("node overloaded: %s; retry after %v, or on another node", why, e.RetryAfter)
}

// ErrOverloaded is matched by every *OverloadedError (errors.Is).
var ErrOverloaded = errors.New("node overloaded")

// Is reports whether target is ErrOverloaded.
func (e *OverloadedError) Is(target error) bool { return target == ErrOverloaded }

// Key identifies a client: the front end's connection (a native connection, a gRPC peer
// address). It must be comparable, and stay the same for every request of the client. Queued
// requests are served round-robin between clients, so a client that keeps the queue full does
// not hold back another's requests by more than about one turn each.
type Key any

// Controller admits client requests. It is safe for concurrent use. A nil *Controller admits
// everything.
//
// Requests that find every slot taken wait in a queue of their client's; when a slot frees it
// goes to the oldest request of the next client in turn (fair queuing, round-robin with unit
// cost). A client may hold at most max(1, MaxQueued / clients queuing) places of the queue:
// beyond its share its request is refused, and when the queue is full a client under its share
// takes the newest place of the client holding the most, which is refused instead. A flood is
// thus shed first, and another client still queues.
type Controller struct {
	cfg Options

	mu       sync.Mutex
	inFlight int             // slots taken, including those handed to a waiter not yet awake
	queued   int             // requests waiting in the clients' queues
	arrivals uint64          // requests Try was called for, ever (scan pacing tells others by them)
	clients  map[Key]*client // the clients with requests waiting
	next     *client         // the ring of clients with requests waiting, next to be served
	free     []*client       // client records to reuse
	idle     []*Waiter       // waiters to reuse

	inFlightGauge, queuedGauge    prometheus.GaugeFunc
	limits                        *prometheus.GaugeVec
	shed                          *prometheus.CounterVec
	shedFull, shedTimeout         prometheus.Counter
	fullErr, shareErr, timeoutErr *OverloadedError // shared read-only, messages made: refusing allocates nothing
	pace                          pacer            // scans' pacing (pace.go)
}

// client is the queue of one client's waiting requests, oldest first, and its place in the
// controller's ring.
type client struct {
	key                Key
	head, tail         *Waiter
	n                  int
	ringPrev, ringNext *client
}

// Waiter is a request's place in its client's queue, which Try reserved: the request calls
// Wait to wait there for a slot, Go to leave its work there instead, or Leave when it will not
// wait after all.
type Waiter struct {
	c          *Controller
	cl         *client
	prev, next *Waiter
	// done receives the outcome once: nil when a slot was handed over, the refusal when the
	// place was taken by a client under its share. Not used once job is set.
	done chan error
	// queued is true while the waiter is in its client's queue (guarded by c.mu).
	queued bool
	// job, set by Go while the waiter is queued (guarded by c.mu), is the request's work: the
	// outcome is then given to it instead of done. timer refuses it at the queue timeout.
	job   Job
	timer *time.Timer
}

// Job is a queued request's work (Waiter.Go). It is called once: with nil when the request
// holds an execution slot, and then reports whether it still holds it (the caller gives it on
// to the next request in turn) or gave it back itself (Release); or with the error refusing the
// request (an *OverloadedError, or the error of Cancel), when its return value is ignored.
type Job func(err error) (holdsSlot bool)

// New returns a controller for cfg (its zero fields taking their defaults).
func New(cfg Options) (*Controller, error) {
	if err := cfg.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, clients: make(map[Key]*client)}
	var err error
	if c.pace, err = newPacer(cfg.Scans); err != nil {
		return nil, err
	}
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "kvnode", Subsystem: "admission", Name: name, Help: help}
	}
	c.inFlightGauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("in_flight", "Client requests executing (holding an execution slot).")),
		func() float64 { return float64(c.InFlight()) })
	c.queuedGauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("queued", "Client requests waiting for an execution slot.")),
		func() float64 { return float64(c.Queued()) })
	c.limits = prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("limit", "The admission bounds: max_concurrent and max_queued requests.")), []string{"bound"})
	c.limits.WithLabelValues("max_concurrent").Set(float64(cfg.MaxConcurrent))
	c.limits.WithLabelValues("max_queued").Set(float64(max(cfg.MaxQueued, 0)))
	c.shed = prometheus.NewCounterVec(prometheus.CounterOpts(opts("shed_total",
		"Client requests refused as Overloaded, by reason: queue_full (every slot taken and the queue full, or the client's share of it) or queue_timeout (waited too long).")), []string{"reason"})
	c.shedFull, c.shedTimeout = c.shed.WithLabelValues(ReasonQueueFull), c.shed.WithLabelValues(ReasonQueueTimeout)
	retry := max(cfg.QueueTimeout, 10*time.Millisecond)
	c.fullErr = &OverloadedError{Reason: ReasonQueueFull, MaxConcurrent: cfg.MaxConcurrent, MaxQueued: cfg.MaxQueued, RetryAfter: retry}
	c.shareErr = &OverloadedError{Reason: ReasonQueueFull, MaxConcurrent: cfg.MaxConcurrent, MaxQueued: cfg.MaxQueued, RetryAfter: retry, ClientShare: true}
	c.timeoutErr = &OverloadedError{Reason: ReasonQueueTimeout, MaxConcurrent: cfg.MaxConcurrent, MaxQueued: cfg.MaxQueued, RetryAfter: cfg.QueueTimeout}
	for _, e := range []*OverloadedError{c.fullErr, c.shareErr, c.timeoutErr} {
		e.msg = e.message()
	}
	return c, nil
}

// Options returns the controller's options, defaults filled in.
func (c *Controller) Options() Options { return c.cfg }

// Try takes an execution slot at once if one is free and nobody waits for one (nil, nil).
// Otherwise it reserves a place in client's queue (w, nil), and the caller must call w.Wait or
// w.Leave; or, the queue being full or client holding its share of it, it refuses the request
// (nil, *OverloadedError), counted as shed.
func (c *Controller) Try(client Key) (*Waiter, error) {
	if c == nil {
		return nil, nil
	}
	c.mu.Lock()
	c.arrivals++
	if c.inFlight < c.cfg.MaxConcurrent && c.queued == 0 {
		c.inFlight++
		c.mu.Unlock()
		return nil, nil
	}
	w, refused := c.enqueue(client)
	c.mu.Unlock()
	if refused != nil {
		c.shedFull.Inc()
		return nil, refused
	}
	return w, nil
}

// enqueue puts a waiter at the end of key's queue, taking the newest place of the client
// holding the most when the queue is full, or returns why the request is refused. c.mu is
// held.
func (c *Controller) enqueue(key Key) (*Waiter, *OverloadedError) {
	if c.cfg.MaxQueued <= 0 {
		return nil, c.fullErr
	}
	cl := c.clients[key]
	n, active := 0, len(c.clients)
	if cl != nil {
		n = cl.n
	} else {
		active++
	}
	if n >= max(1, c.cfg.MaxQueued/active) {
		return nil, c.shareErr
	}
	if c.queued >= c.cfg.MaxQueued {
		victim := c.next
		for r := c.next.ringNext; r != c.next; r = r.ringNext {
			if r.n > victim.n {
				victim = r
			}
		}
		if victim.n <= n+1 {
			return nil, c.fullErr // nobody holds more than this client would
		}
		v := victim.tail
		c.unlink(v)
		if v.job != nil {
			v.timer.Stop()
			go v.job(c.shareErr) // not on this request's goroutine: answering may wait
			v.job = nil
		} else {
			v.done <- c.shareErr
		}
		c.shedFull.Inc()
	}
	if cl == nil {
		cl = c.newClient(key)
	}
	w := c.newWaiter()
	w.cl, w.queued = cl, true
	w.prev = cl.tail
	if cl.tail != nil {
		cl.tail.next = w
	} else {
		cl.head = w
	}
	cl.tail = w
	cl.n++
	c.queued++
	return w, nil
}

// newClient records key as a client with requests waiting, last in the ring. c.mu is held.
func (c *Controller) newClient(key Key) *client {
	var cl *client
	if k := len(c.free); k > 0 {
		cl, c.free = c.free[k-1], c.free[:k-1]
	} else {
		cl = new(client)
	}
	cl.key = key
	c.clients[key] = cl
	if c.next == nil {
		cl.ringPrev, cl.ringNext, c.next = cl, cl, cl
	} else { // last: just before the next to be served
		cl.ringNext, cl.ringPrev = c.next, c.next.ringPrev
		cl.ringPrev.ringNext, c.next.ringPrev = cl, cl
	}
	return cl
}

// newWaiter returns a waiter to reuse, or a new one. c.mu is held.
func (c *Controller) newWaiter() *Waiter {
	if k := len(c.idle); k > 0 {
		w := c.idle[k-1]
		c.idle = c.idle[:k-1]
		return w
	}
	return &Waiter{c: c, done: make(chan error, 1)}
}

// unlink takes w out of its client's queue, and the client out of the ring once it has
// nothing waiting. c.mu is held.
func (c *Controller) unlink(w *Waiter) {
	cl := w.cl
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		cl.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		cl.tail = w.prev
	}
	w.prev, w.next, w.cl, w.queued = nil, nil, nil, false
	cl.n--
	c.queued--
	if cl.n > 0 {
		return
	}
	if cl.ringNext == cl {
		c.next = nil
	} else {
		cl.ringPrev.ringNext, cl.ringNext.ringPrev = cl.ringNext, cl.ringPrev
		if c.next == cl {
			c.next = cl.ringNext
		}
	}
	delete(c.clients, cl.key)
	*cl = client{}
	c.free = append(c.free, cl)
}

// Wait waits, in the place Try reserved, for an execution slot, for at most the queue timeout:
// nil once the slot is taken, an *OverloadedError (counted as shed) when the wait times out or
// the place was given to a client under its share of the queue, ctx.Err() when ctx ends first.
// w is not to be used again.
func (w *Waiter) Wait(ctx context.Context) error {
	c := w.c
	select { // handed a slot, or refused, since Try
	case err := <-w.done:
		c.recycle(w)
		return err
	default:
	}
	t := time.NewTimer(c.cfg.QueueTimeout)
	defer t.Stop()
	var err error
	select {
	case err = <-w.done:
		c.recycle(w)
		return err
	case <-t.C:
		err = c.timeoutErr
	case <-ctx.Done():
		err = ctx.Err()
	}
	if decided, outcome := w.leave(); decided {
		return outcome // handed a slot, or refused, as the wait ended
	}
	if err == c.timeoutErr {
		c.shedTimeout.Inc()
	}
	return err
}

// Leave gives back the place in the queue Try reserved, for a request that will not Wait after
// all (its connection closed first); and the slot, if one was handed to it meanwhile.
func (w *Waiter) Leave() {
	if w == nil {
		return
	}
	c := w.c
	if decided, outcome := w.leave(); decided && outcome == nil {
		c.Release()
	}
}

// Go leaves the request's work in the place Try reserved, instead of waiting there: job runs
// when a slot passes to it, on the goroutine of the request that gave the slot (Handoff,
// Run), or on a goroutine of its own (Release); it is refused after the queue timeout (counted
// as shed), when its place goes to a client under its share, or by Cancel. A queued request
// thus holds no goroutine. If the outcome came before Go, job gets it on a new goroutine. w is
// not to be used again.
func (w *Waiter) Go(job Job) {
	c := w.c
	c.mu.Lock()
	if w.queued {
		w.job = job
		w.timer = time.AfterFunc(c.cfg.QueueTimeout, func() { c.expire(w) })
		c.mu.Unlock()
		return // w stays with the timer: it is never recycled
	}
	c.mu.Unlock()
	outcome := <-w.done // sent under c.mu as queued was cleared
	c.recycle(w)
	if outcome == nil {
		go c.Run(job)
	} else {
		go job(outcome)
	}
}

// expire refuses w's work when it is still queued at the queue timeout.
func (c *Controller) expire(w *Waiter) {
	c.mu.Lock()
	job := w.job
	if !w.queued || job == nil {
		c.mu.Unlock()
		return
	}
	c.unlink(w)
	w.job = nil
	c.mu.Unlock()
	c.shedTimeout.Inc()
	job(c.timeoutErr)
}

// Cancel refuses, with err, the queued requests of client that left their work in the queue
// (Go); for example when its connection closes, so that they are answered at once rather than
// at the queue timeout. Those that wait in Wait, or have not called Go yet, are left alone.
func (c *Controller) Cancel(client Key, err error) {
	if c == nil {
		return
	}
	var jobs []Job
	c.mu.Lock()
	if cl := c.clients[client]; cl != nil {
		for w := cl.head; w != nil; {
			next := w.next
			if w.job != nil {
				w.timer.Stop()
				jobs = append(jobs, w.job)
				w.job = nil
				c.unlink(w) // cl may be recycled once empty; next was read first
			}
			w = next
		}
	}
	c.mu.Unlock()
	for _, job := range jobs {
		job(err)
	}
}

// leave takes w out of its queue (false), or returns the outcome it was given meanwhile (true,
// and nil for a slot handed to it). w is recycled either way.
func (w *Waiter) leave() (decided bool, outcome error) {
	c := w.c
	c.mu.Lock()
	if w.queued {
		c.unlink(w)
		c.idle = append(c.idle, w)
		c.mu.Unlock()
		return false, nil
	}
	c.mu.Unlock()
	outcome = <-w.done // sent under c.mu as queued was cleared
	c.recycle(w)
	return true, outcome
}

// recycle keeps w, out of every queue and its outcome taken, for another request.
func (c *Controller) recycle(w *Waiter) {
	c.mu.Lock()
	c.idle = append(c.idle, w)
	c.mu.Unlock()
}

// Acquire is Try, then Wait when the request has to queue: nil once the request holds an
// execution slot, which it gives back with Release.
func (c *Controller) Acquire(ctx context.Context, client Key) error {
	w, err := c.Try(client)
	if w == nil {
		return err
	}
	return w.Wait(ctx)
}

// Release gives back the execution slot of a request that Try or Wait admitted: to the oldest
// request of the next client in turn, if any waits.
func (c *Controller) Release() {
	if job := c.Handoff(); job != nil {
		go c.Run(job)
	}
}

// Handoff is Release for the goroutine of a request that has finished and can run the next
// one: when the slot goes to a request whose work waits in the queue (Waiter.Go), Handoff
// returns that work, which now holds the slot, for the caller to run (Run's loop does); the
// request starts at once, on a goroutine already running, instead of waiting for its own to
// be woken and scheduled. Otherwise it returns nil, the slot handed to a request blocked in
// Wait, or freed.
func (c *Controller) Handoff() Job {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.next
	if cl == nil {
		c.inFlight--
		return nil
	}
	w := cl.head
	c.next = cl.ringNext // the next client's turn, even if cl stays
	c.unlink(w)
	if w.job == nil {
		w.done <- nil
		return nil
	}
	w.timer.Stop() // if it fires anyway, expire finds w out of the queue
	job := w.job
	w.job = nil
	return job
}

// Run runs job, which holds an execution slot, then every queued request's work the slot
// passes to (Handoff), until one gives the slot back or nobody waits for it. A request that
// took a slot at Try runs its work with go c.Run(job).
func (c *Controller) Run(job Job) {
	for job != nil && job(nil) {
		job = c.Handoff()
	}
}

// InFlight returns the requests holding an execution slot.
func (c *Controller) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight
}

// Queued returns the requests waiting for one.
func (c *Controller) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queued
}

// Describe and Collect make the controller a prometheus.Collector of
// kvnode_admission_in_flight, kvnode_admission_queued, kvnode_admission_limit{bound} and
// kvnode_admission_shed_total{reason}.
func (c *Controller) Describe(ch chan<- *prometheus.Desc) {
	c.inFlightGauge.Describe(ch)
	c.queuedGauge.Describe(ch)
	c.limits.Describe(ch)
	c.shed.Describe(ch)
}

func (c *Controller) Collect(ch chan<- prometheus.Metric) {
	c.inFlightGauge.Collect(ch)
	c.queuedGauge.Collect(ch)
	c.limits.Collect(ch)
	c.shed.Collect(ch)
}
