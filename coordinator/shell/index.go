package shell

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Index queries: a SELECT that a secondary index serves (schema.Read.Index: WHERE col = v on an
// indexed column, without a partition key restriction). Indexes are node-local (package
// replica), so the query walks the ring's token ranges in token order as a scan does; for each
// range it asks as many replicas as the consistency level needs for the partitions their index
// holds for v (internode kind range_read with index_id, exempt from the limiter), takes the
// union in token order, then reads those partitions back as an IN reads its partitions: at the
// consistency level, reconciled, read-repaired, and filtered by the statement's restrictions
// (col = v among them). A replica's candidate may be stale or missing on another replica; the
// read back decides. Every acknowledged write of v at the consistency level is on one replica
// of any set the level reads, with its index entry written in the same batch, so the union
// misses none.
//
// The node's scan pacer (ScanPacer) weighs the rows each batch of partitions read back returns,
// as it weighs a scan's range reads: an index query that reads many partitions shares the
// scans' rate while the node serves other requests. A paged query's pacing waits no longer than
// its page's time, and a page that holds rows ends once that time is up.
//
// For the limiter, the index read is exempt like a scan; each partition read back counts one
// read of that partition (decided by its replicas, once per page); the service level's and the
// keyspace's budgets count one read per page. The paging state is a scan's (token, partition,
// row, rows of that partition returned), so any coordinator continues it.
//
// The statement's shape is a scan's: PER PARTITION LIMIT and DISTINCT cap each partition's
// rows as it is read back; aggregates and GROUP BY fold the rows of the index query's pages
// (scan.go's aggregateScan, scanfilter.go's groupScan).

// indexCandidates bounds the candidate partitions one index read of a range returns.
const indexCandidates = 256

// scanPages is what aggregateScan and groupScan read rows from, page after page: a scan's
// scanner or an indexQuery.
type scanPages interface {
	// page returns up to want rows from pos on, the position after them, and whether the
	// rows ended.
	page(ctx context.Context, pos scanPos, want int) ([]scanRow, scanPos, bool, error)
}

// executeIndexScan runs a SELECT that index r.Index serves at consistency cl.
func (e *Executor) executeIndexScan(ctx context.Context, r *schema.Read, keyspace string, cl coordinator.Consistency, req *coordinator.Statement) (*schema.Table, coordinator.Result, error) {
	t := r.Table
	st, err := e.startScan(ctx, r, keyspace, req)
	if err != nil {
		return t, coordinator.Result{}, err
	}
	if st.empty {
		res, err := rowsResult(r, nil, 0)
		return t, res, err
	}
	now := e.now()
	q := indexQuery{e: e, ring: st.ring, reader: st.reader, r: r, rf: st.rf, cl: cl, now: now,
		dl: deadline(ctx, now, timeoutOr(e.readTimeout, r.Timeout)), paged: st.paged}
	if !r.Aggregated() {
		q.perPartition, q.partTaken = r.PerPartitionLimit, st.partTaken
		if st.paged {
			q.budgeted, q.pageEnd = true, e.scanPageEnd(ctx, timeoutOr(e.readTimeout, r.Timeout)) // scan.go
		}
	}
	if r.GroupBy > 0 {
		q.paged = false                                                                                           // the groups' rows are read in pages of their own
		res, err := e.groupScan(ctx, r, &q, st.partTaken, st.pos, st.returned, st.want, st.paged, st.fingerprint) // scanfilter.go
		res.Warnings = append(st.warnings, q.warnings...)
		return t, res, err
	}
	if r.Aggregates != nil {
		q.paged = false
		res, err := e.aggregateScan(ctx, r, &q, st.pos) // scan.go
		res.Warnings = append(st.warnings, q.warnings...)
		return t, res, err
	}
	rows, pos, done, err := q.page(ctx, st.pos, st.want)
	if err != nil {
		return t, coordinator.Result{}, err
	}
	res, err := scanResult(r, rows, now.Unix())
	if err != nil {
		return t, res, err
	}
	if r.JSON {
		if res.Rows, err = jsonRows(r, res.Rows); err != nil {
			return t, res, err
		}
	}
	// A page ends full, or short when its time ran out (scanPageEnd).
	if st.paged && !done && (r.Limit == 0 || st.returned+len(rows) < r.Limit) {
		res.PagingState = encodeScanPagingState(st.fingerprint, st.returned+len(rows), q.partTaken, pos)
	}
	res.Warnings = append(st.warnings, q.warnings...)
	return t, res, nil
}

// indexQuery runs the pages of one index query.
type indexQuery struct {
	e       *Executor
	ring    RangeRing
	reader  RangeReader
	r       *schema.Read
	rf      schema.Replication
	cl      coordinator.Consistency
	now, dl time.Time
	// paged reads few partitions at once (the page is likely to fill early).
	paged bool
	// perPartition is PER PARTITION LIMIT of a SELECT without aggregates (0: none).
	perPartition int
	// partTaken is the rows of the partition at the query's position returned so far: by
	// earlier pages when a page resumes inside it, then as the last page left it.
	partTaken int
	warnings  []string
	// budgeted pages end short, with at least one row, once pageEnd (e.mono's clock;
	// scanPageEnd) has passed.
	budgeted bool
	pageEnd  time.Duration
}

// page returns up to want rows from pos on, the position after the last, and whether the query
// reached the end of its tokens. Each partition gives at most PER PARTITION LIMIT rows (one for
// DISTINCT); a page full inside a partition leaves q.partTaken its rows returned so far. A
// budgeted page that holds rows returns them once its time ran out, before it asks for the
// next candidates.
func (q *indexQuery) page(ctx context.Context, pos scanPos, want int) ([]scanRow, scanPos, bool, error) {
	var out []scanRow
	end := q.r.Tokens.End
	taken0 := q.partTaken // of the partition at pos, when the page resumes inside it
	q.partTaken = 0
	for len(out) < want {
		if pos.Key == nil && pos.Token >= end {
			return out, pos, true, nil
		}
		if len(out) > 0 && q.overTime() {
			return out, pos, false, nil // a short page, after the candidates it read back
		}
		keys, next, err := q.candidates(ctx, pos)
		if err != nil {
			return nil, pos, false, err
		}
		var after [][]byte
		counted, resumed := 0, 0
		if pos.After != nil && len(keys) > 0 && keys[0].token == pos.Token && sameKey(keys[0].pk, pos.Key) {
			after, counted = pos.After, 1 // the partition the last page stopped in, counted then
			resumed = taken0
		}
		taken0 = 0
		x := &partitionReads{e: q.e, r: q.r, keys: keys, counted: counted, pageJudged: true,
			base: readSpec{table: q.r.Table, clustering: q.r.Clustering, rf: q.rf, cl: q.cl}, now: q.now, dl: q.dl}
		window := maxParallelPartitions
		if q.paged {
			window = 4
		}
		for from := 0; from < len(keys); from += window {
			to := min(from+window, len(keys))
			left := want - len(out)
			res, err := x.readRange(ctx, from, to, after, func(i int) int {
				w := 0 // all
				if want != math.MaxInt {
					w = left + 1 // one more: whether the partition has more
				}
				if p := q.perPartition; p > 0 {
					if i == 0 {
						p -= resumed
					}
					if w == 0 || p < w {
						w = max(p, 1) // resumed < PER PARTITION LIMIT (a page stops after a partition that gave all)
					}
				}
				return w
			})
			if err != nil {
				return nil, pos, false, err
			}
			q.pace(ctx, res)
			after = nil
			for k, p := range res {
				key := keys[from+k]
				room := min(len(p.rows), want-len(out))
				for _, row := range p.rows[:room] {
					out = append(out, scanRow{key: key.pk, row: row})
				}
				if len(out) < want {
					continue // the partition gave all it has or may
				}
				// The page is full in this partition: after it when nothing of it is left.
				taken := room
				if from+k == 0 {
					taken += resumed
				}
				pos = scanPos{Token: key.token, Key: key.pk}
				gaveAll := q.r.Distinct || q.perPartition > 0 && taken >= q.perPartition
				if room < len(p.rows) || !p.done && !gaveAll {
					pos.After = out[len(out)-1].row.Clustering
					q.partTaken = taken
				}
				q.warnings = append(q.warnings, x.warnings...)
				return out, pos, false, nil
			}
			if to < len(keys) && len(out) > 0 && q.overTime() {
				// A short page, after the partitions read back so far, each whole.
				q.warnings = append(q.warnings, x.warnings...)
				return out, scanPos{Token: keys[to-1].token, Key: keys[to-1].pk}, false, nil
			}
		}
		q.warnings = append(q.warnings, x.warnings...)
		pos = next
	}
	return out, pos, pos.Key == nil && pos.Token >= end, nil
}

// overTime reports whether a budgeted page's time has run out.
func (q *indexQuery) overTime() bool { return q.budgeted && q.e.mono() >= q.pageEnd }

// pace weighs the rows of res, partitions read back, and their bytes with the node's scan pacer,
// waiting at most until the page's time runs out when the page is budgeted.
func (q *indexQuery) pace(ctx context.Context, res []partResult) {
	if q.e.scanPacer == nil {
		return
	}
	rows, bytes := 0, 0
	for _, p := range res {
		rows += len(p.rows)
		for _, r := range p.rows {
			bytes += clusteredRowBytes(r)
		}
	}
	if rows == 0 {
		return
	}
	if q.budgeted {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, q.pageEnd-q.e.mono())
		defer cancel()
	}
	q.e.scanPacer.Pace(ctx, rows, bytes) // a canceled context ends the query at its next read
}

// clusteredRowBytes is the size of a row read back, as pacing weighs it (readBytes): its
// clustering components, and its columns' names, paths and values.
func clusteredRowBytes(r coordinator.ClusteredRow) int {
	n := 0
	for _, c := range r.Clustering {
		n += len(c)
	}
	for _, c := range r.Row.Columns {
		n += len(c.Name) + len(c.Path) + len(c.Value)
	}
	return n
}

// indexRangesAtOnce is how many token ranges an index query asks for candidates at once.
const indexRangesAtOnce = 8

// candidates asks the replicas of the next token ranges from pos on (up to indexRangesAtOnce of
// them, in parallel) for the partitions their index holds for the value, and returns them in
// token order with the position after everything the answers covered: the end of the last
// range, or where the first range whose answers stopped early stopped.
func (q *indexQuery) candidates(ctx context.Context, pos scanPos) ([]inKey, scanPos, error) {
	type span struct {
		from scanPos
		end  int64
	}
	var spans []span
	for p := pos; len(spans) < indexRangesAtOnce && (p.Key != nil || p.Token < q.r.Tokens.End); {
		next := p.Token
		if p.Key == nil {
			next++
		}
		rangeEnd, ok := q.ring.RangeEnd(next)
		if !ok {
			return nil, pos, &coordinator.UnavailableError{Consistency: q.cl, Live: 0, Required: coordinator.BlockFor(q.cl, q.rf.Total())}
		}
		end := min(rangeEnd, q.r.Tokens.End)
		spans = append(spans, span{from: p, end: end})
		p = scanPos{Token: end}
	}
	type result struct {
		keys []inKey
		next scanPos
		err  error
	}
	results := make([]result, len(spans))
	var wg sync.WaitGroup
	for i, sp := range spans {
		wg.Go(func() {
			r := &results[i]
			r.keys, r.next, r.err = q.rangeCandidates(ctx, sp.from, sp.end)
		})
	}
	wg.Wait()
	var keys []inKey
	for _, r := range results {
		if r.err != nil {
			return nil, pos, r.err
		}
		keys, pos = append(keys, r.keys...), r.next
		if r.next.Key != nil {
			break // this range stopped early: the next call goes on from there
		}
	}
	return keys, pos, nil
}

// rangeCandidates asks the replicas of the token range that ends at end for the partitions
// their index holds for the value, from pos on, and returns their union in token order with the
// position after everything the answers covered.
func (q *indexQuery) rangeCandidates(ctx context.Context, pos scanPos, end int64) ([]inKey, scanPos, error) {
	e, t := q.e, q.r.Table
	rreq := &replicapb.RangeReadRequest{
		TableId: uint64(t.ID), StartToken: pos.Token, StartPartitionKey: pos.Key, EndToken: end,
		Limit: indexCandidates, IndexId: uint64(q.r.Index.ID), IndexValue: q.r.IndexValue,
	}
	if pos.After != nil {
		rreq.After = &replicapb.ClusteringKey{Components: pos.After}
	}
	var replicaBuf [8]coordinator.Replica
	var orderBuf [8]coordinator.NodeID
	p := coordinator.Params{
		Op: coordinator.OpRead, Consistency: q.cl, Self: e.localID, PerDC: len(q.rf.DataCenters) > 0,
		Replicas: e.replicaSet(replicaBuf[:0], end, q.rf), Exempt: true, Deadline: q.dl,
	}
	e.skipUnrepaired(&p)
	p.ReadOrder = e.scores.order(orderBuf[:0], p.Replicas, e.localID, e.mono())
	req, err := e.newRequest(p)
	if err != nil {
		return nil, pos, err
	}
	step := req.Start(e.now())
	o := step.Outcome
	if o == nil {
		if o, err = e.await(ctx, req, step.Sends, rangeExchange{t: q.reader, req: rreq}, q.dl, false, nil); err != nil {
			return nil, pos, err
		}
	}
	if err := e.outcomeErr(o, t); err != nil {
		return nil, pos, err
	}
	resps := o.(coordinator.Success).Responses
	answers := make([]coordinator.RangeAnswer, len(resps))
	for i, r := range resps {
		resp, ok := r.Payload.(*replicapb.RangeReadResponse)
		if !ok {
			return nil, pos, fmt.Errorf("coordinator: index read from replica %s returned no data", r.From)
		}
		a := coordinator.RangeAnswer{From: r.From, Stopped: resp.Stopped, Partitions: make([]coordinator.RangePartition, len(resp.Partitions))}
		for j, rp := range resp.Partitions {
			a.Partitions[j] = coordinator.RangePartition{Token: rp.Token, Key: rp.PartitionKey}
		}
		answers[i] = a
	}
	parts, complete, err := coordinator.GroupRange(t, answers)
	if err != nil {
		return nil, pos, err
	}
	keys := make([]inKey, len(parts))
	for i, part := range parts {
		keys[i] = inKey{pk: part.Key, token: part.Token}
	}
	switch {
	case complete:
		return keys, scanPos{Token: end}, nil
	case len(parts) > 0:
		last := parts[len(parts)-1]
		return keys, scanPos{Token: last.Token, Key: last.Key}, nil
	}
	return nil, pos, fmt.Errorf("coordinator: index read of table %s stopped without a partition", t.QualifiedName())
}
