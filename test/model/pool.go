package model

import (
	"context"
	"errors"
	"hash/fnv"
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
		p.runners = append(p.runners, NewRunner(w))
	}
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

func (p *Pool) worker(op *Op) *Runner {
	h := fnv.New32a()
	h.Write([]byte(partKey(op.Table, op.PK)))
	return p.runners[int(h.Sum32()%uint32(len(p.runners)))]
}

// Run runs ops, each partition's in order on its worker, and returns when all have run or
// the first error (a *Violation, or why the run cannot go on) stopped them.
func (p *Pool) Run(parent context.Context, ops []*Op, target Target) error {
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
			for _, op := range q {
				if err := r.Run(ctx, op, target); err != nil {
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

// Stats sums the workers' counts.
func (p *Pool) Stats() Stats {
	var s Stats
	for _, r := range p.runners {
		s.Add(r.Stats)
	}
	return s
}
