package client

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// fakeServer answers Execute with a fixed response or error and records the requests it saw.
// The real server is not what these tests are about: they check the client's decoding and its
// error mapping, and that it never retries.
type fakeServer struct {
	kvnodepb.UnimplementedKVNodeServer
	mu    sync.Mutex
	reqs  []*kvnodepb.ExecuteRequest
	resp  *kvnodepb.ExecuteResponse
	err   error
	calls int
}

func (f *fakeServer) Execute(_ context.Context, req *kvnodepb.ExecuteRequest) (*kvnodepb.ExecuteResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.reqs = append(f.reqs, req)
	return f.resp, f.err
}

func (f *fakeServer) set(resp *kvnodepb.ExecuteResponse, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resp, f.err, f.calls = resp, err, 0
}

func startFake(t *testing.T) (*fakeServer, *Client) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	fake := &fakeServer{}
	kvnodepb.RegisterKVNodeServer(srv, fake)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return fake, c
}

func statusWith(t *testing.T, code codes.Code, msg string, details ...protoadapt.MessageV1) error {
	t.Helper()
	st := status.New(code, msg)
	for _, d := range details {
		var err error
		st, err = st.WithDetails(d)
		if err != nil {
			t.Fatal(err)
		}
	}
	return st.Err()
}

func TestExecuteDecodesEveryType(t *testing.T) {
	fake, c := startFake(t)
	ts := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	fake.set(&kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_Rows{Rows: &kvnodepb.Rows{
		Columns: []*kvnodepb.Column{
			{Name: "t", Type: kvnodepb.ColumnType_COLUMN_TYPE_TEXT},
			{Name: "i", Type: kvnodepb.ColumnType_COLUMN_TYPE_INT},
			{Name: "b", Type: kvnodepb.ColumnType_COLUMN_TYPE_BIGINT},
			{Name: "d", Type: kvnodepb.ColumnType_COLUMN_TYPE_DOUBLE},
			{Name: "o", Type: kvnodepb.ColumnType_COLUMN_TYPE_BOOLEAN},
			{Name: "x", Type: kvnodepb.ColumnType_COLUMN_TYPE_BLOB},
			{Name: "s", Type: kvnodepb.ColumnType_COLUMN_TYPE_TIMESTAMP},
			{Name: "n", Type: kvnodepb.ColumnType_COLUMN_TYPE_TEXT},
		},
		Rows: []*kvnodepb.Row{{Values: []*kvnodepb.Value{
			{Kind: &kvnodepb.Value_Text{Text: "héllo"}},
			{Kind: &kvnodepb.Value_Int{Int: -7}},
			{Kind: &kvnodepb.Value_Bigint{Bigint: 1 << 40}},
			{Kind: &kvnodepb.Value_Double{Double: 2.5}},
			{Kind: &kvnodepb.Value_Boolean{Boolean: true}},
			{Kind: &kvnodepb.Value_Blob{Blob: []byte{0xca, 0xfe}}},
			{Kind: &kvnodepb.Value_Timestamp{Timestamp: ts.UnixMilli()}},
			{},
		}}},
	}}}, nil)

	cols, rows, err := c.Query(context.Background(), Quorum, "SELECT * FROM ks.t WHERE t = 'a'")
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []string{"text", "int", "bigint", "double", "boolean", "blob", "timestamp", "text"}
	for i, col := range cols {
		if col.Type != wantTypes[i] {
			t.Errorf("column %s has type %q, want %q", col.Name, col.Type, wantTypes[i])
		}
	}
	if len(rows) != 1 {
		t.Fatalf("got %d rows, want 1", len(rows))
	}
	row := rows[0]
	if row[0] != "héllo" || row[1] != int32(-7) || row[2] != int64(1<<40) || row[3] != 2.5 || row[4] != true {
		t.Errorf("scalar values decoded as %#v", row[:5])
	}
	if b, ok := row[5].([]byte); !ok || string(b) != "\xca\xfe" {
		t.Errorf("blob decoded as %#v, want []byte{0xca, 0xfe}", row[5])
	}
	if got, ok := row[6].(time.Time); !ok || !got.Equal(ts) {
		t.Errorf("timestamp decoded as %#v, want %v", row[6], ts)
	}
	if row[7] != nil {
		t.Errorf("null decoded as %#v, want nil", row[7])
	}
	if got := fake.reqs[0].GetConsistency(); got != kvnodepb.Consistency_CONSISTENCY_QUORUM {
		t.Errorf("request consistency = %v, want QUORUM", got)
	}
}

func TestUseSetsKeyspaceForLaterStatements(t *testing.T) {
	fake, c := startFake(t)
	fake.set(&kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_SetKeyspace{SetKeyspace: "shop"}}, nil)
	if _, err := c.Execute(context.Background(), One, "USE shop"); err != nil {
		t.Fatal(err)
	}
	fake.set(&kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_Void{Void: &kvnodepb.Void{}}}, nil)
	if _, err := c.Execute(context.Background(), One, "INSERT INTO carts (id) VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	if got := fake.reqs[1].GetKeyspace(); got != "shop" {
		t.Errorf("statement after USE shop carried keyspace %q, want shop", got)
	}
	if got := c.Keyspace(); got != "shop" {
		t.Errorf("Keyspace() = %q, want shop", got)
	}
}

func TestRateLimitErrorIsTypedAndNeverRetried(t *testing.T) {
	for _, tc := range []struct {
		by   kvnodepb.RateLimitDetail_RejectedBy
		want RejectedBy
	}{
		{kvnodepb.RateLimitDetail_COORDINATOR, RejectedByCoordinator},
		{kvnodepb.RateLimitDetail_REPLICAS, RejectedByReplicas},
	} {
		fake, c := startFake(t)
		fake.set(nil, statusWith(t, codes.ResourceExhausted, "rate limit exceeded for writes on ks.t",
			&kvnodepb.RateLimitDetail{Keyspace: "ks", Table: "t", Op: kvnodepb.Op_OP_WRITE, RejectedBy: tc.by, Limit: 50},
			&errdetails.RetryInfo{RetryDelay: durationpb.New(1500 * time.Millisecond)}))

		_, err := c.Execute(context.Background(), Quorum, "INSERT INTO ks.t (k) VALUES ('hot')")
		var rl *RateLimitError
		if !errors.As(err, &rl) {
			t.Fatalf("Execute error %v (%T) is not a *RateLimitError", err, err)
		}
		want := RateLimitError{Keyspace: "ks", Table: "t", Op: OpWrite, RejectedBy: tc.want, Limit: 50,
			RetryAfter: 1500 * time.Millisecond, Message: "rate limit exceeded for writes on ks.t", Scope: ScopePartition}
		if *rl != want {
			t.Errorf("rate-limit error = %+v, want %+v", *rl, want)
		}
		if fake.calls != 1 {
			t.Errorf("server saw %d calls for one rate-limited Execute, want 1 (no automatic retry)", fake.calls)
		}
	}
}

func TestErrorMapping(t *testing.T) {
	fake, c := startFake(t)
	ctx := context.Background()

	fake.set(nil, statusWith(t, codes.Unavailable, "cannot achieve consistency level ALL: 2 live of 3 required",
		&kvnodepb.UnavailableDetail{Consistency: kvnodepb.Consistency_CONSISTENCY_ALL, Live: 2, Required: 3}))
	_, err := c.Execute(ctx, All, "SELECT * FROM ks.t WHERE k = 'a'")
	var un *UnavailableError
	if !errors.As(err, &un) || un.Live != 2 || un.Required != 3 || un.Consistency != All {
		t.Errorf("unavailable status mapped to %#v, want *UnavailableError{ALL, live 2, required 3}", err)
	}
	if fake.calls != 1 {
		t.Errorf("server saw %d calls for one unavailable Execute, want 1", fake.calls)
	}

	fake.set(nil, statusWith(t, codes.DeadlineExceeded, "write timed out: 1 of 2 acks",
		&kvnodepb.TimeoutDetail{Op: kvnodepb.Op_OP_WRITE, Consistency: kvnodepb.Consistency_CONSISTENCY_QUORUM, Received: 1, Required: 2}))
	_, err = c.Execute(ctx, Quorum, "INSERT INTO ks.t (k) VALUES ('a')")
	var to *TimeoutError
	if !errors.As(err, &to) || to.Received != 1 || to.Required != 2 || to.Op != OpWrite {
		t.Errorf("timeout status mapped to %#v, want *TimeoutError{write, 1 of 2}", err)
	}

	fake.set(nil, status.Error(codes.InvalidArgument, "1:8: expected FROM, found 'FORM'"))
	_, err = c.Execute(ctx, One, "SELECT * FORM t")
	var inv *InvalidError
	if !errors.As(err, &inv) || !strings.HasPrefix(inv.Message, "1:8:") {
		t.Errorf("invalid-argument status mapped to %#v, want *InvalidError starting with 1:8:", err)
	}

	fake.set(nil, status.Error(codes.Internal, "disk on fire"))
	_, err = c.Execute(ctx, One, "SELECT * FROM ks.t WHERE k = 'a'")
	if st, ok := status.FromError(err); !ok || st.Code() != codes.Internal {
		t.Errorf("internal status came back as %v; want it wrapped with its code intact", err)
	}
}

func TestDialUnreachableNamesAddress(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = Dial(ctx, addr)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Dial(%s) with nothing listening = %v, want an error naming the address", addr, err)
	}
	if ctx.Err() != nil {
		t.Errorf("Dial waited for the whole context instead of failing fast: %v", err)
	}
}

func TestParseConsistency(t *testing.T) {
	for in, want := range map[string]Consistency{"one": One, "QUORUM": Quorum, " all ": All, "local_one": LocalOne, "Local_Quorum": LocalQuorum} {
		got, err := ParseConsistency(in)
		if err != nil || got != want {
			t.Errorf("ParseConsistency(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseConsistency("ANY"); err == nil || !strings.Contains(err.Error(), `"ANY"`) {
		t.Errorf("ParseConsistency(ANY) error = %v, want one naming the input", err)
	}
}
