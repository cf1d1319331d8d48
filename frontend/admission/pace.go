package admission

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/kvnode/kvnode/internal/loop"
)

// DefaultScanRowsPerSecond is ScanPacing's default: the rows per second the node's scans read,
// together, while other client requests are executing (rows of up to ScanRowBytes each).
const DefaultScanRowsPerSecond = 5000

// ScanRowBytes is the bytes of data one row of ScanPacing.RowsPerSecond stands for: a scan read
// weighs max(rows, ⌈bytes/ScanRowBytes⌉) rows, so a page of large rows weighs the work its bytes
// are rather than only its row count (the default rate was sized on rows of about 100 bytes).
const ScanRowBytes = 128

// ScanPacing configures how the node weighs scans (Controller.Pace). The zero value means the
// defaults.
type ScanPacing struct {
	// RowsPerSecond bounds the rows per second the node's scans read, together, while other
	// client requests are executing: a scan read weighs the rows it read, or its bytes in rows
	// of ScanRowBytes when that is more (a row of 1 KiB weighs 8), so one scan cannot take the
	// node's time from point reads. A scan running alone is not paced. Default
	// DefaultScanRowsPerSecond; negative means no pacing.
	RowsPerSecond int `yaml:"scan_rows_per_second"`
}

// pacer is a Controller's scan pacing: a token bucket of rows (of ScanRowBytes), refilled at the
// configured rate, which a scan drains by the weight of each of its reads (scanWeight).
type pacer struct {
	lim *rate.Limiter // nil: no pacing
	// seen is the controller's arrivals count at the last Pace, and at the time busyUntil was set;
	// the node counts as serving other requests until busyUntil, a second after Pace last saw
	// more requests arrive than the scans' own (guarded by Controller.mu).
	seen      uint64
	busyUntil time.Time
}

// othersActive reports whether other client requests than the scans' own pages arrived at the
// node within the last second, or execute now. It costs a scan's own page one arrival per Pace.
func (c *Controller) othersActive(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := &c.pace
	if c.arrivals > p.seen+1 || c.inFlight > 1 {
		p.busyUntil = now.Add(time.Second)
	}
	p.seen = c.arrivals
	return now.Before(p.busyUntil)
}

func newPacer(p ScanPacing) (pacer, error) {
	switch {
	case p.RowsPerSecond == 0:
		p.RowsPerSecond = DefaultScanRowsPerSecond
	case p.RowsPerSecond < 0:
		return pacer{}, nil
	}
	if p.RowsPerSecond > 1<<30 {
		return pacer{}, fmt.Errorf("admission: ScanPacing.RowsPerSecond (scan_rows_per_second) is %d, want at most %d (or negative for no pacing)", p.RowsPerSecond, 1<<30)
	}
	// A burst of a tenth of a second: a scan that starts at once while others execute reads that
	// much before it is paced.
	return pacer{lim: rate.NewLimiter(rate.Limit(p.RowsPerSecond), max(p.RowsPerSecond/10, 1))}, nil
}

// scanWeight is the rows a scan read of rows rows and bytes bytes weighs: its rows, or its bytes
// in rows of ScanRowBytes (rounded up) when that is more.
func scanWeight(rows, bytes int) int {
	return max(rows, bytes/ScanRowBytes+min(bytes%ScanRowBytes, 1))
}

// Pace weighs work a scan did (rows and bytes, the rows its last read returned and their size:
// keys, column names and values) as scanWeight rows and waits, before the scan goes on, as long as the node's scan rate (ScanPacing) asks while the node serves other client
// requests (any arrived within the last second besides the scan's pages, or more than one
// executes); a scan that runs alone goes on at once. It returns ctx's error if ctx ends first. A
// nil *Controller never waits.
func (c *Controller) Pace(ctx context.Context, rows, bytes int) error {
	if c == nil || c.pace.lim == nil {
		return nil
	}
	rows = scanWeight(rows, bytes)
	if rows <= 0 {
		return nil
	}
	now := time.Now()
	if !c.othersActive(now) {
		return nil // alone: no one to make room for, and no debt
	}
	burst := c.pace.lim.Burst()
	var wait time.Duration
	for rows > 0 {
		n := min(rows, burst)
		rows -= n
		wait = max(wait, c.pace.lim.ReserveN(now, n).DelayFrom(now))
	}
	if wait <= 0 {
		return nil
	}
	return loop.Sleep(ctx, wait)
}
