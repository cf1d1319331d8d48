package native

import "sync"

// budget bounds the bytes of requests and answers a connection, or the whole server, holds in
// memory. A request's body is taken from it when the frame is read and given back once the
// statement has run; an answer's size is taken before it is queued and given back once it is
// written. The reader and the request goroutines block while the budget is spent, which stops
// the connection being read: backpressure, as with the in-flight count, but in bytes, so that a
// client cannot make the node hold MaxInFlight large frames or large results (for example by
// sending many big SELECTs and never reading the answers).
//
// One item larger than the whole budget is admitted when nothing else is held, so that every
// frame the frame limit allows can still be served.
type budget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	limit int64
	used  int64
}

func newBudget(limit int64) *budget {
	b := &budget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire takes n bytes, waiting while they do not fit, until done is closed (it then returns
// false and takes nothing). A nil budget admits everything.
func (b *budget) acquire(n int64, done <-chan struct{}) bool {
	if b == nil || n <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used > 0 && b.used+n > b.limit {
		select {
		case <-done:
			return false
		default:
		}
		b.cond.Wait()
	}
	select {
	case <-done:
		return false
	default:
	}
	b.used += n
	return true
}

// release gives back n bytes taken by acquire.
func (b *budget) release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// wake wakes the waiters so that they notice a closed done channel. It takes the lock, so a
// waiter between its check of done and its Wait cannot miss the wake-up.
func (b *budget) wake() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.cond.Broadcast()
	b.mu.Unlock()
}

// held reports the bytes taken, for tests and metrics.
func (b *budget) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// acquireBoth takes n bytes from the connection's budget, then the server's, or neither.
func acquireBoth(conn, srv *budget, n int64, done <-chan struct{}) bool {
	if !conn.acquire(n, done) {
		return false
	}
	if !srv.acquire(n, done) {
		conn.release(n)
		return false
	}
	return true
}

// tryAcquire takes n bytes if they fit now (as acquire would take them without waiting), and
// reports whether it did.
func (b *budget) tryAcquire(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used > 0 && b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// tryAcquireBoth is acquireBoth without waiting: it takes n bytes from both budgets if they fit
// now, or neither.
func tryAcquireBoth(conn, srv *budget, n int64) bool {
	if !conn.tryAcquire(n) {
		return false
	}
	if !srv.tryAcquire(n) {
		conn.release(n)
		return false
	}
	return true
}

// releaseBoth gives n bytes back to both budgets.
func releaseBoth(conn, srv *budget, n int64) {
	conn.release(n)
	srv.release(n)
}

// answerSize estimates the bytes an answer holds until it is written: its rows' values (the
// only part that can be large), plus a fixed allowance for the rest.
func answerSize(msg any) int64 {
	const overhead = 256
	r, ok := msg.(*rows)
	if !ok {
		return overhead
	}
	n := int64(overhead + 64*len(r.cols))
	for _, row := range r.values {
		for _, v := range row {
			n += 4 + int64(len(v))
		}
	}
	return n
}
