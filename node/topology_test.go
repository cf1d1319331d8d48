package node_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// TestTopologyChangesThatWouldLoseDataAreRefused: removenode of the serving node, of an unknown
// node, of a live node, and of a dead node holding the only replica of rows (RF=1), and a
// decommission and a cleanup while another node is down, are all refused, through the Admin service with
// FAILED_PRECONDITION (NOT_FOUND for the unknown node), and change nothing.
func TestTopologyChangesThatWouldLoseDataAreRefused(t *testing.T) {
	tc := startCluster(t, 3)
	c := tc.client(0)
	exec(t, c, client.Quorum, "CREATE KEYSPACE one WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c, client.Quorum, "CREATE TABLE one.t (k int PRIMARY KEY, v int)")
	for k := range 20 {
		exec(t, c, client.One, "INSERT INTO one.t (k, v) VALUES ("+strconv.Itoa(k)+", 1)")
	}
	conn, err := grpc.NewClient(tc.nodes[0].Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin := kvnodepb.NewAdminClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	removeNode := func(id string) error {
		_, err := admin.RemoveNode(ctx, &kvnodepb.RemoveNodeRequest{HostId: id})
		return err
	}
	check := func(what string, err error, code codes.Code, msg string) {
		t.Helper()
		if s, _ := status.FromError(err); s.Code() != code || !strings.Contains(s.Message(), msg) {
			t.Errorf("%s: %v; want %v saying %q", what, err, code, msg)
		}
	}
	check("removenode of the serving node", removeNode(tc.ids[0]), codes.FailedPrecondition, "decommission it instead")
	check("removenode of an unknown node", removeNode("no-such-node"), codes.NotFound, "unknown node")
	check("removenode of a live node", removeNode(tc.ids[2]), codes.FailedPrecondition, "is up")
	check("removenode without a host id", removeNode(""), codes.InvalidArgument, "host_id is empty")

	tc.stop(2)
	tc.waitLive(30*time.Second, 2)
	check("removenode of the only replica of RF=1 rows", removeNode(tc.ids[2]), codes.FailedPrecondition, "no live replica holds range")
	_, err = admin.Decommission(ctx, &kvnodepb.DecommissionRequest{})
	check("decommission with a node down", err, codes.FailedPrecondition, "is down")
	_, err = admin.Cleanup(ctx, &kvnodepb.CleanupRequest{})
	check("cleanup with a node down", err, codes.FailedPrecondition, "is down")
	for i := range 2 {
		if st := tc.nodes[i].Cluster().State(); st != cluster.StateNormal {
			t.Errorf("node %d is %v after refused changes, want normal", i, st)
		}
		if !tc.nodes[i].Cluster().Ring().Contains(cluster.NodeID(tc.ids[2])) {
			t.Errorf("node %d dropped the down node from its ring after a refused removenode", i)
		}
	}
	_, err = tc.nodes[1].RemoveNode(ctx, tc.ids[2])
	if err == nil || !strings.Contains(err.Error(), "no live replica holds range") {
		t.Errorf("RemoveNode through node 1 = %v, want the same refusal", err)
	}
}
