package shell_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/schema"
)

// rowsAt runs a SELECT through n1 at cl and fails the test on an error.
func (c *cluster) rowsAt(cl coordinator.Consistency, stmt string) []string {
	c.t.Helper()
	rows, err := c.query("n1", cl, stmt)
	if err != nil {
		c.t.Fatalf("%s: %v", stmt, err)
	}
	return rows
}

func TestUsingTTLExpiresRowsAndCells(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.must(
		"INSERT INTO t (k, c, v, w) VALUES ('a', 1, 'x', 7) USING TTL 10 AND TIMESTAMP 100",
		"INSERT INTO t (k, c, v) VALUES ('a', 2, 'y')",
		"UPDATE t USING TTL 10 SET w = 8 WHERE k = 'a' AND c = 2",
		"UPDATE t USING TIMESTAMP 5 AND TTL 10 SET v = 'z' WHERE k = 'a' AND c = 3",
	)
	const sel = "SELECT c, v, TTL(v), WRITETIME(v), w, ttl(w) FROM t WHERE k = 'a'"
	if got, want := c.rowsAt(quorum, sel), []string{"1 'x' 10 100 7 10", "2 'y' null " + got1(c, "'y'") + " 8 10", "3 'z' 10 5 null null"}; !slices.Equal(got, want) {
		t.Errorf("before expiry: %s = %q, want %q", sel, got, want)
	}
	c.clock.Advance(4 * time.Second)
	if got := c.rowsAt(quorum, "SELECT TTL(v) FROM t WHERE k = 'a' AND c = 1"); !slices.Equal(got, []string{"6"}) {
		t.Errorf("4 s later, TTL(v) = %q, want [6]", got)
	}
	c.clock.Advance(6 * time.Second)
	// Row 1 (INSERT with TTL) is gone with its marker; row 2 (INSERT without TTL) stays with
	// its w expired; row 3 (UPDATE only) is gone.
	if got, want := c.rowsAt(quorum, sel), []string{"2 'y' null " + got1(c, "'y'") + " null null"}; !slices.Equal(got, want) {
		t.Errorf("after expiry: %s = %q, want %q", sel, got, want)
	}
}

// got1 returns the formatted WRITETIME of the non-expiring v (assigned by the coordinator).
func got1(c *cluster, v string) string {
	c.t.Helper()
	for _, r := range c.rowsAt(quorum, "SELECT v, WRITETIME(v) FROM t WHERE k = 'a' AND c = 2") {
		if strings.HasPrefix(r, v+" ") {
			return strings.TrimPrefix(r, v+" ")
		}
	}
	return "?"
}

func TestDefaultTimeToLive(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3[0], "CREATE TABLE ks.t (k text, c int, v text, w int, PRIMARY KEY (k, c)) WITH default_time_to_live = 100")
	c.must(
		"INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')",
		"INSERT INTO t (k, c, v) VALUES ('a', 2, 'y') USING TTL 0",
		"INSERT INTO t (k, c, v) VALUES ('a', 3, 'z') USING TTL 5",
	)
	if got, want := c.rowsAt(quorum, "SELECT c, TTL(v) FROM t WHERE k = 'a'"), []string{"1 100", "2 null", "3 5"}; !slices.Equal(got, want) {
		t.Errorf("TTL(v) = %q, want %q (the default, none with USING TTL 0, the statement's)", got, want)
	}
	c.must("ALTER TABLE ks.t WITH default_time_to_live = 0")
	c.must("INSERT INTO t (k, c, v) VALUES ('a', 4, 'w')")
	c.clock.Advance(100 * time.Second)
	if got, want := c.rowsAt(quorum, "SELECT c, v FROM t WHERE k = 'a'"), []string{"2 'y'", "4 'w'"}; !slices.Equal(got, want) {
		t.Errorf("after 100 s: %q, want %q", got, want)
	}
}

func TestPreparedTTLAndTimestamp(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	p := c.prepare("n1", "INSERT INTO t (k, c, v) VALUES (?, ?, ?) USING TTL ? AND TIMESTAMP ?")
	if len(p.Variables) != 5 || p.Variables[3].Name != "[ttl]" || p.Variables[3].Type != schema.TypeInt || p.Variables[4].Name != "[timestamp]" {
		t.Fatalf("Prepare: variables %v, want [ttl] int then [timestamp] bigint last", p.Variables)
	}
	run := func(vals ...coordinator.Value) error {
		_, err := c.run("n1", coordinator.Statement{Prepared: p, Values: vals})
		return err
	}
	if err := run(text("a"), intv(1), text("x"), intv(50), val(schema.EncodeBigInt(42))); err != nil {
		t.Fatal(err)
	}
	if err := run(text("a"), intv(2), text("y"), unsetVal, val(schema.EncodeBigInt(43))); err != nil {
		t.Fatal(err)
	}
	if err := run(text("a"), intv(3), text("z"), val(nil), val(schema.EncodeBigInt(44))); err != nil {
		t.Fatal(err)
	}
	c.settle()
	sel := c.prepare("n1", "SELECT c, TTL(v), WRITETIME(v) FROM t WHERE k = ?")
	if cols := sel.Columns; len(cols) != 3 || cols[1] != (coordinator.RowColumn{Name: "ttl(v)", Type: schema.TypeInt}) || cols[2] != (coordinator.RowColumn{Name: "writetime(v)", Type: schema.TypeBigInt}) {
		t.Errorf("Prepare(SELECT TTL(v), WRITETIME(v)): columns %v, want ttl(v) int and writetime(v) bigint", cols)
	}
	res, err := c.run("n1", coordinator.Statement{Prepared: sel, Values: []coordinator.Value{text("a")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := formatRows(res.Rows), []string{"1 50 42", "2 null 43", "3 null 44"}; !slices.Equal(got, want) {
		t.Errorf("prepared SELECT = %q, want %q (unset and null TTL markers mean none)", got, want)
	}
	for _, tt := range []struct {
		ttl  coordinator.Value
		want string
	}{
		{intv(-1), "USING TTL -1 is out of range"},
		{intv(630720001), "USING TTL 630720001 is out of range"},
		{text("xx"), "USING TTL int"},
	} {
		err := run(text("a"), intv(9), text("q"), tt.ttl, val(schema.EncodeBigInt(45)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("INSERT with TTL marker %x = %v, want an error containing %q", tt.ttl.Bytes, err, tt.want)
		}
	}
}

func TestTTLSelectorRefusals(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	for _, tt := range []struct{ stmt, want string }{
		{"SELECT TTL(k) FROM t WHERE k = 'a'", "cannot use TTL() on partition key column k"},
		{"SELECT WRITETIME(c) FROM t WHERE k = 'a'", "cannot use WRITETIME() on clustering column c"},
		{"INSERT INTO t (k, c) VALUES ('a', 1) USING TTL -5", "1:48: TTL -5 is out of range"},
		{"DELETE FROM t USING TTL 5 WHERE k = 'a'", "USING TTL is not allowed on DELETE"},
	} {
		_, err := c.exec("n1", quorum, tt.stmt)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.stmt, err, tt.want)
		}
	}
}

// TestExpiredCellBeatsOlderValueOnAStaleReplica: a replica that missed an expiring write keeps
// the older value; once the write expired, reads still never return the older value, and read
// repair hands the stale replica the tombstone the expired cell travels as.
func TestExpiredCellBeatsOlderValueOnAStaleReplica(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.must("INSERT INTO t (k, c, v) VALUES ('a', 1, 'old') USING TIMESTAMP 10")
	c.transport.setFault(failWrites, "n3")
	c.must("UPDATE t USING TIMESTAMP 20 AND TTL 5 SET v = 'new' WHERE k = 'a' AND c = 1")
	c.transport.clearFaults()
	if got := c.localRows("n3", "SELECT v FROM t WHERE k = 'a'"); !slices.Equal(got, []string{"'old'"}) {
		t.Fatalf("n3 holds %q, want the old value it did not lose", got)
	}
	c.clock.Advance(5 * time.Second)
	if got, want := c.rowsAt(all, "SELECT v FROM t WHERE k = 'a'"), []string{"null"}; !slices.Equal(got, want) {
		t.Errorf("after expiry, SELECT at ALL = %q, want %q (the row lives on through its marker)", got, want)
	}
	c.settle()
	if got, want := c.localRows("n3", "SELECT v, WRITETIME(v) FROM t WHERE k = 'a'"), []string{"null null"}; !slices.Equal(got, want) {
		t.Errorf("after read repair n3 holds %q, want %q", got, want)
	}
}
