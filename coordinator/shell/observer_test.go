package shell_test

import (
	"slices"
	"testing"

	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// TestObserverNamesTheTableOfReadsAndWrites checks the keyspace and table OnRequest reports.
func TestObserverNamesTheTableOfReadsAndWrites(t *testing.T) {
	c := newCluster(t, options{})
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int)",
	)
	before, _, _ := c.observer.snapshot()
	for _, stmt := range []string{
		"INSERT INTO t (k, v) VALUES ('a', 1)",
		"SELECT v FROM t WHERE k = 'a'",
		"SELECT v FROM nosuch WHERE k = 'a'",
		"DESCRIBE TABLES",
	} {
		c.exec("n1", one, stmt)
	}
	c.observer.mu.Lock()
	got := slices.Clone(c.observer.requestTables[len(before):])
	c.observer.mu.Unlock()
	if want := []string{"ks.t", "ks.t", "", ""}; !slices.Equal(got, want) {
		t.Errorf("OnRequest named the tables %q, want %q (an insert and a select of ks.t, then a select of an unknown table and a DESCRIBE, which name none)", got, want)
	}
}

// TestObserverSeesReplicasDisagree makes the two enforcing replicas of a partition hold
// different counters, so that one rejects a write the other admits, and checks that the
// Observer hears about it once per write, and never when they agree.
func TestObserverSeesReplicasDisagree(t *testing.T) {
	c := newCluster(t, options{})
	// RF 2 with the ring order n1, n2, n3: n1 and n2 replicate every token, and n3
	// coordinates on the replicas-decide path.
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 10}",
	)
	tbl, ok := c.schema.Schema().Table("ks", "t")
	if !ok {
		t.Fatal("table ks.t missing")
	}
	token := partitioner.Token([]byte("hot"))

	// Agreeing replicas (both counters low): no disagreement.
	if _, err := c.exec("n3", one, "INSERT INTO t (k, v) VALUES ('hot', 1)"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	// n1 now counts 100 operations more than n2 (as after an account delta n2 never got): it
	// rejects (draw 0.99, count far above 2·10) while n2 admits.
	if err := c.services["n1"].ApplyAccountDelta(tbl.ID, token, schema.OpWrite, 100, c.clock.Now()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c.exec("n3", one, "INSERT INTO t (k, v) VALUES ('hot', 2)")
		c.settle()
	}
	c.observer.mu.Lock()
	got := slices.Clone(c.observer.disagreements)
	c.observer.mu.Unlock()
	if want := []string{"ks.t write", "ks.t write"}; !slices.Equal(got, want) {
		t.Errorf("OnReplicasDisagree calls = %q, want %q: one per write that n1 rejected and n2 admitted, none for the write both admitted", got, want)
	}
}
