package node

import (
	"context"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/loop"
)

// A node that cannot take writes says so to its peers (cluster.SetUnavailable), which treat it as
// down for the data path: their coordinators hint its writes and read from the other replicas,
// and `kvnode status` and system.peers show it down, while it stays in the ring. It cannot while
// its disk is under the free-space reserve (the store refuses writes; cluster.ReasonDiskFull),
// and once its storage failed (disk_failure_policy stop; cluster.ReasonStorageFailed). When
// space is freed the store accepts writes again by itself, and the node tells its peers, which
// see it up and replay their hints to it. The availability loop follows the store: woken when
// the store starts or stops refusing writes (replica.Options.OnSpaceChange), and every
// availabilityCheck besides.

// availabilityCheck is how often the availability loop looks at the store without being woken.
const availabilityCheck = time.Second

// spaceKick is the store's replica.SpaceWatcher: it wakes the availability loop.
type spaceKick chan struct{}

// SpaceChanged implements replica.SpaceWatcher. It never blocks.
func (k spaceKick) SpaceChanged() {
	select {
	case k <- struct{}{}:
	default:
	}
}

// startAvailability starts the availability loop, once the cluster has started.
func (n *Node) startAvailability() {
	kick := n.spaceKick
	n.availability = loop.Start(loop.Options{Every: availabilityCheck, Wake: []func() <-chan struct{}{func() <-chan struct{} { return kick }}},
		func(context.Context) time.Duration {
			n.cluster.SetUnavailable(n.unavailableReason())
			return 0
		})
}

// unavailableReason returns why the node cannot take writes, "" when it can.
func (n *Node) unavailableReason() string {
	switch {
	case n.store.Failed() != nil:
		return cluster.ReasonStorageFailed
	case n.store.SpaceError() != nil:
		return cluster.ReasonDiskFull
	}
	return ""
}
