package cqlsh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/tlsconfig"
	"github.com/kvnode/kvnode/internal/tlsconfig/tlstest"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
)

// startRealNode starts one in-process node (real pebble, gRPC and native listeners on loopback) and
// returns its gRPC and native addresses.
func startRealNode(t *testing.T) (grpcAddr, cqlAddr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 1})
	if err != nil {
		t.Fatalf("start a node: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c.Node(0).Addr(), c.Node(0).Node().CQLAddr()
}

// runBoth runs the shell with args over the native protocol (the default) and over gRPC, and
// fails unless both print exactly the same stdout and stderr and end the same way.
func runBoth(t *testing.T, grpcAddr, cqlAddr string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(extra ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := Run(ctx, append(extra, args...), strings.NewReader(""), &out, &errOut)
		return out.String(), errOut.String(), err
	}
	nOut, nErr, nRunErr := run("--addr", cqlAddr)
	gOut, gErr, gRunErr := run("--protocol", "grpc", "--addr", grpcAddr)
	if nOut != gOut || nErr != gErr || fmt.Sprint(nRunErr) != fmt.Sprint(gRunErr) {
		t.Errorf("kvnode cql %q differs between the protocols:\nnative stdout:\n%s\nnative stderr: %q (%v)\ngRPC stdout:\n%s\ngRPC stderr: %q (%v)",
			args, nOut, nErr, nRunErr, gOut, gErr, gRunErr)
	}
	return nOut, nErr
}

// everyKind is a script of every kind of statement and shell command, over every column type.
const everyKind = `
CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
USE ks;
CREATE TABLE every (k text, c int, b bigint, d double, f float, s smallint, ti tinyint, bo boolean,
  bl blob, ts timestamp, u uuid, tu timeuuid, a ascii, i inet, dt date, tm time, dc decimal, vi varint,
  PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 1000};
INSERT INTO every (k, c, b, d, f, s, ti, bo, bl, ts, u, tu, a, i, dt, tm, dc, vi) VALUES ('x', 1,
  9000000000, 1.5, 2.25, 7, -3, true, 0xcafe, '2026-01-02 03:04:05', 123e4567-e89b-12d3-a456-426614174000,
  50554d6e-29bb-11e5-b345-feff819cdc9f, 'asc', '10.0.0.1', '2026-11-24', '12:34:56.789', 1.50,
  123456789012345678901234567890);
INSERT INTO every (k, c, d) VALUES ('x', 2, NaN);
UPDATE every SET b = -1, a = 'tab	and ''quote''' WHERE k = 'x' AND c = 3;
SELECT * FROM every WHERE k = 'x';
SELECT k, c FROM every WHERE k = 'none';
DELETE FROM every WHERE k = 'x' AND c = 3;
SELECT c, b FROM ks.every WHERE k = 'x' LIMIT 5;
ALTER TABLE every WITH per_partition_rate_limit = {};
DESCRIBE KEYSPACES;
DESCRIBE KEYSPACE ks;
DESCRIBE TABLES;
DESCRIBE TABLE every;
SELECT keyspace_name, replication FROM system_schema.keyspaces WHERE keyspace_name = 'ks';
CONSISTENCY QUORUM;
CONSISTENCY;
SELECT c FROM every WHERE k = 'x';
HELP;
`

// TestNativeOutputIsTheGRPCOutput runs every kind of statement, and every kind of error, over
// both protocols against a real node: the shell prints the same bytes either way.
func TestNativeOutputIsTheGRPCOutput(t *testing.T) {
	grpcAddr, cqlAddr := startRealNode(t)
	// The script's DDL runs once (over the native protocol); then both protocols read it back.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := Run(ctx, []string{"--addr", cqlAddr, "-e", everyKind}, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("the script over the native protocol failed: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "(2 rows)") || !strings.Contains(out.String(), "CREATE TABLE ks.every") {
		t.Errorf("the script's output lacks its rows or its description:\n%s", out.String())
	}
	readBack := everyKind[strings.Index(everyKind, "SELECT * FROM every"):]
	readBack = strings.ReplaceAll(readBack, "ALTER TABLE every WITH per_partition_rate_limit = {};", "")
	readBack = strings.ReplaceAll(readBack, "DELETE FROM every WHERE k = 'x' AND c = 3;", "")
	stdout, _ := runBoth(t, grpcAddr, cqlAddr, "-k", "ks", "-e", readBack)
	if !strings.Contains(stdout, "NaN") || !strings.Contains(stdout, "123456789012345678901234567890") {
		t.Errorf("the read-back output lacks values:\n%s", stdout)
	}
	for _, stmt := range []string{
		"SELEC * FROM x",
		"SELECT * FROM ks.nope WHERE k = 'a'",
		"USE nope",
		"INSERT INTO ks.every (k) VALUES ('a')",
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"SELECT * FROM ks.every WHERE k = 'x' AND c = 'one'",
	} {
		_, stderr := runBoth(t, grpcAddr, cqlAddr, "-e", stmt)
		if !strings.HasPrefix(stderr, "InvalidRequest: ") {
			t.Errorf("%s: stderr %q, want an InvalidRequest", stmt, stderr)
		}
	}
}

// TestNativeRateLimitAndPaging checks what one statement cannot show: a rate-limit rejection
// comes back as the client's *client.RateLimitError, and a result longer than a page is read
// to its end, the same rows as over gRPC.
func TestNativeRateLimitAndPaging(t *testing.T) {
	grpcAddr, cqlAddr := startRealNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := client.Dial(ctx, grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	n, err := dialNative(ctx, cqlAddr, nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	n.pageSize = 3
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k text, c int, v text, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 1}",
		"CREATE TABLE ks.p (k text, c int, v text, PRIMARY KEY (k, c))",
	} {
		if _, err := n.Execute(ctx, client.One, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var rl *client.RateLimitError
	for i := range 200 {
		_, err := n.Execute(ctx, client.One, fmt.Sprintf("INSERT INTO ks.t (k, c, v) VALUES ('p', %d, 'v%d')", i, i))
		if errors.As(err, &rl) {
			break
		}
		if err != nil {
			t.Fatalf("insert %d: %v, want success or a rate-limit rejection", i, err)
		}
	}
	if rl == nil || rl.RejectedBy != client.RejectedByCoordinator || !strings.Contains(rl.Message, "rate limit") {
		t.Fatalf("200 writes at once to a partition limited to 1/s: rejection %+v, want a *client.RateLimitError by the coordinator", rl)
	}
	for i := range 7 {
		if _, err := n.Execute(ctx, client.One, fmt.Sprintf("INSERT INTO ks.p (k, c, v) VALUES ('p', %d, 'v%d')", i, i)); err != nil {
			t.Fatal(err)
		}
	}
	want, err := g.Execute(ctx, client.One, "SELECT * FROM ks.p WHERE k = 'p'")
	if err != nil {
		t.Fatal(err)
	}
	got, err := n.Execute(ctx, client.One, "SELECT * FROM ks.p WHERE k = 'p'")
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Rows) != 7 || !reflect.DeepEqual(got.Columns, want.Columns) || !reflect.DeepEqual(got.Rows, want.Rows) {
		t.Errorf("paged native result %v %v, want the gRPC result %v %v (7 rows, pages of %d)", got.Columns, got.Rows, want.Columns, want.Rows, n.pageSize)
	}
}

// TestTLS runs the shell against a node with TLS on, over both protocols: with --tls-ca it
// connects, without it the connection fails with an error naming the address.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "cluster")
	f := ca.Issue(t, dir, "n1")
	clientTLS, err := tlsconfig.ClientConfig(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 1, ClientTLS: clientTLS,
		Adjust: func(_ int, cfg *node.Config) {
			cfg.Security.TLSCert, cfg.Security.TLSKey, cfg.Security.TLSCA = f.Cert, f.Key, f.CA
		}})
	if err != nil {
		t.Fatalf("start a node: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	grpcAddr, cqlAddr := c.Node(0).Addr(), c.Node(0).Node().CQLAddr()
	out, errOut := runBoth(t, grpcAddr, cqlAddr, "--tls-ca", ca.CertFile, "-e", "SELECT key FROM system.local")
	if !strings.Contains(out, "local") || errOut != "" {
		t.Errorf("SELECT key FROM system.local with --tls-ca printed %q, stderr %q; want the row", out, errOut)
	}
	for _, args := range [][]string{{"--addr", cqlAddr}, {"--protocol", "grpc", "--addr", grpcAddr}} {
		var out, errOut bytes.Buffer
		err := Run(ctx, append(args, "--timeout", "20s", "-e", "DESCRIBE KEYSPACES"), strings.NewReader(""), &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "cannot connect to kvnode at "+args[len(args)-1]) {
			t.Errorf("kvnode cql %v without --tls-ca = %v, want a connection error naming the address", args, err)
		}
	}
	var out2, errOut2 bytes.Buffer
	if err := Run(ctx, []string{"--addr", cqlAddr, "--tls-ca", f.Key, "-e", "DESCRIBE KEYSPACES"}, strings.NewReader(""), &out2, &errOut2); err == nil || !strings.Contains(err.Error(), "--tls-ca") {
		t.Errorf("kvnode cql --tls-ca with a key file = %v, want an error naming --tls-ca", err)
	}
}
