package shell_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// serve starts the client-facing gRPC service of node on 127.0.0.1 and returns a client
// connected to it.
func serve(t *testing.T, c *cluster, node coordinator.NodeID) *client.Client {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	api, err := grpcapi.New(grpcapi.Config{Executor: c.executors[node]})
	if err != nil {
		t.Fatal(err)
	}
	kvnodepb.RegisterKVNodeServer(srv, api)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, lis.Addr().String(), client.WithKeyspace("ks"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func TestServerResults(t *testing.T) {
	c := newCluster(t, options{})
	cl := serve(t, c, "n1")
	ctx := context.Background()

	res, err := cl.Execute(ctx, client.Quorum, "CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	if want := (&client.SchemaChange{Change: "CREATED", Keyspace: "other"}); err != nil || !reflect.DeepEqual(res.SchemaChange, want) {
		t.Fatalf("CREATE KEYSPACE through the client = %+v, %v; want schema change %+v", res, err, want)
	}
	if res, err = cl.Execute(ctx, client.One, "USE other"); err != nil || cl.Keyspace() != "other" {
		t.Fatalf("USE other through the client = %+v, %v; the client's keyspace is %q, want other", res, err, cl.Keyspace())
	}
	if _, err := cl.Execute(ctx, client.Quorum, "CREATE TABLE t (k text, c timestamp, d double, b blob, ok boolean, n bigint, PRIMARY KEY (k, c))"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Execute(ctx, client.All, "INSERT INTO t (k, c, d, b, ok) VALUES ('a', 1700000000123, 2.5, 0x01ff, false)"); err != nil {
		t.Fatal(err)
	}
	cols, rows, err := cl.Query(ctx, client.LocalQuorum, "SELECT * FROM t WHERE k = 'a'")
	if err != nil {
		t.Fatal(err)
	}
	wantCols := []client.Column{{Name: "k", Type: "text"}, {Name: "c", Type: "timestamp"}, {Name: "b", Type: "blob"}, {Name: "d", Type: "double"}, {Name: "n", Type: "bigint"}, {Name: "ok", Type: "boolean"}}
	wantRows := [][]any{{"a", time.UnixMilli(1700000000123).UTC(), []byte{0x01, 0xff}, 2.5, nil, false}}
	if !reflect.DeepEqual(cols, wantCols) || !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("SELECT * through the client = %v %v, want %v %v", cols, rows, wantCols, wantRows)
	}
	res, err = cl.Execute(ctx, client.Default, "DESCRIBE TABLES")
	if err != nil || res.Description != "t\n" {
		t.Errorf("DESCRIBE TABLES through the client = %+v, %v; want the description \"t\\n\"", res, err)
	}
}

func TestServerErrorStatuses(t *testing.T) {
	c := newCluster(t, options{writeTimeout: 500 * time.Millisecond})
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text, c int, v text, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 50}",
	)
	cl := serve(t, c, "n1")
	ctx := context.Background()

	// Rate limited, by the coordinator: 2L = 100 writes are admitted, the 101st is not.
	for i := range 100 {
		if _, err := cl.Execute(ctx, client.Quorum, fmt.Sprintf("INSERT INTO t (k, c) VALUES ('hot', %d)", i)); err != nil {
			t.Fatalf("write %d of 100 at limit 50: %v", i+1, err)
		}
	}
	_, err := cl.Execute(ctx, client.Quorum, "INSERT INTO t (k, c) VALUES ('hot', 100)")
	var rl *client.RateLimitError
	wantRL := client.RateLimitError{
		Keyspace: "ks", Table: "t", Op: client.OpWrite, RejectedBy: client.RejectedByCoordinator, Limit: 50, Count: 101,
		RetryAfter: 750 * time.Millisecond,
		Message:    "rate limit exceeded for writes on ks.t (limit 50/s), rejected by coordinator; retry after 750ms",
	}
	if !errors.As(err, &rl) || *rl != wantRL {
		t.Errorf("write 101 at limit 50 through the client: %#v, want %#v", err, &wantRL)
	}

	// Invalid.
	_, err = cl.Execute(ctx, client.One, "SELECT * FROM t WHERE")
	var inv *client.InvalidError
	if !errors.As(err, &inv) || inv.Message != "1:22: expected column name, found end of input" {
		t.Errorf("a syntax error through the client: %v, want an *InvalidError at 1:22", err)
	}

	// Timeout: n2 and n3 never answer.
	c.transport.setFault(hang, "n2", "n3")
	_, err = cl.Execute(ctx, client.Quorum, "INSERT INTO t (k, c) VALUES ('a', 1)")
	var te *client.TimeoutError
	wantTE := client.TimeoutError{Op: client.OpWrite, Consistency: client.Quorum, Received: 1, Required: 2,
		Message: "write timed out at QUORUM: 1 of 2 required acks received"}
	if !errors.As(err, &te) || *te != wantTE {
		t.Errorf("a QUORUM write with two hanging replicas through the client: %#v, want %#v", err, &wantTE)
	}
	c.transport.clearFaults()

	// Unavailable: n2 and n3 are down.
	c.ring.setDown("n2", "n3")
	_, err = cl.Execute(ctx, client.All, "SELECT * FROM t WHERE k = 'a'")
	var ue *client.UnavailableError
	wantUE := client.UnavailableError{Consistency: client.All, Live: 1, Required: 3,
		Message: "cannot achieve consistency level ALL: 1 replica live, 3 required"}
	if !errors.As(err, &ue) || *ue != wantUE {
		t.Errorf("a read at ALL with two replicas down through the client: %#v, want %#v", err, &wantUE)
	}
	c.ring.setDown()

	// Replica failures: UNAVAILABLE with a FailureDetail.
	c.transport.setFault(failAll, "n2", "n3")
	_, err = cl.Execute(ctx, client.Quorum, "SELECT * FROM t WHERE k = 'a'")
	var fe *client.FailureError
	wantFE := client.FailureError{Op: client.OpRead, Consistency: client.Quorum, Required: 2, Failures: 2, Reason: client.FailureReplicas}
	if !errors.As(err, &fe) || status.Code(err) != codes.Unavailable {
		t.Fatalf("a QUORUM read with two failing replicas through the client: %v, want a *client.FailureError with code Unavailable", err)
	}
	// n1 (the coordinator, a replica) may or may not have answered before the failures decided.
	wantFE.Received = min(fe.Received, 1)
	if got := (client.FailureError{Op: fe.Op, Consistency: fe.Consistency, Received: fe.Received, Required: fe.Required,
		Failures: fe.Failures, Rejected: fe.Rejected, Reason: fe.Reason}); got != wantFE {
		t.Errorf("a QUORUM read with two failing replicas through the client: %+v, want %+v", got, wantFE)
	}
}

// TestServerRejectedByReplicas checks the replicas' rejection through the client: RF 1, the
// partition on n2, the client talking to n1.
func TestServerRejectedByReplicas(t *testing.T) {
	c := newCluster(t, options{order: []coordinator.NodeID{"n2", "n3", "n1"}})
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v text) WITH per_partition_rate_limit = {'max_reads_per_second': 3}",
	)
	cl := serve(t, c, "n1")
	ctx := context.Background()
	for i := range 6 {
		if _, _, err := cl.Query(ctx, client.One, "SELECT * FROM t WHERE k = 'hot'"); err != nil {
			t.Fatalf("read %d of 6 at limit 3: %v", i+1, err)
		}
	}
	_, _, err := cl.Query(ctx, client.One, "SELECT * FROM t WHERE k = 'hot'")
	var rl *client.RateLimitError
	want := client.RateLimitError{
		Keyspace: "ks", Table: "t", Op: client.OpRead, RejectedBy: client.RejectedByReplicas, Limit: 3, Count: 7,
		RetryAfter: 750 * time.Millisecond,
		Message:    "rate limit exceeded for reads on ks.t (limit 3/s), rejected by replicas; retry after 750ms",
	}
	if !errors.As(err, &rl) || *rl != want {
		t.Errorf("read 7 at limit 3 through the client: %#v, want %#v", err, &want)
	}
}

func TestErrorStatus(t *testing.T) {
	tests := []struct {
		err  error
		code codes.Code
	}{
		{nil, codes.OK},
		{&coordinator.RateLimitError{Op: coordinator.OpRead, RejectedBy: coordinator.RejectedByReplicas}, codes.ResourceExhausted},
		{fmt.Errorf("wrapped: %w", &coordinator.UnavailableError{}), codes.Unavailable},
		{&coordinator.TimeoutError{}, codes.DeadlineExceeded},
		{&coordinator.InvalidError{Err: errors.New("bad")}, codes.InvalidArgument},
		{&coordinator.FailureError{Err: &coordinator.ReplicaError{Replica: "n2", Code: 3, Message: "disk"}}, codes.Unavailable},
		{&coordinator.FailureError{Err: &coordinator.ReplicaError{Replica: "n2", Code: 1, Message: "bad mutation"}}, codes.Internal},
		{context.Canceled, codes.Canceled},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{coordinator.ErrClosed, codes.Unavailable},
		{errors.New("boom"), codes.Internal},
	}
	for _, tt := range tests {
		if got := grpcapi.ErrorStatus(tt.err).Code(); got != tt.code {
			t.Errorf("ErrorStatus(%v).Code() = %v, want %v", tt.err, got, tt.code)
		}
	}
}

// TestServerUserTypes reads frozen and non-frozen user type columns through the gRPC API: every
// field named, in the type's order, nulls included, and a field update seen.
func TestServerUserTypes(t *testing.T) {
	c := newCluster(t, options{})
	cl := serve(t, c, "n1")
	ctx := context.Background()
	for _, stmt := range []string{
		"CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TYPE ks.addr (street text, zip int)",
		"CREATE TABLE ks.people (k int PRIMARY KEY, home frozen<addr>, work addr)",
		"INSERT INTO ks.people (k, home, work) VALUES (1, {street: 'Main'}, {street: 'Mill', zip: 7})",
		"UPDATE ks.people SET work.zip = 8 WHERE k = 1",
	} {
		if _, err := cl.Execute(ctx, client.Quorum, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	cols, rows, err := cl.Query(ctx, client.Quorum, "SELECT home, work FROM ks.people WHERE k = 1")
	if err != nil {
		t.Fatal(err)
	}
	wantCols := []client.Column{{Name: "home", Type: "frozen<addr>"}, {Name: "work", Type: "addr"}}
	wantRows := [][]any{{
		client.UDT{{Name: "street", Value: "Main"}, {Name: "zip", Value: nil}},
		client.UDT{{Name: "street", Value: "Mill"}, {Name: "zip", Value: int32(8)}},
	}}
	if !reflect.DeepEqual(cols, wantCols) || !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("user type columns through the client = %v %#v, want %v %#v", cols, rows, wantCols, wantRows)
	}
}
