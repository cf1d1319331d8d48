package shell

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// anyRefused returns the error of a statement that cannot run at consistency cl when cl is
// ANY: a read (Cassandra's message), or a conditional statement or batch (its Paxos round
// needs replicas). Other statements at ANY run (writes) or ignore the level (the rest).
func anyRefused(stmt cql.Statement, cl coordinator.Consistency) error {
	if cl != coordinator.Any {
		return nil
	}
	switch st := stmt.(type) {
	case *cql.SelectStmt:
		return &coordinator.InvalidError{Err: errors.New("ANY ConsistencyLevel is only supported for writes")}
	case *cql.BatchStmt:
		if hasConditions(st.Statements) {
			return errAnyConditional
		}
	default:
		if cql.ConditionsOf(stmt) != nil {
			return errAnyConditional
		}
	}
	return nil
}

var errAnyConditional = &coordinator.InvalidError{Err: errors.New("consistency level ANY is not supported for conditional statements (IF ...)")}

// writeAny coordinates pw, a write to the partition of table t with the given token, at ANY,
// as Cassandra does: it succeeds once a replica acknowledged it or the coordinator stored a
// hint. With a replica up it runs as ONE (and the replicas that miss it are hinted as at
// ONE); with every replica down it stores a hint for each and succeeds without contacting
// any (no replica counts it in the limiter: hint replay is exempt). Without hinted handoff,
// every replica down is Unavailable. Counter tables refuse ANY, as Cassandra's.
func (e *Executor) writeAny(ctx context.Context, t *schema.Table, rf schema.Replication, token int64, pw partitionWrite, now, dl time.Time) error {
	if t.IsCounter() {
		return &coordinator.InvalidError{Err: fmt.Errorf("consistency level ANY is not yet supported for counter table %s", t.Name)}
	}
	var replicaBuf [8]coordinator.Replica
	var pendingBuf [8]coordinator.NodeID
	replicas, _ := e.writeReplicaSet(replicaBuf[:0], pendingBuf[:0], token, rf)
	live := false
	for _, rep := range replicas {
		live = live || !rep.Down || rep.ID == e.self()
	}
	switch {
	case live || len(replicas) == 0:
		return e.writePartition(ctx, t, rf, token, pw, coordinator.One, now, dl)
	case e.hints == nil:
		return &coordinator.UnavailableError{Consistency: coordinator.Any, Live: 0, Required: 1}
	}
	m := pw.mutation(token)
	for _, rep := range replicas {
		e.hints.StoreHint(rep.ID, m)
	}
	return nil
}
