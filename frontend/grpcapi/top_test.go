package grpcapi_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/schema"
)

// fixedTop is a TopSource with a fixed schema and fixed answers; it records the table asked for.
type fixedTop struct {
	sch     *schema.Schema
	answers []coordinator.NodeHotPartitions
	asked   schema.TableID
}

func (f *fixedTop) Schema() *schema.Schema { return f.sch }

func (f *fixedTop) HotPartitions(_ context.Context, table schema.TableID) []coordinator.NodeHotPartitions {
	f.asked = table
	return f.answers
}

// TestTopPartitionsAnswersTheMerge: TopPartitions answers the domain's merge of the nodes'
// answers in kvnodepb form (each key decoded by its column's type, the partition key's columns,
// the nodes that did not answer) and refuses requests naming what the schema does not hold.
func TestTopPartitionsAnswersTheMerge(t *testing.T) {
	sch := schema.New()
	for i, text := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text, n int, v int, PRIMARY KEY ((k, n))) WITH per_partition_rate_limit = {'max_writes_per_second': 10}",
	} {
		stmts, err := cql.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		if sch, err = sch.Apply(stmts[0], "", schema.Change{Version: schema.Version{Timestamp: int64(i + 1), Node: "n1"}}); err != nil {
			t.Fatal(err)
		}
	}
	tbl, _ := sch.Table("ks", "t")
	top := &fixedTop{sch: sch, answers: []coordinator.NodeHotPartitions{
		{Node: "n3", Unreachable: true},
		{Node: "n1", Partitions: []coordinator.HotPartition{
			{Table: tbl.ID, Op: schema.OpWrite, Token: 42, Key: [][]byte{[]byte("hot"), {0, 0, 0, 7}}, OpsPerSecond: 100, ReplicaRejectionsPerSecond: 90},
			{Table: tbl.ID, Op: schema.OpRead, Token: -1, Key: [][]byte{[]byte("x")}, OpsPerSecond: 50}, // a key of the wrong shape: not shown
		}},
		{Node: "n2", Partitions: []coordinator.HotPartition{
			{Table: tbl.ID, Op: schema.OpWrite, Token: 42, OpsPerSecond: 80, CoordinatorRejectionsPerSecond: 5},
		}},
	}}
	api, err := grpcapi.New(grpcapi.Config{Executor: &fixed{}, Top: top})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := api.TopPartitions(context.Background(), &kvnodepb.TopPartitionsRequest{Keyspace: "ks", Table: "t"})
	if err != nil {
		t.Fatalf("TopPartitions(ks.t): %v", err)
	}
	if top.asked != tbl.ID {
		t.Errorf("the nodes were asked for table %d, want ks.t's %d", top.asked, tbl.ID)
	}
	want := &kvnodepb.TopPartitionsResponse{
		Tables: []*kvnodepb.TableTopPartitions{{
			Keyspace: "ks", Table: "t",
			PartitionKeyColumns: []*kvnodepb.Column{{Name: "k", Type: grpcapi.ColumnType(schema.TypeText)}, {Name: "n", Type: grpcapi.ColumnType(schema.TypeInt)}},
			Partitions: []*kvnodepb.TopPartition{
				{Op: kvnodepb.Op_OP_WRITE, Token: 42, EstimatedOpsPerSecond: 100, Limit: 10, RejectedPerSecond: 95, RejectedShare: 0.95, Nodes: 2,
					PartitionKey: []*kvnodepb.Value{{Kind: &kvnodepb.Value_Text{Text: "hot"}}, {Kind: &kvnodepb.Value_Int{Int: 7}}}},
				{Op: kvnodepb.Op_OP_READ, Token: -1, EstimatedOpsPerSecond: 50, Nodes: 1},
			},
		}},
		UnreachableNodes: []string{"n3"},
	}
	if !proto.Equal(resp, want) {
		t.Errorf("TopPartitions(ks.t) =\n%s\nwant\n%s", prototext.Format(resp), prototext.Format(want))
	}

	for _, req := range []*kvnodepb.TopPartitionsRequest{{Table: "t"}, {Keyspace: "ks", Table: "nope"}, {Keyspace: "nope"}} {
		if _, err := api.TopPartitions(context.Background(), req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("TopPartitions(%v) = %v, want INVALID_ARGUMENT", req, err)
		}
	}
}
