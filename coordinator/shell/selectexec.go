package shell

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// This file executes the SELECTs that are more than one partition's plain rows: IN on the
// partition key (the partitions read in parallel, returned in token order), rows filtered by
// the coordinator (ALLOW FILTERING, IN and tuple relations on clustering columns),
// aggregates and GROUP BY, DISTINCT and PER PARTITION LIMIT. The row-level steps (rowMatches,
// aggregator, renderRow) take one row at a time, whatever read produced it.

// plainRead reports whether r reads one partition's rows as they are (read.go's path).
func plainRead(r *schema.Read) bool {
	return len(r.PartitionKeys) <= 1 && !r.InPartitions && len(r.Filters) == 0 && !r.Aggregated() &&
		!r.Distinct && r.PerPartitionLimit == 0
}

// errOrderByPagedIn is Cassandra's refusal of ORDER BY with IN on the partition key, paged.
var errOrderByPagedIn = errors.New("Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query")

// inKey is one partition an IN reads.
type inKey struct {
	pk    [][]byte
	token int64
}

// keyRow is one row read, with its partition's key.
type keyRow struct {
	pk  [][]byte
	row coordinator.ClusteredRow
}

// maxParallelPartitions bounds the partitions one statement reads at once.
const maxParallelPartitions = 16

// executeShaped runs a SELECT that plainRead refuses. See the file's comment.
func (e *Executor) executeShaped(ctx context.Context, r *schema.Read, rf schema.Replication, cl coordinator.Consistency, req *coordinator.Statement, fingerprint uint64) (coordinator.Result, error) {
	t := r.Table
	keys := make([]inKey, len(r.PartitionKeys))
	for i, pk := range r.PartitionKeys {
		keys[i] = inKey{pk: pk, token: partitioner.Token(partitioner.AppendKey(nil, pk))}
	}
	slices.SortStableFunc(keys, func(a, b inKey) int {
		if a.token != b.token {
			if a.token < b.token {
				return -1
			}
			return 1
		}
		return slices.CompareFunc(a.pk, b.pk, bytes.Compare)
	})
	if e.keysInSelect > 0 && len(keys) > e.keysInSelect {
		return coordinator.Result{}, &coordinator.InvalidError{Err: fmt.Errorf("guardrail partition_keys_in_select violated: query with partition keys in IN clause on table %s, with number of partition keys %d exceeds fail threshold of %d",
			t.QualifiedName(), len(keys), e.keysInSelect)}
	}
	if product := inProduct(r, len(keys)); e.inProduct > 0 && product > e.inProduct {
		return coordinator.Result{}, &coordinator.InvalidError{Err: fmt.Errorf("guardrail in_select_cartesian_product violated: the cartesian product of the IN relations on table %s produces %d values, this exceeds fail threshold of %d",
			t.QualifiedName(), product, e.inProduct)}
	}
	aggregated := r.Aggregated()
	paged := req.PageSize > 0 && req.PageSize < math.MaxInt32 && !aggregated && (r.Limit == 0 || r.Limit > req.PageSize)
	merge := r.OrderBy && len(keys) > 1 // rows merged across partitions in clustering order
	if merge && paged {
		return coordinator.Result{}, &coordinator.InvalidError{Err: errOrderByPagedIn}
	}
	cur, err := decodeShapedState(req.PagingState, fingerprint, t, len(keys))
	if err != nil {
		return coordinator.Result{}, &coordinator.InvalidError{Err: err}
	}
	now := e.now()
	x := &partitionReads{
		e: e, r: r, keys: keys, counted: cur.counted,
		base: readSpec{table: t, clustering: r.Clustering, reversed: r.Reversed, rf: rf, cl: cl},
		now:  now, dl: deadline(ctx, now, timeoutOr(e.readTimeout, r.Timeout)),
	}
	switch {
	case aggregated:
		groupPaged := r.GroupBy > 0 && req.PageSize > 0 && req.PageSize < math.MaxInt32 && (r.Limit == 0 || r.Limit > req.PageSize)
		return x.aggregate(ctx, cur, groupPaged, req.PageSize, fingerprint)
	case merge:
		return x.merged(ctx)
	}
	return x.page(ctx, cur, paged, req.PageSize, fingerprint)
}

// inProduct returns the number of key combinations the IN restrictions of r produce with
// npk partition keys.
func inProduct(r *schema.Read, npk int) int {
	n := npk
	for _, f := range r.Filters {
		if f.Op == cql.IN && f.Columns[0].Kind == schema.ClusteringColumn {
			n *= max(len(f.Values), 1)
			if n > math.MaxInt32 {
				return math.MaxInt32
			}
		}
	}
	return n
}

// partitionReads reads the partitions of one page of a shaped SELECT.
type partitionReads struct {
	e       *Executor
	r       *schema.Read
	keys    []inKey
	counted int // partitions [0, counted) were counted for the limiter by earlier pages
	// pageJudged says the budgets counted the statement's page already (an index query's page
	// is one read of them, index.go); else each partition read counts one.
	pageJudged bool
	base       readSpec
	now, dl    time.Time

	warnings []string
}

// partResult is what reading one partition gave.
type partResult struct {
	rows     []coordinator.ClusteredRow
	done     bool // the partition has no more rows for the statement
	warnings []string
	err      error
}

// readRange reads partitions keys[from:to] in parallel, each from its start (or, for the
// first, after `after`), at most want[i-from] matching rows of each (0: all), and returns
// their results in order. The budgets of the service level and keyspace count one read per
// partition not counted before; the limiter decides each such partition once.
func (x *partitionReads) readRange(ctx context.Context, from, to int, after [][]byte, want func(i int) int) ([]partResult, error) {
	t := x.r.Table
	units := 0
	for i := from; i < to; i++ {
		if i >= x.counted {
			units++
		}
	}
	if x.pageJudged {
		units = 0
	}
	if err := x.e.judgeScopes(ctx, t.Keyspace, t.Name, coordinator.OpRead, units, &x.warnings); err != nil {
		return nil, err
	}
	out := make([]partResult, to-from)
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallelPartitions)
	for i := from; i < to; i++ {
		var a [][]byte
		if i == from {
			a = after
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, a [][]byte) {
			defer func() { <-sem; wg.Done() }()
			out[i-from] = x.readPartition(ctx, i, a, want(i))
		}(i, a)
	}
	wg.Wait()
	x.counted = max(x.counted, to)
	for i, p := range out {
		x.warnings = append(x.warnings, p.warnings...)
		if p.err != nil {
			var rl *coordinator.RateLimitError
			if errors.As(p.err, &rl) && len(x.keys) > 1 {
				named := *rl
				named.Partition = schema.FormatKey(t.PartitionKey, x.keys[from+i].pk)
				return nil, &named
			}
			return nil, p.err
		}
	}
	return out, nil
}

// readPartition reads partition keys[i] after clustering key after (nil: from its start),
// at most want rows that match the statement's filters (0: all of them). Filtered reads go
// in chunks; only the first chunk of a partition not counted before is counted.
func (x *partitionReads) readPartition(ctx context.Context, i int, after [][]byte, want int) partResult {
	var res partResult
	spec := x.base
	spec.pk, spec.token, spec.after = x.keys[i].pk, x.keys[i].token, after
	spec.exempt = i < x.counted
	spec.warnings = &res.warnings
	if x.r.Distinct {
		want = 1
	}
	if len(x.r.Filters) == 0 {
		spec.limit = want
		rows, tombstones, err := x.e.read(ctx, spec, x.now, x.dl)
		res.rows, res.err = rows, err
		res.done = want == 0 || len(rows) < want
		x.tombstoneWarning(&res, i, len(rows), tombstones)
		return res
	}
	chunk := 0
	if want > 0 {
		chunk = max(2*want, 64)
	}
	for {
		spec.limit = chunk
		got, tombstones, err := x.e.read(ctx, spec, x.now, x.dl)
		if err != nil {
			res.err = err
			return res
		}
		x.tombstoneWarning(&res, i, len(got), tombstones)
		for _, row := range got {
			if rowMatches(x.r, spec.pk, row, x.now.Unix()) {
				res.rows = append(res.rows, row)
				if want > 0 && len(res.rows) == want {
					return res
				}
			}
		}
		if chunk == 0 || len(got) < chunk {
			res.done = true
			return res
		}
		spec.after, spec.exempt = got[len(got)-1].Clustering, true
	}
}

// tombstoneWarning adds to res the client's warning for a read of partition keys[i] that
// scanned more tombstones than the warn threshold, as a single-partition read gives.
func (x *partitionReads) tombstoneWarning(res *partResult, i, rows int, tombstones uint32) {
	e, t := x.e, x.r.Table
	if e.tombstoneWarn <= 0 || tombstones <= uint32(e.tombstoneWarn) {
		return
	}
	res.warnings = append(res.warnings, fmt.Sprintf("read %d live rows and %d tombstones of partition %s of table %s (more than the tombstone warn threshold, %d)",
		rows, tombstones, schema.FormatKey(t.PartitionKey, x.keys[i].pk), t.QualifiedName(), e.tombstoneWarn))
	e.logger.Warn("read many tombstones", "table", t.QualifiedName(), "tombstones", tombstones, "live_rows", rows)
}

// rowMatches reports whether a row of partition pk matches every filter of r.
func rowMatches(r *schema.Read, pk [][]byte, row coordinator.ClusteredRow, now int64) bool {
	for i := range r.Filters {
		if !r.Filters[i].Match(func(c *schema.Column) []byte { return cellValue(r, pk, row, c, cql.SelectColumn, now) }) {
			return false
		}
	}
	return true
}

// page returns one page of rows: the partitions from the cursor's, in token order.
func (x *partitionReads) page(ctx context.Context, cur shapedCursor, paged bool, pageSize int, fingerprint uint64) (coordinator.Result, error) {
	r := x.r
	need := 0 // rows this page returns at most; 0: all
	if r.Limit > 0 {
		need = r.Limit - cur.returned
		if need <= 0 {
			return x.result(nil, nil)
		}
	}
	if paged && (need == 0 || need > pageSize) {
		need = pageSize
	}
	var out []keyRow
	idx, after, partReturned := cur.part, cur.after, cur.partReturned
	window := len(x.keys)
	if paged {
		window = 4
	}
	for idx < len(x.keys) && (need == 0 || len(out) < need) {
		from, to := idx, min(idx+window, len(x.keys))
		left := need - len(out)
		res, err := x.readRange(ctx, from, to, after, func(i int) int {
			w := 0
			if need > 0 {
				w = left + 1 // one more than the page takes: whether more follow
			}
			if p := r.PerPartitionLimit; p > 0 {
				rem := p
				if i == from {
					rem -= partReturned
				}
				if w == 0 || rem < w {
					w = rem
				}
			}
			return w
		})
		if err != nil {
			return coordinator.Result{}, err
		}
		for k, p := range res {
			i := from + k
			room := len(p.rows)
			if need > 0 {
				room = min(room, need-len(out))
			}
			for _, row := range p.rows[:room] {
				out = append(out, keyRow{x.keys[i].pk, row})
			}
			taken := partReturned + room
			partDone := room == len(p.rows) && (p.done || r.PerPartitionLimit > 0 && taken >= r.PerPartitionLimit) || r.Distinct && room == len(p.rows)
			if !partDone {
				// The page (or the LIMIT) is full inside partition i.
				if !paged {
					return x.result(out, nil)
				}
				idx, partReturned = i, taken
				if room > 0 {
					after = p.rows[room-1].Clustering
				}
				return x.result(out, x.state(fingerprint, cur.returned+len(out), idx, taken, after))
			}
			idx, after, partReturned = i+1, nil, 0
			if need > 0 && len(out) == need {
				break
			}
		}
	}
	var next []byte
	if paged && idx < len(x.keys) && len(out) == need && (r.Limit == 0 || cur.returned+len(out) < r.Limit) {
		next = x.state(fingerprint, cur.returned+len(out), idx, 0, nil)
	}
	return x.result(out, next)
}

// state encodes the paging state that continues at partition idx, after clustering key
// after (nil: from its start) of which taken rows were returned.
func (x *partitionReads) state(fingerprint uint64, returned, idx, taken int, after [][]byte) []byte {
	return encodeShapedState(fingerprint, shapedCursor{returned: returned, part: idx, counted: x.counted, partReturned: taken, after: after})
}

// result renders rows as the statement's result, with paging state next.
func (x *partitionReads) result(rows []keyRow, next []byte) (coordinator.Result, error) {
	out := rowsOf(x.r, len(rows))
	n := len(x.r.Columns)
	vals := make([][]byte, len(rows)*n)
	for i, kr := range rows {
		rv := vals[i*n : (i+1)*n : (i+1)*n]
		if err := renderRow(rv, x.r, out.Columns, kr.pk, kr.row, x.now.Unix()); err != nil {
			return coordinator.Result{}, err
		}
		out.Values[i] = rv
	}
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: out, PagingState: next, Warnings: x.warnings}, nil
}

// merged returns, unpaged, the rows of every partition merged in the statement's clustering
// order (ORDER BY with IN on the partition key), LIMIT applied.
func (x *partitionReads) merged(ctx context.Context) (coordinator.Result, error) {
	r := x.r
	res, err := x.readRange(ctx, 0, len(x.keys), nil, func(int) int {
		w := r.Limit
		if p := r.PerPartitionLimit; p > 0 && (w == 0 || p < w) {
			w = p
		}
		return w
	})
	if err != nil {
		return coordinator.Result{}, err
	}
	var out []keyRow
	for i, p := range res {
		for _, row := range p.rows {
			out = append(out, keyRow{x.keys[i].pk, row})
		}
	}
	slices.SortStableFunc(out, func(a, b keyRow) int {
		c := r.Table.CompareClustering(a.row.Clustering, b.row.Clustering)
		if r.Reversed {
			return -c
		}
		return c
	})
	if r.Limit > 0 && len(out) > r.Limit {
		out = out[:r.Limit]
	}
	return x.result(out, nil)
}

// aggregate folds every row of every partition into the statement's groups, reading each
// partition whole (in pages between coordinator and replicas). Without GROUP BY the one group
// comes in one page. With GROUP BY and paging, a page holds pageSize groups and ends after the
// last row of its last group, where the next page resumes.
func (x *partitionReads) aggregate(ctx context.Context, cur shapedCursor, paged bool, pageSize int, fingerprint uint64) (coordinator.Result, error) {
	r := x.r
	if len(x.keys) > 1 {
		x.warnings = append(x.warnings, "Aggregation query used on multiple partition keys (IN restriction)")
	}
	need := 0 // groups this page returns at most; 0: all
	if r.Limit > 0 {
		if need = r.Limit - cur.returned; need <= 0 {
			return x.groups(nil, nil)
		}
	}
	if paged && (need == 0 || need > pageSize) {
		need = pageSize
	}
	a := newAggregator(r, x.now.Unix())
	after := cur.after
	if after != nil { // resuming inside partition cur.part, which had cur.partReturned groups
		a.lastPK, a.groupsInPart = x.keys[cur.part].pk, cur.partReturned
	}
	for from := cur.part; from < len(x.keys); from += maxParallelPartitions {
		to := min(from+maxParallelPartitions, len(x.keys))
		res, err := x.readRange(ctx, from, to, after, func(int) int { return 0 })
		if err != nil {
			return coordinator.Result{}, err
		}
		after = nil
		for k, p := range res {
			a.part = from + k
			for _, row := range p.rows {
				if err := a.add(x.keys[from+k].pk, row); err != nil {
					return coordinator.Result{}, err
				}
				if need > 0 && len(a.out) >= need {
					var next []byte
					if paged {
						next = encodeShapedState(fingerprint, shapedCursor{returned: cur.returned + need, part: a.flushed.part,
							counted: x.counted, partReturned: a.flushed.groups, after: a.flushed.clustering})
					}
					return x.groups(a.out[:need], next)
				}
			}
		}
	}
	rows, err := a.finish()
	if err != nil {
		return coordinator.Result{}, err
	}
	if need > 0 && len(rows) > need {
		rows = rows[:need]
	}
	return x.groups(rows, nil)
}

// groups returns the aggregated rows as the statement's result, with paging state next.
func (x *partitionReads) groups(rows [][][]byte, next []byte) (coordinator.Result, error) {
	out := rowsOf(x.r, len(rows))
	copy(out.Values, rows)
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: out, PagingState: next, Warnings: x.warnings}, nil
}

// aggPosition is where a row the aggregator took stands: its partition (the caller's index),
// its clustering key, and the groups of the partition so far (PER PARTITION LIMIT).
type aggPosition struct {
	part       int
	clustering [][]byte
	groups     int
}

// aggregator folds a stream of rows, in primary key order, into the groups of a SELECT with
// aggregates or GROUP BY: per group, each aggregate over the group's rows and the other
// items' values in its first row (as Cassandra). Without GROUP BY all rows are one group,
// which exists (COUNT(*) = 0) even without rows.
type aggregator struct {
	r    *schema.Read
	now  int64
	cols []coordinator.RowColumn

	open  bool
	key   [][]byte // the current group's primary key prefix
	first [][]byte // the current group's first row, rendered
	accs  []*schema.Accumulator

	lastPK       [][]byte // PER PARTITION LIMIT: the partition of the last row, its groups
	groupsInPart int
	skipPart     bool

	// part is the caller's index of the partition of the rows it adds; prev is where the
	// last row taken stands, flushed where the last row of the last group emitted stands
	// (where a next page resumes).
	part          int
	prev, flushed aggPosition

	out [][][]byte
}

func newAggregator(r *schema.Read, now int64) *aggregator {
	return &aggregator{r: r, now: now, cols: rowsOf(r, 0).Columns}
}

// add folds in one row of partition pk.
func (a *aggregator) add(pk [][]byte, row coordinator.ClusteredRow) error {
	r := a.r
	newPart := a.lastPK == nil || !slices.EqualFunc(pk, a.lastPK, bytes.Equal)
	if newPart {
		a.lastPK, a.groupsInPart, a.skipPart = pk, 0, false
	}
	if a.skipPart {
		return nil
	}
	var key [][]byte
	if g := r.GroupBy; g > 0 {
		npk := len(r.Table.PartitionKey)
		key = append(slices.Clip(pk), row.Clustering[:g-npk]...)
	}
	newGroup := !a.open || r.GroupBy > 0 && !slices.EqualFunc(key, a.key, bytes.Equal)
	// PER PARTITION LIMIT counts rows without GROUP BY, groups with it.
	if p := r.PerPartitionLimit; p > 0 && (r.GroupBy == 0 || newGroup) {
		if a.groupsInPart == p {
			a.skipPart = true
			return nil
		}
		a.groupsInPart++
	}
	if newGroup {
		if a.open {
			a.flush()
			a.flushed = a.prev
		}
		a.start(key)
		a.first = make([][]byte, len(r.Columns))
		if err := renderRow(a.first, r, a.cols, pk, row, a.now); err != nil {
			return err
		}
	}
	for i, acc := range a.accs {
		if acc == nil {
			continue
		}
		var v []byte
		if !r.Aggregates[i].Star {
			var err error
			v, err = r.AggregateArg(i, pk, func(c *schema.Column, kind cql.SelectKind) []byte {
				return cellValue(r, pk, row, c, kind, a.now)
			})
			if err != nil {
				return &coordinator.InvalidError{Err: err}
			}
		}
		if err := acc.Add(v); err != nil {
			return &coordinator.InvalidError{Err: err}
		}
	}
	a.prev = aggPosition{part: a.part, clustering: row.Clustering, groups: a.groupsInPart}
	return nil
}

// start opens a group with primary key prefix key.
func (a *aggregator) start(key [][]byte) {
	a.open, a.key, a.first = true, key, nil
	a.accs = make([]*schema.Accumulator, len(a.r.Columns))
	for i, ag := range a.r.Aggregates {
		if ag != nil {
			a.accs[i] = ag.NewAccumulator()
		}
	}
}

// flush emits the open group.
func (a *aggregator) flush() {
	row := make([][]byte, len(a.r.Columns))
	copy(row, a.first)
	for i, acc := range a.accs {
		if acc != nil {
			row[i] = acc.Result()
		}
	}
	a.out = append(a.out, row)
	a.open = false
}

// finish returns the groups' rows.
func (a *aggregator) finish() ([][][]byte, error) {
	if !a.open && a.r.GroupBy == 0 { // no rows: one group all the same
		a.start(nil)
	}
	if a.open {
		a.flush()
	}
	return a.out, nil
}

// shapedVersion is the paging state of a shaped SELECT (see paging.go for the plain one):
//
//	byte      shapedVersion
//	8 bytes   the statement's fingerprint
//	uvarint   rows returned by the earlier pages
//	uvarint   the partition (index in token order) the next page starts in
//	uvarint   partitions counted for the limiter by the earlier pages (each counted once)
//	uvarint   rows of that partition the earlier pages returned (PER PARTITION LIMIT)
//	uvarint   n: 0 (from the partition's start) or the table's clustering columns
//	n times   uvarint length, then the component's bytes: the last row returned
const shapedVersion = 2

// shapedCursor is a decoded shaped paging state.
type shapedCursor struct {
	returned, part, counted, partReturned int
	after                                 [][]byte
}

func encodeShapedState(fingerprint uint64, c shapedCursor) []byte {
	b := []byte{shapedVersion}
	b = binary.BigEndian.AppendUint64(b, fingerprint)
	for _, n := range []int{c.returned, c.part, c.counted, c.partReturned, len(c.after)} {
		b = binary.AppendUvarint(b, uint64(n))
	}
	for _, v := range c.after {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// decodeShapedState decodes a shaped paging state of a read of table t over nkeys
// partitions by the statement with the given fingerprint. An empty state is the first page.
func decodeShapedState(state []byte, fingerprint uint64, t *schema.Table, nkeys int) (shapedCursor, error) {
	var c shapedCursor
	if len(state) == 0 {
		return c, nil
	}
	bad := func(what string) (shapedCursor, error) {
		return shapedCursor{}, fmt.Errorf("invalid paging state: %s", what)
	}
	if len(state) > maxPagingState {
		return bad(fmt.Sprintf("%d bytes, the most is %d", len(state), maxPagingState))
	}
	if len(state) < 9 || state[0] != shapedVersion {
		return bad("not a paging state of this statement")
	}
	if binary.BigEndian.Uint64(state[1:9]) != fingerprint {
		return c, errPagingForeign
	}
	b := state[9:]
	var nums [5]uint64
	for i := range nums {
		v, n := uvarint(b)
		if n <= 0 || v > 1<<31 {
			return bad("malformed counts")
		}
		nums[i], b = v, b[n:]
	}
	c.returned, c.part, c.counted, c.partReturned = int(nums[0]), int(nums[1]), int(nums[2]), int(nums[3])
	if c.part > nkeys || c.counted > nkeys {
		return bad("partition beyond the statement's")
	}
	switch nums[4] {
	case 0:
	case uint64(len(t.Clustering)):
		c.after = make([][]byte, nums[4])
		for i := range c.after {
			l, n := uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return bad("truncated clustering key")
			}
			col := t.Clustering[i]
			v := b[n : n+int(l) : n+int(l)]
			if err := col.Type.Check(v); err != nil {
				return bad(fmt.Sprintf("clustering column %s: %v", col.Name, err))
			}
			c.after[i], b = v, b[n+int(l):]
		}
	default:
		return bad("clustering key of the wrong size (was the table dropped and created again?)")
	}
	if len(b) != 0 {
		return bad(fmt.Sprintf("%d bytes of trailing garbage", len(b)))
	}
	return c, nil
}
