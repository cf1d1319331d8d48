package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/client"
)

// opCounts counts the outcomes of a fixed number of operations.
type opCounts struct {
	Ops           int64   `json:"ops"`
	Accepted      int64   `json:"accepted"`
	ByCoordinator int64   `json:"rejected_by_coordinator"`
	ByReplicas    int64   `json:"rejected_by_replicas"`
	Errors        int64   `json:"errors"`
	ElapsedS      float64 `json:"elapsed_s"`
	FirstError    string  `json:"first_error,omitempty"`
}

// add returns the counts of o and p together (the first error of o, else of p).
func (o opCounts) add(p opCounts) opCounts {
	o.Ops += p.Ops
	o.Accepted += p.Accepted
	o.ByCoordinator += p.ByCoordinator
	o.ByReplicas += p.ByReplicas
	o.Errors += p.Errors
	o.ElapsedS += p.ElapsedS
	if o.FirstError == "" {
		o.FirstError = p.FirstError
	}
	return o
}

// rejected returns the rate-limited operations.
func (o opCounts) rejected() int64 { return o.ByCoordinator + o.ByReplicas }

// drive runs op(ctx, 0) ... op(ctx, n-1) from workers goroutines and counts the outcomes: a
// rate-limit error of either protocol (rateLimited) is a rejection, any other error an error. With rate 0 each worker
// starts its next operation when the previous one returns (closed loop); with rate > 0
// operation i is handed to the workers at i/rate seconds after the start (open loop; it waits
// for a free worker if there is none). It returns when all n have run or ctx ends.
func drive(ctx context.Context, n int64, workers int, rate float64, op func(ctx context.Context, i int64) error) opCounts {
	var next, started, acc, byCoord, byRepl, errs atomic.Int64
	var firstErr sync.Once
	var first string
	record := func(err error) {
		limited, byCoordinator := rateLimited(err)
		switch {
		case err == nil:
			acc.Add(1)
		case limited && byCoordinator:
			byCoord.Add(1)
		case limited:
			byRepl.Add(1)
		default:
			errs.Add(1)
			firstErr.Do(func() { first = err.Error() })
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	if rate <= 0 {
		for range workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					i := next.Add(1) - 1
					if i >= n {
						return
					}
					started.Add(1)
					record(op(ctx, i))
				}
			})
		}
	} else {
		due := make(chan int64, workers)
		for range workers {
			wg.Go(func() {
				for i := range due {
					started.Add(1)
					record(op(ctx, i))
				}
			})
		}
		pace(ctx, start, n, rate, due)
	}
	wg.Wait()
	return opCounts{Ops: started.Load(), Accepted: acc.Load(), ByCoordinator: byCoord.Load(),
		ByReplicas: byRepl.Load(), Errors: errs.Load(), ElapsedS: time.Since(start).Seconds(), FirstError: first}
}

// rateLimited reports whether err is a rate-limit rejection, from the gRPC client
// (*client.RateLimitError) or gocql (*gocql.RequestErrRateLimitReached), and whether the
// coordinator rejected it on its own.
func rateLimited(err error) (limited, byCoordinator bool) {
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

// pace sends 0 ... n-1 on due, i at start + i/rate, and closes due; it stops early when ctx ends.
// After a late wake-up every index already due is sent at once.
func pace(ctx context.Context, start time.Time, n int64, rate float64, due chan<- int64) {
	defer close(due)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := range n {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if wait := time.Until(at); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		select {
		case <-ctx.Done():
			return
		case due <- i:
		}
	}
}
