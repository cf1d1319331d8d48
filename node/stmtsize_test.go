package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/node"
)

// TestMaxStatementSize: a statement whose CQL text is over max_statement_size is refused on
// both front ends as invalid (gRPC INVALID_ARGUMENT, native Invalid 0x2200, for QUERY and
// PREPARE) with an error naming the limit, and nothing is written; one at the limit runs.
func TestMaxStatementSize(t *testing.T) {
	const limit = 4096
	tc := startClusterWith(t, 1, func(c *node.Config) { c.Coordinator.MaxStatementSize = limit })
	c0 := tc.client(0)
	exec(t, c0, client.All, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c0, client.All, "CREATE TABLE ks.t (k text PRIMARY KEY, v text)")
	insert := func(k string, n int) string {
		head, tail := "INSERT INTO ks.t (k, v) VALUES ('"+k+"', '", "')"
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	const want = "bytes of CQL text; the largest statement is 4096 bytes (max_statement_size)"

	exec(t, c0, client.One, insert("fits", limit))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	_, err := c0.Execute(ctx, client.One, insert("big", limit+1))
	cancel()
	var inv *client.InvalidError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "is 4097 "+want) {
		t.Errorf("gRPC Execute of %d bytes: %v, want an invalid-statement error containing %q", limit+1, err, want)
	}

	nc := nativeConn(t, tc.nodes[0].CQLAddr())
	for _, m := range []cqlwire.Message{
		&cqlwire.Query{Query: insert("big", 2*limit), Params: cqlwire.QueryParams{Consistency: cqlwire.One}},
		&cqlwire.Prepare{Query: insert("big", 2*limit)},
	} {
		e, ok := nc.do(m).(*cqlwire.Error)
		if !ok || e.Code != cqlwire.ErrInvalid || !strings.Contains(e.Message, "is 8192 "+want) {
			t.Errorf("native %T of %d bytes answered %#v, want Invalid naming max_statement_size", m, 2*limit, e)
		}
	}

	for k, n := range map[string]int{"fits": 1, "big": 0} {
		_, rows, err := c0.Query(context.Background(), client.One, "SELECT k FROM ks.t WHERE k = '"+k+"'")
		if err != nil || len(rows) != n {
			t.Errorf("after the refused statements partition %s has %d rows (err %v), want %d", k, len(rows), err, n)
		}
	}
}
