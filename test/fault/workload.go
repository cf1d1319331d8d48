package fault

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/time/rate"
)

// Kind is one family of operations of the workload: unique inserts, last-write-wins registers,
// deletes, expiring registers (TTL), collections, counters, lightweight transactions. A kind owns its
// tables, generates its operations (Generate), runs them (Op.Apply), and judges what it
// recorded together with the rows read back once the faults healed (Check). Kinds are used by
// several workers at once: Generate and Apply must be safe for concurrent use.
type Kind interface {
	// Name names the kind in reports: "inserts", "registers@ONE".
	Name() string
	// Schema returns the CQL that creates the kind's tables.
	Schema() []string
	// Generate returns the next operation. It may look at what earlier operations of the kind
	// did (a delete picks a row whose insert was acknowledged).
	Generate(rng *rand.Rand) Op
	// ReadBack reads every row the kind may have written through s at cl, once the faults have
	// healed. The result is handed to Check as Final.Rows.
	ReadBack(ctx context.Context, s *gocql.Session, cl gocql.Consistency) (any, error)
	// Check judges the kind's recorded operations (in invocation order) and its read-backs.
	Check(events []Event, finals []Final) Verdict
}

// Op is one operation of a Kind.
type Op interface {
	// Apply runs the operation once through s, a session whose only host is the coordinator,
	// and returns what it observed (the kind's own type; nil for a write). A write whose Apply
	// fails may or may not have been applied: checks treat it as indeterminate.
	Apply(ctx context.Context, s *gocql.Session) (result any, err error)
	// IsRead reports whether the operation only reads.
	IsRead() bool
	String() string
}

// Event is one applied operation as the workload recorded it. Times are since the workload
// started, on the test process's monotonic clock: an operation that ended before another
// started precedes it in real time.
type Event struct {
	Op         Op
	Node       int // the coordinator, 0-based
	Start, End time.Duration
	Result     any
	Err        error
}

// Final is one read-back of a kind's rows after a fault healed; the workload may still be
// running, so a check holds it only to the writes acknowledged before At, and lets the
// operations that overlap it go either way.
type Final struct {
	Node int
	CL   gocql.Consistency
	// At and End are when the read-back started and ended, on the events' clock.
	At, End time.Duration
	Rows    any // ReadBack's result
}

// Verdict is what a kind's Check found. Counts are of rows (distinct keys), each counted once
// per category however many reads showed it.
type Verdict struct {
	Kind   string
	Writes int // operations that change data, acknowledged or not
	Reads  int // reads that succeeded
	// Lost: rows whose acknowledged write was missing (or overwritten by an older one) from a
	// read-back after the faults healed.
	Lost int
	// Resurrected: rows whose delete was acknowledged and that a later read (during the
	// faults or after) still returned.
	Resurrected int
	// Stale: rows for which a read during the workload returned an older state than one
	// acknowledged before the read began.
	Stale int
	// Unexpected: rows a read returned with a value no operation wrote.
	Unexpected int
	// Examples are a few of the findings, for the log.
	Examples []string
}

// Clean reports whether the verdict found nothing wrong.
func (v Verdict) Clean() bool {
	return v.Lost == 0 && v.Resurrected == 0 && v.Stale == 0 && v.Unexpected == 0
}

func (v Verdict) String() string {
	return fmt.Sprintf("%-14s writes %5d  reads %5d  lost %d  resurrected %d  stale %d  unexpected %d",
		v.Kind, v.Writes, v.Reads, v.Lost, v.Resurrected, v.Stale, v.Unexpected)
}

// findings collects the rows of each category, and a few examples.
type findings struct {
	lost, resurrected, stale, unexpected map[string]bool
	examples                             []string
}

func newFindings() *findings {
	return &findings{lost: map[string]bool{}, resurrected: map[string]bool{}, stale: map[string]bool{}, unexpected: map[string]bool{}}
}

func (f *findings) add(set map[string]bool, row, format string, args ...any) {
	if set[row] {
		return
	}
	set[row] = true
	if len(f.examples) < 8 {
		f.examples = append(f.examples, row+": "+fmt.Sprintf(format, args...))
	}
}

func (f *findings) verdict(kind string, writes, reads int) Verdict {
	return Verdict{Kind: kind, Writes: writes, Reads: reads, Lost: len(f.lost), Resurrected: len(f.resurrected),
		Stale: len(f.stale), Unexpected: len(f.unexpected), Examples: f.examples}
}

// Workload runs the operations of its kinds from several workers through random coordinators,
// and records every operation.
type Workload struct {
	Kinds    []Kind
	Weights  []int // relative frequency of each kind; nil means equal
	Sessions []*gocql.Session
	// Workers is how many operations may be in flight at once (default 32): enough that
	// requests waiting out a timeout at a faulty coordinator leave the others busy.
	Workers int
	Rate    float64 // operations per second in all; default 150
	Seed    uint64

	start  time.Time
	mu     sync.Mutex
	events map[string][]Event
	stop   context.CancelFunc
	done   chan struct{}
}

// Timestamps hands out write timestamps (microseconds, USING TIMESTAMP) unique within a run and
// growing in the order of the calls: last-write-wins order is the order in which the workload
// made its writes, whatever the nodes' clocks say. Its zero value is not usable: see
// NewTimestamps.
type Timestamps struct {
	base int64
	seq  atomic.Int64
}

// NewTimestamps starts the timestamps at the wall clock's now.
func NewTimestamps() *Timestamps { return &Timestamps{base: time.Now().UnixMicro()} }

// Next returns the next timestamp.
func (t *Timestamps) Next() int64 { return t.base + t.seq.Add(1) }

// Since returns the time since the workload started, on the events' clock.
func (w *Workload) Since() time.Duration { return time.Since(w.start) }

// Start starts the workers. The workload runs until Stop.
func (w *Workload) Start() {
	if w.Workers == 0 {
		w.Workers = 32
	}
	if w.Rate == 0 {
		w.Rate = 150
	}
	w.start = time.Now()
	w.events = map[string][]Event{}
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = cancel
	w.done = make(chan struct{})
	limiter := rate.NewLimiter(rate.Limit(w.Rate), 1)
	total := 0
	for i := range w.Kinds {
		total += w.weight(i)
	}
	var wg sync.WaitGroup
	for worker := range w.Workers {
		wg.Add(1)
		go func() { // owned by w: ends when Stop cancels ctx
			defer wg.Done()
			rng := rand.New(rand.NewPCG(w.Seed, uint64(worker)))
			for limiter.Wait(ctx) == nil {
				pick := rng.IntN(total)
				k := 0
				for ; pick >= w.weight(k); k++ {
					pick -= w.weight(k)
				}
				w.apply(ctx, w.Kinds[k], rng)
			}
		}()
	}
	go func() { // owned by w: ends once every worker has
		wg.Wait()
		close(w.done)
	}()
}

func (w *Workload) weight(k int) int {
	if w.Weights == nil {
		return 1
	}
	return w.Weights[k]
}

func (w *Workload) apply(ctx context.Context, k Kind, rng *rand.Rand) {
	op := k.Generate(rng)
	node := rng.IntN(len(w.Sessions))
	if l, ok := k.(Local); ok && len(l.Nodes) > 0 {
		node = l.Nodes[rng.IntN(len(l.Nodes))]
	}
	ev := Event{Op: op, Node: node, Start: w.Since()}
	// The driver's own timeout bounds the request; the workload's end does not cut it short,
	// so that every recorded outcome is the cluster's.
	ev.Result, ev.Err = op.Apply(context.WithoutCancel(ctx), w.Sessions[node])
	ev.End = w.Since()
	w.mu.Lock()
	w.events[k.Name()] = append(w.events[k.Name()], ev)
	w.mu.Unlock()
}

// Local is a kind whose operations go through the coordinators Nodes alone, named with Label:
// a kind of one data center at LOCAL_* levels, whose reads need see only the writes made
// through the same data center (its own tables: the kind of each data center has its own).
// After the faults heal its rows are read back through every node, as every kind's are.
type Local struct {
	Kind
	Label string
	Nodes []int
}

// Name is the kind's name and the label: "inserts@LOCAL_QUORUM dc1".
func (k Local) Name() string { return k.Kind.Name() + " " + k.Label }

// Check is the kind's check, under the kind's name with the label.
func (k Local) Check(events []Event, finals []Final) Verdict {
	v := k.Kind.Check(events, finals)
	v.Kind = k.Name()
	return v
}

// Stop stops the workers and waits for the operations in flight.
func (w *Workload) Stop() {
	if w.stop == nil {
		return
	}
	w.stop()
	<-w.done
}

// Events returns the recorded events of a kind, in invocation order.
func (w *Workload) Events(kind string) []Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	evs := slices.Clone(w.events[kind])
	slices.SortStableFunc(evs, func(a, b Event) int { return int(a.Start - b.Start) })
	return evs
}

// AllEvents returns every recorded event of every kind.
func (w *Workload) AllEvents() []Event {
	var all []Event
	for _, k := range w.Kinds {
		all = append(all, w.Events(k.Name())...)
	}
	return all
}
