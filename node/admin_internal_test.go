package node

import (
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// TestTopologyChangesFromOtherHostsNeedAuthentication is audit 18's finding 5: the Admin
// service shares the client port, so with authenticator none anyone who reached 9043 could
// decommission the node. Without an authenticator only the node's own host may now change
// the topology; with one, the superuser check decides (grpcapi's interceptors).
func TestTopologyChangesFromOtherHostsNeedAuthentication(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 50000} }
	local := tcp("10.0.0.3") // the node's address the connections reach
	from := func(addr net.Addr) context.Context {
		return peer.NewContext(context.Background(), &peer.Peer{Addr: addr, LocalAddr: local})
	}
	for _, c := range []struct {
		auth    string
		ctx     context.Context
		allowed bool
	}{
		{AuthenticatorNone, from(tcp("127.0.0.1")), true},
		{AuthenticatorNone, from(tcp("127.3.4.5")), true},
		{AuthenticatorNone, from(tcp("::1")), true},
		{AuthenticatorNone, from(tcp("::ffff:127.0.0.1")), true},
		{AuthenticatorNone, from(tcp("10.0.0.3")), true}, // the node's host dialing its address
		{AuthenticatorNone, from(tcp("10.0.0.1")), false},
		{AuthenticatorNone, peer.NewContext(context.Background(), &peer.Peer{Addr: tcp("10.0.0.3")}), false}, // no local address known
		{AuthenticatorNone, from(tcp("::")), false},
		{AuthenticatorNone, from(&net.UnixAddr{Name: "/tmp/s", Net: "unix"}), false},
		{AuthenticatorNone, context.Background(), false}, // no peer known
		{AuthenticatorPassword, from(tcp("10.0.0.1")), true},
	} {
		n := &Node{cfg: Config{Authenticator: c.auth}}
		p, _ := peer.FromContext(c.ctx)
		err := n.allowTopologyChange(c.ctx, "decommission")
		if c.allowed && err != nil || !c.allowed && status.Code(err) != codes.PermissionDenied {
			t.Errorf("authenticator %s, peer %v: allowTopologyChange = %v, want allowed %v (PermissionDenied otherwise)", c.auth, p, err, c.allowed)
		}
	}

	// The Admin methods that change the topology check first, before touching the node.
	a := adminServer{n: &Node{cfg: Config{Authenticator: AuthenticatorNone}}}
	remote := from(tcp("192.0.2.7"))
	if _, err := a.Decommission(remote, &kvnodepb.DecommissionRequest{}); status.Code(err) != codes.PermissionDenied ||
		!strings.Contains(status.Convert(err).Message(), "authenticator: password") {
		t.Errorf("Decommission from another host without an authenticator = %v, want PermissionDenied saying how to turn on authentication", err)
	}
	if _, err := a.RemoveNode(remote, &kvnodepb.RemoveNodeRequest{HostId: "x"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("RemoveNode from another host without an authenticator = %v, want PermissionDenied", err)
	}
	if _, err := a.Cleanup(remote, &kvnodepb.CleanupRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("Cleanup from another host without an authenticator = %v, want PermissionDenied", err)
	}
	// Snapshots too: taking them can fill the disk, clearing them deletes backups, restoring
	// writes data. Listing them changes nothing.
	sn := snapshotServer{n: a.n}
	if _, err := sn.Take(remote, &kvnodepb.TakeSnapshotRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("snapshot Take from another host without an authenticator = %v, want PermissionDenied", err)
	}
	if _, err := sn.Clear(remote, &kvnodepb.ClearSnapshotsRequest{Tag: "x"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("snapshot Clear from another host without an authenticator = %v, want PermissionDenied", err)
	}
	if _, err := sn.Restore(remote, &kvnodepb.RestoreSnapshotRequest{Tag: "x"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("snapshot Restore from another host without an authenticator = %v, want PermissionDenied", err)
	}
}
