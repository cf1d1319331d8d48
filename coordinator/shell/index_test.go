package shell_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

// indexCluster starts the harness with index builders, a scan page time of budget and a pacer of
// perRow a row, creates an index on ks.t's v, writes parts partitions of rows rows with v = 'x'
// and one more with v = 'y', and waits until every replica has built the index.
func indexCluster(t *testing.T, budget, perRow time.Duration, parts, rows int) (*cluster, *slowPacer) {
	pacer := &slowPacer{perRow: perRow}
	c := newCluster(t, options{scanPageTime: budget, scanPacer: pacer, indexes: true})
	c.must(schemaRF3...)
	c.must("CREATE INDEX ON t (v)")
	ins := c.prepare("n1", "INSERT INTO t (k, c, v) VALUES (?, ?, ?)")
	write := func(k, i int, v string) {
		if _, err := c.run("n1", coordinator.Statement{Prepared: ins, Values: []coordinator.Value{text(fmt.Sprint(k)), intv(int32(i)), text(v)}}); err != nil {
			t.Fatal(err)
		}
	}
	for k := range parts {
		for i := range rows {
			write(k, i, "x")
		}
	}
	write(parts, 0, "y")
	c.settle()
	for { // the builders look for new indexes every 50 ms (synctest's clock)
		_, err := c.query("n2", all, "SELECT k FROM t WHERE v = 'y'")
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "not built yet") {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pacer.calls.Store(0)
	pacer.rows.Store(0)
	return c, pacer
}

// An index query's partitions read back are weighed by the scan pacer, each row once, and a
// paged query whose pacing would take longer than its page's time returns short pages within
// the time, each with rows, together every matching row exactly once.
func TestIndexQueriesArePaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget = 100 * time.Millisecond
		c, pacer := indexCluster(t, budget, 10*time.Millisecond, 40, 3)
		st := coordinator.Statement{Text: "SELECT k, c FROM t WHERE v = 'x'", PageSize: 1000}
		seen, pages := pageThrough(t, c, st, func(page int, res coordinator.Result, took time.Duration) {
			if took > budget {
				t.Errorf("page %d took %v, more than its time %v", page, took, budget)
			}
			if len(res.Rows.Values) == 0 && res.PagingState != nil {
				t.Errorf("page %d is empty and has a paging state", page)
			}
		})
		if len(seen) != 120 || pages < 3 {
			t.Errorf("%d rows in %d pages, want the 120 matching rows in short pages", len(seen), pages)
		}
		if n := pacer.rows.Load(); n != 120 {
			t.Errorf("the pacer weighed %d rows, want the 120 read back", n)
		}
	})
}

// Without a page's time (an unpaged query), pacing waits as long as the rows weigh: the query
// answers every row after their weight in time.
func TestUnpagedIndexQueryWaitsForItsPacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, pacer := indexCluster(t, 100*time.Millisecond, time.Millisecond, 20, 3)
		start := time.Now()
		rows, err := c.query("n2", quorum, "SELECT k, c FROM t WHERE v = 'x'")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 60 || pacer.rows.Load() != 60 {
			t.Errorf("%d rows, %d weighed; want 60 and 60", len(rows), pacer.rows.Load())
		}
		if took := time.Since(start); took < 60*time.Millisecond {
			t.Errorf("the query took %v, want at least its rows' weight, 60 ms", took)
		}
	})
}
