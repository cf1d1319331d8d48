package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
)

// TestWriteSizeLimits writes values larger than gRPC's default 4 MiB message limit through
// every node (so through a coordinator that is not the replica too) and reads them back, and
// checks that a write over max_mutation_size, or a key component over 64 KiB, is refused by the
// coordinator with an error naming the limit, before any replica stores anything. Two columns
// that each fit but together do not are refused too.
func TestWriteSizeLimits(t *testing.T) {
	// The values are written as literals: let the statements' text be larger than the writes.
	tc := startClusterWith(t, 2, func(c *node.Config) { c.Coordinator.MaxStatementSize = 64 << 20 })
	c0, c1 := tc.client(0), tc.client(1)
	exec(t, c0, client.All, "CREATE KEYSPACE big WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c0, client.All, "CREATE TABLE big.t (k text PRIMARY KEY, v text)")
	exec(t, c0, client.All, "CREATE TABLE big.t2 (k text PRIMARY KEY, v text, w text)")

	value := strings.Repeat("x", 5<<20)
	for i, c := range []*client.Client{c0, c1} {
		key := []string{"a", "b"}[i]
		if _, err := c.Execute(context.Background(), client.Quorum, "INSERT INTO big.t (k, v) VALUES ('"+key+"', '"+value+"')"); err != nil {
			t.Fatalf("insert a 5 MiB value through node %d: %.300v", i, err)
		}
		for j, r := range []*client.Client{c0, c1} {
			_, rows, err := r.Query(context.Background(), client.Quorum, "SELECT v FROM big.t WHERE k = '"+key+"'")
			if err != nil {
				t.Fatalf("read %q (written through node %d) through node %d: %v", key, i, j, err)
			}
			if len(rows) != 1 || rows[0][0] != value {
				t.Fatalf("read %q through node %d: %d rows, want the one 5 MiB row", key, j, len(rows))
			}
		}
	}

	refused := []struct {
		name, stmt, want string
	}{
		{"value over max_mutation_size", "INSERT INTO big.t (k, v) VALUES ('c', '" + strings.Repeat("y", 16<<20+1) + "')", "(max_mutation_size)"},
		{"two values over max_mutation_size together", "INSERT INTO big.t2 (k, v, w) VALUES ('c', '" + strings.Repeat("y", 9<<20) + "', '" + strings.Repeat("z", 9<<20) + "')", "this write to big.t2 is"},
		{"partition key over 64 KiB", "INSERT INTO big.t (k, v) VALUES ('" + strings.Repeat("k", 1<<16) + "', 'v')", "partition key column k: the value is 65536 bytes; the maximum is 65535"},
	}
	for _, tt := range refused {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := c1.Execute(ctx, client.Quorum, tt.stmt)
		cancel()
		var inv *client.InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %.300v, want an invalid-statement error containing %q", tt.name, err, tt.want)
		}
	}
	for _, tbl := range []string{"big.t", "big.t2"} {
		_, rows, err := c0.Query(context.Background(), client.All, "SELECT k FROM "+tbl+" WHERE k = 'c'")
		if err != nil || len(rows) != 0 {
			t.Errorf("after the refused write to %s: %d rows, err %v; want none stored", tbl, len(rows), err)
		}
	}
}
