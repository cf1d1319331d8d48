package admission_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvnode/kvnode/frontend/admission"
)

func TestPaceWeighsScanRowsOnlyWhileOthersExecute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := admission.New(admission.Options{MaxConcurrent: 4, Scans: admission.ScanPacing{RowsPerSecond: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		// The scan's own request holds a slot: alone, it is not paced, and builds no debt.
		if _, err := c.Try("scan"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for range 5 {
			if err := c.Pace(ctx, 10000, 0); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("a scan alone was paced for %v, want not at all", d)
		}
		// Another request executes: 1,000 rows at 1,000 rows/s, less the burst of 100, wait 0.9 s.
		if _, err := c.Try("reader"); err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		if err := c.Pace(ctx, 1000, 0); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 900*time.Millisecond {
			t.Errorf("Pace(1000 rows at 1000 rows/s, burst 100) with another request executing waited %v, want 900ms", d)
		}
		// The next 500 rows wait half a second more; a context that ends first ends the wait.
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if err := c.Pace(cctx, 500, 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Pace with a context ending first = %v, want its deadline error", err)
		}
	})
}

func TestPaceOptions(t *testing.T) {
	c, err := admission.New(admission.Options{MaxConcurrent: 4, Scans: admission.ScanPacing{RowsPerSecond: -1}})
	if err != nil {
		t.Fatal(err)
	}
	c.Try("a")
	c.Try("b")
	done := make(chan error, 1)
	go func() { done <- c.Pace(context.Background(), 1<<30, 1<<40) }()
	if err := <-done; err != nil {
		t.Errorf("Pace without pacing = %v", err)
	}
	var nilC *admission.Controller
	if err := nilC.Pace(context.Background(), 10, 0); err != nil {
		t.Errorf("a nil controller's Pace = %v", err)
	}
	_, err = admission.New(admission.Options{Scans: admission.ScanPacing{RowsPerSecond: 1 << 31}})
	if err == nil || !strings.Contains(err.Error(), "scan_rows_per_second") {
		t.Errorf("New with 2^31 scan rows per second: %v, want an error naming scan_rows_per_second", err)
	}
}

// A scan read weighs its bytes in rows of ScanRowBytes when that is more than its rows: at the
// same row count, a read of large rows waits longer than one of small rows.
func TestPaceWeighsScanBytes(t *testing.T) {
	const rowsPerSecond = 1000 // a burst of 100 rows
	for _, tc := range []struct {
		name       string
		rows       int
		bytes      int
		wantWeight int // rows the read weighs: it waits (weight-100) ms
	}{
		{"small rows weigh their count", 200, 200 * 100, 200},
		{"rows of ScanRowBytes weigh their count", 200, 200 * admission.ScanRowBytes, 200},
		{"1 KiB rows weigh their bytes", 200, 200 * 1024, 200 * 1024 / admission.ScanRowBytes},
		{"a part of ScanRowBytes weighs a whole row", 200, 300*admission.ScanRowBytes + 1, 301},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, err := admission.New(admission.Options{MaxConcurrent: 4, Scans: admission.ScanPacing{RowsPerSecond: rowsPerSecond}})
				if err != nil {
					t.Fatal(err)
				}
				c.Try("scan")
				c.Try("reader") // another request executes: the scan is paced
				start := time.Now()
				if err := c.Pace(context.Background(), tc.rows, tc.bytes); err != nil {
					t.Fatal(err)
				}
				want := time.Duration(tc.wantWeight-rowsPerSecond/10) * time.Second / rowsPerSecond
				if d := time.Since(start); d != want {
					t.Errorf("Pace(%d rows, %d bytes) at %d rows/s (burst 100) waited %v, want %v (%d rows' weight)", tc.rows, tc.bytes, rowsPerSecond, d, want, tc.wantWeight)
				}
			})
		})
	}
}
