package node_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
)

// A scan of large rows paced far below what a page of them needs, through gocql, while other
// requests keep the node's scan pacing on: every page answers within the scan page time
// (pages end short, with a paging state, and hold at least one row) and the pages together
// return every row exactly once.
func TestPacedScanOfLargeRowsAnswersEveryPageInTime(t *testing.T) {
	const budget = 300 * time.Millisecond
	tc := startClusterWith(t, 3, func(cfg *node.Config) {
		cfg.Coordinator.ScanPageTime = budget
		// A row of 8 KiB weighs 64 rows: 1,000 rows a second paces 15 of them a second, and
		// a page of 50 would take over 3 s.
		cfg.Admission.Scans.RowsPerSecond = 1000
	})
	c0 := tc.client(0)
	exec(t, c0, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	exec(t, c0, client.One, "CREATE TABLE ks.big (k int, c int, v text, PRIMARY KEY (k, c))")
	exec(t, c0, client.One, "CREATE TABLE ks.small (k int PRIMARY KEY, v int)")
	exec(t, c0, client.Quorum, "INSERT INTO ks.small (k, v) VALUES (1, 1)")
	value := strings.Repeat("x", 8<<10)
	s := scanSession(t, tc, 0)
	want := map[string]bool{}
	for k := range int32(8) {
		for c := range int32(6) {
			if err := s.Query("INSERT INTO big (k, c, v) VALUES (?, ?, ?)", k, c, value).Exec(); err != nil {
				t.Fatal(err)
			}
			want[fmt.Sprintf("%d/%d", k, c)] = true
		}
	}

	// Other clients' point reads through the scan's coordinator, until the scan is done: the
	// node paces scans only while it serves others.
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	reader := scanSession(t, tc, 0)
	reading := make(chan struct{})
	wg.Go(func() {
		var v int
		for i := 0; ctx.Err() == nil; i++ {
			reader.Query("SELECT v FROM small WHERE k = 1").WithContext(ctx).Scan(&v)
			if i == 0 {
				close(reading)
			}
		}
	})
	<-reading

	seen := map[string]bool{}
	var state []byte
	var slowest time.Duration
	pages := 0
	for {
		start := time.Now()
		it := s.Query("SELECT k, c, v FROM big").PageSize(50).Prefetch(0).PageState(state).Iter()
		took := time.Since(start) // the page is in; Scan reads it without another request
		pages++
		slowest = max(slowest, took)
		rows := 0
		var k, c int32
		var v string
		for it.NumRows() > rows && it.Scan(&k, &c, &v) {
			rows++
			key := fmt.Sprintf("%d/%d", k, c)
			if seen[key] {
				t.Errorf("row %s returned twice", key)
			}
			if v != value {
				t.Errorf("row %s has a value of %d bytes, want %d", key, len(v), len(value))
			}
			seen[key] = true
		}
		state = it.PageState()
		if err := it.Close(); err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if took > budget+2*time.Second {
			t.Errorf("page %d took %v; a page should end soon after its time %v", pages, took, budget)
		}
		if len(state) == 0 {
			break
		}
		if rows == 0 {
			t.Errorf("page %d is empty and has a paging state", pages)
		}
		if pages > 200 {
			t.Fatal("the scan does not end")
		}
	}
	if len(seen) != len(want) {
		t.Errorf("the scan returned %d rows, want %d", len(seen), len(want))
	}
	if pages <= 2 {
		t.Errorf("48 rows in 8 partitions came in %d pages of 50: the paced pages did not end short", pages)
	}
	t.Logf("%d rows in %d pages, the slowest %v", len(seen), pages, slowest)
}
