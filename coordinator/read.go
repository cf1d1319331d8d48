package coordinator

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// readSpec is one single-partition read.
type readSpec struct {
	table      *schema.Table
	pk         [][]byte
	token      int64
	clustering schema.ClusteringRange
	limit      int  // live rows; 0 means no limit
	reversed   bool // in the reverse of the clustering order (ORDER BY)
	rf         int
	cl         Consistency
	exempt     bool
	noRepair   bool // an internal read whose result is about to be overwritten
}

// readRow is one reconciled, live row of a read.
type readRow struct {
	clustering [][]byte
	row        cell.Row // purged: no marker, cell or deletion that a deletion shadows
}

// executeSelect runs a SELECT at consistency cl. It returns the table once the statement
// resolved it, for the Observer.
func (e *Executor) executeSelect(ctx context.Context, st *cql.SelectStmt, keyspace string, cl Consistency) (*schema.Table, *kvnodepb.ExecuteResponse, error) {
	s := e.schema.Schema()
	r, err := s.PrepareRead(st, keyspace)
	if err != nil {
		return nil, nil, invalid(st, err)
	}
	ks, ok := s.Keyspace(r.Table.Keyspace)
	if !ok {
		return r.Table, nil, fmt.Errorf("coordinator: keyspace of table %s missing from the schema", r.Table.QualifiedName())
	}
	var keyBuf [64]byte
	spec := readSpec{
		table:      r.Table,
		pk:         r.PartitionKey,
		token:      partitioner.Token(partitioner.AppendKey(keyBuf[:0], r.PartitionKey)),
		clustering: r.Clustering,
		limit:      r.Limit,
		reversed:   r.Reversed,
		rf:         ks.ReplicationFactor,
		cl:         cl,
	}
	now := e.now()
	rows, err := e.read(ctx, spec, now, deadline(ctx, now, e.readTimeout))
	if err != nil {
		return r.Table, nil, err
	}
	resp, err := rowsResponse(r, rows)
	return r.Table, resp, err
}

// read runs a read of one partition and returns its live rows, reconciled across the replicas
// that answered, in clustering order (in reverse with spec.reversed), at most spec.limit of
// them. At QUORUM and ALL it repairs the replicas that answered with stale data before
// returning (see repair).
//
// Every replica returns up to spec.limit live rows by its own view. When replicas disagree
// about deletions, the reconciled rows can be fewer than the limit although more exist past
// the point where a replica stopped; rows past that point are not trusted (the replica that
// stopped may hold a newer tombstone for them), and the read is repeated once without a limit,
// exempt from the rate limiter, from the replicas that answered.
func (e *Executor) read(ctx context.Context, spec readSpec, now, dl time.Time) ([]readRow, error) {
	resps, err := e.readOnce(ctx, spec, nil, now, dl)
	if err != nil {
		return nil, err
	}
	rec, err := reconcile(spec.table, resps, spec.limit, spec.reversed)
	if err != nil {
		return nil, err
	}
	if !rec.complete {
		again := spec
		again.limit, again.exempt = 0, true
		order := make([]NodeID, len(resps))
		for i, r := range resps {
			order[i] = r.From
		}
		if resps, err = e.readOnce(ctx, again, order, e.now(), dl); err != nil {
			return nil, err
		}
		if rec, err = reconcile(spec.table, resps, spec.limit, spec.reversed); err != nil {
			return nil, err
		}
	}
	if len(rec.repairs) > 0 && spec.cl != One && !spec.noRepair {
		if err := e.repair(ctx, spec, rec, len(resps), dl); err != nil {
			return nil, err
		}
	}
	return rec.rows, nil
}

// readOnce sends one read to the replicas the consistency level needs and returns their
// answers (each with a *replicapb.ReadResponse payload) once enough arrived.
func (e *Executor) readOnce(ctx context.Context, spec readSpec, order []NodeID, now, dl time.Time) ([]Response, error) {
	var replicaBuf [8]Replica
	p := Params{
		Op:          OpRead,
		Consistency: spec.cl,
		Self:        e.self(),
		Replicas:    e.replicaSet(replicaBuf[:0], spec.token, spec.rf),
		ReadOrder:   order,
		Limit:       spec.table.RateLimit.MaxReadsPerSecond,
		Exempt:      spec.exempt,
		Deadline:    dl,
	}
	if p.Limit > 0 && !p.Exempt {
		p.Draw = e.draw()
	}
	req, err := e.newRequest(p)
	if err != nil {
		return nil, err
	}
	step, err := e.begin(req, now, OpRead, partitionKey{spec.table.ID, spec.token}, p.Draw)
	if err != nil {
		return nil, err
	}
	o := step.Outcome
	if o == nil {
		base := readRequest(spec)
		x := watch(e, readExchange{e.transport, base}, step.Sends, spec.table, OpRead)
		if o, err = e.await(ctx, req, step.Sends, x, dl, false); err != nil {
			return nil, err
		}
	}
	e.propagate(req, OpRead, partitionKey{spec.table.ID, spec.token})
	if err := e.outcomeErr(o, spec.table); err != nil {
		return nil, err
	}
	return o.(Success).Responses, nil
}

// readRequest builds the parts of a replica read request that every replica shares. It asks
// for every column: whether a row exists can depend on cells the statement does not select.
func readRequest(spec readSpec) *replicapb.ReadRequest {
	r := &replicapb.ReadRequest{
		TableId:      uint64(spec.table.ID),
		PartitionKey: spec.pk,
		Token:        spec.token,
		Limit:        uint32(min(spec.limit, math.MaxUint32)),
		Reversed:     spec.reversed,
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

// readExchange sends one read to each replica.
type readExchange struct {
	t    Transport
	base *replicapb.ReadRequest
}

func (x readExchange) call(ctx context.Context, s Send) Response {
	req := new(struct {
		req replicapb.ReadRequest
		lim replicapb.Limiter
	})
	req.lim.Mode, req.lim.Draw = limiterMode(s.Mode), s.Draw
	req.req.Limiter = &req.lim
	req.req.TableId, req.req.PartitionKey, req.req.Token = x.base.TableId, x.base.PartitionKey, x.base.Token
	req.req.Filter, req.req.Limit, req.req.Columns = x.base.Filter, x.base.Limit, x.base.Columns
	req.req.Reversed = x.base.Reversed
	resp, err := x.t.Read(ctx, s.To, &req.req)
	if err != nil {
		return Response{Seq: s.Seq, From: s.To, Status: StatusFailed, Err: transportError(s.To, err)}
	}
	return response(s, resp.GetStatus(), resp.GetRateLimited(), resp.GetError(), resp)
}

// reconciled is the result of reconciling the answers of several replicas.
type reconciled struct {
	rows []readRow
	// complete is false when rows are fewer than the limit but a replica stopped at the limit:
	// more rows may exist, and the read must be repeated without a limit.
	complete bool
	// partitionDeletion is the newest partition tombstone any replica returned.
	partitionDeletion int64
	// repairs holds, per stale replica, what it lacks: rows, and whether it lacks the
	// partition tombstone.
	repairs map[NodeID]*repairSet
}

// repairSet is what one replica lacks.
type repairSet struct {
	rows              []*replicapb.Row
	partitionDeletion bool
}

// version is one replica's answer, decoded.
type version struct {
	from    NodeID
	partDel int64
	rows    []readRow // as the replica returned them, tombstone-only rows included
	next    int       // merge cursor
	// cut is the clustering key of the replica's last row when it stopped at the limit (hasCut);
	// rows after it (in the read's order) are unknown to this replica's answer. A table without
	// clustering columns has the empty key, so a key's presence is never told by its being nil.
	cut    [][]byte
	hasCut bool
}

// reconcile merges the replicas' answers with the last-write-wins rules of package cell and
// works out what each replica lacks (cell.Missing). It returns at most limit live rows (all
// if limit is 0), in clustering order, or in its reverse for a reversed read (whose answers
// are in reverse order too).
func reconcile(t *schema.Table, resps []Response, limit int, reversed bool) (reconciled, error) {
	rec := reconciled{complete: true, partitionDeletion: cell.NoTimestamp}
	order := readOrder{t, reversed}
	vs := make([]version, len(resps))
	var (
		cut    [][]byte // the first cut (in the read's order) of any replica, when hasCut
		hasCut bool
	)
	for i, r := range resps {
		v, err := decodeVersion(order, r, limit)
		if err != nil {
			return rec, err
		}
		vs[i] = v
		rec.partitionDeletion = max(rec.partitionDeletion, v.partDel)
		if v.hasCut && (!hasCut || order.compare(v.cut, cut) < 0) {
			cut, hasCut = v.cut, true
		}
	}
	for i := range vs {
		if vs[i].partDel < rec.partitionDeletion {
			rec.repairSet(vs[i].from).partitionDeletion = true
		}
	}

	var versions []cell.Row // of the current key, one per replica (EmptyRow if absent)
	for limit == 0 || len(rec.rows) < limit {
		// The first clustering key (in the read's order) at the head of any answer, up to the cut.
		var (
			key   [][]byte
			found bool
		)
		for i := range vs {
			v := &vs[i]
			if v.next < len(v.rows) {
				k := v.rows[v.next].clustering
				if hasCut && order.compare(k, cut) > 0 {
					continue
				}
				if !found || order.compare(k, key) < 0 {
					key, found = k, true
				}
			}
		}
		if !found {
			break
		}
		versions = versions[:0]
		merged := cell.EmptyRow()
		for i := range vs {
			v := &vs[i]
			have := cell.EmptyRow()
			if v.next < len(v.rows) && order.compare(v.rows[v.next].clustering, key) == 0 {
				have = v.rows[v.next].row
				v.next++
			}
			versions = append(versions, have)
			merged = cell.MergeRows(merged, have)
		}
		merged = merged.Purge(rec.partitionDeletion)
		for i, have := range versions {
			if miss := cell.Missing(merged, have); !miss.IsEmpty() {
				rs := rec.repairSet(vs[i].from)
				rs.rows = append(rs.rows, repairRow(key, miss))
			}
		}
		if merged.Live(rec.partitionDeletion) {
			rec.rows = append(rec.rows, readRow{clustering: key, row: merged})
		}
	}
	if hasCut && len(rec.rows) < limit {
		rec.complete = false
	}
	return rec, nil
}

func (rec *reconciled) repairSet(id NodeID) *repairSet {
	if rec.repairs == nil {
		rec.repairs = make(map[NodeID]*repairSet)
	}
	rs := rec.repairs[id]
	if rs == nil {
		rs = &repairSet{}
		rec.repairs[id] = rs
	}
	return rs
}

// decodeVersion decodes and checks one replica's answer, whose rows must be in the read's order.
func decodeVersion(order readOrder, r Response, limit int) (version, error) {
	t := order.t
	resp, ok := r.Payload.(*replicapb.ReadResponse)
	if !ok {
		return version{}, fmt.Errorf("coordinator: read from replica %s returned no data", r.From)
	}
	v := version{from: r.From, partDel: cell.NoTimestamp, rows: make([]readRow, 0, len(resp.Rows))}
	if resp.PartitionDeletion != nil {
		v.partDel = *resp.PartitionDeletion
	}
	live := 0
	for i, pr := range resp.Rows {
		row, err := decodeRow(t, pr)
		if err != nil {
			return version{}, fmt.Errorf("coordinator: replica %s returned a malformed row %d of table %s: %w", r.From, i, t.QualifiedName(), err)
		}
		if n := len(v.rows); n > 0 && order.compare(v.rows[n-1].clustering, row.clustering) >= 0 {
			return version{}, fmt.Errorf("coordinator: replica %s returned rows of table %s out of clustering order", r.From, t.QualifiedName())
		}
		v.rows = append(v.rows, row)
		if row.row.Live(v.partDel) {
			live++
		}
	}
	if limit > 0 && live >= limit {
		v.cut, v.hasCut = v.rows[len(v.rows)-1].clustering, true
	}
	return v, nil
}

// decodeRow converts a replica's row to a readRow, checking the clustering key's encoding (it
// is compared with the table's types) and sorting cells by column. The key it returns always has
// one non-nil component per clustering column, whether the row came from the local replica or
// over the wire (where an empty repeated field arrives as nil).
func decodeRow(t *schema.Table, pr *replicapb.Row) (readRow, error) {
	if len(pr.Clustering) != len(t.Clustering) {
		return readRow{}, fmt.Errorf("%d clustering components, want %d", len(pr.Clustering), len(t.Clustering))
	}
	key := make([][]byte, len(t.Clustering))
	for i, c := range pr.Clustering {
		if err := t.Clustering[i].Type.Check(nonNil(c)); err != nil {
			return readRow{}, fmt.Errorf("clustering column %s: %w", cql.QuoteIdent(t.Clustering[i].Name), err)
		}
		key[i] = nonNil(c)
	}
	row := cell.EmptyRow()
	if pr.Marker != nil {
		row.Marker = *pr.Marker
	}
	if pr.Deletion != nil {
		row.Deletion = *pr.Deletion
	}
	if len(pr.Cells) > 0 {
		row.Columns = make([]cell.Column, len(pr.Cells))
		for i, c := range pr.Cells {
			col := cell.Column{Name: c.GetColumn(), Cell: cell.Cell{Timestamp: c.GetTimestamp(), Tombstone: c.GetTombstone()}}
			if !col.Tombstone {
				// On the wire an empty value and an absent one look alike; a live cell is never
				// null, so normalise it to the empty value that replicas compare it as.
				col.Value = nonNil(c.GetValue())
			}
			row.Columns[i] = col
		}
		cmpName := func(a, b cell.Column) int { return strings.Compare(a.Name, b.Name) }
		if !slices.IsSortedFunc(row.Columns, cmpName) {
			slices.SortFunc(row.Columns, cmpName)
		}
		for i := 1; i < len(row.Columns); i++ {
			if row.Columns[i].Name == row.Columns[i-1].Name {
				return readRow{}, fmt.Errorf("column %s appears twice", cql.QuoteIdent(row.Columns[i].Name))
			}
		}
	}
	return readRow{clustering: key, row: row}, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// compareClustering orders two full clustering keys of t in the table's clustering order, DESC
// columns included (schema.Table.CompareClustering, the order replicas store rows in).
func compareClustering(t *schema.Table, a, b [][]byte) int { return t.CompareClustering(a, b) }

// readOrder is the order in which a read returns the rows of table t: its clustering order, or
// the reverse of it for a reversed read (SELECT ... ORDER BY the other way).
type readOrder struct {
	t        *schema.Table
	reversed bool
}

// compare orders two full clustering keys of t as the read returns them.
func (o readOrder) compare(a, b [][]byte) int {
	if o.reversed {
		a, b = b, a
	}
	return compareClustering(o.t, a, b)
}

// repairRow converts what a replica lacks of a row to a mutation row.
func repairRow(clustering [][]byte, miss cell.Row) *replicapb.Row {
	r := &replicapb.Row{Clustering: clustering}
	if miss.Marker != cell.NoTimestamp {
		m := miss.Marker
		r.Marker = &m
	}
	if miss.Deletion != cell.NoTimestamp {
		d := miss.Deletion
		r.Deletion = &d
	}
	if len(miss.Columns) > 0 {
		cells := make([]replicapb.Cell, len(miss.Columns))
		r.Cells = make([]*replicapb.Cell, len(miss.Columns))
		for i, c := range miss.Columns {
			cells[i].Column, cells[i].Timestamp, cells[i].Tombstone = c.Name, c.Timestamp, c.Tombstone
			if !c.Tombstone {
				cells[i].Value = c.Value
			}
			r.Cells[i] = &cells[i]
		}
	}
	return r
}

// rowsResponse renders the rows of a read as the client API's typed rows.
func rowsResponse(r *schema.Read, rows []readRow) (*kvnodepb.ExecuteResponse, error) {
	t := r.Table
	out := &kvnodepb.Rows{
		Columns: make([]*kvnodepb.Column, len(r.Columns)),
		Rows:    make([]*kvnodepb.Row, len(rows)),
	}
	cols := make([]kvnodepb.Column, len(r.Columns))
	for i, c := range r.Columns {
		cols[i].Name, cols[i].Type = c.Name, columnType(c.Type)
		out.Columns[i] = &cols[i]
	}
	npk := len(t.PartitionKey)
	prs := make([]kvnodepb.Row, len(rows))
	for i, row := range rows {
		vals := make([]kvnodepb.Value, len(r.Columns))
		pr := &prs[i]
		pr.Values = make([]*kvnodepb.Value, len(r.Columns))
		for j, c := range r.Columns {
			var b []byte
			switch c.Kind {
			case schema.PartitionKeyColumn:
				b = r.PartitionKey[c.Index]
			case schema.ClusteringColumn:
				b = row.clustering[c.Index-npk]
			default:
				if k, ok := slices.BinarySearchFunc(row.row.Columns, c.Name, func(x cell.Column, name string) int {
					return strings.Compare(x.Name, name)
				}); ok && !row.row.Columns[k].Tombstone {
					b = row.row.Columns[k].Value
				}
			}
			if err := setValue(&vals[j], c.Type, b); err != nil {
				return nil, fmt.Errorf("coordinator: table %s column %s: %w", t.QualifiedName(), cql.QuoteIdent(c.Name), err)
			}
			pr.Values[j] = &vals[j]
		}
		out.Rows[i] = pr
	}
	return &kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_Rows{Rows: out}}, nil
}

// columnType maps a schema type to the client API's.
func columnType(t schema.Type) kvnodepb.ColumnType {
	switch t {
	case schema.TypeText:
		return kvnodepb.ColumnType_COLUMN_TYPE_TEXT
	case schema.TypeInt:
		return kvnodepb.ColumnType_COLUMN_TYPE_INT
	case schema.TypeBigInt:
		return kvnodepb.ColumnType_COLUMN_TYPE_BIGINT
	case schema.TypeDouble:
		return kvnodepb.ColumnType_COLUMN_TYPE_DOUBLE
	case schema.TypeBoolean:
		return kvnodepb.ColumnType_COLUMN_TYPE_BOOLEAN
	case schema.TypeBlob:
		return kvnodepb.ColumnType_COLUMN_TYPE_BLOB
	case schema.TypeTimestamp:
		return kvnodepb.ColumnType_COLUMN_TYPE_TIMESTAMP
	}
	return kvnodepb.ColumnType_COLUMN_TYPE_UNSPECIFIED
}

// setValue sets v to the value of type t encoded in b; nil b (null) leaves v unset.
func setValue(v *kvnodepb.Value, t schema.Type, b []byte) error {
	if b == nil {
		return nil
	}
	if err := t.Check(b); err != nil {
		return err
	}
	switch t {
	case schema.TypeText:
		v.Kind = &kvnodepb.Value_Text{Text: string(b)}
	case schema.TypeInt:
		v.Kind = &kvnodepb.Value_Int{Int: int32(binary.BigEndian.Uint32(b))}
	case schema.TypeBigInt:
		v.Kind = &kvnodepb.Value_Bigint{Bigint: int64(binary.BigEndian.Uint64(b))}
	case schema.TypeDouble:
		v.Kind = &kvnodepb.Value_Double{Double: math.Float64frombits(binary.BigEndian.Uint64(b))}
	case schema.TypeBoolean:
		v.Kind = &kvnodepb.Value_Boolean{Boolean: b[0] == 1}
	case schema.TypeBlob:
		v.Kind = &kvnodepb.Value_Blob{Blob: b}
	case schema.TypeTimestamp:
		v.Kind = &kvnodepb.Value_Timestamp{Timestamp: int64(binary.BigEndian.Uint64(b))}
	default:
		return fmt.Errorf("unsupported column type %v", t)
	}
	return nil
}
