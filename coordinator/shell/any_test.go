package shell_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
)

// TestWriteAtAny: a write at ANY succeeds once a replica acknowledged it or, with every
// replica down, once the coordinator stored a hint for each (Cassandra's ANY); without hinted
// handoff that is Unavailable. Reads, counter updates and conditional statements refuse ANY,
// with Cassandra's messages where it has one.
func TestWriteAtAny(t *testing.T) {
	rec := &hintRecorder{}
	c := newCluster(t, options{hints: rec})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int)",
		"CREATE TABLE ks.c (k text PRIMARY KEY, n counter)")
	rec.reset()

	// Every replica (n1, n2) down: n3 hints both and succeeds, sending nothing.
	c.ring.setDown("n1", "n2")
	calls := c.transport.totalCalls()
	if _, err := c.exec("n3", coordinator.Any, "INSERT INTO t (k, v) VALUES ('a', 1)"); err != nil {
		t.Fatalf("a write at ANY with every replica down: %v", err)
	}
	c.settle()
	if got, want := rec.targets(), []string{"n1", "n2"}; !slices.Equal(got, want) {
		t.Errorf("hints for %v, want %v", got, want)
	}
	if got := c.transport.totalCalls() - calls; got != 0 {
		t.Errorf("a write at ANY with every replica down made %d replica calls, want none", got)
	}
	for _, m := range rec.muts {
		if len(m.Rows) != 1 || len(m.Rows[0].Cells) != 1 || m.Rows[0].Marker == nil {
			t.Errorf("hinted mutation %v, want the INSERT's row", m)
		}
	}
	// So does an unlogged batch, one hint per replica and partition.
	rec.reset()
	if _, err := c.exec("n3", coordinator.Any, "BEGIN UNLOGGED BATCH INSERT INTO t (k, v) VALUES ('b', 2); INSERT INTO t (k, v) VALUES ('c', 3); APPLY BATCH"); err != nil {
		t.Fatalf("an unlogged batch at ANY with every replica down: %v", err)
	}
	c.settle()
	if got, want := rec.targets(), []string{"n1", "n1", "n2", "n2"}; !slices.Equal(got, want) {
		t.Errorf("batch: hints for %v, want %v", got, want)
	}

	// A replica up: the write runs as ONE, reaching it; the one down is hinted.
	rec.reset()
	c.ring.setDown("n2")
	if _, err := c.exec("n3", coordinator.Any, "INSERT INTO t (k, v) VALUES ('d', 4)"); err != nil {
		t.Fatalf("a write at ANY with n1 up: %v", err)
	}
	c.settle()
	if got, want := rec.targets(), []string{"n2"}; !slices.Equal(got, want) {
		t.Errorf("with n1 up: hints for %v, want %v", got, want)
	}
	if got := c.localRows("n1", "SELECT k, v FROM t WHERE k = 'd'"); len(got) != 1 {
		t.Errorf("with n1 up: n1 holds %v, want the row", got)
	}

	// What refuses ANY.
	c.ring.setDown()
	for stmt, want := range map[string]string{
		"SELECT * FROM t WHERE k = 'a'":                                      "ANY ConsistencyLevel is only supported for writes",
		"UPDATE c SET n = n + 1 WHERE k = 'a'":                               "consistency level ANY is not yet supported for counter table c",
		"INSERT INTO t (k, v) VALUES ('e', 5) IF NOT EXISTS":                 "consistency level ANY is not supported for conditional statements",
		"UPDATE t SET v = 6 WHERE k = 'a' IF v = 1":                          "consistency level ANY is not supported for conditional statements",
		"BEGIN BATCH UPDATE t SET v = 6 WHERE k = 'a' IF v = 1; APPLY BATCH": "consistency level ANY is not supported for conditional statements",
	} {
		_, err := c.exec("n3", coordinator.Any, stmt)
		var inv *coordinator.InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s at ANY: %v, want an invalid request saying %q", stmt, err, want)
		}
	}

	// Without hinted handoff, every replica down is Unavailable.
	c2 := newCluster(t, options{})
	c2.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int)")
	c2.ring.setDown("n1", "n2")
	var un *coordinator.UnavailableError
	if _, err := c2.exec("n3", coordinator.Any, "INSERT INTO t (k, v) VALUES ('a', 1)"); !errors.As(err, &un) || un.Consistency != coordinator.Any {
		t.Errorf("a write at ANY with every replica down and no hints: %v, want Unavailable at ANY", err)
	}
}
