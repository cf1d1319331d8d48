package shell_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
)

// insertOfSize returns an INSERT into ks.t of exactly n bytes of text (n ≥ 60), writing
// partition k.
func insertOfSize(k string, n int) string {
	head := "INSERT INTO t (k, c, v) VALUES ('" + k + "', 1, '"
	tail := "')"
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// wantTooLong fails t unless err is an *InvalidError naming the statement's size and the
// limit.
func wantTooLong(t *testing.T, what string, err error, size, limit int) {
	t.Helper()
	var inv *coordinator.InvalidError
	want := fmt.Sprintf("is %d bytes of CQL text; the largest statement is %d bytes (max_statement_size)", size, limit)
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s of %d bytes with max_statement_size %d: %v, want an *InvalidError containing %q", what, size, limit, err, want)
	}
}

// TestStatementLongerThanMaxStatementSizeIsRefused: Execute, Prepare and a BATCH's unprepared
// children refuse text over max_statement_size before parsing it, with an error naming the size
// and the limit; text of exactly the limit runs, and nothing of a refused statement is written.
func TestStatementLongerThanMaxStatementSizeIsRefused(t *testing.T) {
	const limit = 200
	c := newCluster(t, options{maxStatement: limit})
	c.must(schemaRF3...)
	e := c.executors["n1"]
	ctx := context.Background()

	if _, err := c.exec("n1", quorum, insertOfSize("fits", limit)); err != nil {
		t.Fatalf("an INSERT of exactly max_statement_size bytes: %v", err)
	}
	_, err := c.exec("n1", quorum, insertOfSize("big", limit+1))
	wantTooLong(t, "Execute", err, limit+1, limit)

	// Garbage is refused for its size, not parsed.
	_, err = c.exec("n1", quorum, strings.Repeat("(", 10*limit))
	wantTooLong(t, "Execute of unparsable text", err, 10*limit, limit)

	_, err = e.Prepare(ctx, insertOfSize("big", limit+1), "ks")
	wantTooLong(t, "Prepare", err, limit+1, limit)
	if _, err := e.Prepare(ctx, insertOfSize("fits", limit), "ks"); err != nil {
		t.Errorf("Prepare of exactly max_statement_size bytes: %v", err)
	}

	_, err = e.ExecuteBatch(ctx, coordinator.BatchStatement{Keyspace: "ks", Consistency: quorum, Type: coordinator.BatchUnlogged,
		Children: []coordinator.BatchChild{{Text: insertOfSize("a", 100)}, {Text: insertOfSize("big", limit+1)}}})
	wantTooLong(t, "the BATCH's statement 2", err, limit+1, limit)
	if err != nil && !strings.Contains(err.Error(), "statement 2 of the BATCH") {
		t.Errorf("the BATCH's error %q does not name its statement 2", err)
	}
	// A BEGIN BATCH ... APPLY BATCH statement is one statement: its whole text counts.
	batch := "BEGIN UNLOGGED BATCH " + insertOfSize("a", 100) + "; " + insertOfSize("big", 100) + "; APPLY BATCH"
	_, err = c.exec("n1", quorum, batch)
	wantTooLong(t, "BEGIN BATCH", err, len(batch), limit)

	for _, k := range []string{"big", "a"} {
		if got, err := c.query("n1", all, "SELECT c FROM t WHERE k = '"+k+"'"); err != nil || len(got) != 0 {
			t.Errorf("partition %s of a refused statement: %q, %v; want nothing written", k, got, err)
		}
	}
	if got, err := c.query("n1", all, "SELECT c FROM t WHERE k = 'fits'"); err != nil || len(got) != 1 {
		t.Errorf("partition fits: %q, %v; want its row", got, err)
	}
}

// TestDefaultMaxStatementSize: with no limit configured, statements are bounded by
// DefaultMaxStatementSize (a write of one larger value, well under max_mutation_size, is refused
// for its text), and a negative limit is a configuration error.
func TestDefaultMaxStatementSize(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	stmt := insertOfSize("big", shell.DefaultMaxStatementSize+1)
	_, err := c.exec("n1", quorum, stmt)
	wantTooLong(t, "Execute", err, len(stmt), shell.DefaultMaxStatementSize)

	if _, err := shell.NewExecutor(shell.Config{LocalID: "n1", Ring: c.ring, Transport: c.transport, Schema: c.schema, Options: shell.Options{MaxStatementSize: -1}}); err == nil || !strings.Contains(err.Error(), "MaxStatementSize") {
		t.Errorf("NewExecutor with MaxStatementSize -1: %v, want an error naming it", err)
	}
}
