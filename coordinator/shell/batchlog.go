package shell

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Batchlog stores logged batches on other nodes before their coordinator applies them, so that
// a batch whose coordinator fails part way is still applied whole: the nodes holding it replay
// it (Cassandra's batchlog). Package node implements it over the cluster and the internode
// transport; a request to the local node is served in process.
type Batchlog interface {
	// AppendNodes appends the ids of every node of the cluster, live or not, this one included,
	// and returns the extended slice.
	AppendNodes(dst []coordinator.NodeID) []coordinator.NodeID
	// StoreBatch stores a batch in node to's batchlog, durably.
	StoreBatch(ctx context.Context, to coordinator.NodeID, req *replicapb.StoreBatchRequest) (*replicapb.BatchlogResponse, error)
	// RemoveBatch removes a batch from node to's batchlog.
	RemoveBatch(ctx context.Context, to coordinator.NodeID, req *replicapb.RemoveBatchRequest) (*replicapb.BatchlogResponse, error)
}

// maxBatchlogEndpoints is how many nodes hold each logged batch: Cassandra's two.
const maxBatchlogEndpoints = 2

// batchlogEndpoints returns the nodes to store a logged batch on, as Cassandra's
// BatchlogEndpoints chooses them: up to two live nodes other than this one, picked at random so
// that the load spreads; this node itself only when it is the cluster's one node. With other
// nodes in the cluster and none of them live, it returns none: the batch is unavailable.
func (e *Executor) batchlogEndpoints() []coordinator.NodeID {
	var buf [16]coordinator.NodeID
	all := e.batchlog.AppendNodes(buf[:0])
	if len(all) == 0 || len(all) == 1 && all[0] == e.localID {
		return []coordinator.NodeID{e.localID}
	}
	var live []coordinator.NodeID
	for _, id := range all {
		if id != e.localID && e.ring.IsLive(id) {
			live = append(live, id)
		}
	}
	slices.Sort(live) // the shuffle below is then the only source of order
	rand.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	return live[:min(len(live), maxBatchlogEndpoints)]
}

// BatchlogUnknownTableGrace is how long a batchlog entry naming a table unknown to the
// replaying node is kept before the table is taken as dropped: far longer than schema changes
// take to reach a node that is up, so that a lagging schema never loses a batch.
const BatchlogUnknownTableGrace = time.Hour

// batchTime returns the creation time newBatchID put in id (the zero time for a short id).
func batchTime(id []byte) time.Time {
	if len(id) < 8 {
		return time.Time{}
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(id)))
}

// newBatchID returns a batchlog id: the coordinator's clock in nanoseconds, big-endian, so that
// a node's batchlog sorts by age, then 8 random bytes.
func (e *Executor) newBatchID() []byte {
	id := make([]byte, 16)
	binary.BigEndian.PutUint64(id, uint64(e.now().UnixNano()))
	binary.BigEndian.PutUint64(id[8:], rand.Uint64())
	return id
}

// storeBatchlog writes entry to the batchlog of the nodes batchlogEndpoints chooses, all at
// once, and waits for every one of them, until dl. It returns the nodes holding the entry, or
// the batch's error: *UnavailableError when no node can hold it (with cl, the batch's level,
// and the live and required batchlog nodes), *TimeoutError when dl passed first, *FailureError
// when a node failed to store it. Either way no partition of the batch has been written yet.
func (e *Executor) storeBatchlog(ctx context.Context, entry *replicapb.BatchlogEntry, cl coordinator.Consistency, dl time.Time) ([]coordinator.NodeID, error) {
	eps := e.batchlogEndpoints()
	if len(eps) == 0 {
		return nil, &coordinator.UnavailableError{Consistency: cl, Live: 0, Required: 1}
	}
	// Deadlines come from the configured clock; contexts run on the real one (as in await).
	ctx, cancel := context.WithTimeout(ctx, dl.Sub(e.now()))
	defer cancel()
	req := &replicapb.StoreBatchRequest{Entry: entry}
	errs := make(chan error, len(eps))
	for _, to := range eps {
		go func() { errs <- e.storeBatch(ctx, to, req) }()
	}
	acks, failures := 0, 0
	var first error
	for range eps { // every call ends by dl, so none outlives this function
		if err := <-errs; err != nil {
			failures++
			if first == nil {
				first = err
			}
			continue
		}
		acks++
	}
	if failures == 0 {
		return eps, nil
	}
	// The batch fails without writing a partition: take its entry back from every node that
	// may hold it, so that a replay does not apply it later (best effort: a store that lands
	// after its removal is still replayed, as a write that timed out may still apply).
	e.removeBatchlog(eps, entry.GetId())
	switch err := ctx.Err(); {
	case errors.Is(err, context.Canceled):
		return nil, err // the client went away
	case err != nil:
		return nil, &coordinator.TimeoutError{Op: coordinator.OpWrite, Consistency: cl, Received: acks, Required: len(eps), BatchLog: true}
	}
	return nil, &coordinator.FailureError{Op: coordinator.OpWrite, Consistency: cl, Received: acks, Required: len(eps), Failures: failures,
		Err: fmt.Errorf("storing the batch in the batchlog: %w", first), BatchLog: true}
}

// storeBatch stores req's entry in the batchlog of to; a panic in the call counts as its failure.
func (e *Executor) storeBatch(ctx context.Context, to coordinator.NodeID, req *replicapb.StoreBatchRequest) (err error) {
	defer recovered(e.logger, "a batchlog store", to, &err)
	resp, err := e.batchlog.StoreBatch(ctx, to, req)
	switch {
	case err != nil:
		return transportError(to, err)
	case resp.GetStatus() != replicapb.Status_STATUS_OK:
		return &coordinator.ReplicaError{Replica: to, Code: replicaErrorCode(resp.GetError().GetCode()),
			Message: "batchlog: " + resp.GetError().GetMessage()}
	}
	return nil
}

// removeBatchlog removes the entry id from the batchlogs of eps once its batch was applied, in
// the background and best effort: an entry left behind is replayed later, which writes nothing
// new. Close cancels the removals still running.
func (e *Executor) removeBatchlog(eps []coordinator.NodeID, id []byte) {
	e.background(e.writeTimeout, func(ctx context.Context) {
		req := &replicapb.RemoveBatchRequest{Id: id}
		for _, to := range eps {
			if err := e.removeBatch(ctx, to, req); err != nil {
				e.logger.Debug("batchlog removal failed; the entry will be replayed", "node", to, "id", fmt.Sprintf("%x", id), "err", err)
			}
		}
	})
}

// removeBatch removes req's entry from the batchlog of to; a panic in the call counts as its
// failure, and the removals from the other nodes go on.
func (e *Executor) removeBatch(ctx context.Context, to coordinator.NodeID, req *replicapb.RemoveBatchRequest) (err error) {
	defer recovered(e.logger, "a batchlog removal", to, &err)
	resp, err := e.batchlog.RemoveBatch(ctx, to, req)
	if err == nil && resp.GetStatus() != replicapb.Status_STATUS_OK {
		err = errors.New(resp.GetError().GetMessage())
	}
	return err
}

// background runs fn on a goroutine the executor owns, with a context that ends after timeout or
// at Close; it does nothing once the executor is closed.
func (e *Executor) background(timeout time.Duration, fn func(context.Context)) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	f := &flight{cancel: cancel}
	f.pending.Store(1)
	if !e.register(f) {
		cancel()
		return
	}
	defer e.release(f)
	if !e.extend(f) {
		return
	}
	go func() {
		defer e.wg.Done()
		defer e.release(f)
		fn(ctx)
	}()
}

// ReplayBatch applies a batchlog entry, as the node holding it replays it: each mutation goes to
// every replica of its partition (consistency ALL), exempt from the rate limiter (internal
// traffic), with the timestamps the entry holds, so replaying twice writes nothing new. A
// mutation of a table this node does not know is skipped once the entry is older than
// BatchlogUnknownTableGrace (the table was dropped); a younger entry is kept for a later round,
// since this node's schema may only lag behind the coordinator's. It returns
// nil once every replica of every partition acknowledged; otherwise the first error, and the
// entry is to be kept for the next round.
func (e *Executor) ReplayBatch(ctx context.Context, entry *replicapb.BatchlogEntry) error {
	s := e.schema.Schema()
	now := e.now()
	dl := deadline(ctx, now, e.writeTimeout)
	for i, m := range entry.GetMutations() {
		t, ok := s.TableByID(schema.TableID(m.GetTableId()))
		if !ok {
			if age := now.Sub(batchTime(entry.GetId())); age < BatchlogUnknownTableGrace {
				return fmt.Errorf("batchlog replay of %x: mutation %d: table id %d is not in this node's schema (yet); the entry is kept for %v more in case the schema lags", entry.GetId(), i, m.GetTableId(), (BatchlogUnknownTableGrace - age).Round(time.Second))
			}
			e.logger.Info("batchlog replay skips a mutation of a dropped table", "id", fmt.Sprintf("%x", entry.GetId()), "table_id", m.GetTableId())
			continue
		}
		rf, err := replicationFactor(s, t)
		if err != nil {
			return err
		}
		if err := e.writePartition(ctx, t, rf, m.Token, partitionWrite{m: m, exempt: true}, coordinator.All, e.now(), dl); err != nil {
			return fmt.Errorf("batchlog replay of %x: mutation %d of %s: %w", entry.GetId(), i, t.QualifiedName(), err)
		}
	}
	return nil
}
