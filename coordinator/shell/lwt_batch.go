package shell

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// hasConditions reports whether any statement of a BATCH has an IF clause.
func hasConditions(stmts []cql.Statement) bool {
	return slices.ContainsFunc(stmts, func(s cql.Statement) bool { return cql.ConditionsOf(s) != nil })
}

// executeConditionalBatch runs a BATCH with conditions as one lightweight transaction: every
// statement writes one row of the same partition; the conditions of all of them are evaluated
// on the partition's current rows in one Paxos round, and the statements apply together, or
// none does. values(i) are the values statement i's markers bind. The answer is Cassandra's:
// [applied], and when not applied one row per row the conditions read that exists, with its
// primary key and the condition columns (every column for IF [NOT] EXISTS).
func (e *Executor) executeConditionalBatch(ctx context.Context, s *schema.Schema, writes []*schema.Write, stmts []cql.Statement, values func(i int) []coordinator.Value, cl, serial coordinator.Consistency, timeout time.Duration) (*schema.Table, coordinator.Result, error) {
	t := writes[0].Table
	if cl.IsSerial() {
		return t, coordinator.Result{}, &coordinator.InvalidError{Err: fmt.Errorf("%v is not supported as conditional update commit consistency; use ONE, QUORUM or ALL", cl)}
	}
	serial, err := serialLevel(serial)
	if err != nil {
		return t, coordinator.Result{}, err
	}
	if err := e.authorizeWrites(ctx, writes); err != nil {
		return t, coordinator.Result{}, err
	}
	now := e.now()
	conds := make([][]schema.Condition, len(writes))
	for i, w := range writes {
		switch {
		case w.Table != t:
			return t, coordinator.Result{}, &coordinator.InvalidError{Pos: stmts[i].Pos(), Err: errors.New("Batch with conditions cannot span multiple tables")}
		case !slices.EqualFunc(w.PartitionKey, writes[0].PartitionKey, func(a, b []byte) bool { return string(a) == string(b) }):
			return t, coordinator.Result{}, &coordinator.InvalidError{Pos: stmts[i].Pos(), Err: errors.New("Batch with conditions cannot span multiple partitions")}
		case w.HasTimestamp:
			return t, coordinator.Result{}, &coordinator.InvalidError{Pos: stmts[i].Pos(), Err: errors.New("Cannot provide custom timestamp for conditional BATCH")}
		case !w.Clustering.IsRow(t):
			return t, coordinator.Result{}, &coordinator.InvalidError{Pos: stmts[i].Pos(), Err: errors.New("a statement of a conditional BATCH must restrict every PRIMARY KEY column with = (it reads and writes one row)")}
		}
		var err error
		if conds[i], err = s.BindConditions(stmts[i], t, values(i)); err != nil {
			return t, coordinator.Result{}, invalid(stmts[i], fmt.Errorf("statement %d of the BATCH: %w", i+1, err))
		}
		if err := e.checkFormat(stmts[i], w); err != nil {
			return t, coordinator.Result{}, err
		}
		if err := refuseListReads(w, stmts[i].Pos(), "in a conditional BATCH"); err != nil {
			return t, coordinator.Result{}, err
		}
		if err := checkWriteSize(w, stmts[i].Pos(), e.maxMutation); err != nil {
			return t, coordinator.Result{}, err
		}
	}
	rf, err := replicationFactor(s, t)
	if err != nil {
		return t, coordinator.Result{}, err
	}
	var res coordinator.Result
	if err := e.judgeScopes(ctx, t.Keyspace, t.Name, coordinator.OpWrite, 1, &res.Warnings); err != nil {
		return t, coordinator.Result{}, err
	}
	pk := writes[0].PartitionKey
	p := casPartitionOf(t, pk, cl)
	p.serial, p.usingTimeout = serial, timeout
	token := p.token
	current := make([]*coordinator.ClusteredRow, len(writes)) // each statement's row, nil when absent
	var static *cell.Row
	decide := func(rows []coordinator.ClusteredRow, st *cell.Row, b coordinator.Ballot) (*replicapb.Mutation, error) {
		static = st
		ok := true
		for i, w := range writes {
			current[i] = nil
			for j := range rows {
				if t.CompareClustering(rows[j].Clustering, w.Clustering.Prefix) == 0 {
					current[i] = &rows[j]
					break
				}
			}
			if c := cql.ConditionsOf(stmts[i]); c != nil && !conditionsHold(c, conds[i], current[i], static, false, now.Unix()) {
				ok = false
			}
		}
		if !ok {
			return nil, nil
		}
		m := &replicapb.Mutation{TableId: uint64(t.ID), PartitionKey: pk, Token: token}
		for _, w := range writes {
			var part replicapb.Mutation
			fillMutation(&part, w, b.Micros, now.Unix(), nil) // no list read: refuseListReads
			m.Rows = append(m.Rows, part.Rows...)
			m.StaticRow = mergeStaticRows(m.StaticRow, part.StaticRow)
			m.RangeTombstones = append(m.RangeTombstones, part.RangeTombstones...)
			if d := part.PartitionDeletion; d != nil {
				m.PartitionDeletion = d
			}
		}
		return m, nil
	}
	dl := deadline(ctx, now, timeoutOr(e.writeTimeout, timeout))
	_, applied, err := e.runCAS(ctx, p, rf, dl, decide)
	if err != nil {
		return t, coordinator.Result{}, err
	}
	out := casBatchResult(t, pk, stmts, conds, applied, current, static, e.now().Unix())
	out.Warnings = res.Warnings
	return t, out, nil
}

// casBatchResult builds a conditional BATCH's result: one row with [applied] = true, or rows
// with [applied] = false, the primary key and the condition columns (every column when a
// statement is IF NOT EXISTS or IF EXISTS), one per distinct existing row a condition read.
func casBatchResult(t *schema.Table, pk [][]byte, stmts []cql.Statement, conds [][]schema.Condition, applied bool, current []*coordinator.ClusteredRow, static *cell.Row, now int64) coordinator.Result {
	rows := &coordinator.Rows{Keyspace: t.Keyspace, Table: t.Name, Columns: []coordinator.RowColumn{appliedColumn}}
	if applied {
		rows.Values = [][][]byte{{schema.EncodeBoolean(true)}}
		return coordinator.Result{Kind: coordinator.ResultRows, Rows: rows}
	}
	want := make([]bool, len(t.Columns))
	for i := range len(t.PartitionKey) + len(t.Clustering) {
		want[i] = true
	}
	for i, st := range stmts {
		c := cql.ConditionsOf(st)
		switch {
		case c == nil:
		case c.NotExists || c.Exists:
			for j := range want {
				want[j] = true
			}
		default:
			for _, cond := range conds[i] {
				want[cond.Column.Index] = true
			}
		}
	}
	var cols []*schema.Column
	for i := range t.Columns {
		if want[i] {
			cols = append(cols, &t.Columns[i])
			rows.Columns = append(rows.Columns, coordinator.RowColumn{Name: t.Columns[i].Name, Type: t.Columns[i].Type})
		}
	}
	npk := len(t.PartitionKey)
	var read []*coordinator.ClusteredRow // the existing rows a condition read, once each
	for i, row := range current {
		if row != nil && cql.ConditionsOf(stmts[i]) != nil && !slices.Contains(read, row) {
			read = append(read, row)
		}
	}
	slices.SortFunc(read, func(a, b *coordinator.ClusteredRow) int { return t.CompareClustering(a.Clustering, b.Clustering) })
	for _, row := range read {
		vals := [][]byte{schema.EncodeBoolean(false)}
		for _, col := range cols {
			switch col.Kind {
			case schema.PartitionKeyColumn:
				vals = append(vals, pk[col.Index])
			case schema.ClusteringColumn:
				vals = append(vals, row.Clustering[col.Index-npk])
			default:
				vals = append(vals, conditionValue(col, row, static, now))
			}
		}
		rows.Values = append(rows.Values, vals)
	}
	if len(rows.Values) == 0 { // no row a condition read exists
		rows.Columns = rows.Columns[:1]
		rows.Values = [][][]byte{{schema.EncodeBoolean(false)}}
	}
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: rows}
}
