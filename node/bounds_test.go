package node_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/credentials/insecure"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/schema"
)

// TestSchemaLimits is issue 18's schema growth: DDL over a limit fails with an error naming
// it, and the schema does not change.
func TestSchemaLimits(t *testing.T) {
	cfg := nodeConfig(t.TempDir(), nil)
	cfg.SchemaLimits = schema.Limits{MaxColumnsPerTable: 20, MaxTablesPerKeyspace: 2, MaxSchemaSize: 64 << 10}
	nd := startNode(t, cfg)
	c, err := dialClient(nd.Addr(), insecure.NewCredentials())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(stmt string) error {
		_, err := c.Execute(ctx, client.One, stmt)
		return err
	}
	if err := run("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"); err != nil {
		t.Fatal(err)
	}
	cols := func(n int) string {
		var b strings.Builder
		b.WriteString("k int PRIMARY KEY")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, ", c%d int", i)
		}
		return b.String()
	}
	for _, c := range []struct{ stmt, want string }{
		{"CREATE TABLE ks.wide (" + cols(21) + ")", "the limit is 20 columns per table (max_columns_per_table)"},
		{"CREATE TABLE ks.a (" + cols(20) + ")", ""},
		{"CREATE TABLE ks.b (k int PRIMARY KEY)", ""},
		{"CREATE TABLE ks.c (k int PRIMARY KEY)", "the limit is 2 tables per keyspace (max_tables_per_keyspace)"},
		{"CREATE KEYSPACE big WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", ""},
		{"CREATE TABLE big.t (k int PRIMARY KEY, " + strings.Repeat("x", 40<<10) + " int, " + strings.Repeat("y", 40<<10) + " int)", "(max_schema_size)"},
	} {
		err := run(c.stmt)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%.60s...: %v, want %q", c.stmt, err, c.want)
		}
	}
	got := nd.Schema().Tables("")
	if len(got) != 2 {
		t.Errorf("the schema holds %d tables, want the 2 within the limits", len(got))
	}
}

// TestGRPCConnectionLimit: a gRPC listener accepts at most max_grpc_connections connections;
// one more is closed at once, and a place frees when a connection closes.
func TestGRPCConnectionLimit(t *testing.T) {
	cfg := nodeConfig(t.TempDir(), nil)
	cfg.MaxGRPCConnections = 2
	nd := startNode(t, cfg)
	for _, addr := range []string{nd.Addr(), nd.InternodeAddr()} {
		var held []net.Conn
		for range 2 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		over, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		over.SetReadDeadline(time.Now().Add(30 * time.Second))
		if n, err := over.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%s: the connection over the limit read %d bytes, %v; want it closed (EOF)", addr, n, err)
		}
		over.Close()
		held[0].Close()
		if addr == nd.Addr() {
			poll.Must(t, 30*time.Second, "a client connects once a place is free", func() error {
				c, err := dialClient(addr, insecure.NewCredentials())
				if err == nil {
					c.Close()
				}
				return err
			})
		}
		held[1].Close()
	}
}
