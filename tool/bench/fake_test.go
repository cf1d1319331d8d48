package bench

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/schema"
)

// fakeNode is a KVNode server that knows one schema. It answers DESCRIBE TABLE from it,
// validates every other statement against it (so a malformed generated statement is an invalid
// error the tests see), records the statements, and rate-limits the hot partition
// deterministically: every second hot write is rejected by the coordinator and every third hot
// read by the replicas.
type fakeNode struct {
	kvnodepb.UnimplementedKVNodeServer
	schema *schema.Schema

	mu            sync.Mutex
	stmts         []string // every statement but DESCRIBE
	hotWrites     int
	hotReads      int
	coldOps       int
	rejectedCoord int
	rejectedRepl  int
}

// startFake starts a fakeNode with the schema the statements in ddl create, on 127.0.0.1 port
// 0, and returns it with its address. The server stops when the test ends.
func startFake(t *testing.T, ddl string) (*fakeNode, string) {
	t.Helper()
	sch, err := schema.Build(ddl)
	if err != nil {
		t.Fatalf("schema.Build(%q): %v", ddl, err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	fake := &fakeNode{schema: sch}
	kvnodepb.RegisterKVNodeServer(srv, fake)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return fake, lis.Addr().String()
}

func (f *fakeNode) Execute(_ context.Context, req *kvnodepb.ExecuteRequest) (*kvnodepb.ExecuteResponse, error) {
	stmt, err := cql.ParseStatement(req.GetStatement())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if d, ok := stmt.(*cql.DescribeStmt); ok {
		desc, err := f.schema.Describe(d, req.GetKeyspace())
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		return &kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_Description{Description: desc}}, nil
	}
	var (
		key   []byte
		table *schema.Table
		write bool
	)
	switch st := stmt.(type) {
	case *cql.SelectStmt:
		r, err := f.schema.PrepareRead(st, req.GetKeyspace())
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		key, table = r.PartitionKey[0], r.Table
	default:
		w, err := f.schema.PrepareWrite(stmt, req.GetKeyspace())
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		key, table, write = w.PartitionKey[0], w.Table, true
	}
	hotKey := schema.EncodeText(HotTextKey)
	if table.PartitionKey[0].Type == schema.TypeBigInt {
		hotKey = schema.EncodeBigInt(HotBigIntKey)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.stmts = append(f.stmts, req.GetStatement())
	var by kvnodepb.RateLimitDetail_RejectedBy
	switch {
	case !bytes.Equal(key, hotKey):
		f.coldOps++
	case write:
		f.hotWrites++
		if f.hotWrites%2 == 0 {
			by = kvnodepb.RateLimitDetail_COORDINATOR
			f.rejectedCoord++
		}
	default:
		f.hotReads++
		if f.hotReads%3 == 0 {
			by = kvnodepb.RateLimitDetail_REPLICAS
			f.rejectedRepl++
		}
	}
	if by != kvnodepb.RateLimitDetail_REJECTED_BY_UNSPECIFIED {
		st, err := status.New(codes.ResourceExhausted, "rate limit exceeded").WithDetails(
			&kvnodepb.RateLimitDetail{Keyspace: table.Keyspace, Table: table.Name, RejectedBy: by, Limit: 10})
		if err != nil {
			return nil, err
		}
		return nil, st.Err()
	}
	if write {
		return &kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_Void{Void: &kvnodepb.Void{}}}, nil
	}
	return &kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_Rows{Rows: &kvnodepb.Rows{}}}, nil
}

// counts returns what the fake saw: statements, hot operations, cold operations, and its
// rejections by coordinator and by replicas.
func (f *fakeNode) counts() (stmts, hot, cold, coord, repl int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.stmts), f.hotWrites + f.hotReads, f.coldOps, f.rejectedCoord, f.rejectedRepl
}

// fakeExec is an executor without a network for runs under testing/synctest: each statement
// takes latency of (fake) time, then succeeds, or fails with err when set.
type fakeExec struct {
	latency time.Duration
	err     error

	mu    sync.Mutex
	stmts []string
}

func (f *fakeExec) Execute(ctx context.Context, _ client.Consistency, stmt string) (*client.Result, error) {
	f.mu.Lock()
	f.stmts = append(f.stmts, stmt)
	f.mu.Unlock()
	if f.latency > 0 {
		t := time.NewTimer(f.latency) // service time on synctest's fake clock
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	return &client.Result{}, f.err
}

func (f *fakeExec) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.stmts)
}
