package shell

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Scans: a SELECT without a partition key restriction, or with token(k) bounds (schema.Read.Scan).
// The coordinator walks the ring's token ranges in token order from the scan's position, reads
// each range from as many of its replicas as the consistency level needs (internode kind
// range_read, a page bounded by rows and bytes), merges their answers partition by partition with
// the single-partition reads' Merger, completes a partition a replica stopped inside with
// single-partition pages, and read-repairs what a replica lacks as single-partition reads do.
// Rows come in token order, then clustering order. Scans are exempt from the per-partition
// limiter (as in ScyllaDB); a page counts one read of the service level's and keyspace's budgets.

// RangeRing is what a scan needs of the ring besides Ring (package node's ring view implements it).
type RangeRing interface {
	// RangeEnd returns the last token (inclusive) of the ring's token range that holds token: the
	// first vnode token ≥ token, or math.MaxInt64 past the last vnode token (the range that wraps
	// around, whose replicas are those of the first vnode token). ok is false for an empty ring.
	RangeEnd(token int64) (end int64, ok bool)
}

// RangeReader sends range reads (package node's transport implements it).
type RangeReader interface {
	ReadRange(ctx context.Context, to coordinator.NodeID, req *replicapb.RangeReadRequest) (*replicapb.RangeReadResponse, error)
}

// ScanPacer weighs the work of scans (package node gives the node's admission controller): Pace
// is called after each range read of a scan with the rows the replicas returned and their bytes
// (readBytes), and the scan goes on when it returns.
type ScanPacer interface {
	Pace(ctx context.Context, rows, bytes int) error
}

// readBytes is the size of a replica's page of a range read, as pacing weighs it: the partition
// key's components, and each row's clustering components, column names and values (the static row's too).
// It walks what the merge walks anyway, without encoding anything.
func readBytes(rp *replicapb.RangePartition) int {
	n := 0
	for _, c := range rp.GetPartitionKey() {
		n += len(c)
	}
	pg := rp.GetPage()
	n += rowBytes(pg.GetStaticRow())
	for _, r := range pg.GetRows() {
		n += rowBytes(r)
	}
	return n
}

func rowBytes(r *replicapb.Row) int {
	n := 0
	for _, c := range r.GetClustering() {
		n += len(c)
	}
	for _, c := range r.GetCells() {
		n += len(c.GetColumn()) + len(c.GetValue())
	}
	return n
}

// scanReadRows bounds the live rows one replica returns for one range read of a scan without a
// page size or LIMIT: the coordinator reads the range in such pieces.
const scanReadRows = 1000

// ErrScanUnsupported is returned for a scan when the node's ring or transport cannot serve one.
var ErrScanUnsupported = errors.New("coordinator: this node's ring or transport does not serve scans")

// scanPos is where a scan goes on: after the token Token when Key is nil; else after the
// partition (Token, Key), or with After set after that row of it.
type scanPos struct {
	Token int64
	Key   [][]byte
	After [][]byte
}

// scanRow is one row of a scan's result with its partition key.
type scanRow struct {
	key [][]byte
	row coordinator.ClusteredRow
}

// scanStart is what a SELECT of scan shape (a scan, an index query) works out before it reads:
// the ring and transport that serve range reads, the table's replication, where the paging state
// goes on and how many rows the page wants; empty when there is nothing to read.
type scanStart struct {
	ring                      RangeRing
	reader                    RangeReader
	rf                        schema.Replication
	fingerprint               uint64
	pos                       scanPos
	returned, partTaken, want int
	paged, empty              bool
	warnings                  []string
}

// startScan starts a page of r, a SELECT of scan shape, and counts the page as one read of its
// budgets unless there is nothing to read.
func (e *Executor) startScan(ctx context.Context, r *schema.Read, keyspace string, req *coordinator.Statement) (scanStart, error) {
	var st scanStart
	t := r.Table
	var ok1, ok2 bool
	st.ring, ok1 = e.ring.(RangeRing)
	st.reader, ok2 = e.transport.(RangeReader)
	if !ok1 || !ok2 {
		return st, ErrScanUnsupported
	}
	var err error
	if st.rf, err = replicationFactor(e.schema.Schema(), t); err != nil {
		return st, err
	}
	if req.PageSize > 0 || len(req.PagingState) > 0 {
		st.fingerprint = statementFingerprint(req, keyspace)
	}
	st.pos, st.returned, st.partTaken, err = decodeScanPagingState(req.PagingState, st.fingerprint, t, r.Tokens)
	if err != nil {
		return st, &coordinator.InvalidError{Err: err}
	}
	st.want = math.MaxInt
	if r.Limit > 0 {
		st.want = r.Limit - st.returned
	}
	st.paged = req.PageSize > 0 && req.PageSize < math.MaxInt32
	if st.paged {
		st.want = min(st.want, req.PageSize)
	}
	if (r.Aggregates == nil || r.GroupBy > 0) && (r.Tokens.Empty || st.want <= 0 || st.pos.Key == nil && st.pos.Token >= r.Tokens.End) {
		st.empty = true
		return st, nil
	}
	// A page is one read of its budgets.
	return st, e.judgeScopes(ctx, t.Keyspace, t.Name, coordinator.OpRead, 1, &st.warnings)
}

// executeScan runs a SELECT that scans (r.Scan) at consistency cl.
func (e *Executor) executeScan(ctx context.Context, r *schema.Read, keyspace string, cl coordinator.Consistency, req *coordinator.Statement) (*schema.Table, coordinator.Result, error) {
	t := r.Table // schema.Read refused what a scan does not run (ORDER BY)
	st, err := e.startScan(ctx, r, keyspace, req)
	if err != nil {
		return t, coordinator.Result{}, err
	}
	if st.empty {
		res, err := rowsResult(r, nil, 0)
		return t, res, err
	}
	timeout := timeoutOr(e.readTimeout, r.Timeout)
	sc := scanner{e: e, ring: st.ring, reader: st.reader, t: t, rf: st.rf, cl: cl, end: r.Tokens.End, timeout: timeout, distinct: r.Distinct}
	sc.shape(r, st.partTaken) // scanfilter.go
	if st.paged && !r.Aggregated() {
		// Aggregates and groups read every internal page before they answer: never cut short.
		sc.budgeted, sc.pageEnd = true, e.scanPageEnd(ctx, timeout)
		sc.emptyEnd = sc.pageEnd + (sc.pageEnd-e.mono())/2
	}
	if r.GroupBy > 0 {
		res, err := e.groupScan(ctx, r, &sc, sc.partTaken, st.pos, st.returned, st.want, st.paged, st.fingerprint) // scanfilter.go
		res.Warnings = st.warnings
		return t, res, err
	}
	if r.Aggregates != nil {
		res, err := e.aggregateScan(ctx, r, &sc, st.pos)
		res.Warnings = st.warnings
		return t, res, err
	}
	rows, pos, done, err := sc.page(ctx, st.pos, st.want)
	if err != nil {
		return t, coordinator.Result{}, err
	}
	now := e.now().Unix()
	res, err := scanResult(r, rows, now)
	if err != nil {
		return t, res, err
	}
	if r.JSON {
		if res.Rows, err = jsonRows(r, res.Rows); err != nil {
			return t, res, err
		}
	}
	// A page ends full, or short when its time ran out (scanPageEnd), empty when half as much
	// again passed without a row (scanner.page).
	if st.paged && !done && (r.Limit == 0 || st.returned+len(rows) < r.Limit) {
		res.PagingState = encodeScanPagingState(st.fingerprint, st.returned+len(rows), sc.partTaken, pos)
	}
	res.Warnings = st.warnings
	return t, res, nil
}

// scanPageEnd is when, on e.mono's clock, the assembly of a page of a paged scan or index query
// that started now has taken its time: Options.ScanPageTime, by default half the statement's
// timeout, and at most half of what is left of ctx's deadline. The page then ends short at its
// next range read, with a paging state after what it read: the reads and the pacing's waits of
// one page stay within the read timeout and the clients' timeouts however slowly the node paces
// scans (Cassandra fills every page, and times out instead).
func (e *Executor) scanPageEnd(ctx context.Context, timeout time.Duration) time.Duration {
	budget := e.scanPageTime
	if budget <= 0 {
		budget = timeout / 2
	}
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(d)/2)
	}
	return e.mono() + budget
}

// scanAggregatePage is how many rows an aggregate over a scan reads per page of the scan.
const scanAggregatePage = 1000

// aggregateScan folds every row of the scan (or index query) from pos on into the aggregates of r (without
// GROUP BY: one group, which exists without rows), reading page after page as Cassandra's
// coordinator pages an aggregation internally, and returns their one row. The budgets counted
// the statement once, like the page it answers.
func (e *Executor) aggregateScan(ctx context.Context, r *schema.Read, sc scanPages, pos scanPos) (coordinator.Result, error) {
	agg := newAggregator(r, e.now().Unix())
	for done := r.Tokens.Empty; !done; {
		var rows []scanRow
		var err error
		if rows, pos, done, err = sc.page(ctx, pos, scanAggregatePage); err != nil {
			return coordinator.Result{}, err
		}
		for _, x := range rows {
			if err := agg.add(x.key, x.row); err != nil {
				return coordinator.Result{}, err
			}
		}
	}
	out, err := agg.finish()
	if err != nil {
		return coordinator.Result{}, err
	}
	rows := rowsOf(r, len(out))
	copy(rows.Values, out)
	if r.JSON {
		if rows, err = jsonRows(r, rows); err != nil {
			return coordinator.Result{}, err
		}
	}
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: rows}, nil
}

// scanResult renders a scan's rows, each with its own partition key, as rowsResult does.
func scanResult(r *schema.Read, rows []scanRow, now int64) (coordinator.Result, error) {
	res, err := rowsResult(r, nil, now)
	if err != nil || len(rows) == 0 {
		return res, err
	}
	pr := *r
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && sameKey(rows[j].key, rows[i].key) {
			j++
		}
		part := make([]coordinator.ClusteredRow, j-i)
		for k := range part {
			part[k] = rows[i+k].row
		}
		pr.PartitionKey = rows[i].key
		one, err := rowsResult(&pr, part, now)
		if err != nil {
			return one, err
		}
		res.Rows.Values = append(res.Rows.Values, one.Rows.Values...)
		i = j
	}
	return res, nil
}

func sameKey(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			return false
		}
	}
	return true
}

// scanner reads one page of a scan of table t up to token end.
type scanner struct {
	e       *Executor
	ring    RangeRing
	reader  RangeReader
	t       *schema.Table
	rf      schema.Replication
	cl      coordinator.Consistency
	end     int64
	timeout time.Duration
	// distinct takes one row of each partition (SELECT DISTINCT): its key and static values.
	distinct bool
	// The statement's filters, PER PARTITION LIMIT and page budget (scanfilter.go).
	scanShape
	// budgeted pages end short once pageEnd (e.mono's clock; scanPageEnd) has passed: page
	// stops before its next range read once it holds a row, and a range read's pacing waits no
	// longer than until pageEnd. A page that has no row yet reads on, paced, until emptyEnd
	// (half its time again), then ends empty.
	budgeted          bool
	pageEnd, emptyEnd time.Duration
	// found is the rows the page holds before its current range read.
	found int
}

// overTime reports whether the page's time budget has run out.
func (s *scanner) overTime() bool { return s.budgeted && s.e.mono() >= s.pageEnd }

// pace weighs a range read of rows rows and bytes bytes with the node's scan pacer, waiting at
// most until the page's time budget runs out (pageEnd once the page holds a row, emptyEnd while
// it holds none): the page then ends, and the work stays weighed (the pacer's debt delays the
// scans' next reads).
func (s *scanner) pace(ctx context.Context, rows, bytes int, holds bool) {
	if s.budgeted {
		end := s.emptyEnd
		if holds {
			end = s.pageEnd
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, end-s.e.mono())
		defer cancel()
	}
	s.e.scanPacer.Pace(ctx, rows, bytes) // a canceled context ends the scan at its next step
}

// page reads up to want live rows from pos on and returns them with the position after the last
// (or after everything read when fewer came), and whether the scan reached its end token. A
// budgeted page returns fewer once its time ran out (overTime). One that holds no row by then
// (a filter that matches little, say) reads on, paced, for half its time again before it ends
// empty: the Node.js driver's async iterator ends at an empty page, so they are kept rare. A
// page makes one range read at least, so the scan always moves on.
func (s *scanner) page(ctx context.Context, pos scanPos, want int) ([]scanRow, scanPos, bool, error) {
	var rows []scanRow
	for reads := 0; len(rows) < want; reads++ {
		if pos.Key == nil && pos.Token >= s.end {
			return rows, pos, true, nil
		}
		if s.overTime() && (len(rows) > 0 || reads > 0 && s.e.mono() >= s.emptyEnd) {
			break // a short page: its paging state goes on after what it read
		}
		s.found = len(rows)
		// The range that holds the next token: pos.Token itself when resuming in a partition.
		next := pos.Token
		if pos.Key == nil {
			next++
		}
		rangeEnd, ok := s.ring.RangeEnd(next)
		if !ok {
			return nil, pos, false, &coordinator.UnavailableError{Consistency: s.cl, Live: 0, Required: coordinator.BlockFor(s.cl, s.rf.Total())}
		}
		end := min(rangeEnd, s.end)
		got, nextPos, err := s.readRange(ctx, pos, end, want-len(rows))
		if err != nil {
			return nil, pos, false, err
		}
		rows, pos = append(rows, got...), nextPos
	}
	return rows, pos, pos.Key == nil && pos.Token >= s.end, nil
}

// readRange reads the token range from pos to end (inclusive) from the replicas of end, merges
// what they hold up to where every answer is known, and returns at most want live rows and the
// position after them.
func (s *scanner) readRange(ctx context.Context, pos scanPos, end int64, want int) ([]scanRow, scanPos, error) {
	e := s.e
	now := e.now()
	dl := deadline(ctx, now, s.timeout)
	rreq := &replicapb.RangeReadRequest{
		TableId: uint64(s.t.ID), StartToken: pos.Token, StartPartitionKey: pos.Key, EndToken: end,
		Limit: uint32(s.rangeLimit(want)), PageBytes: uint32(min(e.pageBytes, math.MaxUint32)),
	}
	if pos.After != nil {
		rreq.After = &replicapb.ClusteringKey{Components: pos.After}
	}
	var replicaBuf [8]coordinator.Replica
	var orderBuf [8]coordinator.NodeID
	p := coordinator.Params{
		Op: coordinator.OpRead, Consistency: s.cl, Self: e.localID, PerDC: len(s.rf.DataCenters) > 0,
		Replicas: e.replicaSet(replicaBuf[:0], end, s.rf), Exempt: true, Deadline: dl,
	}
	e.skipUnrepaired(&p)
	p.ReadOrder = e.scores.order(orderBuf[:0], p.Replicas, e.localID, e.mono())
	req, err := e.newRequest(p)
	if err != nil {
		return nil, pos, err
	}
	step := req.Start(now)
	o := step.Outcome
	if o == nil {
		if o, err = e.await(ctx, req, step.Sends, rangeExchange{t: s.reader, req: rreq}, dl, false, nil); err != nil {
			return nil, pos, err
		}
	}
	if err := e.outcomeErr(o, s.t); err != nil {
		return nil, pos, err
	}
	resps := o.(coordinator.Success).Responses
	answers := make([]coordinator.RangeAnswer, len(resps))
	read, size := 0, 0 // rows the replicas returned and their bytes: the work this read weighs
	var rows []scanRow
	defer func() {
		if e.scanPacer != nil && read > 0 {
			s.pace(ctx, read, size, s.found+len(rows) > 0)
		}
	}()
	for i, r := range resps {
		resp, ok := r.Payload.(*replicapb.RangeReadResponse)
		if !ok {
			return nil, pos, fmt.Errorf("coordinator: range read from replica %s returned no data", r.From)
		}
		a := coordinator.RangeAnswer{From: r.From, Stopped: resp.Stopped, Partitions: make([]coordinator.RangePartition, len(resp.Partitions))}
		for j, rp := range resp.Partitions {
			read += len(rp.GetPage().GetRows())
			size += readBytes(rp)
			pg := pageOf(rp.GetPage())
			hideShadowed(s.t, &pg)
			a.Partitions[j] = coordinator.RangePartition{Token: rp.Token, Key: rp.PartitionKey, Page: pg}
		}
		answers[i] = a
	}
	parts, complete, err := coordinator.GroupRange(s.t, answers)
	if err != nil {
		return nil, pos, err
	}
	resumed := pos // the partition the page resumes inside, when pos.After is set
	for _, part := range parts {
		whole := resumed.After == nil || part.Token != resumed.Token || !sameKey(part.Key, resumed.Key)
		got, stop, err := s.takePartition(ctx, part, want-len(rows), len(resps), now, dl, whole) // scanfilter.go
		if err != nil {
			return nil, pos, err
		}
		for _, row := range got {
			rows = append(rows, scanRow{key: part.Key, row: row})
		}
		if stop != nil {
			return rows, *stop, nil
		}
		pos = scanPos{Token: part.Token, Key: part.Key}
	}
	if complete {
		pos = scanPos{Token: end}
	}
	return rows, pos, nil
}

// mergePartition reconciles the replicas' pages of one partition of a scan, fetching the pages
// that follow where a replica stopped, for at most want live rows, and read-repairs the replicas
// that lack something of them as a single-partition read does.
//
// whole says the partition is read from its start: one holding only static values is then
// returned as one row (withStatic).
func (s *scanner) mergePartition(ctx context.Context, part coordinator.PartitionPages, want, answered int, now, dl time.Time, whole bool) ([]coordinator.ClusteredRow, error) {
	e := s.e
	spec := readSpec{table: s.t, pk: part.Key, token: part.Token, limit: want, rf: s.rf, cl: s.cl}
	m := coordinator.NewMerger(s.t, want, false, now.Unix())
	if s.cl != coordinator.One && answered < s.rf.Total() {
		m.KeepFull()
	}
	resps := make([]coordinator.Response, len(part.Pages))
	for i, rp := range part.Pages {
		if err := m.Add(rp.From, rp.Page, 0); err != nil {
			return nil, err
		}
		resps[i] = coordinator.Response{From: rp.From, Status: coordinator.StatusOK}
	}
	for {
		need := m.Merge()
		if len(need) == 0 {
			break
		}
		if err := e.readPages(ctx, spec, m, need, len(resps), dl); err != nil {
			return nil, err
		}
	}
	rec := m.Result()
	static := scanStatic(s.t, part, &rec) // static.go
	if len(rec.Repairs) > 0 && s.cl != coordinator.One {
		if err := e.repair(ctx, spec, rec, resps, dl); err != nil {
			return nil, err
		}
	}
	return withStatic(s.t, rec.Rows, static, whole, now.Unix()), nil
}

// rangeExchange sends one range read to each replica, exempt from the limiter.
type rangeExchange struct {
	t   RangeReader
	req *replicapb.RangeReadRequest
}

func (x rangeExchange) call(ctx context.Context, s coordinator.Send) coordinator.Response {
	resp, err := x.t.ReadRange(ctx, s.To, x.req)
	if err != nil {
		return coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusFailed, Err: transportError(s.To, err)}
	}
	return response(s, resp.GetStatus(), nil, resp.GetError(), resp)
}

// A scan's paging state has the form of a single-partition read's (paging.go) with its own
// version, scanPagingVersion, and where the scan goes on instead of a clustering key:
//
//	byte      scanPagingVersion, or scanPagingCountVersion with the count below
//	8 bytes   the statement's fingerprint
//	uvarint   rows returned by the earlier pages
//	uvarint   with scanPagingCountVersion only: the rows (groups with GROUP BY) of the
//	          partition it resumes inside returned so far (PER PARTITION LIMIT), not 0
//	8 bytes   token, big-endian
//	byte      0: after the token; 1: after the partition; 2: after a row of it
//	with 1 or 2: uvarint n, then n times uvarint length and a partition key component
//	with 2: uvarint m, then m times uvarint length and a clustering component
//
// It names a token and keys, never a range of the ring or a node, so that any coordinator can
// continue it, and ranges that moved since (a node joined or left) are found again by token.
//
// A state without a count keeps the form of nodes that predate PER PARTITION LIMIT over scans.
const (
	scanPagingVersion      = 2
	scanPagingCountVersion = 3
)

func encodeScanPagingState(fingerprint uint64, returned, partTaken int, pos scanPos) []byte {
	b := []byte{scanPagingVersion}
	if partTaken > 0 {
		b[0] = scanPagingCountVersion
	}
	b = binary.BigEndian.AppendUint64(b, fingerprint)
	b = binary.AppendUvarint(b, uint64(returned))
	if partTaken > 0 {
		b = binary.AppendUvarint(b, uint64(partTaken))
	}
	b = binary.BigEndian.AppendUint64(b, uint64(pos.Token))
	comps := func(cs [][]byte) {
		b = binary.AppendUvarint(b, uint64(len(cs)))
		for _, c := range cs {
			b = binary.AppendUvarint(b, uint64(len(c)))
			b = append(b, c...)
		}
	}
	switch {
	case pos.Key == nil:
		b = append(b, 0)
	case pos.After == nil:
		b = append(b, 1)
		comps(pos.Key)
	default:
		b = append(b, 2)
		comps(pos.Key)
		comps(pos.After)
	}
	return b
}

// decodeScanPagingState decodes a scan's paging state for table t by the statement with the
// given fingerprint, scanning tokens; an empty state is the first page, at the start of tokens.
// It returns the position, the rows returned before and the rows (or groups) returned of the
// partition the position is inside.
func decodeScanPagingState(state []byte, fingerprint uint64, t *schema.Table, tokens schema.TokenRange) (scanPos, int, int, error) {
	pos := scanPos{Token: tokens.Start}
	if len(state) == 0 {
		return pos, 0, 0, nil
	}
	bad := func(what string) (scanPos, int, int, error) {
		return scanPos{}, 0, 0, fmt.Errorf("invalid paging state: %s", what)
	}
	if len(state) > maxPagingState {
		return bad(fmt.Sprintf("%d bytes, the most is %d", len(state), maxPagingState))
	}
	if len(state) < 9 || state[0] != scanPagingVersion && state[0] != scanPagingCountVersion {
		return bad("not a paging state of a scan of this database")
	}
	if binary.BigEndian.Uint64(state[1:9]) != fingerprint {
		return scanPos{}, 0, 0, errPagingForeign
	}
	b := state[9:]
	returned, n := uvarint(b)
	if n <= 0 || returned > 1<<31 {
		return bad("malformed row count")
	}
	b = b[n:]
	var partTaken uint64
	if state[0] == scanPagingCountVersion {
		if partTaken, n = uvarint(b); n <= 0 || partTaken == 0 || partTaken > 1<<31 {
			return bad("malformed row count of a partition")
		}
		b = b[n:]
	}
	if len(b) < 9 {
		return bad("truncated position")
	}
	pos.Token = int64(binary.BigEndian.Uint64(b))
	kind := b[8]
	b = b[9:]
	comps := func(cols []schema.Column, what string) ([][]byte, error) {
		count, n := uvarint(b)
		if n <= 0 || count != uint64(len(cols)) {
			return nil, fmt.Errorf("invalid paging state: its %s has the wrong number of components for table %s (was the table dropped and created again?)", what, t.QualifiedName())
		}
		b = b[n:]
		out := make([][]byte, count)
		for i := range out {
			l, n := uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return nil, fmt.Errorf("invalid paging state: truncated %s", what)
			}
			v := b[n : n+int(l) : n+int(l)]
			if err := cols[i].Type.Check(v); err != nil {
				return nil, fmt.Errorf("invalid paging state: %s column %s: %v", what, cql.QuoteIdent(cols[i].Name), err)
			}
			out[i] = v
			b = b[n+int(l):]
		}
		return out, nil
	}
	var err error
	switch kind {
	case 0:
	case 1, 2:
		if pos.Key, err = comps(t.PartitionKey, "partition key"); err != nil {
			return scanPos{}, 0, 0, err
		}
		if kind == 2 {
			if pos.After, err = comps(t.Clustering, "clustering key"); err != nil {
				return scanPos{}, 0, 0, err
			}
		}
	default:
		return bad("unknown position kind")
	}
	if len(b) != 0 {
		return bad(fmt.Sprintf("%d bytes of trailing garbage", len(b)))
	}
	if pos.Token < tokens.Start || pos.Token > tokens.End {
		return bad("its position is outside the statement's token range")
	}
	return pos, int(returned), int(partTaken), nil
}
