package model

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"sync"

	"github.com/kvnode/kvnode/client"
)

// Pool runs operations on several workers at once. Each partition belongs to one worker, which
// runs its operations one at a time in history order with its own Runner and model, so every
// partition's history is exactly the sequential one the model reasons about (its operations'
// wall-clock intervals are disjoint and ordered), while the cluster serves several partitions
// concurrently.
type Pool struct {
	W       *Workload
	runners []*Runner
}

// NewPool returns a pool of workers (at least one) for w.
func NewPool(w *Workload, workers int) *Pool {
	p := &Pool{W: w}
	for range max(workers, 1) {
		r := NewRunner(w)
		r.ModelOf = func(t *Table, pk []Val) *Model { return p.worker(&Op{Table: t, PK: pk}).M }
		p.runners = append(p.runners, r)
	}
	w.Together = func(t *Table, a, b []Val) bool { return p.workerOf(t, a) == p.workerOf(t, b) }
	return p
}

// SetReplay sets the replay command every worker's violations print.
func (p *Pool) SetReplay(cmd string) {
	for _, r := range p.runners {
		r.Replay = cmd
	}
}

// Setup creates the workload's schema through c.
func (p *Pool) Setup(ctx context.Context, c *client.Client) error { return p.runners[0].Setup(ctx, c) }

// Next returns the workload's next n operations.
func (p *Pool) Next(n int) []*Op {
	ops := make([]*Op, n)
	for i := range ops {
		ops[i] = p.W.Next()
	}
	return ops
}

func (p *Pool) worker(op *Op) *Runner { return p.workerOf(op.Table, op.PK) }

// workerOf returns the worker of partition pk of t: the one whose model checks it.
func (p *Pool) workerOf(t *Table, pk []Val) *Runner {
	h := fnv.New32a()
	h.Write([]byte(partKey(t, pk)))
	return p.runners[int(h.Sum32()%uint32(len(p.runners)))]
}

// Run runs ops, each partition's in order on its worker, and returns when all have run or
// the first error (a *Violation, or why the run cannot go on) stopped them. A scan runs alone:
// the operations before it have all ended when it starts, and those after it start once it
// has ended, so that every partition's history is still sequential.
func (p *Pool) Run(parent context.Context, ops []*Op, target Target) error {
	for len(ops) > 0 {
		i := slices.IndexFunc(ops, func(op *Op) bool { return op.Kind == Scan })
		if i < 0 {
			return p.runConcurrently(parent, ops, target)
		}
		if err := p.runConcurrently(parent, ops[:i], target); err != nil {
			return err
		}
		if err := p.runners[0].Run(parent, ops[i], target); err != nil {
			return err
		}
		ops = ops[i+1:]
	}
	return parent.Err()
}

// runConcurrently runs ops, none a scan, each partition's in order on its worker.
func (p *Pool) runConcurrently(parent context.Context, ops []*Op, target Target) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	queues := map[*Runner][]*Op{}
	for _, op := range ops {
		r := p.worker(op)
		queues[r] = append(queues[r], op)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for _, r := range p.runners {
		q := queues[r]
		wg.Go(func() {
			paired := make([]bool, len(q))
			for i, op := range q {
				if paired[i] {
					continue
				}
				var partner []*Op
				if j := batchPartner(q, paired, i); j >= 0 {
					paired[j] = true
					partner = []*Op{q[j]}
				}
				if err := r.Run(ctx, op, target, partner...); err != nil {
					mu.Lock()
					if firstErr == nil && !errors.Is(err, context.Canceled) {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return parent.Err()
}

// batchPartner returns the index in q of the write that q[i] is batched with (batched), or -1:
// the next write of the queue, not yet paired, to another partition (a BATCH of one partition's
// writes shares one timestamp, which the model's ordering of a coordinator's writes does not
// describe), among the next few. The queue is one worker's, so both partitions' histories stay
// sequential on that worker.
func batchPartner(q []*Op, paired []bool, i int) int {
	op := q[i]
	// Counter updates go in COUNTER batches alone, which the model does not pair.
	// A conditional write goes alone too (a conditional BATCH names one partition).
	if batch, _ := batched(op); !batch || !op.Kind.IsWrite() || !direct(op) || op.Table.Counter || op.IfNotExists {
		return -1
	}
	for j := i + 1; j < len(q) && j <= i+8; j++ {
		o := q[j]
		if !paired[j] && o.Kind.IsWrite() && !o.Table.Counter && !o.IfNotExists && partKey(o.Table, o.PK) != partKey(op.Table, op.PK) {
			return j
		}
	}
	return -1
}

// Stats sums the workers' counts.
func (p *Pool) Stats() Stats {
	var s Stats
	for _, r := range p.runners {
		s.Add(r.Stats)
	}
	return s
}
