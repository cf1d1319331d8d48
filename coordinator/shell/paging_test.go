package shell_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

// TestRangeDeleteWithAReplicaDown deletes a range of rows at QUORUM while a replica is down:
// one range tombstone written like any other write (a range DELETE used to read the range at
// ALL first, and failed). The replica that missed it gets it from a read at ALL.
func TestRangeDeleteWithAReplicaDown(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	for i := 1; i <= 10; i++ {
		c.must(fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('a', %d, 'v%d')", i, i))
	}
	c.ring.setDown("n3")
	c.transport.setFault(failAll, "n3")
	c.clock.Advance(time.Millisecond)
	if _, err := c.exec("n1", quorum, "DELETE FROM t WHERE k = 'a' AND c > 3 AND c <= 7"); err != nil {
		t.Fatalf("range DELETE at QUORUM with n3 down: %v", err)
	}
	c.settle()
	want := []string{"1", "2", "3", "8", "9", "10"}
	for _, n := range []coordinator.NodeID{"n1", "n2"} {
		if got, err := c.query(n, quorum, "SELECT c FROM t WHERE k = 'a'"); err != nil || !slices.Equal(got, want) {
			t.Errorf("SELECT at QUORUM through %s after the DELETE = %q, %v; want %q", n, got, err, want)
		}
	}
	c.ring.setDown()
	c.transport.clearFaults()
	if got := c.localRows("n3", "SELECT c FROM t WHERE k = 'a'"); len(got) != 10 {
		t.Fatalf("n3 holds %q; it should have missed the DELETE", got)
	}
	if got, err := c.query("n1", all, "SELECT c FROM t WHERE k = 'a' AND c >= 2 AND c < 9"); err != nil || !slices.Equal(got, []string{"2", "3", "8"}) {
		t.Fatalf("SELECT at ALL = %q, %v; want 2, 3, 8", got, err)
	}
	for _, n := range nodes {
		if got := c.localRows(n, "SELECT c FROM t WHERE k = 'a'"); !slices.Equal(got, want) {
			t.Errorf("after read repair, %s holds %q, want %q", n, got, want)
		}
		if got, err := c.query(n, one, "SELECT c FROM t WHERE k = 'a'"); err != nil || !slices.Equal(got, want) {
			t.Errorf("SELECT at ONE through %s after read repair = %q, %v; want %q", n, got, err, want)
		}
	}
}

// TestRangeDeleteIsOneTombstone checks what a range DELETE sends: one range tombstone per
// replica, no read; and that it deletes rows written later with older timestamps, as a true
// range tombstone does, while newer cells survive.
func TestRangeDeleteIsOneTombstone(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.must("INSERT INTO t (k, c, v) VALUES ('a', 1, 'x') USING TIMESTAMP 50")
	calls, mutated := c.transport.totalCalls(), len(c.transport.mutated)
	c.must("DELETE FROM t USING TIMESTAMP 100 WHERE k = 'a' AND c >= 1 AND c < 5")
	if got := c.transport.totalCalls() - calls; got != 3 {
		t.Errorf("the range DELETE made %d replica calls, want 3 (one write per replica, no read)", got)
	}
	for _, m := range c.transport.mutated[mutated:] {
		if rts := m.GetMutation().GetRangeTombstones(); len(rts) != 1 || len(m.GetMutation().GetRows()) != 0 || rts[0].GetTimestamp() != 100 {
			t.Errorf("the range DELETE sent %v, want one range tombstone at 100", m.GetMutation())
		}
	}
	c.must(
		"INSERT INTO t (k, c, v) VALUES ('a', 2, 'older') USING TIMESTAMP 60",
		"INSERT INTO t (k, c, v) VALUES ('a', 3, 'newer') USING TIMESTAMP 160",
		"INSERT INTO t (k, c, v) VALUES ('a', 4, 'x') USING TIMESTAMP 70",
		"UPDATE t USING TIMESTAMP 170 SET w = 7 WHERE k = 'a' AND c = 4",
		"INSERT INTO t (k, c, v) VALUES ('a', 5, 'outside') USING TIMESTAMP 60",
	)
	want := []string{"3 'newer' null", "4 null 7", "5 'outside' null"}
	for _, cl := range []coordinator.Consistency{one, quorum, all} {
		if got, err := c.query("n2", cl, "SELECT c, v, w FROM t WHERE k = 'a'"); err != nil || !slices.Equal(got, want) {
			t.Errorf("SELECT at %v = %q, %v; want %q", cl, got, err, want)
		}
	}
	// A prefix DELETE on a table with two clustering columns.
	c.must(
		"CREATE TABLE ks.t2 (k int, c1 int, c2 text, v int, PRIMARY KEY (k, c1, c2))",
		"INSERT INTO t2 (k, c1, c2, v) VALUES (1, 1, 'a', 1)",
		"INSERT INTO t2 (k, c1, c2, v) VALUES (1, 2, 'a', 2)",
		"INSERT INTO t2 (k, c1, c2, v) VALUES (1, 2, 'b', 3)",
		"INSERT INTO t2 (k, c1, c2, v) VALUES (1, 3, 'a', 4)",
	)
	c.clock.Advance(time.Millisecond)
	c.must("DELETE FROM t2 WHERE k = 1 AND c1 = 2")
	if got, err := c.query("n3", quorum, "SELECT c1, c2 FROM t2 WHERE k = 1"); err != nil || !slices.Equal(got, []string{"1 'a'", "3 'a'"}) {
		t.Errorf("after DELETE ... WHERE k = 1 AND c1 = 2: %q, %v; want rows (1, 'a') and (3, 'a')", got, err)
	}
}

// TestLargePartitionReadAtEveryConsistency reads a partition whose rows take more than gRPC's
// 4 MiB message limit through a coordinator that is not one of its replicas, at every
// consistency level: 4,200 rows with 1 KB clustering keys. One answer per replica used to
// carry the whole partition and fail with "received message larger than max".
func TestLargePartitionReadAtEveryConsistency(t *testing.T) {
	c := newCluster(t, options{})
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.big (k int, c text, v int, PRIMARY KEY (k, c))",
	)
	const rows = 4200
	pad := strings.Repeat("x", 1000)
	for i := range rows {
		if _, err := c.exec("n1", one, fmt.Sprintf("INSERT INTO big (k, c, v) VALUES (1, '%05d%s', %d)", i, pad, i)); err != nil {
			t.Fatal(err)
		}
	}
	c.settle()
	for _, cl := range []coordinator.Consistency{one, quorum, all} {
		reads := c.transport.reads
		resp, err := c.exec("n3", cl, "SELECT c, v FROM big WHERE k = 1") // n3 is not a replica (RF 2)
		if err != nil {
			t.Fatalf("reading the partition at %v: %v", cl, err)
		}
		got := rowsOf(resp)
		if len(got) != rows {
			t.Fatalf("reading the partition at %v returned %d rows, want %d", cl, len(got), rows)
		}
		for i, r := range got {
			if c, v := int32(binary.BigEndian.Uint32(r[1])), string(r[0]); c != int32(i) || !strings.HasPrefix(v, fmt.Sprintf("%05d", i)) {
				t.Fatalf("row %d at %v is (%.5s…, %d)", i, cl, v, c)
			}
		}
		if n := c.transport.reads - reads; n < 5 {
			t.Errorf("reading the partition at %v took %d replica answers; want pages of at most 1 MiB", cl, n)
		}
	}
	// LIMIT stops the replicas' scans: one answer each.
	reads := c.transport.reads
	if resp, err := c.exec("n3", all, "SELECT c FROM big WHERE k = 1 LIMIT 3"); err != nil || len(rowsOf(resp)) != 3 {
		t.Fatalf("SELECT ... LIMIT 3 at ALL = %v, %v; want 3 rows", resp, err)
	}
	if n := c.transport.reads - reads; n != 2 {
		t.Errorf("SELECT ... LIMIT 3 at ALL took %d replica answers, want 2", n)
	}
}

// TestPagedReadRepairsARangeTombstone reads, in many small pages, a range whose range tombstone
// one replica missed: the tombstone straddles the pages, the rows under it stay deleted, and
// the replica gets it. It does so on c ASC and c DESC tables, reading in the table's order and
// in its reverse (ORDER BY), where the pages and the tombstone's bounds run the other way.
func TestPagedReadRepairsARangeTombstone(t *testing.T) {
	for _, desc := range []bool{false, true} {
		for _, reversed := range []bool{false, true} {
			t.Run(fmt.Sprintf("c DESC %t reversed %t", desc, reversed), func(t *testing.T) {
				testPagedReadRepairsARangeTombstone(t, desc, reversed)
			})
		}
	}
}

func testPagedReadRepairsARangeTombstone(t *testing.T, desc, reversed bool) {
	c := newCluster(t, options{pageBytes: 100})
	ddl, order := slices.Clone(schemaRF3), ""
	if desc {
		ddl[1] += " WITH CLUSTERING ORDER BY (c DESC)"
	}
	if reversed { // ORDER BY the other way
		order = " ORDER BY c DESC"
		if desc {
			order = " ORDER BY c ASC"
		}
	}
	c.must(ddl...)
	for i := 1; i <= 50; i++ {
		c.must(fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('a', %d, 'v')", i))
	}
	c.ring.setDown("n2")
	c.transport.setFault(failAll, "n2")
	c.clock.Advance(time.Millisecond)
	if _, err := c.exec("n1", quorum, "DELETE FROM t WHERE k = 'a' AND c >= 10 AND c < 40"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.ring.setDown()
	c.transport.clearFaults()
	var want []string
	for i := 1; i <= 50; i++ {
		if i < 10 || i >= 40 {
			want = append(want, fmt.Sprint(i))
		}
	}
	if desc != reversed { // the read returns c descending
		slices.Reverse(want)
	}
	reads := c.transport.reads
	if got, err := c.query("n2", all, "SELECT c FROM t WHERE k = 'a'"+order); err != nil || !slices.Equal(got, want) {
		t.Fatalf("SELECT at ALL in pages = %q, %v; want %q", got, err, want)
	}
	if n := c.transport.reads - reads; n < 30 {
		t.Errorf("the read took %d replica answers; the test wants small pages", n)
	}
	if got := c.localRows("n2", "SELECT c FROM t WHERE k = 'a'"+order); !slices.Equal(got, want) {
		t.Errorf("after read repair n2 holds %q, want %q", got, want)
	}
	// LIMIT across the deleted range: n2's first page is all deleted rows by the others' view.
	limited := []string{"5", "6", "7", "8", "9", "40"}
	where := " AND c >= 5"
	if desc != reversed {
		limited = []string{"44", "43", "42", "41", "40", "9"}
		where = " AND c <= 44"
	}
	if got, err := c.query("n2", all, "SELECT c FROM t WHERE k = 'a'"+where+order+" LIMIT 6"); err != nil || !slices.Equal(got, limited) {
		t.Errorf("SELECT ... LIMIT 6 across the range = %q, %v; want %q", got, err, limited)
	}
}

// TestTombstoneThreshold reads a partition with more tombstones than the replicas allow: the
// read fails with an error that names the table, the partition and the threshold.
func TestTombstoneThreshold(t *testing.T) {
	c := newCluster(t, options{tombstones: 100, tombstoneWarn: 40, pageBytes: 1000})
	c.must(schemaRF3...)
	for i := 1; i <= 150; i++ {
		c.must(fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('a', %d, 'v')", i))
	}
	c.clock.Advance(time.Millisecond)
	for i := 1; i <= 50; i++ {
		c.must(fmt.Sprintf("DELETE FROM t WHERE k = 'a' AND c = %d", i))
	}
	resp, err := c.exec("n1", quorum, "SELECT c FROM t WHERE k = 'a'")
	if err != nil || len(rowsOf(resp)) != 100 {
		t.Fatalf("reading 50 row tombstones: %v, %v; want 100 rows", resp, err)
	}
	want := `read 100 live rows and 50 tombstones of partition (k="a") of table ks.t (more than the tombstone warn threshold, 40)`
	if !slices.Equal(resp.Warnings, []string{want}) {
		t.Errorf("reading 50 row tombstones warned %q, want %q", resp.Warnings, want)
	}
	if resp, err = c.exec("n1", quorum, "SELECT c FROM t WHERE k IN ('a', 'b')"); err != nil || !slices.Equal(resp.Warnings, []string{want}) {
		t.Errorf("an IN reading them: %v, warned %q; want %q", err, resp.Warnings, want)
	}
	for i := 51; i <= 120; i++ {
		c.must(fmt.Sprintf("DELETE FROM t WHERE k = 'a' AND c = %d", i))
	}
	_, err = c.query("n1", quorum, "SELECT c FROM t WHERE k = 'a'")
	var fe *coordinator.FailureError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), `TOO_MANY_TOMBSTONES: replica: too many tombstones: table ks.t: the read of partition (k="a") scanned more than 100 tombstones`) {
		t.Fatalf("reading 120 row tombstones with a threshold of 100: %v, want a failure naming the threshold", err)
	}
	if r := fe.Reason(); r != coordinator.FailureTooManyTombstones {
		t.Errorf("the failure's reason is %v, want too_many_tombstones (FAILED_PRECONDITION for gRPC clients)", r)
	}
	// One range tombstone over the deleted rows replaces them in the count.
	c.clock.Advance(time.Millisecond)
	c.must("DELETE FROM t WHERE k = 'a' AND c <= 120")
	if resp, err := c.exec("n1", quorum, "SELECT c FROM t WHERE k = 'a'"); err != nil || len(rowsOf(resp)) != 30 || len(resp.Warnings) != 0 {
		t.Errorf("after a range tombstone over the deleted rows: %v, %v; want 30 rows and no warning", resp, err)
	}
}

// TestPagedReadsAndRangeDeletesAreLimitedOnce checks the limiter's view of the new operations:
// a read of many pages counts once (its further pages are exempt), and a range DELETE counts
// as one write.
func TestPagedReadsAndRangeDeletesAreLimitedOnce(t *testing.T) {
	c := newCluster(t, options{draw: 0.99, pageBytes: 50})
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text, c int, v text, w int, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 5, 'max_reads_per_second': 5}",
	)
	for i := range 20 {
		// Writes to 'hot' are limited too: five per (fake) second.
		if _, err := c.exec("n1", quorum, fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('hot', %d, 'x')", i)); err != nil {
			t.Fatal(err)
		}
		if i%5 == 4 {
			c.clock.Advance(10 * time.Second) // a new burst of 5 on an empty counter
		}
	}
	c.settle()
	c.clock.Advance(10 * time.Second) // the counters decay to zero
	// 2L = 10 operations in one second are always admitted; with r = 0.99 the 11th is not.
	for i := range 10 {
		reads := c.transport.reads
		if got, err := c.query("n1", quorum, "SELECT c FROM t WHERE k = 'hot'"); err != nil || len(got) != 20 {
			t.Fatalf("paged read %d of 10 at limit 5: %d rows, %v", i+1, len(got), err)
		}
		if n := c.transport.reads - reads; n < 10 {
			t.Fatalf("read %d took %d replica answers; the test wants many pages", i+1, n)
		}
	}
	var rl *coordinator.RateLimitError
	if _, err := c.query("n1", quorum, "SELECT c FROM t WHERE k = 'hot'"); !errors.As(err, &rl) || rl.Op != coordinator.OpRead {
		t.Errorf("read 11 at limit 5: %v, want a read rate limit error", err)
	}
	for i := range 10 {
		if _, err := c.exec("n1", quorum, fmt.Sprintf("DELETE FROM t WHERE k = 'hot' AND c > %d", 30+i)); err != nil {
			t.Fatalf("range DELETE %d of 10 at limit 5: %v", i+1, err)
		}
	}
	if _, err := c.exec("n1", quorum, "DELETE FROM t WHERE k = 'hot' AND c > 50"); !errors.As(err, &rl) || rl.Op != coordinator.OpWrite {
		t.Errorf("range DELETE 11 at limit 5: %v, want a write rate limit error", err)
	}
}
