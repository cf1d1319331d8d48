package shell

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// SystemTables serves the tables that are not stored but computed (system.local, system.peers,
// system_schema.*: what drivers read). The executor asks it first for every SELECT; ok false
// hands the statement on to the schema's tables. Its methods are called concurrently.
type SystemTables interface {
	// Select answers st when it reads a system table, with values binding its markers.
	Select(ctx context.Context, st *cql.SelectStmt, keyspace string, values []coordinator.Value) (res coordinator.Result, ok bool, err error)
	// Prepare describes st's bind markers and result columns when it reads a system table.
	Prepare(st *cql.SelectStmt, keyspace string) (vars []coordinator.Variable, cols []coordinator.RowColumn, ok bool, err error)
	// HasKeyspace reports whether name is a keyspace of system tables, which USE accepts.
	HasKeyspace(name string) bool
	// Describe answers DESCRIBE KEYSPACE ks (table "") or DESCRIBE TABLE ks.table for a keyspace
	// of system tables; ok is false when there is no such keyspace or table.
	Describe(ks, table string) (els []schema.Element, ok bool)
}

// Prepare parses and validates text, one statement, against the current schema with keyspace
// for unqualified table names, and describes it for executing it many times
// (Statement.Prepared): its bind markers, the partition key's markers and, for a SELECT, the
// columns of its rows. The ID is coordinator.PreparedID(text, keyspace), the same on every node.
// Errors are *InvalidErrors, as Execute's for the same statement.
func (e *Executor) Prepare(ctx context.Context, text, keyspace string) (*coordinator.Prepared, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, coordinator.ErrClosed
	}
	if err := checkStatementSize(text, "this statement", e.maxStatement); err != nil {
		return nil, err
	}
	stmt, err := parseOne(text)
	if err != nil {
		return nil, err
	}
	p := &coordinator.Prepared{ID: coordinator.PreparedID(text, keyspace), Text: text, Keyspace: keyspace, Statement: stmt}
	if st, ok := stmt.(*cql.SelectStmt); ok && e.system != nil {
		vars, cols, ok, err := e.system.Prepare(st, keyspace)
		if err != nil {
			return nil, invalid(st, err)
		}
		if ok {
			p.Variables, p.Columns = vars, cols
			p.RowsKeyspace, p.RowsTable = st.Table.Keyspace.Name, st.Table.Name.Name
			if p.RowsKeyspace == "" {
				p.RowsKeyspace = keyspace
			}
			return p, nil
		}
	}
	s := e.schema.Schema()
	if p.Variables, p.PKIndexes, err = s.Variables(stmt, keyspace); err != nil {
		return nil, invalid(stmt, err)
	}
	p.Tables = preparedTables(s, stmt, keyspace)
	if st, ok := stmt.(*cql.SelectStmt); ok {
		t, cols, err := s.SelectColumns(st, keyspace)
		if err != nil {
			return nil, invalid(st, err)
		}
		p.Columns = make([]coordinator.RowColumn, len(cols))
		for i, c := range cols {
			p.Columns[i] = coordinator.RowColumn{Name: c.Name, Type: c.Type} // with TTL()/WRITETIME() applied
		}
		p.RowsKeyspace, p.RowsTable = t.Keyspace, t.Name
	}
	return p, nil
}

// parseOne parses text, which must hold exactly one statement.
func parseOne(text string) (cql.Statement, error) {
	stmts, err := cql.Parse(text)
	if err != nil {
		return nil, &coordinator.InvalidError{Err: err}
	}
	switch len(stmts) {
	case 0:
		return nil, &coordinator.InvalidError{Err: errors.New("no statement: the request is empty")}
	case 1:
		return stmts[0], nil
	}
	return nil, &coordinator.InvalidError{Pos: stmts[1].Pos(), Err: fmt.Errorf("one statement per request, found %d", len(stmts))}
}

// statement returns the statement req executes and the keyspace for its unqualified names: the
// prepared one (in the keyspace it was prepared in), or req.Text parsed.
func statement(req *coordinator.Statement) (cql.Statement, string, error) {
	if p := req.Prepared; p != nil {
		if p.Statement == nil {
			return nil, "", &coordinator.InvalidError{Err: errors.New("the prepared statement has no parsed statement: prepare it with Executor.Prepare")}
		}
		return p.Statement, p.Keyspace, nil
	}
	stmt, err := parseOne(req.Text)
	return stmt, req.Keyspace, err
}

// bindCheck refuses values for a statement that cannot take any.
func bindCheck(stmt cql.Statement, values []coordinator.Value) error {
	if len(values) == 0 {
		return nil
	}
	return &coordinator.InvalidError{Pos: stmt.Pos(), Err: fmt.Errorf("%s has no bind markers but %d values were given", schema.StatementName(stmt), len(values))}
}

// preparedTables returns the tables of the schema that stmt reads or writes, with their
// versions (coordinator.Prepared.Tables), each once.
func preparedTables(s *schema.Schema, stmt cql.Statement, keyspace string) []coordinator.PreparedTable {
	var out []coordinator.PreparedTable
	add := func(tn cql.TableName) {
		t, err := s.TableFor(tn, keyspace)
		if err != nil {
			return
		}
		for _, o := range out {
			if o.Keyspace == t.Keyspace && o.Table == t.Name {
				return
			}
		}
		out = append(out, coordinator.PreparedTable{Keyspace: t.Keyspace, Table: t.Name, Version: t.Version})
	}
	var walk func(cql.Statement)
	walk = func(stmt cql.Statement) {
		switch st := stmt.(type) {
		case *cql.SelectStmt:
			add(st.Table)
		case *cql.InsertStmt:
			add(st.Table)
		case *cql.UpdateStmt:
			add(st.Table)
		case *cql.DeleteStmt:
			add(st.Table)
		case *cql.BatchStmt:
			for _, c := range st.Statements {
				walk(c)
			}
		}
	}
	walk(stmt)
	return out
}
