package shell_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
)

// mutations returns how many mutations the replicas received so far.
func (t *transport) mutations() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.mutated)
}

func TestBatchStatement(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	before := c.transport.mutations()
	res, err := c.run("n1", coordinator.Statement{Text: `BEGIN BATCH
		INSERT INTO t (k, c, v) VALUES ('a', 1, 'x');
		INSERT INTO t (k, c, v) VALUES ('a', 2, ?);
		UPDATE t SET v = 'z' WHERE k = 'a' AND c = 3;
	APPLY BATCH`, Values: []coordinator.Value{text("y")}})
	if err != nil || len(res.Warnings) != 0 {
		t.Fatalf("a LOGGED BATCH of one partition: %v, warnings %q", err, res.Warnings)
	}
	c.settle()
	if n := c.transport.mutations() - before; n != 3 {
		t.Errorf("a BATCH of three writes to one partition sent %d mutations, want 3 (one per replica)", n)
	}
	if got, _ := c.query("n2", all, "SELECT c, v FROM t WHERE k = 'a'"); !slices.Equal(got, []string{"1 'x'", "2 'y'", "3 'z'"}) {
		t.Errorf("after the BATCH: %q", got)
	}

	// Two partitions: a LOGGED batch goes through the batchlog and does not warn; neither does
	// an UNLOGGED one.
	res, err = c.run("n1", coordinator.Statement{Text: "BEGIN BATCH INSERT INTO t (k, c) VALUES ('b', 1) INSERT INTO t (k, c) VALUES ('c', 1) APPLY BATCH"})
	if err != nil || len(res.Warnings) != 0 {
		t.Errorf("a LOGGED BATCH of two partitions: %v, warnings %q", err, res.Warnings)
	}
	res, err = c.run("n1", coordinator.Statement{Text: "BEGIN UNLOGGED BATCH INSERT INTO t (k, c) VALUES ('b', 2) INSERT INTO t (k, c) VALUES ('c', 2) APPLY BATCH"})
	if err != nil || len(res.Warnings) != 0 {
		t.Errorf("an UNLOGGED BATCH of two partitions: %v, warnings %q", err, res.Warnings)
	}
	for _, k := range []string{"b", "c"} {
		if got, _ := c.query("n3", quorum, "SELECT c FROM t WHERE k = '"+k+"'"); !slices.Equal(got, []string{"1", "2"}) {
			t.Errorf("partition %s after the batches: %q, want 1, 2", k, got)
		}
	}

	// One timestamp for every write: a DELETE and a later INSERT of the same row tie, and the
	// tombstone wins the tie, as in Cassandra (with a timestamp per statement the INSERT would win).
	c.must("INSERT INTO t (k, c) VALUES ('d', 1)")
	c.clock.Advance(1000)
	if _, err := c.run("n1", coordinator.Statement{Text: "BEGIN BATCH DELETE FROM t WHERE k = 'd' AND c = 1; INSERT INTO t (k, c) VALUES ('d', 1); APPLY BATCH"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.query("n1", all, "SELECT c FROM t WHERE k = 'd'"); len(got) != 0 {
		t.Errorf("a BATCH deleting and inserting a row at one timestamp left %q, want no row", got)
	}
	// The batch's USING TIMESTAMP applies to all; a statement's own applies to it.
	c.must("BEGIN BATCH USING TIMESTAMP 10 INSERT INTO t (k, c, v) VALUES ('e', 1, 'ten') APPLY BATCH",
		"BEGIN BATCH INSERT INTO t (k, c, v) VALUES ('e', 1, 'five') USING TIMESTAMP 5 APPLY BATCH")
	if got, _ := c.query("n1", quorum, "SELECT v FROM t WHERE k = 'e'"); !slices.Equal(got, []string{"'ten'"}) {
		t.Errorf("after writes at timestamps 10 then 5: %q, want 'ten'", got)
	}

	// A large batch warns.
	big := "BEGIN UNLOGGED BATCH INSERT INTO t (k, c, v) VALUES ('f', 1, '" + strings.Repeat("x", 6000) + "') APPLY BATCH"
	if res, err := c.run("n1", coordinator.Statement{Text: big}); err != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "more than 5120 (Cassandra's batch_size_warn_threshold)") {
		t.Errorf("a BATCH of 6000 bytes: %v, warnings %q", err, res.Warnings)
	}

	for _, tt := range []struct{ text, want string }{
		{"BEGIN BATCH INSERT INTO t (k, c) VALUES ('a', 'x') APPLY BATCH", "statement 1 of the BATCH (INSERT): column c is int; cannot assign string literal 'x'"},
		{"BEGIN BATCH INSERT INTO t (k, c) VALUES ('a', 1); INSERT INTO nope (k) VALUES ('a') APPLY BATCH", "statement 2 of the BATCH (INSERT): unknown table ks.nope"},
	} {
		_, err := c.run("n1", coordinator.Statement{Text: tt.text})
		var ie *coordinator.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want an *InvalidError containing %q", tt.text, err, tt.want)
		}
	}
}

func TestExecuteBatch(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	ins := c.prepare("n1", "INSERT INTO t (k, c, v) VALUES (?, ?, ?)")
	res, err := c.executors["n2"].ExecuteBatch(context.Background(), coordinator.BatchStatement{
		Type: coordinator.BatchUnlogged, Keyspace: "ks", Consistency: quorum,
		Children: []coordinator.BatchChild{
			{Prepared: ins, Values: []coordinator.Value{text("a"), intv(1), text("p1")}},
			{Text: "UPDATE t SET v = ? WHERE k = ? AND c = ?", Values: []coordinator.Value{text("q2"), text("a"), intv(2)}},
			{Prepared: ins, Values: []coordinator.Value{text("b"), intv(1), unsetVal}},
		},
	})
	if err != nil || len(res.Warnings) != 0 {
		t.Fatalf("ExecuteBatch: %v, warnings %q", err, res.Warnings)
	}
	if got, _ := c.query("n3", quorum, "SELECT c, v FROM t WHERE k = 'a'"); !slices.Equal(got, []string{"1 'p1'", "2 'q2'"}) {
		t.Errorf("partition a after ExecuteBatch: %q", got)
	}
	if got, _ := c.query("n3", quorum, "SELECT c, v FROM t WHERE k = 'b'"); !slices.Equal(got, []string{"1 null"}) {
		t.Errorf("partition b after ExecuteBatch: %q", got)
	}
	for _, tt := range []struct {
		b    coordinator.BatchStatement
		want string
	}{
		{coordinator.BatchStatement{Keyspace: "ks"}, "BATCH has no statements"},
		{coordinator.BatchStatement{Keyspace: "ks", Children: []coordinator.BatchChild{{Text: "SELECT * FROM t WHERE k = 'a'"}}}, "statement 1 of the BATCH is a SELECT; a BATCH holds only INSERT, UPDATE and DELETE"},
		{coordinator.BatchStatement{Keyspace: "ks", Children: []coordinator.BatchChild{{Prepared: ins, Values: []coordinator.Value{text("a")}}}}, "statement 1 of the BATCH (INSERT): the statement has 3 bind markers but 1 values were given"},
		{coordinator.BatchStatement{Keyspace: "ks", Children: []coordinator.BatchChild{{Text: "INSERT INTO t (k, c) VALUES ('a', 1)"}, {Text: "INSERT INTO"}}}, "statement 2 of the BATCH: 1:12: expected table name"},
		{coordinator.BatchStatement{Keyspace: "ks", Type: 9, Children: []coordinator.BatchChild{{Text: "INSERT INTO t (k, c) VALUES ('a', 1)"}}}, "unknown batch type 9"},
	} {
		_, err := c.executors["n1"].ExecuteBatch(context.Background(), tt.b)
		var ie *coordinator.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ExecuteBatch: error %v, want an *InvalidError containing %q", err, tt.want)
		}
	}
}

// TestBatchCountsOneWritePerPartition: the rate limiter counts a batch's writes to one
// partition as one write. With a limit of 1 write/s, two writes are always admitted (x ≤ 2L)
// and the third is rejected at the draw the harness fixes.
func TestBatchCountsOneWritePerPartition(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3[0], "CREATE TABLE ks.t (k text, c int, v text, w int, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 1}")
	batch := "BEGIN UNLOGGED BATCH INSERT INTO t (k, c) VALUES ('a', 1); INSERT INTO t (k, c) VALUES ('a', 2); INSERT INTO t (k, c) VALUES ('a', 3); INSERT INTO t (k, c) VALUES ('b', 1); APPLY BATCH"
	for i := 1; i <= 2; i++ {
		if _, err := c.run("n1", coordinator.Statement{Text: batch}); err != nil {
			t.Fatalf("batch %d of 3 writes to partition a and 1 to b, with a limit of 1 write/s: %v (each partition's writes should count once)", i, err)
		}
	}
	_, err := c.run("n1", coordinator.Statement{Text: batch})
	var rl *coordinator.RateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("the third batch: error %v, want a *RateLimitError", err)
	}
}
