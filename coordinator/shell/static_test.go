package shell_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
)

var schemaStatic = []string{
	"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
	"CREATE TABLE ks.st (k text, c int, s text STATIC, v int, PRIMARY KEY (k, c))",
}

// TestStaticColumns writes and deletes static columns on their own and with rows, and reads
// them back as Cassandra 4.1 returns them.
func TestStaticColumns(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaStatic...)
	c.must(
		"INSERT INTO st (k, s) VALUES ('a', 'only')",
		"INSERT INTO st (k, c, v, s) VALUES ('b', 1, 10, 'first')",
		"INSERT INTO st (k, c, v) VALUES ('b', 2, 20)",
		"UPDATE st SET s = 'shared' WHERE k = 'b'",
		"UPDATE st SET v = 30, s = 'both' WHERE k = 'b' AND c = 3",
	)
	steps := []struct{ stmt, want string }{
		// A partition holding only static values: one row, clustering and regular null.
		{"SELECT k, c, s, v FROM st WHERE k = 'a'", "'a' null 'only' null"},
		// Every row of the partition carries the static value, last write wins.
		{"SELECT c, s, v FROM st WHERE k = 'b'", "1 'both' 10|2 'both' 20|3 'both' 30"},
		{"SELECT c, s FROM st WHERE k = 'b' AND c = 2", "2 'both'"},
		// A clustering restriction that matches nothing returns nothing, statics or not.
		{"SELECT c, s FROM st WHERE k = 'a' AND c = 1", ""},
		{"SELECT DISTINCT k, s FROM st WHERE k IN ('a', 'b', 'zz')", strings.Join(orderedPair("a", "'a' 'only'", "b", "'b' 'both'"), "|")},
		{"SELECT k, c, s FROM st WHERE k IN ('a', 'b') AND c = 1", "'b' 1 'both'"},
		{"SELECT count(*) FROM st WHERE k = 'a'", "1"},
	}
	check := func(stmt, want string) {
		t.Helper()
		got, err := c.query("n2", quorum, stmt)
		if err != nil || strings.Join(got, "|") != want {
			t.Errorf("%s = %q, %v; want %q", stmt, got, err, want)
		}
	}
	for _, s := range steps {
		check(s.stmt, s.want)
	}
	// DELETE of the static column alone; the rows stay.
	c.must("DELETE s FROM st WHERE k = 'b'")
	check("SELECT c, s FROM st WHERE k = 'b'", "1 null|2 null|3 null")
	// A partition whose static values are deleted and that has no row is gone.
	c.must("DELETE s FROM st WHERE k = 'a'")
	check("SELECT k, c, s FROM st WHERE k = 'a'", "")
	// TTL on a static write, and a static write with a full key that leaves the row alone.
	c.must("UPDATE st USING TTL 1000 SET s = 'ttl' WHERE k = 'b' AND c = 1")
	check("SELECT c, s, v FROM st WHERE k = 'b' AND c = 1", "1 'ttl' 10")
	got, err := c.query("n1", quorum, "SELECT TTL(s) FROM st WHERE k = 'b' AND c = 1")
	if err != nil || len(got) != 1 || got[0] == "null" {
		t.Errorf("TTL(s) = %q, %v; want a TTL", got, err)
	}
	// A batch of static and row writes to one partition: one mutation, one static row.
	c.must("BEGIN BATCH UPDATE st SET s = 'b1' WHERE k = 'c'; INSERT INTO st (k, c, v) VALUES ('c', 1, 1); " +
		"UPDATE st SET s = 'b2', v = 2 WHERE k = 'c' AND c = 2; APPLY BATCH")
	check("SELECT c, s, v FROM st WHERE k = 'c'", "1 'b2' 1|2 'b2' 2")
	// A logged batch of static writes alone (its batchlog entry holds static rows only).
	c.must("BEGIN BATCH UPDATE st SET s = 'b3' WHERE k = 'c'; UPDATE st SET s = 'd' WHERE k = 'd'; APPLY BATCH")
	check("SELECT c, s FROM st WHERE k = 'c'", "1 'b3'|2 'b3'")
	check("SELECT c, s FROM st WHERE k = 'd'", "null 'd'")
	// A conditional write of the whole key that sets a static column only: the Paxos commit
	// applies the static row.
	res, err := c.exec("n1", quorum, "UPDATE st SET s = 'lwt' WHERE k = 'c' AND c = 1 IF v = 1")
	if err != nil || len(res.Rows.Values) != 1 || string(res.Rows.Values[0][0]) != "\x01" {
		t.Errorf("conditional static write: %v, %v; want applied", res.Rows, err)
	}
	check("SELECT c, s FROM st WHERE k = 'c'", "1 'lwt'|2 'lwt'")
	// A partition deletion removes the static row too.
	c.must("DELETE FROM st WHERE k = 'b'")
	check("SELECT c, s FROM st WHERE k = 'b'", "")

	for stmt, want := range map[string]string{
		"UPDATE st SET v = 1 WHERE k = 'a'":                     "missing clustering column c",
		"UPDATE st SET s = 'x', v = 1 WHERE k = 'a'":            "missing clustering column c",
		"INSERT INTO st (k, v) VALUES ('a', 1)":                 "missing clustering column c",
		"DELETE s, v FROM st WHERE k = 'a'":                     "missing clustering column c",
		"DELETE s FROM st WHERE k = 'a' AND c > 1":              "modifies only static columns",
		"UPDATE st SET s = 'x' WHERE k = 'a' IF v = 1":          "modifies only static columns",
		"UPDATE st SET v = 1 WHERE k = 'a' IF s = 'y'":          "missing clustering column c",
		"CREATE TABLE ks.bad (k int PRIMARY KEY, s int STATIC)": "at least one clustering column",
	} {
		if _, err := c.exec("n1", quorum, stmt); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", stmt, err, want)
		}
	}
}

// orderedPair returns the values of keys ka and kb in token order.
func orderedPair(ka, va, kb, vb string) []string {
	if tokenOrder(ka, kb)[0] == ka {
		return []string{va, vb}
	}
	return []string{vb, va}
}

// TestStaticColumnsPaged pages a partition and an IN: every page's rows carry the
// static value, and a partition of static values alone is one row, once.
func TestStaticColumnsPaged(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaStatic...)
	c.must("INSERT INTO st (k, s) VALUES ('a', 'sa')", "UPDATE st SET s = 'sb' WHERE k = 'b'")
	for i := range 5 {
		c.must("INSERT INTO st (k, c, v) VALUES ('b', " + string(rune('1'+i)) + ", 0)")
	}
	var b []string
	for i := range 5 {
		b = append(b, "'b' "+string(rune('1'+i))+" 'sb'")
	}
	a := []string{"'a' null 'sa'"}
	var both []string
	if tokenOrder("a", "b")[0] == "a" {
		both = slices.Concat(a, b)
	} else {
		both = slices.Concat(b, a)
	}
	for _, tc := range []struct {
		stmt string
		want []string
	}{
		{"SELECT k, c, s FROM st WHERE k = 'b'", b},
		{"SELECT k, c, s FROM st WHERE k IN ('a', 'b')", both},
	} {
		for _, size := range []int{1, 2, 5, 100} {
			var rows []string
			st := coordinator.Statement{Text: tc.stmt, PageSize: size, Consistency: quorum, Keyspace: "ks"}
			for i := 0; i < 100; i++ {
				res, err := c.run("n3", st)
				if err != nil {
					t.Fatalf("%s, page size %d: %v", tc.stmt, size, err)
				}
				if len(res.Rows.Values) > size {
					t.Errorf("%s: a page of %d rows, page size %d", tc.stmt, len(res.Rows.Values), size)
				}
				rows = append(rows, formatRows(res.Rows)...)
				if res.PagingState == nil {
					break
				}
				st.PagingState = res.PagingState
			}
			if !slices.Equal(rows, tc.want) {
				t.Errorf("%s, page size %d: %q, want %q", tc.stmt, size, rows, tc.want)
			}
		}
	}
}

// TestStaticReadRepair writes a static value a replica misses and checks that a QUORUM read
// returns it and repairs that replica.
func TestStaticReadRepair(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaStatic...)
	c.must("INSERT INTO st (k, c, v, s) VALUES ('r', 1, 1, 'old')")
	c.transport.setFault(failWrites, "n3")
	if _, err := c.exec("n1", quorum, "UPDATE st SET s = 'new' WHERE k = 'r'"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.transport.setFault(deliver, "n3")
	if got := c.localRows("n3", "SELECT s FROM st WHERE k = 'r'"); !slices.Equal(got, []string{"'old'"}) {
		t.Fatalf("n3 before repair = %q, want ['old']", got)
	}
	if _, err := c.query("n3", coordinator.All, "SELECT c, s FROM st WHERE k = 'r'"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if got := c.localRows("n3", "SELECT s FROM st WHERE k = 'r'"); !slices.Equal(got, []string{"'new'"}) {
		t.Errorf("n3 after a read at ALL = %q, want ['new'] (read repair)", got)
	}
}
