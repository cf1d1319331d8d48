package shell_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
)

// TestTTLWritesNeedFormat2: while a member of the ring reports a data format before 2 (or none,
// as a release before data format versions), writes that expire (USING TTL, in a batch too, or
// a table's default_time_to_live) are refused before any replica sees them, with an invalid
// error naming the members; writes without a TTL, USING TTL 0 and deletes pass. Once every
// member reports format 2, expiring writes pass.
func TestTTLWritesNeedFormat2(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.must("CREATE TABLE ks.d (k text PRIMARY KEY, v int) WITH default_time_to_live = 60")
	c.ring.setFormats(map[coordinator.NodeID]int{"n1": 2, "n2": 1}) // n3 reports none

	refused := []struct{ stmt, names string }{
		{"INSERT INTO t (k, c, v) VALUES ('a', 1, 'x') USING TTL 60", "USING TTL"},
		{"UPDATE t USING TTL 60 AND TIMESTAMP 5 SET v = 'x' WHERE k = 'a' AND c = 2", "USING TTL"},
		{"BEGIN BATCH INSERT INTO t (k, c, v) VALUES ('a', 3, 'x'); INSERT INTO t (k, c, v) VALUES ('a', 4, 'y') USING TTL 60; APPLY BATCH", "USING TTL"},
		{"INSERT INTO d (k, v) VALUES ('a', 1)", "default_time_to_live of table ks.d"},
		{"UPDATE d SET v = 2 WHERE k = 'b'", "default_time_to_live of table ks.d"},
	}
	for _, r := range refused {
		_, err := c.exec("n1", quorum, r.stmt)
		var ie *coordinator.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), r.names) || !strings.Contains(err.Error(), "nodes n2, n3") ||
			!strings.Contains(err.Error(), "data format 2") {
			t.Errorf("%s with n2 on format 1 and n3 reporting none = %v, want an invalid error naming %s, data format 2 and nodes n2, n3", r.stmt, err, r.names)
		}
	}
	c.settle()
	for _, q := range []string{"SELECT c FROM t WHERE k = 'a'", "SELECT v FROM d WHERE k = 'a'", "SELECT v FROM d WHERE k = 'b'"} {
		if got := c.localRows("n3", q); len(got) != 0 {
			t.Errorf("after the refusals, n3 holds %v for %s, want nothing", got, q)
		}
	}

	for _, stmt := range []string{
		"INSERT INTO t (k, c, v) VALUES ('a', 5, 'x')",
		"INSERT INTO t (k, c, v) VALUES ('a', 6, 'x') USING TTL 0",
		"INSERT INTO d (k, v) VALUES ('c', 1) USING TTL 0",
		"DELETE FROM d WHERE k = 'c'",
		"DELETE FROM t WHERE k = 'a' AND c = 6",
	} {
		if _, err := c.exec("n1", quorum, stmt); err != nil {
			t.Errorf("%s with a member on format 1: %v, want it to pass (nothing expires)", stmt, err)
		}
	}

	c.ring.setFormats(map[coordinator.NodeID]int{"n1": 2, "n2": 2, "n3": 2})
	for _, r := range refused {
		if _, err := c.exec("n1", quorum, r.stmt); err != nil {
			t.Errorf("%s with every member on format 2: %v", r.stmt, err)
		}
	}
}
