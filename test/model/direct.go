package model

import (
	"context"
	"fmt"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// ExecutorTarget is a Target that also hands out each node's coordinator. The runner then sends
// every third operation straight to it the way the native protocol does: prepared, with its
// values bound to markers, and a read in small pages.
type ExecutorTarget interface {
	Target
	// Executor returns node i's coordinator, or nil while the node is down.
	Executor(i int) *shell.Executor
}

// direct reports whether op goes through the Executor rather than the gRPC client.
func direct(op *Op) bool { return op.Seq%3 == 0 }

// runPrepared runs op's statement through e as a driver would: every literal of the statement
// replaced by a bind marker, the statement prepared, and the literals' values bound; a SELECT is
// read in pages of 1 to 4 rows. It returns a SELECT's rows as the gRPC client decodes them, and
// how many of a scan's pages were short: fewer rows than the page size and a paging state, as
// a page that ran out of time (shell.Options.ScanPageTime) ends.
func runPrepared(ctx context.Context, e *shell.Executor, op *Op) (_ [][]any, short int, _ error) {
	st, p, values, err := prepareOp(ctx, e, op)
	if err != nil {
		return nil, 0, err
	}
	req := coordinator.Statement{Prepared: p, Values: values, Consistency: opCL(op)}
	if op.IfNotExists {
		req.SerialConsistency = domainCL(op.SerialCL)
	}
	if _, ok := st.(*cql.SelectStmt); !ok {
		res, err := e.Execute(ctx, req)
		if err != nil || !op.IfNotExists {
			return nil, 0, err
		}
		rows, err := decodeRows(res)
		return rows, 0, err
	}
	req.PageSize = int(op.Seq/3%4) + 1
	rows := [][]any{}
	for pages := 0; ; pages++ {
		res, err := e.Execute(ctx, req)
		if err != nil {
			return nil, short, err
		}
		page, err := decodeRows(res)
		if err != nil {
			return nil, short, err
		}
		rows = append(rows, page...)
		if res.PagingState == nil {
			return rows, short, nil
		}
		switch n := len(res.Rows.Values); {
		case n == req.PageSize:
		case op.Kind == Scan:
			// A short page of a scan: it ran out of time. An empty one read on for half its time
			// again, which a page time of 1 ns always has.
			short++
		default:
			return nil, short, fmt.Errorf("model: operation #%d: page %d has %d rows and a paging state; want %d", op.Seq, pages+1, n, req.PageSize)
		}
		req.PagingState = res.PagingState
	}
}

// decodeRows returns res's rows as the gRPC client decodes them.
func decodeRows(res coordinator.Result) ([][]any, error) {
	rows := [][]any{}
	if res.Rows == nil {
		return rows, nil
	}
	for _, r := range res.Rows.Values {
		out := make([]any, len(r))
		for j, b := range r {
			var err error
			if out[j], err = res.Rows.Columns[j].Type.Decode(b); err != nil {
				return nil, err
			}
		}
		rows = append(rows, out)
	}
	return rows, nil
}

// opCL is the level op is sent at through the Executor: ANY for a write at ANY (Op.Any).
func opCL(op *Op) coordinator.Consistency {
	if op.Any {
		return coordinator.Any
	}
	return domainCL(op.CL)
}

// prepareOp prepares op's statement with every literal replaced by a bind marker, and returns
// the parsed statement, the prepared one and the literals' values, bound.
func prepareOp(ctx context.Context, e *shell.Executor, op *Op) (cql.Statement, *coordinator.Prepared, []coordinator.Value, error) {
	st, err := cql.ParseStatement(op.Stmt)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("model: operation #%d: %w", op.Seq, err)
	}
	lits := toMarkers(st)
	p, err := e.Prepare(ctx, cql.Format(st), "")
	if err != nil {
		return nil, nil, nil, err
	}
	if len(p.Variables) != len(lits) {
		return nil, nil, nil, fmt.Errorf("model: operation #%d: %s prepares with %d variables for %d markers", op.Seq, p.Text, len(p.Variables), len(lits))
	}
	values := make([]coordinator.Value, len(lits))
	for i, lit := range lits {
		if values[i].Bytes, err = schema.LiteralValue(p.Variables[i].Type, lit); err != nil {
			return nil, nil, nil, fmt.Errorf("model: operation #%d: binding %s to %s: %w", op.Seq, cql.Format(lit), p.Variables[i].Name, err)
		}
	}
	return st, p, values, nil
}

// domainCL is cl as the domain API spells it.
func domainCL(cl client.Consistency) coordinator.Consistency {
	switch cl {
	case client.Serial:
		return coordinator.Serial
	case client.LocalSerial:
		return coordinator.LocalSerial
	}
	c, err := coordinator.ParseConsistency(cl.String())
	if err != nil {
		return coordinator.One // client.Default: the server's default
	}
	return c
}

// batched reports whether a write op goes out as the first statement of a BATCH with another
// write of its worker (Pool.Run pairs them; the BATCH happens when op goes through the Executor),
// and whether that batch is LOGGED.
func batched(op *Op) (batch, logged bool) { return op.Seq%6 == 0, op.Seq%12 == 0 }

// runBatch runs ops, writes to different partitions, as one BATCH through e at the first op's
// consistency level, each child prepared with its values bound, as drivers send a BATCH.
func runBatch(ctx context.Context, e *shell.Executor, ops []*Op, logged bool) error {
	b := coordinator.BatchStatement{Type: coordinator.BatchUnlogged, Consistency: opCL(ops[0])}
	if logged {
		b.Type = coordinator.BatchLogged
	}
	for _, op := range ops {
		_, p, values, err := prepareOp(ctx, e, op)
		if err != nil {
			return err
		}
		b.Children = append(b.Children, coordinator.BatchChild{Prepared: p, Values: values})
	}
	_, err := e.ExecuteBatch(ctx, b)
	return err
}

// toMarkers replaces every literal value of st (VALUES, SET, WHERE, USING TIMESTAMP and TTL, LIMIT)
// with a bind marker, in marker order, and returns the literals it replaced.
func toMarkers(st cql.Statement) []*cql.Literal {
	var lits []*cql.Literal
	mark := func(t *cql.Term) {
		if lit, ok := (*t).(*cql.Literal); ok && lit.Kind != cql.LitBind {
			lits = append(lits, lit)
			*t = &cql.Literal{ValuePos: lit.ValuePos, Kind: cql.LitBind, Value: "?", Index: len(lits) - 1}
		}
	}
	markLit := func(l **cql.Literal) {
		if *l == nil {
			return
		}
		var t cql.Term = *l
		mark(&t)
		*l = t.(*cql.Literal)
	}
	where := func(rs []cql.Relation) {
		for i := range rs {
			mark(&rs[i].Value)
			for j := range rs[i].Values { // IN (...)
				mark(&rs[i].Values[j])
			}
		}
	}
	switch st := st.(type) {
	case *cql.InsertStmt:
		for i := range st.Values {
			mark(&st.Values[i])
		}
		markLit(&st.Timestamp)
		markLit(&st.TTL)
	case *cql.UpdateStmt:
		markLit(&st.Timestamp)
		markLit(&st.TTL)
		for i := range st.Set {
			mark(&st.Set[i].Value)
		}
		where(st.Where)
	case *cql.DeleteStmt:
		markLit(&st.Timestamp)
		where(st.Where)
	case *cql.SelectStmt:
		where(st.Where)
		markLit(&st.Limit)
	}
	return lits
}
