package client

import (
	"context"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// topFake answers TopPartitions with a fixed response or error and records the request.
type topFake struct {
	kvnodepb.UnimplementedKVNodeServer
	req  *kvnodepb.TopPartitionsRequest
	resp *kvnodepb.TopPartitionsResponse
	err  error
}

func (f *topFake) TopPartitions(_ context.Context, req *kvnodepb.TopPartitionsRequest) (*kvnodepb.TopPartitionsResponse, error) {
	f.req = req
	return f.resp, f.err
}

func startTopFake(t *testing.T, f *topFake) *Client {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	kvnodepb.RegisterKVNodeServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestTopPartitionsDecodesTheAnswer(t *testing.T) {
	f := &topFake{resp: &kvnodepb.TopPartitionsResponse{
		UnreachableNodes: []string{"n3"},
		Tables: []*kvnodepb.TableTopPartitions{{
			Keyspace: "shop", Table: "carts",
			PartitionKeyColumns: []*kvnodepb.Column{
				{Name: "id", Type: kvnodepb.ColumnType_COLUMN_TYPE_TEXT},
				{Name: "day", Type: kvnodepb.ColumnType_COLUMN_TYPE_INT},
			},
			Partitions: []*kvnodepb.TopPartition{
				{Op: kvnodepb.Op_OP_WRITE, Token: -5, EstimatedOpsPerSecond: 900, Limit: 100, RejectedPerSecond: 800, RejectedShare: 0.89, Nodes: 3,
					PartitionKey: []*kvnodepb.Value{{Kind: &kvnodepb.Value_Text{Text: "hot"}}, {Kind: &kvnodepb.Value_Int{Int: 7}}}},
				{Op: kvnodepb.Op_OP_READ, Token: 9, EstimatedOpsPerSecond: 300, Limit: 50, Nodes: 1},
			},
		}},
	}}
	c := startTopFake(t, f)
	got, err := c.TopPartitions(context.Background(), "shop", "carts", 5)
	if err != nil {
		t.Fatal(err)
	}
	if f.req.GetKeyspace() != "shop" || f.req.GetTable() != "carts" || f.req.GetLimit() != 5 {
		t.Errorf("the server got %v, want keyspace shop, table carts, limit 5", f.req)
	}
	want := &TopPartitionsResult{
		UnreachableNodes: []string{"n3"},
		Tables: []TableHotPartitions{{
			Keyspace: "shop", Table: "carts",
			KeyColumns: []Column{{Name: "id", Type: "text"}, {Name: "day", Type: "int"}},
			Partitions: []HotPartition{
				{Op: OpWrite, Key: []any{"hot", int32(7)}, Token: -5, EstimatedOpsPerSecond: 900, Limit: 100, RejectedPerSecond: 800, RejectedShare: 0.89, Nodes: 3},
				{Op: OpRead, Token: 9, EstimatedOpsPerSecond: 300, Limit: 50, Nodes: 1},
			},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TopPartitions = %+v\nwant %+v", got, want)
	}
}

func TestTopPartitionsErrors(t *testing.T) {
	f := &topFake{err: status.Error(codes.InvalidArgument, "unknown table shop.nope")}
	c := startTopFake(t, f)
	tests := []struct {
		keyspace, table string
		limit           int
		want            string
	}{
		{"shop", "nope", 0, "kvnode: unknown table shop.nope"},
		{"", "carts", 0, `table "carts" needs its keyspace`},
		{"shop", "", -1, "limit -1 is negative"},
	}
	for _, tt := range tests {
		_, err := c.TopPartitions(context.Background(), tt.keyspace, tt.table, tt.limit)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("TopPartitions(%q, %q, %d) error = %v, want one saying %q", tt.keyspace, tt.table, tt.limit, err, tt.want)
		}
	}
}
