package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/chzyer/readline"
)

// isTerminal reports whether w is a terminal, where progress is a single updating line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && readline.IsTerminal(int(f.Fd()))
}

// The progress refresh intervals: a terminal line redraws often, plain lines come once a second.
const (
	terminalRefresh = 250 * time.Millisecond
	plainRefresh    = time.Second
	barWidth        = 30
)

// progress prints a run's counters while it runs.
type progress struct {
	w        io.Writer
	terminal bool
	st       *stats
	start    time.Time
	total    time.Duration

	lastAt   time.Duration // elapsed at the previous line
	lastDone int64         // completed operations at the previous line
}

// startProgress prints progress to w (nothing when w is nil) until the returned stop is called
// with the run's elapsed time; stop prints the final line and returns once the printing
// goroutine has exited.
func startProgress(w io.Writer, st *stats, start time.Time, total time.Duration) (stop func(elapsed time.Duration)) {
	if w == nil {
		return func(time.Duration) {}
	}
	p := &progress{w: w, terminal: isTerminal(w), st: st, start: start, total: total}
	every := plainRefresh
	if p.terminal {
		every = terminalRefresh
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.print(time.Since(start), false)
			}
		}
	}()
	return func(elapsed time.Duration) {
		close(done)
		<-exited
		p.print(elapsed, true)
	}
}

// print writes one progress line for the run at elapsed; final marks the last one.
func (p *progress) print(elapsed time.Duration, final bool) {
	st := p.st
	accepted := st.accepted.Load()
	rejected := st.rejCoord.Load() + st.rejRepl.Load()
	failed := st.failed.Load()
	done := accepted + rejected + failed
	rate := 0.0
	if d := elapsed - p.lastAt; d > 0 {
		rate = float64(done-p.lastDone) / d.Seconds()
	}
	if final && elapsed > 0 {
		rate = float64(done) / elapsed.Seconds() // the whole run's average
	}
	p.lastAt, p.lastDone = elapsed, done
	counts := fmt.Sprintf("accepted %d  rejected %d  errors %d", accepted, rejected, failed)
	if !p.terminal {
		label := ""
		if final {
			label = " done"
		}
		fmt.Fprintf(p.w, "bench: %5.1fs/%v%s  offered %d  %.0f ops/s  %s\n", elapsed.Seconds(), p.total, label, st.offered.Load(), rate, counts)
		return
	}
	filled := barWidth
	if p.total > 0 && elapsed < p.total {
		filled = int(float64(barWidth) * elapsed.Seconds() / p.total.Seconds())
	}
	bar := strings.Repeat("#", filled) + strings.Repeat("-", barWidth-filled)
	// \r returns to the line's start; \x1b[K clears what a longer previous line left behind.
	fmt.Fprintf(p.w, "\r[%s] %5.1fs/%v %8.0f ops/s  %s\x1b[K", bar, min(elapsed, p.total).Seconds(), p.total, rate, counts)
	if final {
		fmt.Fprintln(p.w)
	}
}
