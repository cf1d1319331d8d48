package node

import (
	"context"
	"time"

	"github.com/kvnode/kvnode/internal/loop"
)

// DefaultBatchlogReplayInterval is BatchlogOptions.ReplayInterval when it is zero: Cassandra's.
const DefaultBatchlogReplayInterval = 10 * time.Second

// startBatchlogReplay starts the loop that replays this node's batchlog: every interval (the
// first one interval after the start), the entries older than age (their coordinator should
// long have removed them) are re-applied to every replica of their partitions and removed; an
// entry whose replay fails stays for the next round. The node stops it (a replay in progress is
// canceled; its entry stays).
func (n *Node) startBatchlogReplay(now func() time.Time) {
	interval, age := n.cfg.Batchlog.ReplayInterval, n.cfg.Batchlog.ReplayAge
	if age == 0 {
		age = 2 * n.cfg.Coordinator.WriteTimeout
	}
	n.replayer = loop.Start(loop.Options{Every: interval, Delay: true}, func(ctx context.Context) time.Duration {
		res, err := n.replica.ReplayBatchlog(ctx, now().Add(-age), n.exec.ReplayBatch)
		switch {
		case err != nil && ctx.Err() == nil:
			n.log.Error("batchlog replay round failed", "err", err)
		case res.Replayed > 0 || res.Failed > 0:
			n.log.Info("batchlog replayed", "replayed", res.Replayed, "failed", res.Failed, "pending", res.Pending)
		}
		return 0
	})
}
