package node

import (
	"context"
	"time"

	"github.com/kvnode/kvnode/internal/loop"
)

// paxosGrace is how long the Paxos state of a partition (lightweight transactions' promises and
// proposals) is kept after it last changed; paxosGCEvery how often the gc looks. A proposal
// still unfinished after the grace belongs to a statement whose client long had its timeout;
// nobody observed its value (a SERIAL read or a later transaction would have completed it), so
// dropping it is as if it never happened.
const (
	paxosGrace   = time.Hour
	paxosGCEvery = 10 * time.Minute
)

// startPaxosGC starts the gc of the replica's Paxos state (replica.Store.PurgePaxos).
func (n *Node) startPaxosGC() {
	n.paxosGC = loop.Start(loop.Options{Every: paxosGCEvery, Delay: true}, func(context.Context) time.Duration {
		if removed, err := n.store.PurgePaxos(time.Now().Add(-paxosGrace)); err != nil {
			n.log.Warn("paxos state gc failed", "err", err)
		} else if removed > 0 {
			n.log.Debug("paxos state gc", "removed", removed)
		}
		return 0
	})
}
