package node

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/internode"
)

// CleanedUp reports whether n has cleaned up for its current ring, which has no transition in
// progress: it holds no data of ranges it does not replicate.
func CleanedUp(n *Node) bool {
	r := n.cluster.Ring()
	c := n.topo.cleanedFor.Load()
	return !r.Transitioning() && c != nil && c.Equal(r)
}

// PendingHints returns the hints n holds for other nodes, not yet replayed.
func PendingHints(n *Node) int {
	hints, _ := n.hints.Pending()
	return hints
}

// CallPeer sends req to node to over n's internode sender, as n's own requests go.
func CallPeer(ctx context.Context, n *Node, to string, req proto.Message) (proto.Message, error) {
	return n.sender.Call(ctx, internode.NodeID(to), req)
}
