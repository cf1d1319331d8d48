package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internode"
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
	// A server that refuses the stream may end it before the request is sent: Send then returns
	// io.EOF, and the status is Recv's to tell.
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}); err != nil && !errors.Is(err, io.EOF) {
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
	internal := internodeServices(t)
	for _, svc := range internal {
		if slices.Contains(names, string(svc.FullName())) {
			t.Errorf("the client port lists the internode service %s: %v", svc.FullName(), names)
		}
	}
	// Every method of every internode service (Internode's Call and Stream, which carry every
	// internode request, and any service added later) is unknown on the client port. The
	// requests are empty: an unknown service is refused before its request is decoded.
	for _, svc := range internal {
		methods := svc.Methods()
		for i := range methods.Len() {
			m := methods.Get(i)
			method := fmt.Sprintf("/%s/%s", svc.FullName(), m.Name())
			if err := callEmpty(ctx, clientConn, method, m.IsStreamingServer() || m.IsStreamingClient()); status.Code(err) != codes.Unimplemented {
				t.Errorf("%s on the client port = %v, want Unimplemented", method, err)
			}
		}
	}

	flood := &replicapb.AccountDeltaRequest{Deltas: []*replicapb.AccountDelta{{TableId: 1, Token: 42, Op: replicapb.Op_OP_WRITE, Count: 1<<32 - 1}}}
	for _, req := range []*replicapb.Request{
		{Msg: &replicapb.Request_AccountDelta{AccountDelta: flood}},
		{Msg: &replicapb.Request_Mutate{Mutate: &replicapb.MutateRequest{}}},
		{Msg: &replicapb.Request_SchemaPrepare{SchemaPrepare: &replicapb.SchemaPrepareRequest{}}},
	} {
		_, err = replicapb.NewInternodeClient(clientConn).Call(ctx, req)
		if status.Code(err) != codes.Unimplemented {
			t.Errorf("Internode/Call %s on the client port = %v, want Unimplemented", internode.Kind(req), err)
		}
	}

	// The internode port serves the replica and lists nothing: it has no reflection.
	internodeConn := dialPlain(t, nd.InternodeAddr())
	api := replicapb.NewInternodeClient(internodeConn)
	resp, err := api.Call(ctx, &replicapb.Request{Msg: &replicapb.Request_TopPartitions{TopPartitions: &replicapb.TopPartitionsRequest{}}})
	if err != nil {
		t.Errorf("Internode/Call top_partitions on the internode port: %v", err)
	} else if resp.GetTopPartitions() == nil {
		t.Errorf("Internode/Call top_partitions on the internode port answered %v, want its partitions", resp)
	}
	for _, req := range []*replicapb.Request{
		{Msg: &replicapb.Request_View{View: &replicapb.ViewRequest{}}},
		{Msg: &replicapb.Request_RangeHashes{RangeHashes: &replicapb.RangeHashesRequest{}}},
	} {
		if _, err := api.Call(ctx, req); status.Code(err) == codes.Unimplemented {
			t.Errorf("Internode/Call %s on the internode port = %v, want it served", internode.Kind(req), err)
		}
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

// internodeServices returns the services of the internode protocol (the proto package
// kvnode.replica.v1): Internode, which the node's internode listener serves, and any added to
// the package later.
func internodeServices(t *testing.T) []protoreflect.ServiceDescriptor {
	t.Helper()
	var out []protoreflect.ServiceDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage("kvnode.replica.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			out = append(out, f.Services().Get(i))
		}
		return true
	})
	for _, want := range []string{replicapb.Internode_ServiceDesc.ServiceName} {
		if !slices.ContainsFunc(out, func(s protoreflect.ServiceDescriptor) bool { return string(s.FullName()) == want }) {
			t.Fatalf("the internode services %v lack %s", out, want)
		}
	}
	return out
}

// callEmpty calls method on conn with an empty request and returns the call's error; a
// streaming method is opened and its first answer awaited.
func callEmpty(ctx context.Context, conn *grpc.ClientConn, method string, streaming bool) error {
	if !streaming {
		return conn.Invoke(ctx, method, &emptypb.Empty{}, &emptypb.Empty{})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	if err := s.SendMsg(&emptypb.Empty{}); err != nil && err != io.EOF {
		return err
	}
	s.CloseSend()
	return s.RecvMsg(&emptypb.Empty{})
}

// TestRemoveNodeFromTheNodesHost calls RemoveNode on a node without an authenticator that
// listens on every address, over loopback and over one of the host's other addresses: both come
// from the node's own host, so both are served (the host id is unknown). Calls from other
// hosts are refused (TestTopologyChangesFromOtherHostsNeedAuthentication); one host cannot
// make a connection from another.
func TestRemoveNodeFromTheNodesHost(t *testing.T) {
	var ext net.IP
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() && !ip.IP.IsLinkLocalUnicast() {
			ext = ip.IP
			break
		}
	}
	if ext == nil {
		t.Skip("the host has no non-loopback IPv4 address")
	}
	cfg := nodeConfig(t.TempDir(), nil)
	cfg.Listen.Addr = "0.0.0.0:0"
	nd := startNode(t, cfg)
	_, port, _ := net.SplitHostPort(nd.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := &kvnodepb.RemoveNodeRequest{HostId: "no-such-node"}
	for _, host := range []string{"127.0.0.1", ext.String()} {
		_, err := kvnodepb.NewAdminClient(dialPlain(t, net.JoinHostPort(host, port))).RemoveNode(ctx, req)
		if status.Code(err) != codes.NotFound {
			t.Errorf("RemoveNode of an unknown node over %s, from the node's host = %v, want NotFound", host, err)
		}
	}
}
