package shell_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// The harness's ring as scans see it (shell.RangeRing): eight token ranges of equal width, each
// replicated on every node as the ring's AppendReplicas says.
func (r *ring) RangeEnd(token int64) (int64, bool) {
	const width = 1 << 61
	if token > math.MaxInt64-width+1 {
		return math.MaxInt64, true
	}
	// The first multiple of width minus one at or after token.
	end := (token/width)*width - 1
	for end < token {
		end += width
	}
	return end, true
}

// ReadRange delivers a range read to a replica service, heeding the transport's faults.
func (t *transport) ReadRange(ctx context.Context, to coordinator.NodeID, req *replicapb.RangeReadRequest) (*replicapb.RangeReadResponse, error) {
	svc, err := t.begin(ctx, to, false)
	if err != nil {
		return nil, err
	}
	resp, err := svc.ReadRange(ctx, overTheWire(req))
	return overTheWire(resp), err
}

// slowPacer paces scans at perRow a row, whatever else the node serves: each Pace waits rows ×
// perRow, or until ctx ends.
type slowPacer struct {
	perRow time.Duration
	calls  atomic.Int64
	rows   atomic.Int64 // weighed
	waited atomic.Int64 // nanoseconds
}

func (p *slowPacer) Pace(ctx context.Context, rows, _ int) error {
	p.calls.Add(1)
	p.rows.Add(int64(rows))
	start := time.Now()
	defer func() { p.waited.Add(int64(time.Since(start))) }()
	select {
	case <-time.After(time.Duration(rows) * p.perRow):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// scanBudgetCluster starts the harness with a scan page time of budget and a pacer of perRow a
// row, and writes parts partitions of rows rows each to ks.t.
func scanBudgetCluster(t *testing.T, budget, perRow time.Duration, parts, rows int) (*cluster, *slowPacer) {
	pacer := &slowPacer{perRow: perRow}
	c := newCluster(t, options{scanPageTime: budget, scanPacer: pacer})
	c.must(schemaRF3...)
	ins := c.prepare("n1", "INSERT INTO t (k, c, v) VALUES (?, ?, 'x')")
	for k := range parts {
		for i := range rows {
			if _, err := c.run("n1", coordinator.Statement{Prepared: ins, Values: []coordinator.Value{text(fmt.Sprint(k)), intv(int32(i))}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.settle()
	return c, pacer
}

// pageThrough runs st on n2 page after page to the last, hands check each page's number, result
// and time, and returns the rows seen (an error for a row seen twice) and the number of pages.
func pageThrough(t *testing.T, c *cluster, st coordinator.Statement, check func(page int, res coordinator.Result, took time.Duration)) (map[string]bool, int) {
	t.Helper()
	seen := map[string]bool{}
	for page := 1; ; page++ {
		start := time.Now()
		res, err := c.run("n2", st)
		if err != nil {
			t.Fatalf("%s page %d: %v", st.Text, page, err)
		}
		check(page, res, time.Since(start))
		for _, r := range formatRows(res.Rows) {
			if seen[r] {
				t.Errorf("%s: row %s returned twice", st.Text, r)
			}
			seen[r] = true
		}
		if res.PagingState == nil {
			return seen, page
		}
		st.PagingState = res.PagingState
	}
}

// A paged scan whose pacing would take longer than the page's time returns short pages, each
// within the time (the pacing's waits cut at its end), each with at least one row, and together
// every row exactly once. A filtered page that matched nothing in its time reads on, paced, for
// half its time again, and only then ends empty.
func TestScanPagesEndWithinTheirTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget = 100 * time.Millisecond
		c, pacer := scanBudgetCluster(t, budget, 5*time.Millisecond, 40, 10)
		for i := range 10 {
			c.must(fmt.Sprintf("UPDATE t SET w = 1 WHERE k = '7' AND c = %d", i))
		}
		for _, tt := range []struct {
			text   string
			want   int
			sparse bool // matches too few rows to fill each page's time
		}{
			{"SELECT k, c FROM t", 400, false},
			{"SELECT k, c FROM t WHERE token(k) > -4611686018427387904 AND token(k) <= 4611686018427387904", -1, false},
			{"SELECT k, c FROM t WHERE c < 5 ALLOW FILTERING", 200, false},
			{"SELECT k, c FROM t WHERE c = 9 ALLOW FILTERING", 40, false},
			// One partition matches: the pages before it end empty, after half their time again.
			{"SELECT k, c FROM t WHERE w = 1 ALLOW FILTERING", 10, true},
			{"SELECT k, c FROM t PER PARTITION LIMIT 3", 120, false},
		} {
			want := tt.want
			if want < 0 { // the token range's rows, from an unpaged read
				all, err := c.query("n2", quorum, tt.text)
				if err != nil {
					t.Fatal(err)
				}
				want = len(all)
			}
			st := coordinator.Statement{Text: tt.text, PageSize: 1000}
			seen, pages := pageThrough(t, c, st, func(page int, res coordinator.Result, took time.Duration) {
				switch {
				case len(res.Rows.Values) > 0:
					if took > budget {
						t.Errorf("%s: page %d took %v, more than its time %v", tt.text, page, took, budget)
					}
				case res.PagingState == nil: // the scan's end
					if took > budget*3/2 {
						t.Errorf("%s: the last page, empty, took %v, more than half its time again (%v)", tt.text, took, budget*3/2)
					}
				case !tt.sparse:
					t.Errorf("%s: page %d is empty and has a paging state", tt.text, page)
				case took != budget*3/2:
					t.Errorf("%s: empty page %d took %v, want half its time again (%v)", tt.text, page, took, budget*3/2)
				}
			})
			if len(seen) != want {
				t.Errorf("%s returned %d rows in %d pages, want %d", tt.text, len(seen), pages, want)
			}
			if pages < 3 && want >= 40 {
				t.Errorf("%s returned its rows in %d pages of 1000 rows, want short pages", tt.text, pages)
			}
		}
		if pacer.calls.Load() == 0 {
			t.Error("the scans were never paced")
		}
	})
}

// A filtered scan that matches one row in 6,000 returns it in a page of its own, with no empty
// page before it, when the scan is not slowed: a page ends on its time, not on a count of rows
// scanned (the Node.js driver's async iterator ends at an empty page).
func TestSparseFilterGivesNoEmptyPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := scanBudgetCluster(t, time.Second, 0, 60, 100)
		c.must("UPDATE t SET w = 1 WHERE k = '41' AND c = 77")
		st := coordinator.Statement{Text: "SELECT k, c FROM t WHERE w = 1 ALLOW FILTERING", PageSize: 100}
		var got []string
		for pages := 1; ; pages++ {
			res, err := c.run("n2", st)
			if err != nil {
				t.Fatal(err)
			}
			if res.PagingState != nil && len(res.Rows.Values) == 0 {
				t.Fatalf("page %d is empty and has a paging state", pages)
			}
			got = append(got, formatRows(res.Rows)...)
			if res.PagingState == nil {
				break
			}
			st.PagingState = res.PagingState
		}
		if want := []string{"'41' 77"}; !slices.Equal(got, want) {
			t.Errorf("the sparse filter returned %q, want %q", got, want)
		}
	})
}

// An aggregate over a scan and an unpaged scan read every row before they answer: they are
// not cut short by the page time, and stay paced.
func TestScanAggregatesAndUnpagedScansAreNotCutShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget = 10 * time.Millisecond
		c, pacer := scanBudgetCluster(t, budget, time.Millisecond, 30, 10)
		for _, tt := range []struct {
			st   coordinator.Statement
			want []string
		}{
			{coordinator.Statement{Text: "SELECT count(*) FROM t", PageSize: 5}, []string{"300"}},
			{coordinator.Statement{Text: "SELECT count(*) FROM t WHERE c < 4 ALLOW FILTERING", PageSize: 5}, []string{"120"}},
			{coordinator.Statement{Text: "SELECT k, count(*) FROM t GROUP BY k", PageSize: 1000}, nil},
		} {
			before := time.Duration(pacer.waited.Load())
			start := time.Now()
			res, err := c.run("n3", tt.st)
			if err != nil {
				t.Fatalf("%s: %v", tt.st.Text, err)
			}
			got := formatRows(res.Rows)
			if tt.want == nil {
				if len(got) != 30 || res.PagingState != nil {
					t.Errorf("%s = %d groups, paging state %x; want the 30 partitions' groups on one page", tt.st.Text, len(got), res.PagingState)
				}
			} else if !slices.Equal(got, tt.want) {
				t.Errorf("%s = %q, want %q", tt.st.Text, got, tt.want)
			}
			if took, paced := time.Since(start), time.Duration(pacer.waited.Load())-before; took < 3*budget || paced < 3*budget {
				t.Errorf("%s took %v, paced %v: want the pacing of every row (300 ms), past the page time %v", tt.st.Text, took, paced, budget)
			}
		}
		all, err := c.query("n1", quorum, "SELECT k, c FROM t")
		if err != nil || len(all) != 300 {
			t.Errorf("an unpaged scan returned %d rows (%v), want 300", len(all), err)
		}
	})
}
