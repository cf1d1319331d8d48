package replica

import (
	"fmt"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// MaxAccountDeltaCount bounds the count of one account-only delta: the operations one
// coordinator offered one partition (table, token, op) and did not send this replica, since
// its previous propagation. A coordinator drains its deltas every 20 ms, and waits at most
// 500 ms for the previous flush to be delivered, so one delta covers at most about half a
// second of one coordinator's traffic to one partition. 2^20 in that half second is two
// million operations a second through a single node to a single partition, far beyond what a
// node serves (docs/performance.md measures tens of thousands per node); a count above it is
// a bug or a forgery, and the replica refuses the batch (issue 18: one delta of 2^32-1 made a
// partition reject every write for 19 s).
const MaxAccountDeltaCount = 1 << 20

// refuseDeltaCounts returns the BAD_REQUEST answer to a delta batch whose counts for one
// partition (table, token, op) add up to more than MaxAccountDeltaCount, naming the delta that
// crossed it, or nil when every partition's total is within it. The totals are what bound a
// counter's jump: a coordinator coalesces its deltas per partition, but a batch repeating one
// partition would otherwise add up many bounded counts.
func (s *Service) refuseDeltaCounts(req *replicapb.AccountDeltaRequest) *replicapb.AccountDeltaResponse {
	type key struct {
		table uint64
		token int64
		op    replicapb.Op
	}
	deltas := req.GetDeltas()
	var totals map[key]uint64
	if len(deltas) > 1 {
		totals = make(map[key]uint64, len(deltas))
	}
	for i, d := range deltas {
		total := uint64(d.GetCount())
		if totals != nil {
			k := key{d.GetTableId(), d.GetToken(), d.GetOp()}
			total += totals[k]
			totals[k] = total
		}
		if total > MaxAccountDeltaCount {
			s.metrics.requests[reqAccountDelta][statusError].Add(1)
			return &replicapb.AccountDeltaResponse{
				Status: replicapb.Status_STATUS_ERROR,
				Error: &replicapb.Error{Code: replicapb.Error_BAD_REQUEST, Message: fmt.Sprintf(
					"account delta %d brings the operations counted for table %d, token %d, %v in this batch to %d, more than the %d one coordinator can offer a partition between two propagations",
					i, d.GetTableId(), d.GetToken(), d.GetOp(), total, MaxAccountDeltaCount)},
			}
		}
	}
	return nil
}
