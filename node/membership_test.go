package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/poll"
)

// TestRemovalsTravelOverTheInternodePort: removenode tells the live nodes over the internode
// port, and a node that was down during the removal learns of it from a peer when it comes
// back (gossip alone removes nothing; cluster's TestRemovalMessageNeverRemovesALiveNode).
func TestRemovalsTravelOverTheInternodePort(t *testing.T) {
	tc := startCluster(t, 4)
	dead, away := cluster.NodeID(tc.ids[3]), 2
	tc.stop(3)
	tc.stop(away)
	tc.waitLive(30*time.Second, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tc.nodes[0].RemoveNode(ctx, string(dead)); err != nil {
		t.Fatalf("RemoveNode(%s) through node 0: %v", dead, err)
	}
	forgotten := func(nodes ...int) func() error {
		return func() error {
			for _, i := range nodes {
				c := tc.nodes[i].Cluster()
				if _, ok := c.Member(dead); ok || c.Ring().Contains(dead) {
					return fmt.Errorf("node %d still has removed node %s", i, dead)
				}
			}
			return nil
		}
	}
	poll.Must(t, 10*time.Second, "the live nodes forget the removed node", forgotten(0, 1))

	tc.restart(away)
	poll.Must(t, 30*time.Second, "the node that was down learns of the removal", forgotten(away))
	if rs := tc.nodes[away].Cluster().Removals(); len(rs) != 1 || rs[0].ID != dead {
		t.Errorf("node %d knows removals %v, want only %s", away, rs, dead)
	}
}
