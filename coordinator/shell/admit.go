package shell

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// AdmittedWrite is a prepared write that this node's limiter admitted before the write's other
// values were even looked at (see AdmitPrepared). It holds the limiter's decision, the draw and
// the core request that carries them, so that Execute writes it without counting it again.
type AdmittedWrite struct {
	e        *Executor
	p        *coordinator.Prepared
	s        *schema.Schema // the schema the decision was made against; Execute binds against it
	table    *schema.Table
	replicas []coordinator.Replica // the partition's replicas, for hints
	pending  []coordinator.NodeID  // its pending replicas, from the same ring
	token    int64
	cl       coordinator.Consistency
	req      *coordinator.Request
	step     coordinator.Step // the Sends of the admitted request
	now, dl  time.Time
	start    time.Time // for the Observer's duration
	warnings []string  // of the budgets in shadow mode that would have rejected it
	executed bool
}

// AdmitPrepared is the cheap front of executing a prepared write: when this node is a replica
// of the write's partition (or has learned from its replicas that the partition is hot) and the
// table limits writes, it asks the local limiter (or the learned copy) first, having
// looked at nothing but the partition key, so that a write to a hot partition is rejected
// before its other values are decoded, bound or validated. key holds the values bound to
// p.PKIndexes, in partition key order (nil for a null or unset value). The results are:
//
//   - nil, nil: no early decision applies (not a write, a partition key not wholly bound by
//     markers, a key value the full path refuses with its own error, a USING TIMEOUT, an
//     unlimited table, a node that is neither a replica of the partition nor knows it hot, a
//     statement the role may not run, an unknown consistency level): run the statement with
//     Execute as usual;
//   - nil, err: the write is finished, err being what Execute would have returned (a
//     *RateLimitError rejected by the coordinator, by the partition's limit or by one of the
//     request's budgets, which are judged first; or an *UnavailableError); the Observer has
//     been told, as Execute tells it;
//   - a, nil: the limiter admitted the write and counted it; a.Execute runs it and must be
//     called exactly once.
//
// The write is counted exactly once, with one draw, whatever path it takes, and the replicas
// that did not count it get it through account propagation as they do after Execute.
// Validation errors of the other values come after the limiter's decision on this path: a
// rejected write that also had a bad value is answered with the rate-limit error, and an admitted
// write refused by validation has been counted (and propagated) as offered load.
func (e *Executor) AdmitPrepared(ctx context.Context, p *coordinator.Prepared, cl coordinator.Consistency, key [][]byte) (*AdmittedWrite, error) {
	if (e.local == nil && e.learn == nil) || p == nil || p.Statement == nil || len(p.PKIndexes) == 0 || len(key) != len(p.PKIndexes) {
		return nil, nil
	}
	switch {
	case cl == 0:
		cl = coordinator.One
	case !cl.Valid():
		return nil, nil
	}
	if cql.ConditionsOf(p.Statement) != nil {
		return nil, nil // a lightweight transaction: its limiter decision is its Paxos round's (lwt.go)
	}
	var name cql.TableName
	switch st := p.Statement.(type) {
	case *cql.InsertStmt:
		if st.Timeout != nil {
			return nil, nil
		}
		name = st.Table
	case *cql.UpdateStmt:
		if st.Timeout != nil {
			return nil, nil
		}
		name = st.Table
	case *cql.DeleteStmt:
		if st.Timeout != nil {
			return nil, nil
		}
		name = st.Table
	default:
		return nil, nil
	}
	s := e.schema.Schema()
	t, err := s.TableFor(name, p.Keyspace)
	if err != nil || t.Limit(coordinator.OpWrite) == 0 || !keyBound(p, t, key) {
		return nil, nil
	}
	if e.auth != nil && !e.mayWriteCached(ctx, t) {
		return nil, nil // Execute checks the grants (and reads them when they are not cached)
	}
	rf, err := replicationFactor(s, t)
	if err != nil {
		return nil, nil
	}
	var keyBuf [64]byte
	token := partitioner.Token(partitioner.AppendKey(keyBuf[:0], key))
	sc := admitScratchPool.Get().(*admitScratch)
	defer admitScratchPool.Put(sc) // the request and the admission copy what they keep
	replicas, pending := e.writeReplicaSetWith(sc.replicas[:0], sc.pending[:0], sc.ids[:0], token, rf)
	now := e.now()
	if !(e.local != nil && isReplica(replicas, e.localID)) && !e.learnedHotWrite(t, token, now) {
		return nil, nil // the replicas decide: nothing to gain here
	}
	var start time.Time
	if e.observer != nil {
		start = now
		if !e.wallClock {
			start = time.Now()
		}
	}
	var warnings []string
	if err := e.judgeScopes(ctx, t.Keyspace, t.Name, coordinator.OpWrite, 1, &warnings); err != nil {
		if e.observer != nil {
			e.observer.OnRequest(t.Keyspace, t.Name, kindWrite.String(), cl.String(), resultOf(err), time.Since(start))
		}
		return nil, err
	}
	dl := deadline(ctx, now, e.writeTimeout)
	req, step, err := e.startWrite(t, rf, replicas, token, false, cl, now, dl)
	if err != nil {
		return nil, nil // the full path meets the same error and reports it
	}
	if o := step.Outcome; o != nil {
		e.propagate(req, coordinator.OpWrite, partitionKey{t.ID, token})
		err := e.outcomeErr(e.namedDC(o, req), t)
		if e.observer != nil {
			e.observer.OnRequest(t.Keyspace, t.Name, kindWrite.String(), cl.String(), resultOf(err), time.Since(start))
		}
		// Finished here, by the local check: nothing else saw req, and propagate and
		// outcomeErr copied what they keep (step's slices point into req).
		requestPool.Put(req)
		return nil, err
	}
	return &AdmittedWrite{e: e, p: p, s: s, table: t, replicas: append([]coordinator.Replica(nil), replicas...), pending: append([]coordinator.NodeID(nil), pending...), token: token, cl: cl, req: req, step: step, now: now, dl: dl, start: start, warnings: warnings}, nil
}

// admitScratch is AdmitPrepared's space for the partition's replica set: its buffers would
// escape to the heap on every call if they were its own (they pass through the ring's
// interface and the request's parameters), and a hot partition's rejections are the calls
// that must cost least.
type admitScratch struct {
	replicas [8]coordinator.Replica
	pending  [8]coordinator.NodeID
	ids      [8]coordinator.NodeID
}

var admitScratchPool = sync.Pool{New: func() any { return new(admitScratch) }}

// learnedHotWrite reports whether this node, not a replica of the partition with token of t,
// has learned from the replicas that the partition is hot for writes (see learnedHot, which
// startWrite then applies).
func (e *Executor) learnedHotWrite(t *schema.Table, token int64, stamp time.Time) bool {
	return e.learn != nil && t.RateLimit.Mode != schema.Shadow && e.learn.hot(t, coordinator.OpWrite, token, stamp)
}

// keyBound reports whether key, bound to p's partition key markers, is a partition key of t
// the full path accepts: the markers still name t's partition key columns, in order, with
// their types (the table may have been dropped and created again since p was prepared), and
// every value is set, of its column's type and of a size a key may have.
func keyBound(p *coordinator.Prepared, t *schema.Table, key [][]byte) bool {
	if len(t.PartitionKey) != len(key) {
		return false
	}
	for j, x := range p.PKIndexes {
		if x < 0 || x >= len(p.Variables) {
			return false
		}
		v, c := p.Variables[x], &t.PartitionKey[j]
		if v.Keyspace != t.Keyspace || v.Table != t.Name || v.Name != c.Name || v.Type != c.Type {
			return false
		}
		k := key[j]
		if k == nil || len(k) > 1<<16-1 || (len(k) == 0 && len(key) == 1) || c.Type.Check(k) != nil {
			return false
		}
	}
	return true
}

// isReplica reports whether id is one of replicas.
func isReplica(replicas []coordinator.Replica, id coordinator.NodeID) bool {
	for _, r := range replicas {
		if r.ID == id {
			return true
		}
	}
	return false
}

// Prepared returns the prepared statement admitted.
func (a *AdmittedWrite) Prepared() *coordinator.Prepared { return a.p }

// errAdmissionReused is returned by an AdmittedWrite executed twice.
var errAdmissionReused = errors.New("coordinator: an admitted write was executed twice")

// Execute runs the admitted write with st's values (st.Prepared must be the statement admitted,
// st.Consistency its level): the domain API's Execute for it, the limiter's decision taken
// from the admission. It tells the Observer as Execute does.
func (a *AdmittedWrite) Execute(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
	if a.executed {
		return coordinator.Result{}, errAdmissionReused
	}
	a.executed = true
	e := a.e
	var (
		res coordinator.Result
		err error
	)
	if st.Prepared != a.p {
		a.abandon()
		err = errors.New("coordinator: an admitted write was executed with another statement")
	} else {
		_, res, err = e.executeWrite(ctx, a.p.Statement, a.p.Keyspace, a.cl, &st, a)
	}
	if e.observer != nil {
		e.observer.OnRequest(a.table.Keyspace, a.table.Name, kindWrite.String(), a.cl.String(), resultOf(err), time.Since(a.start))
	}
	if err != nil {
		return coordinator.Result{}, err
	}
	return res, nil
}

// Abandon ends an admission that will not be executed (the client went away, its frame was
// malformed): the replicas that were to count the write get it through propagation, so that it
// is still counted once everywhere. It does nothing on a nil or executed admission.
func (a *AdmittedWrite) Abandon() {
	if a == nil || a.executed {
		return
	}
	a.executed = true
	a.abandon()
}

// abandonIfAny abandons a, when there is an admission.
func (a *AdmittedWrite) abandonIfAny() {
	if a != nil {
		a.abandon()
	}
}

// abandon ends an admitted write that will not be sent: the replicas that were to count it
// (account-only) get it through propagation, so that every counter still counts it once.
func (a *AdmittedWrite) abandon() {
	if a.e.prop == nil {
		return
	}
	var buf [8]coordinator.NodeID
	ids := buf[:0]
	for _, s := range a.step.Sends {
		if s.Mode == coordinator.ModeAccountOnly {
			ids = append(ids, s.To)
		}
	}
	a.e.prop.add(ids, a.table.ID, a.token, coordinator.OpWrite)
}
