package node_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// startNode starts one node with cfg and closes it at the end of the test.
func startNode(t *testing.T, cfg node.Config) *node.Node {
	t.Helper()
	nd, err := node.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	return nd
}

// dialPlain opens a plaintext gRPC connection to addr.
func dialPlain(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// listServices asks addr's reflection service for the services it serves.
func listServices(ctx context.Context, conn *grpc.ClientConn) ([]string, error) {
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	defer stream.CloseSend()
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}); err != nil {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	return names, nil
}

// TestClientPortServesOnlyTheClientAPI is the first attack of issue 18: a stock gRPC client on
// the client port listed the internode Replica service through reflection and called
// AccountDelta with a count of 2^32-1, making a victim partition reject every write. The client
// port must neither list nor serve any internode service; the internode port serves them.
func TestClientPortServesOnlyTheClientAPI(t *testing.T) {
	nd := startNode(t, nodeConfig(t.TempDir(), nil))
	if nd.InternodeAddr() == nd.Addr() {
		t.Fatalf("InternodeAddr() = Addr() = %s, want separate listeners", nd.Addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clientConn := dialPlain(t, nd.Addr())

	names, err := listServices(ctx, clientConn)
	if err != nil {
		t.Fatalf("reflection on the client port: %v", err)
	}
	if !slices.Contains(names, kvnodepb.KVNode_ServiceDesc.ServiceName) {
		t.Errorf("the client port lists %v, want it to list %s", names, kvnodepb.KVNode_ServiceDesc.ServiceName)
	}
	for _, internal := range []string{replicapb.Replica_ServiceDesc.ServiceName, replicapb.SchemaPaxos_ServiceDesc.ServiceName, replicapb.Membership_ServiceDesc.ServiceName} {
		if slices.Contains(names, internal) {
			t.Errorf("the client port lists the internode service %s: %v", internal, names)
		}
	}

	flood := &replicapb.AccountDeltaRequest{Deltas: []*replicapb.AccountDelta{{TableId: 1, Token: 42, Op: replicapb.Op_OP_WRITE, Count: 1<<32 - 1}}}
	_, err = replicapb.NewReplicaClient(clientConn).AccountDelta(ctx, flood)
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("Replica/AccountDelta on the client port = %v, want Unimplemented", err)
	}
	_, err = replicapb.NewReplicaClient(clientConn).Mutate(ctx, &replicapb.MutateRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("Replica/Mutate on the client port = %v, want Unimplemented", err)
	}
	_, err = replicapb.NewSchemaPaxosClient(clientConn).Prepare(ctx, &replicapb.SchemaPrepareRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("SchemaPaxos/Prepare on the client port = %v, want Unimplemented", err)
	}

	// The internode port serves the replica and lists nothing: it has no reflection.
	internodeConn := dialPlain(t, nd.InternodeAddr())
	resp, err := replicapb.NewReplicaClient(internodeConn).TopPartitions(ctx, &replicapb.TopPartitionsRequest{})
	if err != nil {
		t.Errorf("Replica/TopPartitions on the internode port: %v", err)
	} else if resp == nil {
		t.Error("Replica/TopPartitions on the internode port returned nothing")
	}
	if names, err := listServices(ctx, internodeConn); status.Code(err) != codes.Unimplemented {
		t.Errorf("reflection on the internode port = %v, %v; want Unimplemented", names, err)
	}
	_, err = kvnodepb.NewKVNodeClient(internodeConn).Execute(ctx, &kvnodepb.ExecuteRequest{Statement: "DESCRIBE KEYSPACES"})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("KVNode/Execute on the internode port = %v, want Unimplemented", err)
	}
}

// TestPeersDialTheInternodeAddress checks that a node gossips its internode address, and that
// coordinated requests between nodes go over it.
func TestPeersDialTheInternodeAddress(t *testing.T) {
	tc := startCluster(t, 2)
	for i, nd := range tc.nodes {
		for _, m := range tc.nodes[1-i].Cluster().Members() {
			if m.ID == nd.Cluster().LocalID() && m.RPCAddr != nd.InternodeAddr() {
				t.Errorf("node %d gossips RPC address %s, want its internode address %s (client address %s)", i, m.RPCAddr, nd.InternodeAddr(), nd.Addr())
			}
		}
	}
	c := tc.client(0)
	exec(t, c, client.All, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	exec(t, c, client.All, "CREATE TABLE ks.t (k text PRIMARY KEY, v int)")
	exec(t, c, client.All, "INSERT INTO ks.t (k, v) VALUES ('a', 1)")
	got := exec(t, tc.client(1), client.All, "SELECT v FROM ks.t WHERE k = 'a'")
	if len(got.Rows) != 1 {
		t.Fatalf("a write through node 0 read through node 1 at ALL = %d rows, want 1", len(got.Rows))
	}
}
