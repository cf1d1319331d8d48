package shell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// executeWrite runs an INSERT, UPDATE or DELETE at consistency cl, with req's values and default
// timestamp. It returns the table once the statement resolved it, for the Observer. adm, when
// not nil, is the statement's admission by AdmitPrepared: the write is bound against the schema
// it was admitted with and sent with the admitted request, never counted again.
func (e *Executor) executeWrite(ctx context.Context, stmt cql.Statement, keyspace string, cl coordinator.Consistency, req *coordinator.Statement, adm *AdmittedWrite) (*schema.Table, coordinator.Result, error) {
	s := e.schema.Schema()
	if adm != nil {
		s = adm.s
	}
	w, err := s.BindWriteAt(stmt, keyspace, req.Values, e.now())
	if err != nil {
		adm.abandonIfAny()
		return nil, coordinator.Result{}, invalid(stmt, err)
	}
	if !w.HasTimestamp && req.HasTimestamp {
		w.Timestamp, w.HasTimestamp = req.Timestamp, true
	}
	now := e.now()
	if adm != nil {
		now = adm.now
	}
	if err := e.checkTimestamp(stmt, w, now); err != nil {
		adm.abandonIfAny()
		return w.Table, coordinator.Result{}, err
	}
	if err := e.checkFormat(stmt, w); err != nil {
		adm.abandonIfAny()
		return w.Table, coordinator.Result{}, err
	}
	if err := checkWriteSize(w, stmt.Pos(), e.maxMutation); err != nil {
		adm.abandonIfAny()
		return w.Table, coordinator.Result{}, err
	}
	if err := checkCollections(w, stmt.Pos(), e.maxCollection); err != nil {
		adm.abandonIfAny()
		return w.Table, coordinator.Result{}, err
	}
	rf, err := replicationFactor(s, w.Table)
	if err != nil {
		adm.abandonIfAny()
		return w.Table, coordinator.Result{}, err
	}
	ts := w.Timestamp
	if !w.HasTimestamp {
		ts = e.nextTimestamp()
	}
	var keyBuf [64]byte
	token := partitioner.Token(partitioner.AppendKey(keyBuf[:0], w.PartitionKey))
	var res coordinator.Result
	pw := partitionWrite{w: w, ts: ts, now: now.Unix(), warnings: &res.Warnings}
	readCL := cl
	if cl == coordinator.Any { // the read of a list operation by index or value
		readCL = coordinator.One
	}
	if pw.lists, err = e.resolveLists(ctx, w, rf, token, readCL, now, deadline(ctx, now, timeoutOr(e.writeTimeout, w.Timeout))); err != nil {
		adm.abandonIfAny()
		return w.Table, coordinator.Result{}, err
	}
	if adm != nil {
		res.Warnings = append(res.Warnings, adm.warnings...) // its budgets judged it (AdmitPrepared)
		if w.Table != adm.table || token != adm.token {
			adm.abandon()
			return w.Table, coordinator.Result{}, fmt.Errorf("coordinator: admitted write to %s bound to another partition (token %d, admitted %d)", w.Table.QualifiedName(), token, adm.token)
		}
		err := e.finishWrite(ctx, w.Table, adm.replicas, adm.pending, token, pw, adm.req, adm.step, adm.dl)
		return w.Table, res, err
	}
	if err := e.judgeScopes(ctx, w.Table.Keyspace, w.Table.Name, coordinator.OpWrite, 1, &res.Warnings); err != nil {
		return w.Table, coordinator.Result{}, err
	}
	dl := deadline(ctx, now, timeoutOr(e.writeTimeout, w.Timeout))
	err = e.writePartition(ctx, w.Table, rf, token, pw, cl, now, dl)
	return w.Table, res, err
}

// replicationFactor returns the replication factor of t's keyspace in s.
func replicationFactor(s *schema.Schema, t *schema.Table) (schema.Replication, error) {
	ks, ok := s.Keyspace(t.Keyspace)
	if !ok { // the schema is immutable and it holds the table
		return schema.Replication{}, fmt.Errorf("coordinator: keyspace of table %s missing from the schema", t.QualifiedName())
	}
	return ks.Replication(), nil
}

// timeoutOr returns the statement's USING TIMEOUT when it has one (it replaces the configured
// timeout, as in ScyllaDB; the client's context deadline still bounds it), else def.
func timeoutOr(def, using time.Duration) time.Duration {
	if using > 0 {
		return using
	}
	return def
}

// partitionWrite is what writePartition writes to one partition: a mutation already built (a
// batch's), or one write and its timestamp, built into a mutation only once the limiter admitted
// it (a rejection by the coordinator never builds it).
type partitionWrite struct {
	m  *replicapb.Mutation
	w  *schema.Write
	ts int64
	// now is the coordinator's clock (seconds since the Unix epoch) when the write started: an
	// expiring write (w.TTL) expires at now + TTL.
	now int64
	// lists holds what w's operations on lists by index or value resolved to (resolveLists).
	lists map[int][]listElement
	// exempt keeps the write out of the rate limiter: internal traffic (batchlog replay).
	exempt bool
	// warnings, when set, receives the client's warning for a write its table's limit in
	// shadow mode would have rejected.
	warnings *[]string
}

// mutation returns pw's mutation of the partition with the given token.
func (pw partitionWrite) mutation(token int64) *replicapb.Mutation {
	if pw.m != nil {
		return pw.m
	}
	m := &replicapb.Mutation{TableId: uint64(pw.w.Table.ID), PartitionKey: pw.w.PartitionKey, Token: token}
	fillMutation(m, pw.w, pw.ts, pw.now, pw.lists)
	return m
}

// writePartition coordinates pw, a write to the partition of table t with the given token, at
// consistency cl: the limiter counts it as one write of the partition.
func (e *Executor) writePartition(ctx context.Context, t *schema.Table, rf schema.Replication, token int64, pw partitionWrite, cl coordinator.Consistency, now, dl time.Time) error {
	if cl == coordinator.Any {
		return e.writeAny(ctx, t, rf, token, pw, now, dl)
	}
	var replicaBuf [8]coordinator.Replica
	var pendingBuf [8]coordinator.NodeID
	replicas, pending := e.writeReplicaSet(replicaBuf[:0], pendingBuf[:0], token, rf)
	req, step, err := e.startWrite(t, rf, replicas, token, pw.exempt, cl, now, dl)
	if err != nil {
		return err
	}
	return e.finishWrite(ctx, t, replicas, pending, token, pw, req, step, dl)
}

// startWrite builds the core request of a write to the partition of t with the given token and
// starts it: the draw, and the local limiter's decision when this node is a replica. The step
// carries the Outcome when the request ended there (rejected by the coordinator, unavailable).
func (e *Executor) startWrite(t *schema.Table, rf schema.Replication, replicas []coordinator.Replica, token int64, exempt bool, cl coordinator.Consistency, now, dl time.Time) (*coordinator.Request, coordinator.Step, error) {
	p := coordinator.Params{
		Op:          coordinator.OpWrite,
		Consistency: cl,
		Self:        e.self(),
		Replicas:    replicas,
		PerDC:       len(rf.DataCenters) > 0,
		Limit:       t.Limit(coordinator.OpWrite),
		Deadline:    dl,
		Exempt:      exempt,
	}
	if p.Limit > 0 && !p.Exempt {
		// The replicas count the write at the clock reading its local check uses (one
		// reading instead of two on a hot partition's every write).
		p.Draw, p.Stamp = e.draw(), now
	}
	e.learnedHot(&p, t, token)
	req, err := e.newRequest(p)
	if err != nil {
		return nil, coordinator.Step{}, err
	}
	step, err := e.begin(req, now, coordinator.OpWrite, partitionKey{t.ID, token}, p.Draw)
	if err != nil {
		return nil, coordinator.Step{}, err
	}
	return req, step, nil
}

// finishWrite sends a started write's mutation to the step's replicas (and to pending, the
// partition's pending replicas when the write started, during a topology change), waits for the
// outcome, stores hints for the replicas that did not acknowledge it, and hands the replicas
// that did not count it to propagation.
func (e *Executor) finishWrite(ctx context.Context, t *schema.Table, replicas []coordinator.Replica, pending []coordinator.NodeID, token int64, pw partitionWrite, req *coordinator.Request, step coordinator.Step, dl time.Time) error {
	o := step.Outcome
	var m *replicapb.Mutation
	if o == nil {
		m = pw.mutation(token)
	}
	if o == nil && t.IsCounter() && isCounterUpdate(m) {
		var err error
		if o, err = e.finishCounter(ctx, t, replicas, pending, token, m, req, step, dl); err != nil {
			return err
		}
		return counterTimeout(e.finishOutcome(req, t, token, pw, o))
	}
	if o == nil {
		x, hw := e.hinted(watch(e, e.forwarding(mutateExchange{e.transport, m}, m, replicas, step.Sends), step.Sends, t, coordinator.OpWrite), m, replicas, step.Sends)
		var err error
		o, err = e.await(ctx, req, step.Sends, x, dl, true, nil)
		hw.settle(o) // hints for the replicas that do not acknowledge it, once all have answered
		if err != nil {
			return err
		}
		e.writePending(ctx, token, pending, m, o, dl)
	}
	return e.finishOutcome(req, t, token, pw, o)
}

// finishOutcome hands a finished write's uncounted replicas to propagation and returns the
// client's error for its outcome o.
func (e *Executor) finishOutcome(req *coordinator.Request, t *schema.Table, token int64, pw partitionWrite, o coordinator.Outcome) error {
	e.propagate(req, coordinator.OpWrite, partitionKey{t.ID, token})
	if pw.warnings != nil {
		*pw.warnings = appendShadowWarning(*pw.warnings, o, t)
	}
	return e.outcomeErr(e.namedDC(o, req), t)
}

// isPartition reports whether w's clustering range selects the whole partition.
func isPartition(w *schema.Write) bool {
	return len(w.Clustering.Prefix) == 0 && w.Clustering.Lower == nil && w.Clustering.Upper == nil
}

// fillMutation sets m's rows (or partition deletion, or range tombstone) to what w writes at
// timestamp ts: INSERT writes a row marker and its cells, UPDATE its cells, DELETE of columns
// cell tombstones, DELETE of a row a row tombstone, DELETE of a range of rows (a clustering
// prefix, or a range on the clustering column after it) a range tombstone and DELETE of a
// partition a partition tombstone. A null value is a cell tombstone. A write with a TTL gives
// its marker and values the TTL and the expiry now + TTL (now in seconds since the Unix epoch);
// a null value stays a plain tombstone, as in Cassandra.
//
// A non-frozen collection's cell becomes element cells and collection tombstones
// (appendCollection); lists holds, by cell index, the elements the operations on lists by index
// or value resolved to (resolveLists).
func fillMutation(m *replicapb.Mutation, w *schema.Write, ts, now int64, lists map[int][]listElement) {
	var expires int64
	if w.TTL > 0 && w.Kind != schema.WriteDelete {
		expires = now + int64(w.TTL)
	}
	if w.Kind == schema.WriteDelete && len(w.Cells) == 0 && (isPartition(w) || len(w.Table.Clustering) == 0) {
		m.PartitionDeletion = &ts
		return
	}
	if w.Kind == schema.WriteDelete && len(w.Cells) == 0 && !w.Clustering.IsRow(w.Table) {
		m.RangeTombstones = []*replicapb.RangeTombstone{rangeTombstone(w.Table, w.Clustering, ts)}
		return
	}
	r := new(struct {
		row replicapb.Row
		ptr [1]*replicapb.Row
	})
	r.row.Clustering = w.Clustering.Prefix
	switch {
	case w.Kind == schema.WriteInsert:
		r.row.Marker = &ts
		if expires != 0 {
			r.row.MarkerTtl, r.row.MarkerExpires = w.TTL, expires
		}
	case w.Kind == schema.WriteDelete && len(w.Cells) == 0:
		r.row.Deletion = &ts
	}
	if len(w.Cells) > 0 {
		cells := make([]replicapb.Cell, len(w.Cells))
		r.row.Cells = make([]*replicapb.Cell, 0, len(w.Cells))
		for i, c := range w.Cells {
			if c.Column.Type.MultiCell() {
				appendCollection(&r.row, c, lists[i], ts, w.TTL, expires)
				continue
			}
			cells[i].Column = c.Column.Name
			cells[i].Timestamp = ts
			if c.Value == nil {
				cells[i].Tombstone = true
			} else {
				cells[i].Value = c.Value
				cells[i].Counter = c.Column.Type == schema.TypeCounter // an increment (counter.go)
				if expires != 0 {
					cells[i].Ttl, cells[i].Expires = w.TTL, expires
				}
			}
			r.row.Cells = append(r.row.Cells, &cells[i])
		}
	}
	r.ptr[0] = &r.row
	m.Rows = r.ptr[:]
	if w.Table.HasStatic() {
		splitStatic(m, w.Table) // static.go
	}
}

// rangeTombstone returns the range tombstone at ts that deletes the rows r selects in table t:
// from the clustering prefix (or the lower bound on the column after it) to the prefix (or the
// upper bound), in the table's clustering order, where a DESC column's upper bound comes first.
// A range that selects nothing (c > 3 AND c < 2) makes a tombstone whose start is after its end,
// which replicas take as the no-op it is.
func rangeTombstone(t *schema.Table, r schema.ClusteringRange, ts int64) *replicapb.RangeTombstone {
	b := func(x *schema.Bound) *replicapb.ClusteringBound {
		if x == nil {
			return &replicapb.ClusteringBound{Prefix: r.Prefix, Inclusive: true}
		}
		prefix := make([][]byte, len(r.Prefix)+1)
		copy(prefix, r.Prefix)
		prefix[len(r.Prefix)] = x.Value
		return &replicapb.ClusteringBound{Prefix: prefix, Inclusive: x.Inclusive}
	}
	first, last := r.Lower, r.Upper
	if len(r.Prefix) < len(t.Clustering) && t.Clustering[len(r.Prefix)].Descending {
		first, last = last, first
	}
	return &replicapb.RangeTombstone{Start: b(first), End: b(last), Timestamp: ts}
}

// mutateExchange sends one mutation to each replica.
type mutateExchange struct {
	t Transport
	m *replicapb.Mutation
}

func (x mutateExchange) call(ctx context.Context, s coordinator.Send) coordinator.Response {
	resp, err := x.t.Mutate(ctx, s.To, x.request(s))
	return mutateResponse(s, resp, err)
}

// start sends the mutation to s.To without waiting when the transport can (AsyncMutator).
func (x mutateExchange) start(ctx context.Context, s coordinator.Send, done func(coordinator.Response), fail func(any)) bool {
	a, ok := x.t.(AsyncMutator)
	if !ok {
		return false
	}
	return a.MutateAsync(ctx, s.To, x.request(s), func(resp *replicapb.MutateResponse, err error) {
		defer func() {
			if p := recover(); p != nil {
				fail(p)
			}
		}()
		done(mutateResponse(s, resp, err))
	})
}

// request is the MutateRequest of send s.
func (x mutateExchange) request(s coordinator.Send) *replicapb.MutateRequest {
	req := new(struct {
		req replicapb.MutateRequest
		lim replicapb.Limiter
	})
	req.lim.Mode, req.lim.Draw = limiterMode(s.Mode), s.Draw
	req.lim.StampUnixNanos = stampNanos(s.Stamp)
	req.req.Limiter, req.req.Mutation = &req.lim, x.m
	return &req.req
}

// mutateResponse maps the answer of send s's MutateRequest to the core's Response.
func mutateResponse(s coordinator.Send, resp *replicapb.MutateResponse, err error) coordinator.Response {
	if err != nil {
		return coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusFailed, Err: transportError(s.To, err)}
	}
	r := response(s, resp.GetStatus(), resp.GetRateLimited(), resp.GetError(), nil)
	r.WouldReject = resp.GetWouldReject()
	return r
}

// limiterMode maps a Send's mode to the wire's.
func limiterMode(m coordinator.LimiterMode) replicapb.Limiter_Mode {
	switch m {
	case coordinator.ModeAccountOnly:
		return replicapb.Limiter_ACCOUNT_ONLY
	case coordinator.ModeAccountAndEnforce:
		return replicapb.Limiter_ACCOUNT_AND_ENFORCE
	}
	return replicapb.Limiter_NONE
}

// response maps a replica's answer to the core's Response.
func response(s coordinator.Send, st replicapb.Status, rl *replicapb.RateLimited, rerr *replicapb.Error, payload any) coordinator.Response {
	r := coordinator.Response{Seq: s.Seq, From: s.To}
	switch st {
	case replicapb.Status_STATUS_OK:
		r.Status, r.Payload = coordinator.StatusOK, payload
	case replicapb.Status_STATUS_RATE_LIMITED:
		r.Status = coordinator.StatusRateLimited
		r.Count = rl.GetCount()
		r.RetryAfter = time.Duration(rl.GetRetryAfterMillis()) * time.Millisecond
		if ms := rl.GetBornUnixMillis(); ms != 0 {
			r.Born, r.Residual = time.UnixMilli(ms), rl.GetOnsetResidual()
		}
	case replicapb.Status_STATUS_ERROR:
		r.Status = coordinator.StatusFailed
		r.Err = &coordinator.ReplicaError{Replica: s.To, Code: replicaErrorCode(rerr.GetCode()), Message: rerr.GetMessage()}
	default:
		r.Status = coordinator.StatusFailed
		r.Err = &coordinator.ReplicaError{Replica: s.To, Code: coordinator.ReplicaErrorInternal, Message: fmt.Sprintf("malformed response: status %v", st)}
	}
	return r
}

// outcomeErr returns the client's error for o (nil for Success) and tells the Observer about
// rate limiting, and about operations a limit in shadow mode would have rejected.
func (e *Executor) outcomeErr(o coordinator.Outcome, t *schema.Table) error {
	err := o.Err(t.Keyspace, t.Name)
	if e.observer != nil {
		switch o := o.(type) {
		case coordinator.RateLimited:
			e.observer.OnRateLimited(t.Keyspace, t.Name, o.Op.String(), o.RejectedBy.String())
		case coordinator.Success:
			if o.WouldReject {
				e.observer.OnWouldReject(t.Keyspace, t.Name, o.Op.String())
			}
		}
	}
	if f, ok := o.(coordinator.Failed); ok {
		// Replicas that are down or overloaded fail many requests; the Observer counts those.
		// A replica that calls the request malformed points at a bug or a schema mismatch.
		level := slog.LevelDebug
		var re *coordinator.ReplicaError
		if errors.As(f.Cause, &re) && re.Code == coordinator.ReplicaErrorBadRequest {
			level = slog.LevelWarn
		}
		e.logger.Log(context.Background(), level, "replicas failed", "table", t.QualifiedName(), "op", f.Op.String(),
			"consistency", f.Consistency.String(), "failures", f.Failures, "err", f.Cause)
	}
	return err
}

// watch returns x, or x wrapped to tell e's Observer when the enforcing replicas of one
// operation on t disagree, if there is an Observer and sends go to enforcing replicas (the
// coordinator is not a replica of the partition). The wrapper holds x by value and takes the
// place of x's own interface value, so watching costs no extra allocation.
func watch[X exchange](e *Executor, x X, sends []coordinator.Send, t *schema.Table, op coordinator.Op) exchange {
	if e.observer == nil || !enforcing(sends) {
		return x
	}
	return &watched[X]{x: x, observer: e.observer, table: t, op: op}
}

// enforcing reports whether sends go to replicas that enforce the limit.
func enforcing(sends []coordinator.Send) bool {
	for _, s := range sends {
		if s.Mode == coordinator.ModeAccountAndEnforce {
			return true
		}
	}
	return false
}

// watched is an exchange whose enforcing replicas' decisions are watched for disagreement.
type watched[X exchange] struct {
	x        X
	observer Observer
	table    *schema.Table
	op       coordinator.Op
	// seen has bit 0 set once an enforcing replica admitted the operation, bit 1 once one
	// rejected it.
	seen atomic.Uint32
}

func (w *watched[X]) call(ctx context.Context, s coordinator.Send) coordinator.Response {
	r := w.x.call(ctx, s)
	w.observe(s, r)
	return r
}

func (w *watched[X]) start(ctx context.Context, s coordinator.Send, done func(coordinator.Response), fail func(any)) bool {
	ax, ok := any(w.x).(asyncExchange)
	return ok && ax.start(ctx, s, func(r coordinator.Response) {
		w.observe(s, r)
		done(r)
	}, fail)
}

// observe tells the Observer when r, the answer to s, disagrees with an earlier enforcing
// replica's decision.
func (w *watched[X]) observe(s coordinator.Send, r coordinator.Response) {
	if s.Mode != coordinator.ModeAccountAndEnforce {
		return
	}
	var bit uint32
	switch r.Status {
	case coordinator.StatusOK:
		bit = 1
	case coordinator.StatusRateLimited:
		bit = 2
	default:
		return
	}
	if old := w.seen.Or(bit); old != 3 && old|bit == 3 {
		w.observer.OnReplicasDisagree(w.table.Keyspace, w.table.Name, w.op.String())
	}
}

// replicaErrorCode translates the internode protocol's error code to the domain's; codes this
// node does not know read as unspecified.
func replicaErrorCode(c replicapb.Error_Code) coordinator.ReplicaErrorCode {
	switch c {
	case replicapb.Error_BAD_REQUEST:
		return coordinator.ReplicaErrorBadRequest
	case replicapb.Error_UNKNOWN_TABLE:
		return coordinator.ReplicaErrorUnknownTable
	case replicapb.Error_INTERNAL:
		return coordinator.ReplicaErrorInternal
	case replicapb.Error_TOO_MANY_TOMBSTONES:
		return coordinator.ReplicaErrorTooManyTombstones
	}
	return coordinator.ReplicaErrorUnspecified
}
