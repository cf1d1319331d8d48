package shell

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// readSpec is one single-partition read.
type readSpec struct {
	table      *schema.Table
	pk         [][]byte
	token      int64
	clustering schema.ClusteringRange
	limit      int      // live rows; 0 means no limit
	reversed   bool     // in the reverse of the clustering order (ORDER BY)
	after      [][]byte // set: start after this clustering key, in the read's order (a client's next page)
	rf         schema.Replication
	cl         coordinator.Consistency
	// exempt reads without counting or deciding for the limiter: a partition an earlier
	// page of the same statement already counted, the next chunk of a filtered read, or a
	// SERIAL read's, counted on its prepare (lwt.go).
	exempt bool
	// warnings, when set, receives the client's warning for a read its table's limit in
	// shadow mode would have rejected.
	warnings *[]string
}

// executeSelect runs a SELECT at consistency cl, with req's values, page size and paging state.
// It returns the table once the statement resolved it, for the Observer.
func (e *Executor) executeSelect(ctx context.Context, st *cql.SelectStmt, keyspace string, cl coordinator.Consistency, req *coordinator.Statement) (*schema.Table, coordinator.Result, error) {
	if e.system != nil {
		if res, ok, err := e.system.Select(ctx, st, keyspace, req.Values); ok {
			if err != nil {
				return nil, coordinator.Result{}, invalidOrAs(st, err)
			}
			return nil, res, nil
		}
	}
	s := e.schema.Schema()
	r, err := s.BindReadAt(st, keyspace, req.Values, e.now())
	if err != nil {
		return nil, coordinator.Result{}, invalid(st, err)
	}
	if r.Index != nil {
		return e.executeIndexScan(ctx, r, keyspace, cl, req) // index.go
	}
	if r.Scan {
		return e.executeScan(ctx, r, keyspace, cl, req) // scan.go
	}
	rf, err := replicationFactor(s, r.Table)
	if err != nil {
		return r.Table, coordinator.Result{}, err
	}
	var fingerprint uint64
	if req.PageSize > 0 || len(req.PagingState) > 0 {
		fingerprint = statementFingerprint(req, keyspace)
	}
	if !plainRead(r) {
		res, err := e.executeShaped(ctx, r, rf, cl, req, fingerprint)
		if err == nil && r.JSON {
			res.Rows, err = jsonRows(r, res.Rows)
		}
		return r.Table, res, err
	}
	cur, err := decodePagingState(req.PagingState, fingerprint, r.Table)
	if err != nil {
		return r.Table, coordinator.Result{}, &coordinator.InvalidError{Err: err}
	}
	// The rows this page may return: what the LIMIT leaves after the earlier pages, at most the
	// page size. One more row than the page size is read to know whether another page follows.
	limit := r.Limit
	if limit > 0 {
		limit -= cur.returned
		if limit <= 0 { // an earlier page returned the last row the LIMIT allows
			res, err := rowsResult(r, nil, 0)
			if err == nil && r.JSON {
				res.Rows, err = jsonRows(r, res.Rows)
			}
			return r.Table, res, err
		}
	}
	pageFull := 0 // rows that fill the page; more than that were read and a next page follows
	if req.PageSize > 0 && req.PageSize < math.MaxInt32 && (limit == 0 || limit > req.PageSize) {
		pageFull, limit = req.PageSize, req.PageSize+1
	}
	var keyBuf [64]byte
	spec := readSpec{
		table:      r.Table,
		pk:         r.PartitionKey,
		token:      partitioner.Token(partitioner.AppendKey(keyBuf[:0], r.PartitionKey)),
		clustering: r.Clustering,
		limit:      limit,
		reversed:   r.Reversed,
		after:      cur.after,
		rf:         rf,
		cl:         cl,
		exempt:     serialPrepared(ctx),
	}
	var warnings []string
	spec.warnings = &warnings
	if err := e.judgeScopes(ctx, r.Table.Keyspace, r.Table.Name, coordinator.OpRead, 1, &warnings); err != nil {
		return r.Table, coordinator.Result{}, err // a page is one read of its budgets
	}
	now := e.now()
	rows, tombstones, err := e.read(ctx, spec, now, deadline(ctx, now, timeoutOr(e.readTimeout, r.Timeout)))
	if err != nil {
		return r.Table, coordinator.Result{}, err
	}
	var next []byte
	if pageFull > 0 && len(rows) > pageFull {
		rows = rows[:pageFull]
		next = encodePagingState(fingerprint, cur.returned+pageFull, rows[pageFull-1].Clustering)
	}
	res, err := rowsResult(r, rows, now.Unix())
	if err == nil && r.JSON {
		res.Rows, err = jsonRows(r, res.Rows)
	}
	res.PagingState, res.Warnings = next, warnings
	if err == nil && e.tombstoneWarn > 0 && tombstones > uint32(e.tombstoneWarn) {
		w := fmt.Sprintf("read %d live rows and %d tombstones of partition %s of table %s (more than the tombstone warn threshold, %d)",
			len(rows), tombstones, schema.FormatKey(r.Table.PartitionKey, r.PartitionKey), r.Table.QualifiedName(), e.tombstoneWarn)
		res.Warnings = append(res.Warnings, w)
		e.logger.Warn("read many tombstones", "table", r.Table.QualifiedName(), "tombstones", tombstones, "live_rows", len(rows))
	}
	return r.Table, res, err
}

// invalidOrAs returns err as it is when it is one of the coordinator's typed errors, else as an
// *InvalidError about st.
func invalidOrAs(st cql.Statement, err error) error {
	switch err.(type) {
	case *coordinator.InvalidError, *coordinator.RateLimitError, *coordinator.UnavailableError, *coordinator.TimeoutError, *coordinator.FailureError:
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return invalid(st, err)
}

// read runs a read of one partition and returns its live rows, reconciled across the replicas
// that answered, in clustering order (in reverse with spec.reversed), at most spec.limit of
// them, and the most tombstones one
// replica scanned for them. At QUORUM and ALL it repairs the replicas that answered with stale
// data before returning (see repair).
//
// Replicas answer in pages: each stops after spec.limit live rows by its own view, or once its
// answer reaches the page size, and says where (ReadResponse.stopped_after). The merge cannot
// pass the point where a replica stopped (the replica may hold a newer tombstone for what
// follows), so when it gets there and still needs rows, it asks that replica for its next page,
// exempt from the rate limiter (one user operation is counted once), and carries on, until it
// has spec.limit live rows or every replica has reached the end of the range. Replicas that
// disagree about deletions can make a replica's rows run out before the limit; the same
// mechanism fetches more of them.
func (e *Executor) read(ctx context.Context, spec readSpec, now, dl time.Time) ([]coordinator.ClusteredRow, uint32, error) {
	resps, err := e.readOnce(ctx, spec, now, dl)
	if err != nil {
		return nil, 0, err
	}
	m := coordinator.NewMerger(spec.table, spec.limit, spec.reversed, now.Unix())
	if spec.cl != coordinator.One && len(resps) < spec.rf.Total() {
		m.KeepFull() // for repair's fallback to the replicas that were not asked
	}
	for _, r := range resps {
		if err := addAnswer(m, spec.table, r, spec.limit); err != nil {
			return nil, 0, err
		}
	}
	for {
		need := m.Merge()
		if len(need) == 0 {
			break
		}
		if err := e.readPages(ctx, spec, m, need, len(resps), dl); err != nil {
			return nil, 0, err
		}
	}
	rec := m.Result()
	static := readStatic(spec.table, resps, &rec) // static.go
	if len(rec.Repairs) > 0 && spec.cl != coordinator.One {
		if err := e.repair(ctx, spec, rec, resps, dl); err != nil {
			return nil, 0, err
		}
	}
	return withStatic(spec.table, rec.Rows, static, wholePartition(spec), now.Unix()), rec.Tombstones, nil
}

// addAnswer adds a replica's answer (a *replicapb.ReadResponse payload) to the merge of a read
// of table t; limit is the limit the request for it carried.
func addAnswer(m *coordinator.Merger, t *schema.Table, r coordinator.Response, limit int) error {
	resp, ok := r.Payload.(*replicapb.ReadResponse)
	if !ok {
		return fmt.Errorf("coordinator: read from replica %s returned no data", r.From)
	}
	p := pageOf(resp)
	hideShadowed(t, &p)
	return m.Add(r.From, p, limit)
}

// readPages asks each replica of need for the page that follows its last one, exempt from the limiter, and adds the answers to m. Every one of them must
// answer: the merge cannot go on without them. contacted is how many replicas answered the
// read's first page, for the error.
func (e *Executor) readPages(ctx context.Context, spec readSpec, m *coordinator.Merger, need []coordinator.NextPage, contacted int, dl time.Time) error {
	base := readRequest(spec, e.pageBytes)
	x := pageExchange{t: e.transport, reqs: make(map[coordinator.NodeID]*replicapb.ReadRequest, len(need))}
	replicas := make([]coordinator.Replica, len(need))
	limits := make(map[coordinator.NodeID]int, len(need))
	for i, np := range need {
		req := &replicapb.ReadRequest{
			TableId: base.TableId, PartitionKey: base.PartitionKey, Token: base.Token, Filter: base.Filter,
			Limit: uint32(min(np.Limit, math.MaxUint32)), PageBytes: base.PageBytes, Reversed: base.Reversed,
			After: &replicapb.ClusteringKey{Components: np.After}, TombstonesScanned: np.Tombstones,
		}
		x.reqs[np.From] = req
		limits[np.From] = np.Limit
		replicas[i] = coordinator.Replica{ID: np.From}
	}
	o, err := e.exemptAtAll(ctx, spec, coordinator.OpRead, replicas, x, contacted, dl)
	if err != nil {
		if f, ok := o.(coordinator.Failed); ok {
			e.logger.Debug("reading the next page failed", "table", spec.table.QualifiedName(), "replicas", len(need), "err", f.Cause)
		}
		return err
	}
	for _, r := range o.(coordinator.Success).Responses {
		if err := addAnswer(m, spec.table, r, limits[r.From]); err != nil {
			return err
		}
	}
	return nil
}

// pageExchange sends each replica its own request for its next page, exempt from the limiter.
type pageExchange struct {
	t    Transport
	reqs map[coordinator.NodeID]*replicapb.ReadRequest
}

func (x pageExchange) call(ctx context.Context, s coordinator.Send) coordinator.Response {
	resp, err := x.t.Read(ctx, s.To, x.reqs[s.To])
	if err != nil {
		return coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusFailed, Err: transportError(s.To, err)}
	}
	return response(s, resp.GetStatus(), resp.GetRateLimited(), resp.GetError(), resp)
}

// readOnce sends one read to the replicas the consistency level needs and returns their
// answers (each with a *replicapb.ReadResponse payload) once enough arrived.
//
// It prefers the replicas that answer (score.go), and asks a spare replica once the read has
// waited longer than its table's speculative_retry says (see speculation).
func (e *Executor) readOnce(ctx context.Context, spec readSpec, now, dl time.Time) ([]coordinator.Response, error) {
	var (
		replicaBuf [8]coordinator.Replica
		orderBuf   [8]coordinator.NodeID
	)
	mono := e.mono()
	lat := e.latency.of(spec.table.ID)
	p := coordinator.Params{
		Op:          coordinator.OpRead,
		Consistency: spec.cl,
		Self:        e.self(),
		Replicas:    e.replicaSet(replicaBuf[:0], spec.token, spec.rf),
		PerDC:       len(spec.rf.DataCenters) > 0,
		Limit:       spec.table.Limit(coordinator.OpRead),
		Exempt:      spec.exempt,
		Deadline:    dl,
	}
	e.skipUnrepaired(&p)
	p.ReadOrder = e.scores.order(orderBuf[:0], p.Replicas, e.localID, mono)
	var sp speculation
	p.Speculation, sp.delay = e.speculation(spec.table, lat, mono, dl.Sub(now))
	if p.Limit > 0 && !p.Exempt {
		p.Draw = e.draw()
	}
	e.learnedHot(&p, spec.table, spec.token)
	req, err := e.newRequest(p)
	if err != nil {
		return nil, err
	}
	step, err := e.begin(req, now, coordinator.OpRead, partitionKey{spec.table.ID, spec.token}, p.Draw)
	if err != nil {
		return nil, err
	}
	o := step.Outcome
	if o == nil {
		base := readRequest(spec, e.pageBytes)
		x := watch(e, readExchange{t: e.transport, base: base, e: e, lat: lat}, step.Sends, spec.table, coordinator.OpRead)
		o, err = e.await(ctx, req, step.Sends, x, dl, false, &sp)
		if n := req.Speculative(); n > 0 && e.observer != nil {
			e.observer.OnSpeculativeReads(spec.table.Keyspace, spec.table.Name, n)
		}
		if err != nil {
			return nil, err
		}
	}
	e.propagate(req, coordinator.OpRead, partitionKey{spec.table.ID, spec.token})
	if spec.warnings != nil {
		*spec.warnings = appendShadowWarning(*spec.warnings, o, spec.table)
	}
	if err := e.outcomeErr(e.namedDC(o, req), spec.table); err != nil {
		return nil, err
	}
	return o.(coordinator.Success).Responses, nil
}

// readRequest builds the parts of a replica read request that every replica shares, for the
// first page. It asks for every column: whether a row exists can depend on cells the statement
// does not select.
func readRequest(spec readSpec, pageBytes int) *replicapb.ReadRequest {
	r := &replicapb.ReadRequest{
		TableId:      uint64(spec.table.ID),
		PartitionKey: spec.pk,
		Token:        spec.token,
		Limit:        uint32(min(spec.limit, math.MaxUint32)),
		PageBytes:    uint32(min(pageBytes, math.MaxUint32)),
		Reversed:     spec.reversed,
	}
	if spec.after != nil {
		r.After = &replicapb.ClusteringKey{Components: spec.after}
	}
	c := spec.clustering
	if len(c.Prefix) > 0 || c.Lower != nil || c.Upper != nil {
		r.Filter = &replicapb.ClusteringFilter{Equal: c.Prefix}
		if c.Lower != nil {
			r.Filter.Lower = &replicapb.Bound{Value: c.Lower.Value, Inclusive: c.Lower.Inclusive}
		}
		if c.Upper != nil {
			r.Filter.Upper = &replicapb.Bound{Value: c.Upper.Value, Inclusive: c.Upper.Inclusive}
		}
	}
	return r
}

// speculation returns how a read of table t speculates, from the table's speculative_retry,
// and for SpeculateDelayed after how long: a fixed delay as it is, a percentile of the
// replicas' recent read latencies of t (l) bounded to [minSpeculativeDelay, half the read's
// time left]. now is the monotonic clock, remaining the read's time left.
func (e *Executor) speculation(t *schema.Table, l *latencies, now, remaining time.Duration) (coordinator.Speculation, time.Duration) {
	r := t.SpeculativeRetry()
	switch r.Kind {
	case schema.SpeculateNone:
		return coordinator.SpeculateNever, 0
	case schema.SpeculateAlways:
		return coordinator.SpeculateAlways, 0
	case schema.SpeculateFixed:
		return coordinator.SpeculateDelayed, r.Delay
	}
	d := e.latency.delay(l, now, r.Percentile, remaining/2)
	switch r.Kind {
	case schema.SpeculateMin: // Cassandra 4's MIN(Np,Mms)
		d = min(d, r.Delay)
	case schema.SpeculateMax:
		d = max(d, r.Delay)
	}
	return coordinator.SpeculateDelayed, d
}

// readExchange sends one read to each replica. With e set, it keeps the replicas' scores and
// the table's read latencies l (score.go, latency.go).
type readExchange struct {
	t    Transport
	base *replicapb.ReadRequest
	e    *Executor
	lat  *latencies
}

func (x readExchange) call(ctx context.Context, s coordinator.Send) coordinator.Response {
	req := new(struct {
		req replicapb.ReadRequest
		lim replicapb.Limiter
	})
	req.lim.Mode, req.lim.Draw = limiterMode(s.Mode), s.Draw
	req.lim.StampUnixNanos = stampNanos(s.Stamp)
	req.req.Limiter = &req.lim
	req.req.TableId, req.req.PartitionKey, req.req.Token = x.base.TableId, x.base.PartitionKey, x.base.Token
	req.req.Filter, req.req.Limit, req.req.Columns = x.base.Filter, x.base.Limit, x.base.Columns
	req.req.PageBytes, req.req.Reversed, req.req.After = x.base.PageBytes, x.base.Reversed, x.base.After
	var (
		sc    *replicaScore
		start time.Duration
	)
	if x.e != nil {
		sc = x.e.scores.of(s.To)
		sc.outstanding.Add(1)
		defer sc.outstanding.Add(-1)
		start = x.e.mono()
	}
	resp, err := x.t.Read(ctx, s.To, &req.req)
	if err != nil {
		if sc != nil && ctx.Err() == nil {
			sc.penalize(x.e.mono()) // a failure the replica's (or the network's), not the read's end
		}
		return coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusFailed, Err: transportError(s.To, err)}
	}
	r := response(s, resp.GetStatus(), resp.GetRateLimited(), resp.GetError(), resp)
	r.WouldReject = resp.GetWouldReject()
	if sc != nil {
		now := x.e.mono()
		switch r.Status {
		case coordinator.StatusOK:
			sc.answered(now - start)
			x.e.latency.record(x.lat, now, now-start)
		case coordinator.StatusRateLimited:
			sc.answered(now - start)
		default:
			sc.penalize(now)
		}
	}
	return r
}

// liveCell returns the cell of column name in r when it is live at now: present, neither
// deleted nor expired.
func liveCell(r cell.Row, name string, now int64) (cell.Cell, bool) {
	k, ok := slices.BinarySearchFunc(r.Columns, name, func(x cell.Column, name string) int {
		return strings.Compare(x.Name, name)
	})
	if !ok {
		return cell.Cell{}, false
	}
	cl := r.Columns[k].Cell
	if cl.Tombstone || cl.Expired(now) {
		return cell.Cell{}, false
	}
	return cl, true
}

// cellValue returns column c of row for a function's argument: its value, or with kind
// cql.SelectWritetime or cql.SelectTTL its write timestamp or remaining TTL; nil for null.
func cellValue(r *schema.Read, pk [][]byte, row coordinator.ClusteredRow, c *schema.Column, kind cql.SelectKind, now int64) []byte {
	switch c.Kind {
	case schema.PartitionKeyColumn:
		return pk[c.Index]
	case schema.ClusteringColumn:
		return row.Clustering[c.Index-len(r.Table.PartitionKey)]
	}
	if c.Type.MultiCell() { // no WRITETIME or TTL (the schema refuses them)
		return collectionValue(c, row.Row, now)
	}
	cl, ok := liveCell(row.Row, c.Name, now)
	if !ok {
		return nil
	}
	switch kind {
	case cql.SelectWritetime:
		return schema.EncodeBigInt(cl.Timestamp)
	case cql.SelectTTL:
		if left, ok := cl.RemainingTTL(now); ok {
			return schema.EncodeInt(left)
		}
		return nil
	}
	return counterValue(c, cl)
}

// rowsResult renders the rows of a read as the domain API's rows: the selected columns' values
// in their canonical encoding, each checked against its column's type, or for WRITETIME(c) the
// cell's write timestamp (a bigint) and for TTL(c) the seconds it has left to live at now (an
// int, null for a cell that does not expire). A cell expired at now is null, like a deleted one.
func rowsResult(r *schema.Read, rows []coordinator.ClusteredRow, now int64) (coordinator.Result, error) {
	out := rowsOf(r, len(rows))
	n := len(r.Columns)
	vals := make([][]byte, len(rows)*n)
	for i, row := range rows {
		rv := vals[i*n : (i+1)*n : (i+1)*n]
		if err := renderRow(rv, r, out.Columns, r.PartitionKey, row, now); err != nil {
			return coordinator.Result{}, err
		}
		out.Values[i] = rv
	}
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: out}, nil
}

// rowsOf returns the result rows of r, with the result metadata and room for n rows.
func rowsOf(r *schema.Read, n int) *coordinator.Rows {
	t := r.Table
	out := &coordinator.Rows{
		Keyspace: t.Keyspace,
		Table:    t.Name,
		Columns:  make([]coordinator.RowColumn, len(r.Columns)),
		Values:   make([][][]byte, n),
	}
	for i, c := range r.SelectedColumns() {
		out.Columns[i] = coordinator.RowColumn{Name: c.Name, Type: c.Type}
	}
	return out
}

// jsonRows renders the rows of a SELECT JSON: each row one text value, the JSON object of
// its selected columns, in the column "[json]".
func jsonRows(r *schema.Read, rows *coordinator.Rows) (*coordinator.Rows, error) {
	cols := r.SelectedColumns()
	out := &coordinator.Rows{Keyspace: rows.Keyspace, Table: rows.Table, Values: make([][][]byte, len(rows.Values))}
	for _, c := range r.ResultColumns() {
		out.Columns = append(out.Columns, coordinator.RowColumn{Name: c.Name, Type: c.Type})
	}
	for i, row := range rows.Values {
		b, err := r.RowJSON(cols, row)
		if err != nil {
			return nil, fmt.Errorf("coordinator: table %s: %w", r.Table.QualifiedName(), err)
		}
		out.Values[i] = [][]byte{b}
	}
	return out, nil
}

// renderRow sets rv to the selected values of one row of partition pk (see rowsResult); the
// items that are aggregates are left null (aggregator fills them). cols are the result's
// columns.
func renderRow(rv [][]byte, r *schema.Read, cols []coordinator.RowColumn, pk [][]byte, row coordinator.ClusteredRow, now int64) error {
	t := r.Table
	npk := len(t.PartitionKey)
	for j, c := range r.Columns {
		if r.Aggregates != nil && r.Aggregates[j] != nil {
			continue
		}
		if c == nil { // a function call or CAST
			b, err := r.EvalAt(j, pk, func(c *schema.Column, kind cql.SelectKind) []byte {
				return cellValue(r, pk, row, c, kind, now)
			})
			if err != nil { // a value a function refuses: the statement's fault, as in Cassandra
				return &coordinator.InvalidError{Err: err}
			}
			rv[j] = b
			continue
		}
		var b []byte
		switch c.Kind {
		case schema.PartitionKeyColumn:
			b = pk[c.Index]
		case schema.ClusteringColumn:
			b = row.Clustering[c.Index-npk]
		case schema.RegularColumn:
			if c.Type.MultiCell() {
				b = collectionValue(c, row.Row, now)
				if r.Funcs != nil && r.Funcs[j] == cql.SelectElement {
					b = r.SelectElement(j, b)
				}
				break
			}
			fallthrough
		default:
			cl, ok := liveCell(row.Row, c.Name, now)
			if !ok {
				break
			}
			switch {
			case r.Funcs == nil || r.Funcs[j] == cql.SelectColumn:
				b = counterValue(c, cl)
			case r.Funcs[j] == cql.SelectElement:
				b = r.SelectElement(j, cl.Value)
			case r.Funcs[j] == cql.SelectWritetime:
				b = schema.EncodeBigInt(cl.Timestamp)
			case r.Funcs[j] == cql.SelectTTL:
				if left, ok := cl.RemainingTTL(now); ok {
					b = schema.EncodeInt(left)
				}
			}
		}
		if b != nil {
			if err := cols[j].Type.Check(b); err != nil {
				return fmt.Errorf("coordinator: table %s column %s: %w", t.QualifiedName(), cql.QuoteIdent(c.Name), err)
			}
		}
		rv[j] = b
	}
	return nil
}
